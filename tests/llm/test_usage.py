"""Usage counts every attempt the server saw and every token it billed: retries, re-asks and the calls of rows that
failed, the failed part shown apart and priced."""

from __future__ import annotations

from typing import Any

import pytest

import scorers
from scorers import LLMClassifier
from scorers.errors import JudgeError
from scorers.llm import ChatRequest, LLMEngine, Usage
from scorers.testing import LoopbackLLM, Reply

from .test_engine import choice_of

FAST = dict(timeout=30.0, backoff_base=0.001, backoff_max=0.01, retry_after_max=0.01, cache=False)
PRICES = {"gpt-4o-mini": (1.0, 10.0)}


def ask(text: str) -> ChatRequest:
    return ChatRequest(messages=[{"role": "user", "content": text}])


def test_a_call_counts_every_attempt_and_keeps_the_tokens_of_unused_replies_apart(fake_api_key):
    with LoopbackLLM() as server:
        for fault in (
            Reply.rate_limited(retry_after=0),
            Reply.error(500),
            Reply.tool_call('{"choice": "A"', usage=(50, 7)),  # malformed arguments: asked again
            Reply.raw(
                {"object": "chat.completion", "choices": [], "usage": {"prompt_tokens": 45, "completion_tokens": 1}}
            ),
            Reply.choice("Z", usage=(40, 3)),
        ):  # a choice outside the enum: asked again
            server.script(fault, times=1)
        server.default = Reply.choice("A", usage=(30, 2))
        engine = LLMEngine(base_url=server.base_url, api_key=fake_api_key, max_reasks=3, **FAST)
        result = engine.complete_sync(ask("judge"), validate=choice_of)
        assert result.attempts == server.request_count == 6
    assert (result.failed_prompt_tokens, result.failed_completion_tokens) == (50 + 45 + 40, 7 + 1 + 3)
    assert (result.prompt_tokens, result.completion_tokens) == (50 + 45 + 40 + 30, 7 + 1 + 3 + 2)
    usage = Usage()
    usage.add(result)
    figures = usage.to_dict(PRICES)
    assert (figures["requests"], figures["attempts"], figures["failed_prompt_tokens"]) == (1, 6, 135)
    assert figures["cost_usd"] == pytest.approx((165 * 1.0 + 13 * 10.0) / 1e6)
    assert figures["failed_cost_usd"] == pytest.approx((135 * 1.0 + 11 * 10.0) / 1e6)


def test_a_call_that_fails_carries_what_it_cost(fake_api_key):
    with LoopbackLLM(default=Reply.choice("Z", usage=(40, 3))) as server:
        server.script(Reply.error(503), times=1)
        engine = LLMEngine(base_url=server.base_url, api_key=fake_api_key, max_reasks=1, **FAST)
        with pytest.raises(JudgeError) as info:
            engine.complete_sync(ask("judge"), validate=choice_of)
        assert server.request_count == 3
    assert info.value.usage == {
        "model": "gpt-4o-mini",
        "failed_calls": 1,
        "attempts": 3,
        "prompt_tokens": 80,
        "completion_tokens": 6,
        "failed_prompt_tokens": 80,
        "failed_completion_tokens": 6,
    }


def test_the_calls_of_a_row_that_fails_are_counted_even_those_that_answered(fake_api_key):
    """Self-consistency samples: one sample fails, the others answered; the row has no score, so all are failed."""

    def reply(request):
        return Reply.choice("maybe" if request.body.get("seed") == 2 else "Y", usage=(10, 1))

    with LoopbackLLM(default=reply) as server:
        engine = LLMEngine(base_url=server.base_url, api_key=fake_api_key, max_reasks=1, **FAST)
        judge = LLMClassifier(
            "Polite", "Is {{output}} polite?", {"Y": 1.0, "N": 0.0}, samples=3, temperature=0.7, engine=engine
        )
        (outcome,) = judge.score_batch([{"output": "hello"}])
        assert isinstance(outcome, JudgeError)
        assert outcome.usage["attempts"] == server.request_count == 2 + 2
    assert outcome.usage["failed_calls"] == 3 and outcome.usage["requests"] == 0
    assert (outcome.usage["prompt_tokens"], outcome.usage["failed_prompt_tokens"]) == (40, 40)


def run_mixed_rows(api_key: str) -> tuple[Any, list[dict[str, Any]], int]:
    """A run whose rows are scored at once, scored after faults and a bad reply, or never given a usable reply:
    the evaluation, its records (with metadata) and how many requests the server saw."""

    def reply(request: Any) -> Reply:
        if "never" in request.last_user_message:
            return Reply.choice("maybe", usage=(20, 4))
        return Reply.choice("Y", usage=(10, 1))

    with LoopbackLLM(default=reply) as server:
        server.script(Reply.rate_limited(retry_after=0), match="faulty", times=2)
        server.script(Reply.error(502), match="faulty", times=1)
        server.script(Reply.tool_call('{"choice": ', usage=(15, 2)), match="faulty", times=1)
        engine = LLMEngine(base_url=server.base_url, api_key=api_key, max_reasks=2, **FAST)
        judge = LLMClassifier("Polite", "Is {{output}} polite?", {"Y": 1.0, "N": 0.0}, engine=engine)
        rows = [{"output": f"fine {i}"} for i in range(5)] + [{"output": "faulty"}, {"output": "never"}]
        evaluation = scorers.evaluate(rows, [judge])
        records = [result.to_record(with_metadata=True) for result in evaluation]
        return evaluation, records, server.request_count


def test_a_run_counts_what_the_server_saw_and_billed(fake_api_key):
    evaluation, records, attempts_seen = run_mixed_rows(fake_api_key)
    usage = evaluation.summary.scorers["Polite"]["usage"]
    # 5 rows at once, 2 x 429 + 502 + a malformed reply + a good one, 3 asks of the row that fails
    assert usage["attempts"] == attempts_seen == 5 + 5 + 3
    assert (usage["requests"], usage["failed_calls"]) == (6, 1)
    assert (usage["failed_prompt_tokens"], usage["failed_completion_tokens"]) == (15 + 3 * 20, 2 + 3 * 4)
    assert (usage["prompt_tokens"], usage["completion_tokens"]) == (6 * 10 + 15 + 3 * 20, 6 * 1 + 2 + 3 * 4)
    error = records[-1]["errors"]["Polite"]
    assert error["type"] == "JudgeError" and error["usage"]["attempts"] == 3
    assert error["usage"]["failed_prompt_tokens"] == 60 and error["usage"]["model"] == "gpt-4o-mini"
