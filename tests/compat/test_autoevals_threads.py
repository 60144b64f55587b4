"""autoevals' thread variables and ``trace=``: our prompt's template part equals the one autoevals 0.4.1 sends.

Both libraries' requests go to one LoopbackLLM over real HTTP, on the same thread and template.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, Iterator

import openai
import pytest

from scorers.compat import autoevals as ours
from scorers.testing import LoopbackLLM, Reply

real = pytest.importorskip("autoevals")

END = "END-OF-TEMPLATE"
TEMPLATE = (
    "Thread:\n{{thread}}\nWith system:\n{{thread_with_system}}\nCount: {{thread_count}}\n"
    "First: {{first_message}}\nLast: {{{last_message}}}\nUsers:\n{{user_messages}}\n"
    "Assistants:\n{{& assistant_messages}}\nPairs: {{human_ai_pairs}}\n" + END
)
LONG = "x" * 800
THREADS: dict[str, list[Any]] = {
    "plain": [
        {"role": "user", "content": "Hello, how are you?"},
        {"role": "assistant", "content": "I am doing well, thank you!"},
        {"role": "user", "content": "What is the weather like?"},
        {"role": "assistant", "content": "It is sunny and warm today."},
    ],
    "system": [
        {"role": "system", "content": "PY_AUTOEVALS_SYSTEM_MARKER"},
        {"role": "user", "content": "Hello"},
        {"role": "assistant", "content": "Hi there"},
        {"role": "user", "content": "Can you help me?"},
    ],
    "tool parts": [
        {"role": "user", "content": [{"type": "text", "text": "Find 'x'"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "reasoning", "text": "thinking " * 30},
                {"type": "text", "text": "Searching."},
                {
                    "type": "tool_call",
                    "tool_call_id": "c1",
                    "tool_name": "search",
                    "arguments": {"type": "valid", "value": {"q": "x", "long": LONG}},
                },
                {"type": "tool_call", "tool_call_id": "c2", "tool_name": "fetch", "arguments": {"value": "raw"}},
            ],
        },
        {
            "role": "tool",
            "content": [
                {"type": "tool_result", "tool_call_id": "c1", "output": json.dumps({"hits": [LONG]})},
                {"type": "tool_result", "tool_call_id": "c2", "output": "error: 'not found'"},
                {"type": "tool_result", "tool_call_id": "c9", "tool_name": "other", "output": [{"text": "é"}]},
            ],
        },
        {"role": "assistant", "content": "Nothing found. 🙁"},
    ],
    "openai tool calls": [
        {"role": "user", "content": "Weather in Paris?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "18C"},
        {"role": "assistant", "content": 'It\'s 18C in "Paris".'},
    ],
    "empty": [],
}


class Trace:
    """What autoevals reads a thread from: an async ``get_thread()``."""

    def __init__(self, thread: list[Any]) -> None:
        self.thread = thread
        self.calls = 0

    async def get_thread(self, options: Any = None) -> list[Any]:
        self.calls += 1
        return self.thread


@pytest.fixture
def server() -> Iterator[LoopbackLLM]:
    with LoopbackLLM(default=Reply.choice("Y", reasons="fine"), api_key="sk-loopback") as running:
        client = openai.OpenAI(base_url=running.base_url, api_key="sk-loopback")
        real.init(client)
        ours.init(client=client, default_model="gpt-4o-mini")
        yield running
    real.init(None)
    ours.init()


def template_part(content: str) -> str:
    return content[: content.index(END) + len(END)]


@pytest.mark.parametrize("name", list(THREADS))
def test_thread_variables_render_as_autoevals_renders_them(server: LoopbackLLM, name: str) -> None:
    for library in (real, ours):
        judge = library.LLMClassifier("Thread", TEMPLATE, {"Y": 1, "N": 0}, model="gpt-4o-mini", use_cot=False)
        trace = Trace(THREADS[name])
        assert judge.eval(output="ignored", expected="ignored", trace=trace).score == 1
        assert trace.calls == 1
    theirs, mine = (template_part(request.messages[0]["content"]) for request in server.chat_requests)
    assert mine == theirs


def test_sections_loops_and_indexing_match_autoevals_with_our_loop_syntax(server: LoopbackLLM) -> None:
    thread = THREADS["plain"]
    theirs = real.LLMClassifier(
        "T",
        "Messages:{{#thread}}\n- {{role}}: {{content}}{{/thread}} / {{thread.0}}\n" + END,
        {"Y": 1},
        model="gpt-4o-mini",
        use_cot=False,
    )
    mine = ours.LLMClassifier(
        "T",
        "Messages:{% for m in thread %}\n- {{m.role}}: {{m.content}}{% endfor %} / {{thread.0}}\n" + END,
        {"Y": 1},
        model="gpt-4o-mini",
    )
    theirs.eval(output="", trace=Trace(thread))
    mine.eval(output="", trace=Trace(thread))
    first, second = (template_part(request.messages[0]["content"]) for request in server.chat_requests)
    assert first == second


def test_async_eval_awaits_the_trace(server: LoopbackLLM) -> None:
    judge = ours.LLMClassifier("T", "{{thread_count}} {{last_message}}", {"Y": 1}, use_cot=False)
    trace = Trace(THREADS["system"])
    assert asyncio.run(judge.eval_async(output="", trace=trace)).score == 1
    assert trace.calls == 1
    assert server.chat_requests[0].messages[0]["content"].startswith("3 user: Can you help me?")


def test_the_trace_is_not_read_when_the_template_uses_no_thread_variable(server: LoopbackLLM) -> None:
    trace = Trace(THREADS["plain"])
    ours.LLMClassifier("T", "Output: {{output}}", {"Y": 1}).eval(output="x", expected="y", trace=trace)
    assert trace.calls == 0


def test_compute_thread_template_vars_equals_autoevals() -> None:
    import chevron

    chevron.renderer._html_escape = lambda text: text  # as autoevals sets it
    for thread in THREADS.values():
        filtered = real.thread_utils.filter_system_messages_from_thread(thread)
        theirs = real.thread_utils.compute_thread_template_vars(filtered, thread)
        mine = ours.thread_utils.compute_thread_template_vars(
            ours.thread_utils.filter_system_messages_from_thread(thread), thread
        )
        assert set(mine) == set(theirs)
        for name in theirs:
            assert str(mine[name]) == chevron.render("{{%s}}" % name, {name: theirs[name]}), name
    for text in ("{{thread}}", "{{ thread_count }}", "{%thread%}", "{% if thread %}", "{{output}}", "thread"):
        assert ours.thread_utils.template_uses_thread_variables(
            text
        ) is real.thread_utils.template_uses_thread_variables(text)
