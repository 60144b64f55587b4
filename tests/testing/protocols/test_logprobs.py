"""Log-probabilities, as both OpenAI APIs serve them: scripted, cut to the alternatives asked, or none."""

from __future__ import annotations

from scorers.testing import LoopbackLLM, Reply

from ..openai_clients import ask, respond


def test_logprobs_are_served_only_when_asked_and_cut_to_top_logprobs(llm_server):
    llm_server.default = Reply.text("4", top_logprobs=[{"4": -0.1, "3": -2.5, "5": -3.0}])
    assert ask(llm_server, "2+2?").choices[0].logprobs is None
    (token,) = ask(llm_server, "2+2?", logprobs=True, top_logprobs=2).choices[0].logprobs.content
    assert (token.token, token.logprob, [(t.token, t.logprob) for t in token.top_logprobs]) == (
        "4",
        -0.1,
        [("4", -0.1), ("3", -2.5)],
    )
    assert ask(llm_server, "2+2?", logprobs=True).choices[0].logprobs.content[0].top_logprobs == []
    assert respond(llm_server, "2+2?").output[0].content[0].logprobs is None
    (token,) = (
        respond(llm_server, "2+2?", include=["message.output_text.logprobs"], top_logprobs=3)
        .output[0]
        .content[0]
        .logprobs
    )
    assert [(t.token, t.logprob) for t in token.top_logprobs] == [("4", -0.1), ("3", -2.5), ("5", -3.0)]


def test_unscripted_logprobs_are_one_certain_token(llm_server):
    llm_server.default = Reply.text("two words")
    (token,) = ask(llm_server, "x", logprobs=True, top_logprobs=1).choices[0].logprobs.content
    assert (token.token, token.logprob, len(token.top_logprobs)) == ("two words", 0.0, 1)


def test_a_server_without_logprobs_support():
    with LoopbackLLM(default=Reply.text("4", top_logprobs=[{"4": -0.1}]), logprobs=False) as server:
        assert ask(server, "x", logprobs=True, top_logprobs=1).choices[0].logprobs is None
        assert respond(server, "x", include=["message.output_text.logprobs"]).output[0].content[0].logprobs is None
