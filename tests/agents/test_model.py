"""The value type of scorers.agents: frozen all the way down, hashable, picklable, and back to JSON as read."""

from __future__ import annotations

import json
import pickle
from typing import Callable

import pytest

from scorers.agents import Conversation, FrozenDict, Message, ToolCall, Usage, freeze, thaw


def test_freeze_and_thaw_round_trip_json() -> None:
    value = {"city": "Paris", "days": [1, 2, {"hour": 9}], "exact": None}
    frozen = freeze(value)
    assert isinstance(frozen, FrozenDict) and frozen["days"] == (1, 2, FrozenDict({"hour": 9}))
    assert thaw(frozen) == value
    assert json.loads(json.dumps(frozen)) == value
    assert hash(frozen) == hash(freeze(dict(reversed(list(value.items())))))


@pytest.mark.parametrize(
    "change",
    [
        lambda d: d.__setitem__("a", 2),
        lambda d: d.__delitem__("a"),
        lambda d: d.update(b=1),
        lambda d: d.pop("a"),
        lambda d: d.setdefault("b", 1),
        lambda d: d.clear(),
    ],
)
def test_a_frozen_dict_is_read_only(change: Callable[[FrozenDict], object]) -> None:
    frozen = FrozenDict(a=1)
    with pytest.raises(TypeError, match="read-only"):
        change(frozen)
    assert frozen == {"a": 1}


def test_messages_and_conversations_hash_pickle_and_answer_calls() -> None:
    call = ToolCall("lookup", freeze({"q": "x"}), "t1")
    failed = Message("tool", "timeout", tool_call_id="t1", name="lookup", is_error=True)
    conversation = Conversation((Message("user", "?"), Message("assistant", None, (call,)), failed))
    assert pickle.loads(pickle.dumps(conversation)) == conversation
    assert hash(pickle.loads(pickle.dumps(conversation))) == hash(conversation)
    assert conversation.result_of(call) is failed
    assert conversation.result_of(ToolCall("lookup")) is None
    assert conversation.by_role("user", "tool") == (conversation.messages[0], failed)
    assert conversation.to_list()[2] == {
        "role": "tool",
        "content": "timeout",
        "tool_call_id": "t1",
        "name": "lookup",
        "is_error": True,
    }
    assert conversation.to_list()[1]["tool_calls"] == [
        {"type": "function", "function": {"name": "lookup", "arguments": '{"q": "x"}'}, "id": "t1"}
    ]


def test_a_calls_kind_and_server_compare_show_only_when_not_a_functions_and_pickle() -> None:
    function = ToolCall("search", freeze({"q": "x"}), "t1")
    mcp = ToolCall("search", freeze({"q": "x"}), "t1", kind="mcp", server="docs")
    assert function != mcp and function == ToolCall("search", freeze({"q": "x"}), "t1", "function")
    assert repr(function) == "ToolCall(name='search', arguments=FrozenDict({'q': 'x'}), id='t1')"
    assert repr(mcp).endswith("id='t1', kind='mcp', server='docs')")
    assert pickle.loads(pickle.dumps(mcp)) == mcp and hash(pickle.loads(pickle.dumps(mcp))) == hash(mcp)
    assert mcp.to_dict()["type"] == "mcp" and mcp.to_dict()["server_label"] == "docs"
    assert function.to_dict()["type"] == "function" and "server_label" not in function.to_dict()


def test_usage_is_kept_with_a_conversation_but_not_compared() -> None:
    usage = Usage(120, 30, 20, None, source="ChatCompletion usage")
    messages = (Message("assistant", "hi"),)
    read = Conversation(messages, usage=usage)
    assert read == Conversation(messages) and hash(read) == hash(Conversation(messages))
    assert pickle.loads(pickle.dumps(read)).usage == usage
    assert usage.to_dict() == {
        "input_tokens": 120,
        "output_tokens": 30,
        "cache_read_tokens": 20,
        "cache_write_tokens": None,
        "total_tokens": 150,
        "responses": 1,
        "reported": 1,
        "source": "ChatCompletion usage",
    }
    assert Usage(None, 5).total_tokens is None  # unknown, never counted as 0
