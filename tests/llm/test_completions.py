"""Prompt log-probabilities from a completions endpoint: which tokens hold a part of the prompt, and odd replies."""

from __future__ import annotations

import pytest

from scorers._aio import run_sync
from scorers.llm import EndpointConfigError, LLMEngine
from scorers.llm.completions import EchoedPrompt, prompt_logprobs
from scorers.testing import LoopbackLLM, TextCompletions


def echoed(prompt: str, tokens: list[tuple[int, str]], text: str | None = None, prompt_at: int = 0) -> EchoedPrompt:
    return EchoedPrompt(
        prompt=prompt,
        text=text if text is not None else prompt + " OK",
        prompt_at=prompt_at,
        tokens=tuple(token for _, token in tokens),
        offsets=tuple(offset for offset, _ in tokens),
        logprobs=(None,) + (-1.0,) * (len(tokens) - 1),
        model="m",
    )


# llama.cpp reports a character split over two byte tokens as a token of no width (the first byte, decoded to
# nothing) and then the character, both at the character's offset.
SPLIT = echoed("Say: é!", [(0, "Say"), (3, ":"), (4, " "), (5, ""), (5, "é"), (6, "!"), (7, " OK")])


@pytest.mark.parametrize(
    "prompt, tokens, start, end, expected",
    [
        # a token that also holds the space before the part is in
        ("Reply: It is.", [(0, "Reply"), (5, ":"), (6, " It"), (9, " is"), (12, "."), (13, " OK")], 7, 13, [2, 3, 4]),
        # a token that straddles the part's end is in; the generated token never is
        ("Reply: Itis", [(0, "Reply"), (5, ":"), (6, " Itis"), (11, " OK")], 7, 9, [2]),
        ("Reply: Itis", [(0, "Reply"), (5, ":"), (6, " Itis"), (11, " OK")], 7, 11, [2]),
    ],
)
def test_span_is_the_tokens_that_hold_a_character_of_the_part(prompt, tokens, start, end, expected):
    assert echoed(prompt, tokens).span(start, end) == expected


def test_a_token_of_no_width_is_in_the_span_it_sits_in():
    assert SPLIT.span(5, 7) == [3, 4, 5]  # "é!": both byte tokens and "!"
    assert SPLIT.span(0, 5) == [0, 1, 2]  # "Say: ": not the byte token at its end
    assert SPLIT.span(6, 7) == [5]


def test_span_counts_from_where_the_prompt_is_in_the_echoed_text():
    shifted = echoed("Hi you", [(0, "<s>"), (3, "Hi"), (5, " you"), (9, " OK")], text="<s>Hi you OK", prompt_at=3)
    assert shifted.span(2, 6) == [2] and shifted.span(0, 2) == [1]


def test_the_dict_form_round_trips():
    assert EchoedPrompt.from_dict(SPLIT.to_dict()) == SPLIT


def test_a_reply_whose_tokens_cannot_be_placed_is_a_config_error():
    def scrambled(reply):
        logprobs = reply["choices"][0]["logprobs"]
        logprobs["text_offset"] = logprobs["text_offset"][::-1]  # decreasing: not offsets
        logprobs["tokens"][1] = " ?"  # and the tokens no longer spell the text
        return reply

    with LoopbackLLM(completions=TextCompletions(edit=scrambled)) as server:
        engine = LLMEngine(base_url=server.base_url, api_key="placeholder", cache=False)
        with pytest.raises(EndpointConfigError, match="tokens cannot be placed in the text"):
            run_sync(prompt_logprobs(engine, "Say it: the cat sat", scorer="Probe"))


def test_the_request_is_cached_apart_from_chat_requests(tmp_path):
    with LoopbackLLM() as server:
        engine = LLMEngine(base_url=server.base_url, api_key="placeholder", cache=str(tmp_path / "c.sqlite"))
        first = run_sync(prompt_logprobs(engine, "Say it: the cat sat"))
        other_model = run_sync(prompt_logprobs(engine, "Say it: the cat sat", model="another-model"))
        again = run_sync(prompt_logprobs(engine, "Say it: the cat sat"))
        assert [r.body["model"] for r in server.completion_requests] == ["gpt-4o-mini", "another-model"]
    assert (first.cached, other_model.cached, again.cached) == (False, False, True)
    assert again.logprobs == first.logprobs and again.attempts == 0 and first.attempts == 1
    assert first.prompt_tokens == 6 and first.completion_tokens == 1  # the loopback's tokens
