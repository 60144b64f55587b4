"""Usage counts every attempt the server saw and every token it billed: retries, re-asks and the calls of rows that
failed, the failed part shown apart and priced."""
from __future__ import annotations

import pytest

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
        for fault in (Reply.rate_limited(retry_after=0), Reply.error(500),
                      Reply.tool_call('{"choice": "A"', usage=(50, 7)),  # malformed arguments: asked again
                      Reply.raw({"object": "chat.completion", "choices": [], "usage": {"prompt_tokens": 45,
                                                                                       "completion_tokens": 1}}),
                      Reply.choice("Z", usage=(40, 3))):  # a choice outside the enum: asked again
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
    assert info.value.usage == {"model": "gpt-4o-mini", "failed_calls": 1, "attempts": 3, "prompt_tokens": 80,
                                "completion_tokens": 6, "failed_prompt_tokens": 80, "failed_completion_tokens": 6}


def test_the_calls_of_a_row_that_fails_are_counted_even_those_that_answered(fake_api_key):
    """Self-consistency samples: one sample fails, the others answered; the row has no score, so all are failed."""
    def reply(request):
        return Reply.choice("maybe" if request.body.get("seed") == 2 else "Y", usage=(10, 1))

    with LoopbackLLM(default=reply) as server:
        engine = LLMEngine(base_url=server.base_url, api_key=fake_api_key, max_reasks=1, **FAST)
        judge = LLMClassifier("Polite", "Is {{output}} polite?", {"Y": 1.0, "N": 0.0}, samples=3, temperature=0.7,
                              engine=engine)
        (outcome,) = judge.score_batch([{"output": "hello"}])
        assert isinstance(outcome, JudgeError)
        assert outcome.usage["attempts"] == server.request_count == 2 + 2
    assert outcome.usage["failed_calls"] == 3 and outcome.usage["requests"] == 0
    assert (outcome.usage["prompt_tokens"], outcome.usage["failed_prompt_tokens"]) == (40, 40)
