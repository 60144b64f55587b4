"""Automatic answers: every judge gets a valid one, the same for the same prompt."""

from __future__ import annotations

import json

import pytest

from scorers.testing import LoopbackLLM, RecordedRequest

#: Field values for any judge: ``context`` is a list of chunks, every other field a text.
JUDGE_FIELDS = {
    "input": "What is the capital of France, and how many people live there?",
    "output": "Paris is the capital of France. It has about 2 million people.",
    "expected": "Paris; about 2.1 million inhabitants.",
    "context": ["Paris is the capital of France.", "Paris has 2.1 million inhabitants.\n1. A list."],
    "conversation": [
        {"role": "user", "content": "What is the capital of France?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "search", "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "Paris"},
        {"role": "assistant", "content": "Paris."},
    ],
    "tools": [{"type": "function", "function": {"name": "search", "description": "Search the web."}}],
    "role": "A geography tutor.",
}


def _judge_cases():
    import scorers.judges  # noqa: F401  (registers the built-in judges)
    from scorers.registry import entries, registry

    for entry in entries():
        if entry.kind == "llm":
            for mode in type(registry.get(entry.name)).response_modes:
                for api in ("chat", "responses"):
                    yield pytest.param(entry.name, {"response_mode": mode, "api": api}, id=f"{entry.name}-{mode}-{api}")


def _kind_cases():
    """One judge of each kind the built-in templates do not cover, in every response mode it supports."""
    from scorers.judges import GEvalJudge, PairwiseJudge, RatingJudge

    for mode in RatingJudge.response_modes:
        for cot in (True, False):
            yield pytest.param(
                RatingJudge,
                {
                    "prompt_template": "Rate {{output}}",
                    "scale": {"min": 1, "max": 10},
                    "response_mode": mode,
                    "use_cot": cot,
                },
                id=f"rating-{mode}-cot{cot}",
            )
    for mode in PairwiseJudge.response_modes:
        yield pytest.param(
            PairwiseJudge,
            {"prompt_template": "A: {{output}}\nB: {{expected}}", "swap": True, "response_mode": mode},
            id=f"pairwise-swap-{mode}",
        )
    for mode in GEvalJudge.response_modes:
        for score_mode in ("logprobs", "top_token"):
            if (mode, score_mode) != ("tools", "logprobs"):
                yield pytest.param(
                    GEvalJudge,
                    {
                        "prompt_template": "Text: {{output}}",
                        "criteria": "Is it clear?",
                        "score_mode": score_mode,
                        "response_mode": mode,
                    },
                    id=f"geval-{score_mode}-{mode}",
                )


@pytest.fixture(scope="module")
def auto_server():
    from scorers.testing import auto_reply

    with LoopbackLLM(default=auto_reply) as server:
        yield server


def _engine(server):
    from scorers.llm import LLMEngine

    return LLMEngine(base_url=server.base_url, api_key="placeholder", cache=False, max_reasks=0)


def _fields(judge) -> dict:
    from test_every_scorer import IMAGE

    fields = {name: JUDGE_FIELDS.get(name, f"some {name}") for name in judge.required_fields()}
    # a field a judge's template declares a conversation holds one, an attachment an image
    template = getattr(judge, "template", None)
    conversations = getattr(template, "conversations", ())
    return (
        fields
        | {name: JUDGE_FIELDS["conversation"] for name, _ in conversations}
        | {name: IMAGE for name in getattr(template, "attachments", ())}
    )


@pytest.mark.parametrize("name, settings", list(_judge_cases()))
def test_auto_reply_scores_every_builtin_judge_in_every_response_mode(auto_server, name, settings):
    from scorers.registry import registry

    judge = registry.get(name, engine=_engine(auto_server), **settings)
    score = judge(**_fields(judge))  # max_reasks=0: the first answer must be valid
    assert score.score is not None and 0.0 <= score.score <= 1.0
    assert score.metadata["usage"]["requests"] >= 1


@pytest.mark.parametrize("kind, settings", list(_kind_cases()))
def test_auto_reply_scores_every_judge_kind(auto_server, kind, settings):
    judge = kind(kind.__name__, engine=_engine(auto_server), **settings)
    score = judge(**_fields(judge))
    assert score.score is not None and 0.0 <= score.score <= 1.0


def test_auto_reply_is_deterministic_and_varies_with_the_prompt():
    import scorers
    from scorers.testing import auto_reply

    questions = [f"What is {i} + {i}?" for i in range(12)]

    def choices():
        with LoopbackLLM(default=auto_reply) as server:
            judge = scorers.get("Factuality", engine=_engine(server))
            return [judge(input=q, output="4", expected="4").metadata["choice"] for q in questions]

    first = choices()
    assert choices() == first  # another server, another process's port: the same answers
    assert len(set(first)) > 1  # rows get different verdicts


def test_auto_reply_counts_the_items_a_verdict_step_lists():
    from scorers.testing import auto_reply

    prompt = "Claims:\n1. Paris is in France.\n2. It has\n   2 million people.\n3. It is old.\n\nAnswer by calling."
    schema = {
        "type": "object",
        "properties": {
            "verdicts": {
                "type": "array",
                "items": {"type": "object", "properties": {"verdict": {"type": "string", "enum": ["yes", "no"]}}},
            }
        },
    }
    request = RecordedRequest(
        "POST",
        "/v1/chat/completions",
        {},
        {
            "messages": [{"role": "user", "content": prompt}],
            "tools": [{"type": "function", "function": {"name": "record_verdicts", "parameters": schema}}],
        },
        0.0,
    )
    reply = auto_reply(request)
    assert reply.tool_name == "record_verdicts"
    assert [v["verdict"] in ("yes", "no") for v in json.loads(reply.arguments)["verdicts"]] == [True] * 3
