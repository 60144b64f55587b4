"""GPTScore through the real openai client over HTTP: LoopbackLLM's /v1/completions with scripted log-probabilities.

Each test recomputes the score from what the server received (the prompt as sent), the loopback's tokens
(``loopback_tokens``) and the scripted log-probability function, independently of the scorer's code.
"""

from __future__ import annotations

import math
import pickle
import re

import pytest

import scorers
from scorers.errors import ConfigError, JudgeError, ScorerInputError
from scorers.judges.gptscore import DEFAULT_ASPECT, DEFAULT_TEMPLATE, GPTScore
from scorers.llm import EndpointConfigError, LLMEngine
from scorers.testing import LoopbackLLM, TextCompletions, loopback_tokens


def scripted(context: str, token: str) -> float:
    """A log-probability that depends on the token and on how much text precedes it."""
    return -(len(token.strip()) % 5 + 1) / 4 - (len(context) % 7) / 10


def engine_for(server: LoopbackLLM, **options) -> LLMEngine:
    return LLMEngine(base_url=server.base_url, api_key="placeholder", **{"cache": False, "max_retries": 0, **options})


def expected_logprobs(prompt: str, start: int, end: int) -> list[float]:
    """The scripted log-probabilities of the tokens holding a character of ``prompt[start:end]``."""
    tokens = loopback_tokens(prompt)
    ends = [offset for offset, _ in tokens[1:]] + [len(prompt)]
    return [
        scripted(prompt[:offset], token)
        for (offset, token), stop in zip(tokens, ends)
        if offset < end and stop > start and offset > 0
    ]


#: Rows (input, output) with outputs that start with a space, hold punctuation, non-ASCII text and new lines.
ROWS = [
    ("What is 2 + 2?", "It is 4."),
    ("Name a colour.", " Blue, like the sea"),
    ("Greet me in French.", "Bonjour, ça va ?"),
    ("List two fruits.", "1. apple\n2. pear\n"),
    ("Say one word.", "Yes"),
]


@pytest.mark.parametrize("normalization", ["geometric_mean", "mean_probability"])
@pytest.mark.parametrize("row", ROWS, ids=[f"row{i}" for i in range(len(ROWS))])
def test_the_score_is_the_formula_on_what_was_sent(row, normalization):
    question, answer = row
    with LoopbackLLM(completions=TextCompletions(logprob=scripted)) as server:
        score = GPTScore(engine=engine_for(server), normalization=normalization)(input=question, output=answer)
        (request,) = server.completion_requests
    prefix = DEFAULT_TEMPLATE.split("{output}")[0].format(aspect=DEFAULT_ASPECT, input=question)
    prompt = prefix + answer
    assert request.body == {
        "model": "gpt-4o-mini",
        "prompt": prompt,
        "echo": True,
        "logprobs": 0,
        "max_tokens": 1,
        "temperature": 0,
    }
    values = expected_logprobs(prompt, len(prefix), len(prompt))
    average = sum(values) / len(values)
    if normalization == "geometric_mean":
        expected = math.exp(average)
    else:
        expected = sum(math.exp(v) for v in values) / len(values)
    assert score.score == pytest.approx(expected, rel=1e-12)
    assert 0 <= score.score <= 1
    metadata = score.metadata
    assert metadata["avg_logprob"] == pytest.approx(average, rel=1e-12)
    assert metadata["token_count"] == len(values)
    assert [lp for _, lp in metadata["tokens"]] == pytest.approx(values, rel=1e-12)
    assert "".join(token for token, _ in metadata["tokens"]).strip() == answer.strip()
    assert metadata["normalization"] == normalization and metadata["model"] == "gpt-4o-mini"
    assert metadata["usage"]["requests"] == 1 and metadata["attempts"] == 1 and metadata["cached"] is False
    assert metadata["sent"] == {"api": "completions", "echo": True, "logprobs": 0, "max_tokens": 1, "temperature": 0}


def test_a_template_with_expected_and_trailing_text_scores_the_output_only():
    template = "Reference: {expected}\nRewrite it {aspect}: {output}\n-- end of rewrite"
    with LoopbackLLM(completions=TextCompletions(logprob=scripted)) as server:
        scorer = GPTScore(engine=engine_for(server), template=template, aspect="more politely", model="m-1")
        assert scorer.required_fields() == ["expected", "output"]
        score = scorer(expected="Give me that.", output="Could you pass that, please?")
        prompt = server.completion_requests[0].body["prompt"]
    prefix = "Reference: Give me that.\nRewrite it more politely: "
    assert prompt == prefix + "Could you pass that, please?\n-- end of rewrite"
    values = expected_logprobs(prompt, len(prefix), len(prefix) + len("Could you pass that, please?"))
    assert score.score == pytest.approx(math.exp(sum(values) / len(values)), rel=1e-12)
    assert score.metadata["token_count"] == len(values) == 7  # Could, you, pass, that, ",", please, "?"
    assert server.completion_requests[0].body["model"] == "m-1"


def test_the_generated_token_and_a_bos_text_before_the_prompt_are_left_out():
    """A server may put a BOS token's text before the echoed prompt and leave out text_offset; the tokens that
    spell the text place it, and the generated token (offset past the prompt) is never scored."""

    def odd(reply):
        logprobs = reply["choices"][0]["logprobs"]
        reply["choices"][0]["text"] = "<s>" + reply["choices"][0]["text"]
        logprobs["tokens"].insert(0, "<s>")
        logprobs["token_logprobs"].insert(0, None)
        logprobs["token_logprobs"][1] = -9.0  # the prompt's first token, now with a context
        del logprobs["text_offset"]
        return reply

    with LoopbackLLM(completions=TextCompletions(logprob=scripted)) as plain_server:
        plain = GPTScore(engine=engine_for(plain_server))(input="Hi", output="Hello there")
    with LoopbackLLM(completions=TextCompletions(logprob=scripted, edit=odd)) as server:
        score = GPTScore(engine=engine_for(server))(input="Hi", output="Hello there")
    assert score.score == pytest.approx(plain.score, rel=1e-12)
    assert [token for token, _ in score.metadata["tokens"]] == [" Hello", " there"]


@pytest.mark.parametrize(
    "support, why",
    [
        ("no_logprobs", "has no logprobs"),
        ("generated_only", "is null"),
        ("no_echo", "does not echo the prompt"),
        ("refuse_echo", "refused echo with logprobs \\(HTTP 400"),
        ("refuse_logprobs", "refused echo with logprobs \\(HTTP 500: logprobs is not supported"),
    ],
)
def test_an_endpoint_without_prompt_logprobs_is_a_config_error(support, why):
    with LoopbackLLM(completions=TextCompletions(support=support)) as server:
        scorer = GPTScore(engine=LLMEngine(base_url=server.base_url, api_key="placeholder", cache=False))
        with pytest.raises(
            ConfigError, match=f"cannot return the log-probabilities of a prompt's tokens.*{why}"
        ) as info:
            scorer(input="Hi", output="Hello")
        assert isinstance(info.value, EndpointConfigError) and info.value.attempts == 1  # never retried
        outcomes = scorer.score_batch([{"input": "Hi", "output": f"Hello {i}"} for i in range(3)])
    assert all(isinstance(outcome, EndpointConfigError) for outcome in outcomes)


@pytest.mark.parametrize("value", ["x", 1000, 1e308, 0.5], ids=str)
def test_a_reply_with_an_unreadable_logprob_is_a_judge_error_of_the_row(value):
    """Text, or a number above 0 (the probability e^1000 overflowed a float: OverflowError, not a row error)."""

    def broken(reply):
        values = reply["choices"][0]["logprobs"]["token_logprobs"]
        values[-2] = value  # the output's token (the last is the generated one)
        return reply

    with LoopbackLLM(completions=TextCompletions(edit=broken)) as server:
        with pytest.raises(
            JudgeError,
            match=f"GPTScore: the completions endpoint sent a malformed reply: the log-probability "
            f"of token \\d+ is {re.escape(repr(value))}, not a finite number <= 0",
        ) as info:
            GPTScore(engine=engine_for(server))(input="Hi", output="Hello")
    assert not isinstance(info.value, ConfigError)
    assert info.value.usage["failed_calls"] == 1 and info.value.usage["model"] == "gpt-4o-mini"


def test_replies_are_cached(tmp_path):
    with LoopbackLLM(completions=TextCompletions(logprob=scripted)) as server:
        scorer = GPTScore(engine=engine_for(server, cache=str(tmp_path / "cache.sqlite")))
        first = scorer(input="What is 2 + 2?", output="It is 4.")
        again = scorer(input="What is 2 + 2?", output="It is 4.")
        assert len(server.completion_requests) == 1
    assert again.score == first.score and again.metadata["tokens"] == first.metadata["tokens"]
    assert again.metadata["cached"] is True and again.metadata["usage"]["cached"] == 1


def test_every_setting_that_changes_the_number_changes_the_signature():
    base = GPTScore().signature()
    for changed in (
        GPTScore(aspect="concise"),
        GPTScore(normalization="mean_probability"),
        GPTScore(model="another-model"),
        GPTScore(template="Answer {aspect}: {input}\n{output}"),
    ):
        assert changed.signature() != base


@pytest.mark.parametrize(
    "settings, message",
    [
        ({"template": "no output here"}, "holding {output} exactly once"),
        ({"template": "{output} and {output}"}, "holding {output} exactly once"),
        ({"template": "{output} is what I said"}, "an instruction before {output}"),
        ({"template": "Say: {output}", "aspect": "polite"}, "the template has no {aspect}"),
        ({"aspect": " "}, "aspect must be non-empty text"),
        ({"normalization": "softmax"}, "normalization must be one of geometric_mean, mean_probability"),
    ],
)
def test_bad_settings_are_config_errors(settings, message):
    with pytest.raises(ConfigError, match=message.replace("{", "\\{").replace("}", "\\}")):
        GPTScore(**settings)


def test_an_empty_output_is_an_input_error_and_makes_no_request():
    with LoopbackLLM() as server:
        with pytest.raises(ScorerInputError, match="output.*is empty"):
            GPTScore(engine=engine_for(server))(input="Hi", output="")
        assert server.completion_requests == []


def test_it_is_registered_and_travels(monkeypatch, fake_api_key):
    scorer = scorers.get("GPTScore", aspect="short")
    assert isinstance(scorer, GPTScore) and scorer.requests_per_row == "1"
    with LoopbackLLM(completions=TextCompletions(logprob=scripted)) as server:
        monkeypatch.setenv("OPENAI_API_KEY", fake_api_key)
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        first = scorer(input="Hi", output="Hello there")
        copy = pickle.loads(pickle.dumps(scorer))
        assert copy(input="Hi", output="Hello there").score == first.score
