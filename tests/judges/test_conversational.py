"""The conversation judges (ArgumentCorrectness, TurnRelevancy, KnowledgeRetention, ConversationCompleteness)
through the real openai client over HTTP (loopback server): scores from scripted verdicts, requests per row."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from typing import Any

import pytest

import scorers
from scorers.errors import JudgeError, ScorerInputError
from scorers.judges.conversation import DEFAULT_MAX_TOKENS
from scorers.judges.conversational import (
    ArgumentCorrectness,
    ConversationCompleteness,
    ConversationJudge,
    KnowledgeRetention,
    TurnRelevancy,
)
from scorers.llm import LLMEngine
from scorers.testing import LoopbackLLM, RecordedRequest, Reply

JUDGES = ("ArgumentCorrectness", "TurnRelevancy", "KnowledgeRetention", "ConversationCompleteness")

#: A booking with a tool call, in the OpenAI chat format (messages 0-5).
BOOKING = [
    {"role": "system", "content": "You book restaurant tables."},
    {"role": "user", "content": "A table for 2 at 8pm tonight, please. I'm vegan."},
    {
        "role": "assistant",
        "content": "Let me look.",
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "find_table", "arguments": '{"people": 2, "time": "20:00"}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "Green Leaf, 20:00"},
    {"role": "user", "content": "Great, book it and send me the menu."},
    {
        "role": "assistant",
        "content": "Booked at Green Leaf. Their steak is great!",
        "tool_calls": [
            {"id": "c2", "type": "function", "function": {"name": "book", "arguments": '{"place": "Green Leaf"}'}}
        ],
    },
]
#: The same conversation as Anthropic's Messages API holds it.
BOOKING_ANTHROPIC = {
    "system": "You book restaurant tables.",
    "messages": [
        {"role": "user", "content": "A table for 2 at 8pm tonight, please. I'm vegan."},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Let me look."},
                {"type": "tool_use", "id": "c1", "name": "find_table", "input": {"people": 2, "time": "20:00"}},
            ],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c1", "content": "Green Leaf, 20:00"}]},
        {"role": "user", "content": "Great, book it and send me the menu."},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Booked at Green Leaf. Their steak is great!"},
                {"type": "tool_use", "id": "c2", "name": "book", "input": {"place": "Green Leaf"}},
            ],
        },
    ],
}


# ------------------------------------------------------------------- scripting
def tool(request: RecordedRequest) -> str | None:
    tools = request.body.get("tools")
    return tools[0]["function"]["name"] if tools else None


def items(request: RecordedRequest) -> list[str]:
    """The numbered items of a verdict request (transcript lines start with ``[i]``, never ``i.``)."""
    return re.findall(r"(?m)^\d+\. (.*)$", request.last_user_message)


def verdicts(server: LoopbackLLM, *values: str, times: int | None = None) -> None:
    server.script(
        Reply.tool_call(
            {"verdicts": [{"reason": f"reason {i}", "verdict": v} for i, v in enumerate(values)]},
            name="record_verdicts",
        ),
        times=times,
        match=lambda r: tool(r) == "record_verdicts",
    )


def extracted(server: LoopbackLLM, key: str, value: list[Any]) -> None:
    server.script(Reply.tool_call({key: value}, name=f"record_{key}"), match=lambda r: tool(r) == f"record_{key}")


def any_row(request: RecordedRequest) -> Reply:
    """A judge for any conversation: one fact (from the first user message shown), two intentions, and a
    verdict per numbered item, alternating yes and no."""
    name = tool(request)
    assert name is not None
    if name == "record_facts":
        found = re.search(r"(?m)^\[(\d+)\] user:", request.last_user_message)
        assert found is not None
        first = int(found.group(1))
        return Reply.tool_call({"facts": [{"message": first, "fact": "The user is Ann."}]}, name=name)
    if name == "record_intentions":
        return Reply.tool_call({"intentions": ["book a table", "get the menu"]}, name=name)
    return Reply.tool_call(
        {"verdicts": [{"reason": "r", "verdict": "yes" if i % 2 == 0 else "no"} for i in range(len(items(request)))]},
        name=name,
    )


def conversation(turns: int) -> list[dict[str, Any]]:
    """``turns`` messages: the user and the assistant in turn, each assistant message with text and a call."""
    messages: list[dict[str, Any]] = []
    for i in range(turns):
        if i % 2 == 0:
            messages.append({"role": "user", "content": f"My name is Ann, question {i}."})
        else:
            call = {
                "id": f"c{i}",
                "type": "function",
                "function": {"name": "lookup", "arguments": json.dumps({"n": i})},
            }
            messages.append({"role": "assistant", "content": f"Answer {i}.", "tool_calls": [call]})
    return messages


# ------------------------------------------------------------------- scores
def test_argument_correctness_is_the_share_of_calls_judged_right(llm_env: LoopbackLLM) -> None:
    verdicts(llm_env, "yes", "no")
    score = scorers.get("ArgumentCorrectness")(conversation=BOOKING)
    assert score.score == 0.5
    assert score.metadata["calls"] == [
        {
            "call": 0,
            "message": 2,
            "name": "find_table",
            "arguments": {"people": 2, "time": "20:00"},
            "verdict": "yes",
            "reason": "reason 0",
        },
        {
            "call": 1,
            "message": 5,
            "name": "book",
            "arguments": {"place": "Green Leaf"},
            "verdict": "no",
            "reason": "reason 1",
        },
    ]
    (request,) = llm_env.chat_requests
    assert items(request) == [
        'message 2: find_table({"people": 2, "time": "20:00"})',
        'message 5: book({"place": "Green Leaf"})',
    ]
    assert "[3] tool find_table: Green Leaf, 20:00" in request.last_user_message


def test_argument_correctness_without_calls_scores_1_without_a_request(llm_env: LoopbackLLM) -> None:
    score = scorers.get("ArgumentCorrectness")(conversation=[{"role": "user", "content": "Hi"}])
    assert score.score == 1.0 and "no tool call" in score.metadata["reason"] and score.metadata["calls"] == []
    assert score.metadata["usage"]["requests"] == 0 and score.metadata["attempts"] == 0
    assert llm_env.chat_requests == []
    assert score.metadata["conversation_tokens"] == {
        "counted_as": "utf8_bytes",
        "budgets": {"conversation": DEFAULT_MAX_TOKENS},
    }


def test_turn_relevancy_judges_each_reply_against_its_window(llm_env: LoopbackLLM) -> None:
    verdicts(llm_env, "yes", "no")
    score = scorers.get("TurnRelevancy", window=2)(conversation=BOOKING)
    assert score.score == 0.5 and score.metadata["window"] == 2
    assert [(t["message"], t["context"], t["verdict"]) for t in score.metadata["turns"]] == [
        (2, [0, 1], "yes"),
        (5, [3, 4], "no"),
    ]
    (request,) = llm_env.chat_requests
    assert items(request) == ["message 2, against messages 0 to 1", "message 5, against messages 3 to 4"]
    assert "the 2 messages before it" in request.last_user_message


def test_turn_relevancy_without_a_reply_is_an_input_error(llm_env: LoopbackLLM) -> None:
    with pytest.raises(ScorerInputError, match="no assistant message with text") as info:
        scorers.get("TurnRelevancy")(conversation=[{"role": "user", "content": "Hi"}])
    assert info.value.field == "conversation" and llm_env.chat_requests == []


def test_knowledge_retention_judges_the_assistant_messages_after_the_first_fact(llm_env: LoopbackLLM) -> None:
    extracted(llm_env, "facts", [{"message": 1, "fact": "The user is vegan."}])
    verdicts(llm_env, "yes", "no")
    score = scorers.get("KnowledgeRetention")(conversation=BOOKING)
    assert score.score == 0.5
    assert score.metadata["facts"] == [{"message": 1, "fact": "The user is vegan."}]
    assert [(t["message"], t["verdict"], t["reason"]) for t in score.metadata["turns"]] == [
        (2, "yes", "reason 0"),
        (5, "no", "reason 1"),
    ]
    facts, judged = llm_env.chat_requests
    assert "[1] user: A table for 2" in facts.last_user_message and "Let me look" not in facts.last_user_message
    schema = facts.body["tools"][0]["function"]["parameters"]["properties"]["facts"]["items"]
    assert schema["properties"]["message"]["enum"] == [1, 4]  # the user's messages only
    assert items(judged) == ["message 2", "message 5"]
    assert "- (message 1) The user is vegan." in judged.last_user_message
    assert score.metadata["usage"]["requests"] == 2
    assert score.metadata["conversation_tokens"]["counted_as"] == "utf8_bytes"


@pytest.mark.parametrize(
    "facts, reason",
    [([], "the user gives no fact"), ([{"message": 4, "fact": "x"}], "no assistant message follows")],
)
def test_knowledge_retention_with_nothing_to_forget_scores_1_after_one_request(
    llm_env: LoopbackLLM, facts: list[Any], reason: str
) -> None:
    extracted(llm_env, "facts", facts)
    conv = BOOKING[:5]  # ends with the user's message 4
    score = scorers.get("KnowledgeRetention")(conversation=conv)
    assert score.score == 1.0 and reason in score.metadata["reason"] and len(llm_env.chat_requests) == 1


def test_knowledge_retention_rereads_a_fact_naming_another_message(llm_env: LoopbackLLM) -> None:
    llm_env.script(
        Reply.tool_call({"facts": [{"message": 2, "fact": "x"}]}, name="record_facts"),
        times=1,
        match=lambda r: tool(r) == "record_facts",
    )
    extracted(llm_env, "facts", [])
    score = scorers.get("KnowledgeRetention")(conversation=BOOKING)
    assert score.score == 1.0 and score.metadata["reasks"] == 1 and len(llm_env.chat_requests) == 2


def test_conversation_completeness_is_the_share_of_intentions_satisfied(llm_env: LoopbackLLM) -> None:
    extracted(llm_env, "intentions", ["Book a table for 2 at 8pm.", "Get the menu."])
    verdicts(llm_env, "yes", "no")
    score = scorers.get("ConversationCompleteness")(conversation=BOOKING)
    assert score.score == 0.5
    assert score.metadata["intentions"] == [
        {"intention": "Book a table for 2 at 8pm.", "verdict": "yes", "reason": "reason 0"},
        {"intention": "Get the menu.", "verdict": "no", "reason": "reason 1"},
    ]
    intentions, judged = llm_env.chat_requests
    assert "[4] user: Great, book it" in intentions.last_user_message
    assert "Booked at Green Leaf" not in intentions.last_user_message
    assert items(judged) == ["Book a table for 2 at 8pm.", "Get the menu."]


def test_conversation_completeness_without_intentions_scores_1(llm_env: LoopbackLLM) -> None:
    extracted(llm_env, "intentions", [])
    score = scorers.get("ConversationCompleteness")(conversation=BOOKING)
    assert score.score == 1.0 and "no intention" in score.metadata["reason"] and len(llm_env.chat_requests) == 1


@pytest.mark.parametrize("name", ["KnowledgeRetention", "ConversationCompleteness"])
def test_a_conversation_without_user_text_is_an_input_error(llm_env: LoopbackLLM, name: str) -> None:
    with pytest.raises(ScorerInputError, match="no user message with text"):
        scorers.get(name)(conversation=[{"role": "assistant", "content": "Hello"}])
    assert llm_env.chat_requests == []


# -------------------------------------------------------------- requests per row
#: Requests per row for a conversation of user and assistant messages in turn, each assistant message with a call
#: (the first number of each judge's requests_per_row).
EXPECTED_REQUESTS = {
    "ArgumentCorrectness": 1,
    "TurnRelevancy": 1,
    "KnowledgeRetention": 2,
    "ConversationCompleteness": 2,
}


@pytest.mark.parametrize("turns", [2, 6, 20])
@pytest.mark.parametrize("name", JUDGES)
def test_requests_per_row_are_what_show_says(llm_env: LoopbackLLM, name: str, turns: int) -> None:
    llm_env.default = any_row
    judge = scorers.get(name)
    assert isinstance(judge, ConversationJudge)
    score = judge(conversation=conversation(turns))
    said = judge.describe()["requests_per_row"]
    assert said == judge.requests_per_row and said.startswith(f"{EXPECTED_REQUESTS[name]} ")
    assert len(llm_env.chat_requests) == EXPECTED_REQUESTS[name]
    assert score.metadata["usage"]["requests"] == len(llm_env.chat_requests)
    replies = turns // 2
    judged = {
        "ArgumentCorrectness": replies,
        "TurnRelevancy": replies,
        "KnowledgeRetention": replies,
        "ConversationCompleteness": 2,
    }[name]
    assert len(items(llm_env.chat_requests[-1])) == judged
    assert score.score == pytest.approx(((judged + 1) // 2) / judged)


@pytest.mark.parametrize("name", JUDGES)
def test_show_prints_the_requests_per_row(name: str) -> None:
    shown = subprocess.run(
        [sys.executable, "-m", "scorers", "show", name], capture_output=True, text=True, check=True
    ).stdout
    judge = scorers.get(name)
    assert isinstance(judge, ConversationJudge)
    assert f"kind: multistep\nrequests per row: {judge.requests_per_row}\n" in shown


def test_each_message_is_sent_once_per_request(llm_env: LoopbackLLM) -> None:
    """Tokens grow linearly: a 20-message conversation's messages each appear once in each request."""
    llm_env.default = any_row
    scorers.get("TurnRelevancy", window=3)(conversation=conversation(20))
    (request,) = llm_env.chat_requests
    assert [request.last_user_message.count(f"question {i}.") for i in range(0, 20, 2)] == [1] * 10


# -------------------------------------------------------------- replies and errors
@pytest.mark.parametrize("name", ["ArgumentCorrectness", "TurnRelevancy"])
def test_a_verdict_count_other_than_the_items_is_reasked_then_judge_error(llm_env: LoopbackLLM, name: str) -> None:
    verdicts(llm_env, "yes")  # one verdict for two calls, two replies
    with pytest.raises(JudgeError, match="1 verdicts for 2 items") as info:
        scorers.get(name, max_reasks=1)(conversation=BOOKING)
    assert info.value.scorer == name and len(llm_env.chat_requests) == 2
    usage = info.value.usage
    assert usage is not None and usage["failed_calls"] == 1 and usage["attempts"] == 2


def test_a_verdict_count_mismatch_recovers_on_the_reask(llm_env: LoopbackLLM) -> None:
    verdicts(llm_env, "yes", times=1)
    verdicts(llm_env, "yes", "yes")
    score = scorers.get("ArgumentCorrectness")(conversation=BOOKING)
    assert score.score == 1.0 and score.metadata["reasks"] == 1 and len(llm_env.chat_requests) == 2


@pytest.mark.parametrize("name", JUDGES)
def test_usage_is_summed_over_the_rows_requests(llm_env: LoopbackLLM, name: str) -> None:
    llm_env.default = any_row
    score = scorers.get(name)(conversation=BOOKING)
    usage, sent = score.metadata["usage"], len(llm_env.chat_requests)
    assert usage["requests"] == sent == score.metadata["attempts"] and usage["prompt_tokens"] > 0
    assert score.metadata["higher_is_better"] is True and score.metadata["model"]


@pytest.mark.parametrize("name", JUDGES)
def test_a_malformed_conversation_names_the_field_and_message(llm_env: LoopbackLLM, name: str) -> None:
    bad = [{"role": "user", "content": "Hi"}, {"role": "robot", "content": "beep"}]
    with pytest.raises(ScorerInputError, match="at message 1: unknown role 'robot'") as info:
        scorers.get(name)(conversation=bad)
    assert (info.value.scorer, info.value.field) == (name, "conversation")
    (result,) = scorers.get(name).score_batch([{"conversation": bad}])
    assert isinstance(result, ScorerInputError) and llm_env.chat_requests == []


@pytest.mark.parametrize("name", JUDGES)
def test_a_conversation_over_its_budget_is_refused_saying_how_to_raise_it(llm_env: LoopbackLLM, name: str) -> None:
    with pytest.raises(
        ScorerInputError, match=rf"over its budget of 20: raise it with {name}\(max_conversation_tokens="
    ) as info:
        scorers.get(name, max_conversation_tokens=20)(conversation=BOOKING)
    assert info.value.field == "conversation" and f"-p {name}.max_conversation_tokens=" in str(info.value)
    assert llm_env.chat_requests == []
    llm_env.default = any_row
    assert scorers.get(name, max_conversation_tokens=1_000)(conversation=BOOKING).score is not None


@pytest.mark.parametrize("name", JUDGES)
def test_a_conversation_in_two_formats_gives_the_same_prompts(llm_env: LoopbackLLM, name: str) -> None:
    llm_env.default = any_row
    judge = scorers.get(name, engine=LLMEngine(base_url=llm_env.base_url, api_key="placeholder", cache=False))
    first = judge(conversation=BOOKING)
    sent = [r.body for r in llm_env.chat_requests]
    second = judge(conversation=json.dumps(BOOKING_ANTHROPIC))
    assert [r.body for r in llm_env.chat_requests] == sent * 2
    assert first.score == second.score


@pytest.mark.parametrize(
    "cls, params, problem",
    [
        (TurnRelevancy, {"window": 0}, "window must be a positive integer"),
        (KnowledgeRetention, {"max_conversation_tokens": 0}, "max_conversation_tokens must be a positive integer"),
        (ArgumentCorrectness, {"prompts": {"nope": "x"}}, "unknown steps"),
        (ConversationCompleteness, {"prompts": {"intentions": "{{transcript}}"}}, "uses \\['transcript'\\]"),
    ],
)
def test_bad_settings_are_config_errors(cls: type, params: dict[str, Any], problem: str) -> None:
    with pytest.raises(scorers.ConfigError, match=problem):
        cls(**params)


def test_window_and_prompts_enter_the_signature_but_the_budget_does_not() -> None:
    base = TurnRelevancy().signature()
    assert TurnRelevancy(window=3).signature() != base
    assert TurnRelevancy(max_conversation_tokens=100).signature() == base
    assert set(ArgumentCorrectness().signature()["prompts"]) == {"argument_correctness"}
