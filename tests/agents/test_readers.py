"""The readers of scorers.agents: one conversation, written in each format from that format's documentation, reads
as the same Conversation; a list of calls in any call shape reads as the same calls; malformed input is a
ScorerInputError naming the message, call or span and what is wrong."""

from __future__ import annotations

import json
import pickle
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from scorers.agents import Conversation, FrozenDict, Message, ToolCall, freeze, read_conversation, read_tool_calls
from scorers.agents.readers import CallLimitError
from scorers.errors import ScorerInputError

FIXTURES = Path(__file__).parent / "fixtures"

#: Each fixture holds the same conversation, written from the documentation of its format:
FORMATS = {
    # https://platform.openai.com/docs/guides/function-calling (Chat Completions: tool_calls, role "tool")
    # https://platform.openai.com/docs/api-reference/chat/create
    "openai_chat.json": "OpenAI chat",
    # https://platform.openai.com/docs/guides/function-calling (Responses: function_call, function_call_output)
    # https://platform.openai.com/docs/api-reference/responses/object (output items: message, reasoning)
    "openai_responses.json": "OpenAI Responses",
    # https://platform.claude.com/docs/en/agents-and-tools/tool-use/implement-tool-use (tool_use, tool_result)
    "anthropic.json": "Anthropic",
    # https://docs.langchain.com/oss/python/langchain-messages
    # https://reference.langchain.com/python/langchain-core/messages/ai/AIMessage (tool_calls: name, args, id)
    "langchain.json": "LangChain (model_dump)",
    # https://reference.langchain.com/python/langchain-core/load (dumpd: {"lc": 1, "type": "constructor", ...})
    "langchain_serialised.json": "LangChain (serialised)",
    # https://opentelemetry.io/docs/specs/semconv/gen-ai/gen-ai-spans/ (inference spans, gen_ai.*.messages)
    # https://opentelemetry.io/docs/specs/semconv/gen-ai/gen-ai-input-messages.json (parts: text, tool_call, ...)
    # https://github.com/open-telemetry/semantic-conventions-genai/blob/main/docs/gen-ai/execute-tool.md
    # https://opentelemetry.io/docs/specs/otlp/#json-protobuf-encoding (resourceSpans, AnyValue, intValue as text)
    "otel_genai.json": "OpenTelemetry GenAI (OTLP JSON)",
}

PARIS = ToolCall("get_weather", freeze({"city": "Paris", "unit": "celsius"}), "call_1")
TOKYO = ToolCall("get_weather", freeze({"city": "Tokyo", "unit": "celsius"}), "call_2")
TIME = ToolCall("get_time", freeze({"timezone": "Asia/Tokyo"}), "call_3")
EXPECTED = Conversation(
    (
        Message("system", "You are a travel assistant."),
        Message("user", "What's the weather in Paris and in Tokyo, and what time is it in Tokyo?"),
        Message("assistant", "Let me check.", (PARIS, TOKYO, TIME)),
        Message("tool", "18°C, cloudy", tool_call_id="call_1", name="get_weather"),
        Message("tool", "24°C, sunny", tool_call_id="call_2", name="get_weather"),
        Message("tool", "21:05", tool_call_id="call_3", name="get_time"),
        Message("assistant", "Paris is 18°C and cloudy; Tokyo is 24°C and sunny, and it is 21:05 there."),
    )
)


def fixture(name: str) -> Any:
    return json.loads((FIXTURES / name).read_text(encoding="utf-8"))


def conversation(value: Any) -> Conversation:
    return read_conversation(value, scorer="Test", field="output")


def calls(value: Any) -> tuple[ToolCall, ...]:
    return read_tool_calls(value, scorer="Test", field="expected")


def test_every_fixture_is_listed() -> None:
    assert sorted(FORMATS) == sorted(p.name for p in FIXTURES.glob("*.json"))


@pytest.mark.parametrize("as_text", [False, True], ids=["value", "json-text"])
@pytest.mark.parametrize("name", FORMATS)
def test_each_format_reads_as_the_same_conversation(name: str, as_text: bool) -> None:
    value = fixture(name)
    assert conversation(json.dumps(value) if as_text else value) == EXPECTED


@pytest.mark.parametrize("name", FORMATS)
def test_the_calls_of_each_format_are_the_assistants_calls_in_order(name: str) -> None:
    assert calls(fixture(name)) == (PARIS, TOKYO, TIME)


def test_a_read_conversation_reads_again_from_its_openai_form_pickles_and_hashes() -> None:
    read = conversation(fixture("anthropic.json"))
    assert conversation(read.to_list()) == read
    assert conversation(json.dumps(read.to_list())) == read
    copy = pickle.loads(pickle.dumps(read))
    assert copy == read and hash(copy) == hash(read)
    assert isinstance(copy.tool_calls[0].arguments, FrozenDict)
    assert {read, copy} == {read}
    with pytest.raises(TypeError, match="read-only"):
        read.tool_calls[0].arguments["city"] = "Lyon"  # type: ignore[index]


# --- call shapes


@pytest.mark.parametrize(
    "shape",
    [
        {"id": "c", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}},
        {"name": "get_weather", "arguments": {"city": "Paris"}, "id": "c"},
        {"name": "get_weather", "arguments": '{"city": "Paris"}', "id": "c"},
        {"name": "get_weather", "args": {"city": "Paris"}, "id": "c", "type": "tool_call"},  # LangChain, Ragas
        {"name": "get_weather", "input_parameters": {"city": "Paris"}, "id": "c"},  # DeepEval
        {
            "type": "function_call",
            "id": "fc_1",
            "call_id": "c",
            "name": "get_weather",
            "arguments": '{"city": "Paris"}',
        },
        {"type": "tool_use", "id": "c", "name": "get_weather", "input": {"city": "Paris"}},  # Anthropic
        {"type": "tool_call", "id": "c", "name": "get_weather", "arguments": {"city": "Paris"}},  # OpenTelemetry part
    ],
    ids=["openai", "flat-object", "flat-text", "args", "input_parameters", "responses", "anthropic", "otel-part"],
)
def test_each_call_shape_reads_as_the_same_call(shape: dict[str, Any]) -> None:
    expected = (ToolCall("get_weather", freeze({"city": "Paris"}), "c"),)
    assert calls([shape]) == expected
    assert calls(json.dumps([shape])) == expected
    assert calls({"tool_calls": [shape]}) == expected


def test_calls_without_arguments_or_id_and_empty_values() -> None:
    assert (
        calls([{"name": "now"}, {"name": "now", "arguments": ""}, {"name": "now", "arguments": None}])
        == (ToolCall("now"),) * 3
    )
    assert calls([{"name": "tag", "arguments": '["a", "b"]'}])[0].arguments == ("a", "b")
    for empty in (None, [], "[]", "null", {"tool_calls": None}, {"tool_calls": []}):
        assert calls(empty) == ()
    assert calls([{"role": "user", "content": "hi"}]) == ()


# --- formats, beyond the shared conversation


def test_a_whole_responses_response_reads_its_output() -> None:
    response = {
        "id": "resp_1",
        "object": "response",
        "status": "completed",
        "output": [
            {"type": "reasoning", "id": "rs_1", "summary": []},
            {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "get_weather", "arguments": "{}"},
        ],
    }
    assert conversation(response) == Conversation(
        (Message("assistant", None, (ToolCall("get_weather", id="call_1"),)),)
    )


#: An assistant's reply in Anthropic's Messages API: text, then two calls (the content blocks of one message).
ANTHROPIC_CONTENT = [
    {"type": "text", "text": "Let me check both."},
    {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}},
    {"type": "tool_use", "id": "toolu_2", "name": "get_time", "input": {"tz": "Europe/Paris"}},
]
ANTHROPIC_CALLS = (
    ToolCall("get_weather", freeze({"city": "Paris"}), "toolu_1"),
    ToolCall("get_time", freeze({"tz": "Europe/Paris"}), "toolu_2"),
)
#: https://docs.anthropic.com/en/api/messages (the response: a Message object)
ANTHROPIC_MESSAGE = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-4-5",
    "content": ANTHROPIC_CONTENT,
    "stop_reason": "tool_use",
    "usage": {"input_tokens": 10, "output_tokens": 20},
}
#: https://platform.openai.com/docs/api-reference/chat/object (a ChatCompletion with one choice)
CHAT_COMPLETION = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "model": "gpt-4o",
    "choices": [
        {
            "index": 0,
            "finish_reason": "tool_calls",
            "message": {
                "role": "assistant",
                "content": "Let me check both.",
                "tool_calls": [
                    {"id": "toolu_1", "type": "function", "function": {"name": n, "arguments": json.dumps(a)}}
                    for n, a in (("get_weather", {"city": "Paris"}), ("get_time", {"tz": "Europe/Paris"}))
                ],
            },
        }
    ],
}
CHAT_COMPLETION["choices"][0]["message"]["tool_calls"][1]["id"] = "toolu_2"  # type: ignore[index]


@pytest.mark.parametrize(
    "value", [ANTHROPIC_CONTENT, ANTHROPIC_MESSAGE, CHAT_COMPLETION], ids=["content", "message", "completion"]
)
def test_anthropic_content_a_whole_message_and_a_whole_chat_completion_read(value: Any) -> None:
    reply = Conversation((Message("assistant", "Let me check both.", ANTHROPIC_CALLS),))
    for given in (value, json.dumps(value)):
        assert calls(given) == ANTHROPIC_CALLS
        assert conversation(given) == reply


def test_a_chat_completion_of_several_choices_or_a_streamed_chunk_is_refused() -> None:
    two = {**CHAT_COMPLETION, "choices": CHAT_COMPLETION["choices"] * 2}
    with pytest.raises(ScorerInputError, match=r"is a ChatCompletion with 2 choices, not one: give one choice's"):
        calls(two)
    chunk = {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": "Hi"}}]}
    with pytest.raises(ScorerInputError, match=r"at choices\[0\]: a choice with no message object"):
        conversation(chunk)


def test_openai_legacy_function_call_and_function_result() -> None:
    read = conversation(
        [
            {"role": "user", "content": "Weather in Paris?"},
            {
                "role": "assistant",
                "content": None,
                "function_call": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
            },
            {"role": "function", "name": "get_weather", "content": "18°C"},
        ]
    )
    assert read.messages[1].tool_calls == (ToolCall("get_weather", freeze({"city": "Paris"})),)
    assert read.messages[2] == Message("tool", "18°C", name="get_weather")


def test_openai_content_parts_join_their_text_and_skip_images() -> None:
    read = conversation(
        [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "What is in"},
                    {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}},
                    {"type": "text", "text": "this picture?"},
                ],
            },
            {"role": "assistant", "content": [{"type": "refusal", "refusal": "I can't tell."}]},
        ]
    )
    assert [m.content for m in read] == ["What is in\nthis picture?", "I can't tell."]


def test_anthropic_system_blocks_errors_and_text_after_results() -> None:
    read = conversation(
        {
            "system": [{"type": "text", "text": "Be brief."}],
            "messages": [
                {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "lookup", "input": {}}]},
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": "t1", "content": "timeout", "is_error": True},
                        {"type": "text", "text": "Try again?"},
                    ],
                },
            ],
        }
    )
    assert read.messages[0] == Message("system", "Be brief.")
    assert read.messages[2] == Message("tool", "timeout", tool_call_id="t1", name="lookup", is_error=True)
    assert read.messages[3] == Message("user", "Try again?")
    assert read.to_list()[2]["is_error"] is True
    assert conversation(read.to_list()) == read


def test_langchain_messages_to_dict_form_chat_messages_and_failed_tools() -> None:
    read = conversation(
        [
            {"type": "chat", "data": {"content": "Be brief.", "role": "developer"}},
            {
                "type": "ai",
                "data": {"content": "", "tool_calls": [{"name": "lookup", "args": {"q": "x"}, "id": "t1"}]},
            },
            {"type": "tool", "data": {"content": "boom", "tool_call_id": "t1", "status": "error"}},
        ]
    )
    assert [m.role for m in read] == ["developer", "assistant", "tool"]
    assert read.messages[2].is_error and read.messages[2].name == "lookup"


def test_langchain_chunks_read_like_messages() -> None:
    chunk = {"lc": 1, "type": "constructor", "id": ["langchain", "schema", "messages", "AIMessageChunk"]}
    read = conversation([{**chunk, "kwargs": {"content": "Hello", "type": "AIMessageChunk"}}])
    assert read == Conversation((Message("assistant", "Hello"),))


def otlp(*spans: dict[str, Any]) -> dict[str, Any]:
    return {"resourceSpans": [{"scopeSpans": [{"spans": list(spans)}]}]}


def tool_span(start: int, call_id: str | None, result: str, *, failed: bool = False) -> dict[str, Any]:
    attributes = [
        {"key": "gen_ai.operation.name", "value": {"stringValue": "execute_tool"}},
        {"key": "gen_ai.tool.name", "value": {"stringValue": "lookup"}},
        {"key": "gen_ai.tool.call.arguments", "value": {"stringValue": '{"q": "x"}'}},
        {"key": "gen_ai.tool.call.result", "value": {"stringValue": result}},
    ]
    if call_id is not None:
        attributes.append({"key": "gen_ai.tool.call.id", "value": {"stringValue": call_id}})
    return {
        "name": "execute_tool lookup",
        "startTimeUnixNano": str(start),
        "attributes": attributes,
        "status": {"code": 2} if failed else {},
    }


def test_otel_tool_spans_alone_read_as_calls_and_results_in_start_order() -> None:
    read = conversation(otlp(tool_span(20, "b", "second", failed=True), tool_span(10, "a", "first")))
    lookup = freeze({"q": "x"})
    assert read == Conversation(
        (
            Message("assistant", None, (ToolCall("lookup", lookup, "a"),)),
            Message("tool", "first", tool_call_id="a", name="lookup"),
            Message("assistant", None, (ToolCall("lookup", lookup, "b"),)),
            Message("tool", "second", tool_call_id="b", name="lookup", is_error=True),
        )
    )
    assert calls(otlp(tool_span(1, None, "r"), tool_span(2, None, "r"))) == (ToolCall("lookup", lookup),) * 2


# --- malformed input: a ScorerInputError naming where and what

CHAT_CALL = {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}
BAD_ARGUMENTS = {"id": "c2", "type": "function", "function": {"name": "get_weather", "arguments": "{city: Paris}"}}
DEEP: list[Any] = []
for _ in range(100_000):
    DEEP = [DEEP]


def chat_span(**attributes: str) -> dict[str, Any]:
    return {
        "name": "chat",
        "startTimeUnixNano": "1",
        "attributes": [{"key": f"gen_ai.{k}.messages", "value": {"stringValue": v}} for k, v in attributes.items()],
    }


@pytest.mark.parametrize(
    ("read", "value", "problem"),
    [
        (
            conversation,
            [{"role": "user", "content": "?"}, {"role": "assistant", "tool_calls": [CHAT_CALL, BAD_ARGUMENTS]}],
            "at message 1, call 1 ('get_weather'): arguments are not valid JSON "
            "(Expecting property name enclosed in double quotes at character 1)",
        ),
        (
            calls,
            [CHAT_CALL, {"name": "get_time", "arguments": '{"tz": "UTC"'}],
            "at call 1 ('get_time'): arguments are not valid JSON (Expecting ',' delimiter at character 12)",
        ),
        (
            conversation,
            [
                {"role": "assistant", "tool_calls": [CHAT_CALL]},
                {"role": "tool", "tool_call_id": "c1", "content": "18°C"},
                {"role": "tool", "tool_call_id": "c9", "content": "?"},
            ],
            "at message 2: a tool result for the call id 'c9', which no earlier call has",
        ),
        (
            conversation,
            [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "x"}]}],
            "at message 0, part 0: a tool result for the call id 't1', which no earlier call has",
        ),
        (
            conversation,
            [{"type": "function_call_output", "call_id": "call_7", "output": "x"}],
            "at message 0: a tool result for the call id 'call_7', which no earlier call has",
        ),
        (
            conversation,
            [{"role": "user", "content": "hi"}, {"role": "bot", "content": "hello"}],
            "at message 1: unknown role 'bot' (accepted: system, developer, user, assistant, tool, and the legacy "
            "function)",
        ),
        (
            conversation,
            [{"type": "chat", "data": {"content": "hi", "role": "narrator"}}],
            "at message 0: unknown role 'narrator'",
        ),
        (conversation, [{"content": "hi"}], "at message 0: has no 'role' and an unknown type None"),
        (calls, [CHAT_CALL, {"arguments": "{}"}], "at call 1: a call with no name"),
        (
            conversation,
            [
                {"role": "user", "content": "?"},
                {"role": "assistant", "tool_calls": [{"function": {"arguments": "{}"}}]},
            ],
            "at message 1, call 0: a call with no name",
        ),
        (
            conversation,
            [{"role": "assistant", "tool_calls": [CHAT_CALL]}, {"role": "assistant", "tool_calls": [CHAT_CALL]}],
            "at message 1: call 0 ('get_weather') has the id 'c1' of an earlier call (at message 0)",
        ),
        (conversation, 42, "is of type int, not a conversation (accepted: a list of OpenAI chat, OpenAI Responses,"),
        (calls, 4.5, "is of type float, not a list of tool calls (accepted: a list of calls (OpenAI"),
        (
            conversation,
            {"user": "hi"},
            "is an object with none of the keys 'messages', 'output', 'choices', 'role', 'resourceSpans'",
        ),
        (conversation, "Hello there", "is text that is not JSON (Expecting value at character 0); accepted:"),
        (conversation, [{"role": "user", "content": 7}], "at message 0: content is of type int, not text or a list"),
        (
            conversation,
            [{"role": "user", "content": [{"type": "hologram"}]}],
            "at message 0, part 0: a content part of unknown type 'hologram'",
        ),
        (
            conversation,
            [{"type": "ai", "content": "", "invalid_tool_calls": [{"name": "f", "args": "{", "error": "bad JSON"}]}],
            "at message 0: LangChain could not parse a call ('f'): bad JSON",
        ),
        (
            conversation,
            [{"lc": 1, "type": "constructor", "id": ["langchain", "prompts", "PromptTemplate"], "kwargs": {}}],
            "at message 0: a LangChain serialised object of class 'PromptTemplate', not a message",
        ),
        (conversation, [{"role": "user", "content": "caf\ud800"}], "at message 0: the content holds a lone surrogate"),
        (
            conversation,
            '[{"role": "user", "content": "ok"}, {"role": "user", "content": "\\ud83d"}]',
            "at message 1: the content holds a lone surrogate (U+D83D at character 0)",
        ),
        (
            calls,
            [{"name": "f", "arguments": {"q": "\udc00"}}],
            "at call 0: the arguments holds a lone surrogate",
        ),
        (conversation, "[" * 100_000 + "]" * 100_000, "is nested too deeply to read"),
        (calls, [{"name": "f", "arguments": {"q": DEEP}}], "is nested too deeply to read"),
        (
            conversation,
            otlp(chat_span(input="[{]")),
            "at span 0 ('chat'): gen_ai.input.messages is not valid JSON",
        ),
        (
            conversation,
            otlp(chat_span(output='[{"role": "robot", "parts": []}]')),
            "at span 0 ('chat'), gen_ai.output.messages, message 0: unknown role 'robot'",
        ),
        (
            conversation,
            otlp(tool_span(5, "a", "x"), {"name": "late", "startTimeUnixNano": "soon"}),
            "at span 1: startTimeUnixNano is not an integer",
        ),
        # values Python's int and json refuse: each the row's error, never an OverflowError or ValueError
        (conversation, otlp({"startTimeUnixNano": 1e400}), "at span 0: startTimeUnixNano is not an integer"),
        (
            conversation,
            otlp({"name": "n", "attributes": [{"key": "k", "value": {"intValue": 1e400}}]}),
            "at span 0 ('n'): an attribute's intValue is not OTLP JSON",
        ),
        (
            calls,
            [{"name": "f", "arguments": '{"n": ' + "1" * 5_000 + "}"}],
            "at call 0 ('f'): arguments are not valid JSON (it holds an integer of more than 4,300 digits, more than "
            "Python reads from text; sys.set_int_max_str_digits raises the limit)",
        ),
        (
            conversation,
            '[{"role": "user", "content": ' + "7" * 5_000 + "}]",
            "is JSON text that cannot be read: it holds an integer of more than 4,300 digits",
        ),
        (calls, [{"name": "f", "arguments": {"n": 10**5_000}}], "at call 0: the arguments holds an integer of more"),
        (
            conversation,
            [
                {"type": "function_call", "call_id": "c1", "name": "f"},
                {"type": "function_call_output", "call_id": "c1", "output": {"n": 10**5_000}},
            ],
            "at message 1: the tool result holds an integer of more than 4,300 digits",
        ),
        (conversation, [{"role": 10**5_000}], "at message 0: unknown role an integer of about 5,000 digits"),
        (conversation, [{"role": [10**5_000]}], "at message 0: unknown role a list holding an integer too long"),
    ],
    ids=lambda v: None if not isinstance(v, str) else v[:40],
)
def test_malformed_input_names_where_and_what(read: Callable[[Any], Any], value: Any, problem: str) -> None:
    field = "output" if read is conversation else "expected"
    with pytest.raises(ScorerInputError) as caught:
        read(value)
    assert caught.value.field == field and caught.value.scorer == "Test"
    assert caught.value.problem.startswith(problem), caught.value.problem


def test_a_call_limit_refuses_while_reading() -> None:
    items = [{"type": "function_call", "call_id": f"c{i}", "name": "f", "arguments": "{}"} for i in range(100_000)]
    # past the limit the calls are malformed: had reading gone on, that would be the error
    broken = items[:1_001] + [{"type": "function_call", "call_id": "x", "arguments": "{"}] * 10
    for value, held in (
        (broken, "1,011 tool calls, more than"),
        ([{"role": "user", "content": "?"}, *broken], "more tool calls than"),
    ):
        with pytest.raises(CallLimitError) as caught:
            read_tool_calls(value, scorer="Test", field="output", max_calls=1_000)
        assert caught.value.problem == f"holds {held} max_calls=1,000"
        with pytest.raises(CallLimitError):
            read_conversation(value, scorer="Test", field="output", max_calls=1_000)
    assert len(calls(items)) == 100_000  # no limit unless asked
    assert len(read_tool_calls(items[:1_000], scorer="Test", field="output", max_calls=1_000)) == 1_000


def test_huge_values_read_in_linear_time() -> None:
    turns: list[dict[str, Any]] = [{"role": "user", "content": "x" * 5_000_000}]
    for i in range(4_000):
        call = {"id": f"c{i}", "type": "function", "function": {"name": "f", "arguments": json.dumps({"i": i})}}
        turns += [
            {"role": "assistant", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"c{i}", "content": "ok"},
        ]
    spans = [tool_span(i, f"c{i}", "ok") for i in range(2_000)]
    started = time.perf_counter()
    read = conversation(json.dumps(turns))
    traced = conversation(otlp(*spans))
    elapsed = time.perf_counter() - started
    assert len(read) == 8_001 and len(traced.tool_calls) == 2_000
    assert elapsed < 5, f"{elapsed:.1f}s: reading is not linear"


def _paths(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield path
    children = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, child in children:
        yield from _paths(child, (*path, key))


def _replaced(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    copy = value.copy()
    copy[path[0]] = _replaced(value[path[0]], path[1:], new)
    return copy


@pytest.mark.parametrize("name", FORMATS)
def test_any_part_of_a_fixture_replaced_by_a_wrong_value_reads_or_is_a_scorer_input_error(name: str) -> None:
    document = fixture(name)
    for path in _paths(document):
        for wrong in (None, 7, [[1]], {"type": ["unhashable"]}):
            for read in (conversation, calls):
                try:
                    read(_replaced(document, path, wrong))
                except ScorerInputError:
                    pass


# --- Model Context Protocol calls: kept apart from function calls where the format says which they are

#: src/anthropic/types/beta/beta_mcp_tool_use_block.py and beta_mcp_tool_result_block.py (anthropic-sdk-python):
#: the MCP connector runs the tool within the response, so the call and its result are blocks of one Message.
ANTHROPIC_MCP_MESSAGE = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "content": [
        {"type": "text", "text": "Searching the docs."},
        {"type": "mcp_tool_use", "id": "mcptoolu_1", "name": "search", "server_name": "docs", "input": {"q": "x"}},
        {
            "type": "mcp_tool_result",
            "tool_use_id": "mcptoolu_1",
            "is_error": False,
            "content": [{"type": "text", "text": "3 pages"}],
        },
        {"type": "text", "text": "Found 3 pages."},
    ],
    "usage": {"input_tokens": 50, "output_tokens": 10},
}
MCP_SEARCH = ToolCall("search", freeze({"q": "x"}), "mcptoolu_1", "mcp", "docs")
#: src/openai/types/responses/response_output_item.py (openai-python): McpListTools, McpApprovalRequest, McpCall
#: (``error``: text in earlier versions, an object of McpToolCallError's types since).
RESPONSES_MCP = {
    "id": "resp_1",
    "object": "response",
    "output": [
        {
            "type": "mcp_list_tools",
            "id": "mcpl_1",
            "server_label": "docs",
            "tools": [{"name": "search", "input_schema": {"type": "object"}}],
        },
        {
            "type": "mcp_approval_request",
            "id": "mcpr_1",
            "name": "search",
            "arguments": '{"q": "x"}',
            "server_label": "docs",
        },
        {
            "type": "mcp_call",
            "id": "mcp_1",
            "name": "search",
            "arguments": '{"q": "x"}',
            "server_label": "docs",
            "output": "3 pages",
            "error": None,
            "status": "completed",
        },
        {
            "type": "mcp_call",
            "id": "mcp_2",
            "name": "fetch",
            "arguments": '{"url": "u"}',
            "server_label": "docs",
            "output": None,
            "error": {"type": "mcp_tool_execution_error", "content": "404"},
            "status": "failed",
        },
        {
            "type": "mcp_call",
            "id": "mcp_3",
            "name": "fetch",
            "arguments": "{}",
            "server_label": "docs",
            "error": "down",
        },
        {"type": "message", "id": "msg_1", "role": "assistant", "content": [{"type": "output_text", "text": "Done."}]},
    ],
}
#: MCP's JSON-RPC messages (modelcontextprotocol.io specification, server/tools): a tools/call request, its
#: result (content blocks and isError), an error response, and other methods (skipped).
MCP_RECORDS = [
    {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18"}},
    {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    {"jsonrpc": "2.0", "id": 2, "result": {"tools": [{"name": "search", "inputSchema": {"type": "object"}}]}},
    {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "search", "arguments": {"q": "x"}}},
    {"jsonrpc": "2.0", "id": 3, "result": {"content": [{"type": "text", "text": "3 pages"}], "isError": False}},
    {"jsonrpc": "2.0", "id": "c4", "method": "tools/call", "params": {"name": "fetch", "arguments": {"url": "u"}}},
    {"jsonrpc": "2.0", "id": "c4", "result": {"content": [{"type": "text", "text": "404"}], "isError": True}},
    {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "fetch"}},
    {"jsonrpc": "2.0", "id": 5, "error": {"code": -32602, "message": "Unknown tool: fetch"}},
]


def test_anthropic_mcp_blocks_read_as_an_mcp_call_with_its_result_after_its_message() -> None:
    read = conversation(ANTHROPIC_MCP_MESSAGE)
    assert read == Conversation(
        (
            Message("assistant", "Searching the docs.\nFound 3 pages.", (MCP_SEARCH,)),
            Message("tool", "3 pages", tool_call_id="mcptoolu_1", name="search"),
        )
    )
    assert conversation(read.to_list()) == read  # the OpenAI form keeps the kind and the server
    assert read.to_list()[0]["tool_calls"][0] == {
        "type": "mcp",
        "function": {"name": "search", "arguments": '{"q": "x"}'},
        "server_label": "docs",
        "id": "mcptoolu_1",
    }
    assert calls(ANTHROPIC_MCP_MESSAGE["content"]) == (MCP_SEARCH,)


def test_responses_mcp_calls_read_with_their_outputs_and_errors_and_listings_are_skipped() -> None:
    read = conversation(RESPONSES_MCP)
    search = ToolCall("search", freeze({"q": "x"}), "mcp_1", "mcp", "docs")
    fetch = ToolCall("fetch", freeze({"url": "u"}), "mcp_2", "mcp", "docs")
    down = ToolCall("fetch", FrozenDict(), "mcp_3", "mcp", "docs")
    assert read == Conversation(
        (
            Message("assistant", None, (search,)),
            Message("tool", "3 pages", tool_call_id="mcp_1", name="search"),
            Message("assistant", None, (fetch,)),
            Message("tool", "404", tool_call_id="mcp_2", name="fetch", is_error=True),
            Message("assistant", None, (down,)),
            Message("tool", "down", tool_call_id="mcp_3", name="fetch", is_error=True),
            Message("assistant", "Done."),
        )
    )
    assert calls(RESPONSES_MCP) == (search, fetch, down)
    assert calls([RESPONSES_MCP["output"][2]]) == (search,)  # a bare list of mcp_call items


def test_mcp_json_rpc_records_read_as_mcp_calls_and_results() -> None:
    search = ToolCall("search", freeze({"q": "x"}), "3", "mcp")
    fetch = ToolCall("fetch", freeze({"url": "u"}), "c4", "mcp")
    unknown = ToolCall("fetch", FrozenDict(), "5", "mcp")
    assert conversation(MCP_RECORDS) == Conversation(
        (
            Message("assistant", None, (search,)),
            Message("tool", "3 pages", tool_call_id="3", name="search"),
            Message("assistant", None, (fetch,)),
            Message("tool", "404", tool_call_id="c4", name="fetch", is_error=True),
            Message("assistant", None, (unknown,)),
            Message("tool", "Unknown tool: fetch", tool_call_id="5", name="fetch", is_error=True),
        )
    )
    requests = [record for record in MCP_RECORDS if record.get("method") == "tools/call"]
    assert calls(requests) == (search, fetch, unknown) == calls(MCP_RECORDS)
    assert calls(requests[0]) == (search,) == calls(json.dumps(requests[0]))


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ([{"jsonrpc": "2.0", "id": 1, "method": "tools/call"}], "at call 0: a tools/call request with no params"),
        (
            [{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"arguments": {}}}],
            "at call 0: a call with no name",
        ),
        (
            [{"type": "mcp_call", "id": "m", "name": "f", "arguments": "{}", "server_label": 7}],
            "at call 0 ('f'): server label is of type int, not text",
        ),
    ],
)
def test_malformed_mcp_records_name_where_and_what(value: Any, problem: str) -> None:
    with pytest.raises(ScorerInputError) as caught:
        calls(value)
    assert caught.value.problem.startswith(problem), caught.value.problem
