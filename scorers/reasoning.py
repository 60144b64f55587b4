"""Reasoning text in a model's output: told apart from the answer, so that it is never judged or measured by mistake.

A reasoning model writes its thinking before its answer, inside tags (``<think>…</think>``, ``<thinking>``,
``<reasoning>``: :data:`REASONING_TAGS`), or its provider returns the thinking in a field of its own (OpenAI-compatible
``reasoning_content``/``reasoning``, Anthropic ``thinking`` blocks, Responses ``reasoning`` items). :func:`split_reasoning`
separates tagged text into the answer and the reasoning:

- every ``<tag>…</tag>`` block is reasoning; the text around the blocks is the answer (its ends stripped);
- a block opened and never closed (the model ran out of tokens while thinking) leaves **no answer**: the answer is
  ``""`` and :attr:`Reasoning.incomplete` is true, as lighteval counts it, rather than a half-thought scored as one;
- a closing tag with no opening one (chat templates that put ``<think>`` in the prompt, so the output starts
  inside the block) makes everything before it reasoning: only what follows is the answer;
- text without any of the tags is the answer as it is, byte for byte.

>>> split_reasoning("<think>2 + 2 is 4, surely.</think>\\n\\nThe answer is 4.")
Reasoning(answer='The answer is 4.', reasoning='2 + 2 is 4, surely.', incomplete=False)
>>> split_reasoning("<think>Let me count: 1, 2, 3")
Reasoning(answer='', reasoning='Let me count: 1, 2, 3', incomplete=True)
>>> split_reasoning("so it is 4.</think>The answer is 4.").answer
'The answer is 4.'
>>> split_reasoning("No tags at all.", tags=("think",))
Reasoning(answer='No tags at all.', reasoning=None, incomplete=False)
"""

from __future__ import annotations

import functools
import re
from typing import Any, Mapping, NamedTuple, Sequence

from .params import param

__all__ = [
    "REASONING_TAGS",
    "Reasoning",
    "Unanswered",
    "split_reasoning",
    "reasoning_end",
    "message_reasoning",
    "split_message",
    "strip_reasoning_param",
    "without_reasoning",
]

#: The tags whose blocks are reasoning by default (``<think>`` of DeepSeek-R1, Qwen3 and most open reasoning models,
#: ``<thinking>`` and ``<reasoning>`` of prompted chain of thought).
REASONING_TAGS: tuple[str, ...] = ("think", "thinking", "reasoning")


class Reasoning(NamedTuple):
    """An output told apart: the ``answer``, the ``reasoning`` (``None``: there was none) and whether a reasoning
    block was left open (``incomplete``: the answer is then empty)."""

    answer: str
    reasoning: str | None = None
    incomplete: bool = False


@functools.lru_cache(maxsize=32)
def _tag_pattern(tags: tuple[str, ...]) -> re.Pattern[str]:
    """Any opening or closing tag of ``tags`` (case-insensitive, spaces inside the brackets allowed)."""
    names = "|".join(re.escape(tag) for tag in sorted(tags, key=len, reverse=True))
    return re.compile(rf"<\s*(/?)\s*({names})\s*>", re.IGNORECASE)


def split_reasoning(text: str, tags: Sequence[str] = REASONING_TAGS) -> Reasoning:
    """``text`` told apart into answer and reasoning (see the module docstring for the rules).

    >>> split_reasoning("<thinking>a</thinking>B<think>c</think> D")
    Reasoning(answer='B D', reasoning='a\\n\\nc', incomplete=False)
    """
    if "<" not in text or not tags:
        return Reasoning(text)
    pattern = _tag_pattern(tuple(tags))
    found = pattern.search(text)
    if found is None:
        return Reasoning(text)
    answer: list[str] = []
    thoughts: list[str] = []
    at = 0
    while found is not None:
        closing, tag = found.group(1), found.group(2).lower()
        if closing:  # a closing tag with no opening one: everything so far was reasoning
            thoughts = [*thoughts, *answer, text[at : found.start()]]
            answer = []
            at = found.end()
        else:
            answer.append(text[at : found.start()])
            end = _closing(pattern, text, found.end(), tag)
            if end is None:  # opened and never closed: no answer
                thoughts.append(text[found.end() :])
                return Reasoning("", _joined(thoughts), True)
            thoughts.append(text[found.end() : end[0]])
            at = end[1]
        found = pattern.search(text, at)
    answer.append(text[at:])
    return Reasoning(" ".join(part.strip() for part in answer if part.strip()), _joined(thoughts))


def reasoning_end(text: str, tags: Sequence[str] = REASONING_TAGS) -> int:
    """Where the last closing reasoning tag of ``text`` ends (``0``: none), so that a reader of the reply's tokens
    skips those of the reasoning.

    >>> reasoning_end("<think>3? no</think>4"), reasoning_end("4")
    (20, 0)
    """
    if "<" not in text or not tags:
        return 0
    ends = [found.end() for found in _tag_pattern(tuple(tags)).finditer(text) if found.group(1)]
    return ends[-1] if ends else 0


class Unanswered(str):
    """The answer of an output whose reasoning never ended: ``""``, holding that ``reasoning``; a scorer scores it as
    the empty answer and its Score says ``incomplete_reasoning: True``.

    >>> answer = Unanswered("Let me count"); (answer == "", answer.reasoning)
    (True, 'Let me count')
    """

    reasoning: str | None

    def __new__(cls, reasoning: str | None) -> "Unanswered":
        answer = super().__new__(cls, "")
        answer.reasoning = reasoning
        return answer

    def __reduce__(self) -> tuple[Any, ...]:
        return Unanswered, (self.reasoning,)


def strip_reasoning_param() -> Any:
    """The ``strip_reasoning`` parameter of a scorer whose ``reasoning_fields`` may hold reasoning (the text metrics;
    a judge takes it as a request setting), declared here once:
    ``strip_reasoning: bool = strip_reasoning_param()``."""
    return param(
        "leave the output's reasoning (<think>, <thinking>, <reasoning> blocks) out of what is scored; a block never "
        "closed scores as an empty answer (metadata incomplete_reasoning)",
        default=True,  # in the signature when off only (Scorer.params): on, untagged outputs score as before
    )


def without_reasoning(row: Mapping[str, Any], names: Sequence[str], *, reasoning_field: bool) -> Mapping[str, Any]:
    """``row`` with the reasoning of its fields ``names`` left out (:func:`split_reasoning`; an unclosed block leaves
    :class:`Unanswered`); ``reasoning_field``: the scorer reads a ``reasoning`` field, which gets the reasoning of
    the first of ``names`` (``""``: none) unless the row gives one. A field holding an assistant message (OpenAI,
    Anthropic: see :func:`split_message`) becomes its answer text, its provider's reasoning fields going to the
    reasoning. ``row`` itself is never changed; it is returned when nothing is.

    >>> without_reasoning({"output": "<think>hm</think>4", "expected": "4"}, ("output",), reasoning_field=True)
    {'output': '4', 'expected': '4', 'reasoning': 'hm'}
    """
    changed: dict[str, Any] | None = None
    for name in names:
        value = row.get(name)
        if type(value) is str:
            if "<" not in value and not reasoning_field:  # no tag: the usual row, untouched
                continue
            split = split_reasoning(value)
        elif isinstance(value, Mapping) and (message := split_message(value)) is not None:
            split = message
        else:
            continue
        if split.answer is not value or split.incomplete:
            changed = dict(row) if changed is None else changed
            changed[name] = Unanswered(split.reasoning) if split.incomplete else split.answer
        if reasoning_field and name == names[0] and row.get("reasoning") is None:
            changed = dict(row) if changed is None else changed
            changed["reasoning"] = split.reasoning or ""
    return row if changed is None else changed


def _closing(pattern: re.Pattern[str], text: str, start: int, tag: str) -> tuple[int, int] | None:
    """Where the closing tag of ``tag`` after ``start`` begins and ends (other tags inside are reasoning too)."""
    for found in pattern.finditer(text, start):
        if found.group(1) and found.group(2).lower() == tag:
            return found.start(), found.end()
    return None


def _joined(thoughts: list[str]) -> str | None:
    kept = [thought.strip() for thought in thoughts if thought.strip()]
    return "\n\n".join(kept) if kept else None


def message_reasoning(message: Mapping[str, Any]) -> str | None:
    """The reasoning a provider returned beside a message's answer, as text, or ``None``: an OpenAI-compatible
    message's ``reasoning_content`` (DeepSeek, vLLM, llama.cpp) or ``reasoning`` (OpenRouter, Ollama), a list of
    content blocks' ``thinking`` (Anthropic), a Responses ``reasoning`` item's ``summary`` texts.

    >>> message_reasoning({"role": "assistant", "content": "4", "reasoning_content": "2 + 2"})
    '2 + 2'
    >>> message_reasoning({"content": [{"type": "thinking", "thinking": "2 + 2"}, {"type": "text", "text": "4"}]})
    '2 + 2'
    >>> message_reasoning({"type": "reasoning", "summary": [{"type": "summary_text", "text": "2 + 2"}]})
    '2 + 2'
    """
    texts: list[str] = []
    for key in ("reasoning_content", "reasoning", "thinking"):
        _collect(message.get(key), texts)
    if message.get("type") == "reasoning":
        _collect(message.get("summary"), texts)
    content = message.get("content")
    if isinstance(content, list):
        for part in content:
            if isinstance(part, Mapping) and part.get("type") in ("thinking", "reasoning", "reasoning_text"):
                _collect(part.get("thinking", part.get("text")), texts)
    return "\n\n".join(texts) if texts else None


def split_message(message: Mapping[str, Any]) -> Reasoning | None:
    """An assistant message told apart (``None``: not an assistant message with text content): its text content (the text
    parts of a list of content parts) without its tagged reasoning is the answer; that reasoning and the
    provider's reasoning fields (:func:`message_reasoning`) are the reasoning, never the answer.

    >>> split_message({"role": "assistant", "content": "4", "reasoning_content": "2 + 2"})
    Reasoning(answer='4', reasoning='2 + 2', incomplete=False)
    >>> split_message({"role": "assistant", "content": [{"type": "thinking", "thinking": "a"}, {"type": "text", "text": "4"}]})
    Reasoning(answer='4', reasoning='a', incomplete=False)
    """
    if message.get("role") != "assistant":
        return None
    content = message.get("content")
    if isinstance(content, list):
        content = "".join(
            str(part.get("text") or "")
            for part in content
            if isinstance(part, Mapping) and part.get("type") in ("text", "output_text")
        )
    if not isinstance(content, str):
        return None
    split = split_reasoning(content)
    reasoning = [text for text in (message_reasoning(message), split.reasoning) if text]
    return Reasoning(split.answer, "\n\n".join(reasoning) if reasoning else None, split.incomplete)


def _collect(value: Any, texts: list[str]) -> None:
    """Append the text of a reasoning value: a string, a ``{"text"|"summary"|"content": ...}`` object, a list of
    them."""
    if isinstance(value, str):
        if value.strip():
            texts.append(value.strip())
    elif isinstance(value, list):
        for item in value:
            _collect(item, texts)
    elif isinstance(value, Mapping):
        for key in ("text", "summary", "content", "thinking"):
            if key in value:
                _collect(value[key], texts)
                return
