"""Conversations in judge prompts: conversation fields, autoevals' thread variables, and the token budget.

A template declares which of its fields hold a conversation (``fields: {conversation: conversation}``).
Such a field is read by :func:`scorers.agents.readers.read_conversation` (any format it accepts, as a value or
JSON text) and reaches the template as a :class:`ConversationView`: printed whole it is a transcript in our
format (:func:`transcript`); ``.messages`` and ``.tool_calls`` can be looped over.

A template that uses autoevals' thread variables (``{{thread}}``, ``{{thread_count}}``, ``{{first_message}}``,
``{{last_message}}``, ``{{user_messages}}``, ``{{assistant_messages}}``, ``{{human_ai_pairs}}``,
``{{thread_with_system}}``) reads one field, ``thread``, and each variable renders as autoevals 0.4.1
renders it (:func:`thread_variables`).

Either way a conversation whose text passes its token budget (:data:`DEFAULT_MAX_TOKENS` unless the template
says otherwise) is the row's :class:`~scorers.errors.ScorerInputError`: it is never cut. Its tokens are counted
as its UTF-8 bytes (:func:`count_tokens`), a bound no tokenizer exceeds, so CJK text and emoji are never
undercounted (characters / 4 undercounted them 4 to 16 times).

>>> view = conversation_view([{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello!"}],
...                          scorer="Demo", field="conversation")
>>> print(view)
user: Hi
assistant: Hello!
>>> [m["role"] for m in view.messages]
['user', 'assistant']
"""

from __future__ import annotations

import json
import re
from typing import Any, Callable, Iterable, Mapping, Sequence

from ..attachments import shown
from ..errors import ScorerInputError

__all__ = [
    "TOKEN_COUNT",
    "LINE_BREAK",
    "DEFAULT_MAX_TOKENS",
    "THREAD_FIELD",
    "THREAD_VARIABLES",
    "PromptText",
    "ConversationView",
    "MessageView",
    "CallView",
    "ThreadMessage",
    "ThreadMessages",
    "ThreadPairs",
    "conversation_view",
    "transcript",
    "count_tokens",
    "check_budget",
    "budget_metadata",
    "thread_variables",
    "thread_text",
    "template_context",
]

#: How a conversation's tokens are counted against its budget (a score's ``metadata["conversation_tokens"]``
#: says it): its UTF-8 bytes, an upper bound of any tokenizer's count, as each token holds at least one byte.
TOKEN_COUNT = "utf8_bytes"
#: The budget of one conversation, in tokens (:data:`TOKEN_COUNT`), when its template sets none: about 32,000
#: tokens of English text (4 bytes a token), fewer of CJK text (3 bytes a character) or emoji (4 bytes).
DEFAULT_MAX_TOKENS = 128_000
#: The row field the thread variables are computed from.
THREAD_FIELD = "thread"
#: autoevals' thread variables, each computed from the :data:`THREAD_FIELD` field.
THREAD_VARIABLES = (
    "thread",
    "thread_with_system",
    "thread_count",
    "first_message",
    "last_message",
    "user_messages",
    "assistant_messages",
    "human_ai_pairs",
)
#: autoevals cuts a tool call's arguments and a tool result longer than this in the middle.
_AUTOEVALS_TOOL_TEXT = 500


class PromptText:
    """A value a judge prompt shows as its own text (``{{value}}``, ``str(value)``), whatever container it is."""

    __slots__ = ()

    def prompt_text(self) -> str:
        """The text a template prints for the value."""
        raise NotImplementedError

    def __str__(self) -> str:
        return self.prompt_text()


# --------------------------------------------------------------- our transcript
#: Every line break :meth:`str.splitlines` knows (CR LF counted once): LF, CR, VT, FF, the separators FS, GS, RS,
#: NEL (U+0085), LINE SEPARATOR (U+2028) and PARAGRAPH SEPARATOR (U+2029). A prompt shows each as a newline.
LINE_BREAK = re.compile("\r\n|[\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]")
#: The line breaks ``json.dumps(..., ensure_ascii=False)`` leaves as they are (it escapes every other one).
_JSON_UNESCAPED = str.maketrans({"\x85": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"})


def _indented(text: str, prefix: str = "  ") -> str:
    """``text`` with every line break (any of :data:`LINE_BREAK`) a newline followed by ``prefix``: no line
    of the text can start where a transcript's role lines start."""
    return LINE_BREAK.sub("\n" + prefix, text)


def _json(value: Any) -> str:
    """``value`` as one line of JSON, non-ASCII text as it is but for the line breaks, which are escaped."""
    return json.dumps(value, ensure_ascii=False).translate(_JSON_UNESCAPED)


def _label(text: str) -> str:
    """A role or tool name as a prompt shows it: as it is when printable with no space, quote, colon or
    parenthesis (``get_weather``), else as a JSON string (``"get weather"``): no name can break a line."""
    if text.isprintable() and not any(c in ' "():' for c in text):
        return text
    return _json(text)


class CallView(PromptText, dict[str, Any]):
    """One tool call in a template: ``name``, ``arguments`` (JSON data), ``id``, ``result`` (the text of the tool
    message answering it, ``""`` when none) and ``is_error``; printed as ``name({...arguments})``."""

    __slots__ = ()

    def prompt_text(self) -> str:
        return f"{_label(self['name'])}({_json(self['arguments'])})"


class MessageView(PromptText, dict[str, Any]):
    """One message in a template: ``index``, ``role``, ``content`` (its text, ``""`` when none), ``tool_calls``
    (:class:`CallView` s), and for a tool message ``tool_call_id``, ``name`` and ``is_error``; a message with
    images, audio or documents has ``attachments`` (what text shows for each: in a judge's prompt its content
    part, :func:`scorers.attachments.shown`); printed as its lines of the transcript."""

    __slots__ = ()

    def prompt_text(self) -> str:
        role, content = self["role"], self["content"]
        if role == "tool":
            name = f" {_label(self['name'])}" if self["name"] else ""
            head = f"tool{name}{' (error)' if self['is_error'] else ''}"
        else:
            head = role
        lines = [f"{head}: {_indented(content)}" if content else f"{head}:"]
        lines += [f"  {attachment}" for attachment in self.get("attachments", ())]
        lines += [f"  call {call.prompt_text()}" for call in self["tool_calls"]]
        return "\n".join(lines)


class ConversationView(PromptText, tuple[MessageView, ...]):
    """A conversation in a template: a tuple of :class:`MessageView` s with ``messages`` and ``tool_calls``;
    printed as the :func:`transcript`."""

    __slots__ = ()

    @property
    def messages(self) -> tuple[MessageView, ...]:
        """The messages, in order."""
        return tuple(self)

    @property
    def tool_calls(self) -> tuple[CallView, ...]:
        """Every call the assistant made, in order."""
        return tuple(call for message in self for call in message["tool_calls"])

    def prompt_text(self) -> str:
        return "\n".join(message.prompt_text() for message in self)


def conversation_view(
    value: Any,
    *,
    scorer: str,
    field: str,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    raise_budget: Callable[[int], str] | None = None,
) -> ConversationView:
    """The conversation in ``value`` (any format :func:`~scorers.agents.readers.read_conversation` reads) as a
    template shows it; a malformed one, or one over ``max_tokens``, is a :class:`ScorerInputError` of ``field``
    (``raise_budget``: as for :func:`check_budget`).

    >>> conversation_view('[{"role": "user", "content": "' + "word " * 100 + '"}]', scorer="Demo",
    ...                   field="conversation", max_tokens=100)
    Traceback (most recent call last):
    ...
    scorers.errors.ScorerInputError: Demo: field 'conversation' may be up to 506 tokens (its UTF-8 bytes), over \
its budget of 100: raise it in the template, fields: {conversation: {type: conversation, max_tokens: 600}}
    """
    from ..agents.readers import read_conversation

    conversation = read_conversation(value, scorer=scorer, field=field)
    names = {call.id: call.name for message in conversation for call in message.tool_calls if call.id is not None}
    results = {m.tool_call_id: m for m in conversation if m.role == "tool" and m.tool_call_id is not None}
    messages = []
    for index, message in enumerate(conversation):
        calls = []
        for call in message.tool_calls:
            answer = results.get(call.id) if call.id is not None else None
            calls.append(
                CallView(
                    name=call.name,
                    arguments=_thawed(call.arguments),
                    id=call.id,
                    result=(answer.content or "") if answer is not None else "",
                    is_error=answer.is_error if answer is not None else False,
                )
            )
        name = message.name or (names.get(message.tool_call_id) if message.tool_call_id is not None else None)
        messages.append(
            MessageView(
                index=index,
                role=message.role,
                content=message.content or "",
                tool_calls=tuple(calls),
                tool_call_id=message.tool_call_id,
                name=name,
                is_error=message.is_error,
                **({"attachments": [shown(a, field) for a in message.attachments]} if message.attachments else {}),
            )
        )
    view = ConversationView(messages)
    check_budget(view.prompt_text(), scorer=scorer, field=field, max_tokens=max_tokens, raise_budget=raise_budget)
    return view


def _thawed(value: Any) -> Any:
    """Frozen JSON (FrozenDict, tuples) as plain dicts and lists, as a template shows and loops over it."""
    if isinstance(value, Mapping):
        return {key: _thawed(item) for key, item in value.items()}
    if isinstance(value, tuple):
        return [_thawed(item) for item in value]
    return value


def transcript(value: Any, *, scorer: str = "transcript", field: str = "conversation") -> str:
    """The conversation in ``value`` as our transcript: one ``role: text`` entry per message (further lines
    indented by two spaces), each tool call on its own line as ``  call name({arguments})``, and each tool
    result as ``tool name: result`` (``tool name (error): ...`` when the tool failed). Only a message starts
    a line: every line break in a text (:data:`LINE_BREAK`) is a newline and the indent, arguments are JSON
    with line breaks escaped, and a tool name that is not plain (:func:`_label`) is quoted as JSON.

    >>> print(transcript([
    ...     {"role": "user", "content": "Weather in Paris?"},
    ...     {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function",
    ...      "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]},
    ...     {"role": "tool", "tool_call_id": "c1", "content": "18C"},
    ...     {"role": "assistant", "content": "It is 18C.\\nEnjoy!"},
    ... ]))
    user: Weather in Paris?
    assistant:
      call get_weather({"city": "Paris"})
    tool get_weather: 18C
    assistant: It is 18C.
      Enjoy!
    """
    return conversation_view(value, scorer=scorer, field=field, max_tokens=_UNBOUNDED).prompt_text()


_UNBOUNDED = 1 << 62


def count_tokens(text: str) -> int:
    """At most how many tokens ``text`` is, in any tokenizer: its UTF-8 bytes (:data:`TOKEN_COUNT`). A
    byte-level BPE token (GPT, Llama 3, Qwen) holds at least one byte, as does a SentencePiece piece or byte.

    >>> count_tokens("word " * 4), count_tokens("日本語のテキスト"), count_tokens("🙂🙂")
    (20, 24, 8)
    """
    return len(text.encode("utf-8", "surrogatepass"))


def check_budget(
    text: str, *, scorer: str, field: str, max_tokens: int, raise_budget: Callable[[int], str] | None = None
) -> None:
    """Refuse ``text`` when its tokens (:func:`count_tokens`) may pass ``max_tokens``; the error says how to
    raise the budget: ``raise_budget(a budget that would do)``, by default the template's field setting.

    >>> check_budget("é" * 10, scorer="Demo", field="conversation", max_tokens=2,
    ...              raise_budget=lambda budget: f"pass max_conversation_tokens={budget}")
    Traceback (most recent call last):
    ...
    scorers.errors.ScorerInputError: Demo: field 'conversation' may be up to 20 tokens (its UTF-8 bytes), over \
its budget of 2: pass max_conversation_tokens=30
    """
    tokens = count_tokens(text)
    if tokens > max_tokens:
        suggested = _round_up(tokens)
        how = (
            raise_budget(suggested)
            if raise_budget is not None
            else f"raise it in the template, fields: {{{field}: {{type: conversation, max_tokens: {suggested}}}}}"
        )
        raise ScorerInputError(
            scorer,
            field,
            f"may be up to {tokens:,} tokens (its UTF-8 bytes), over its budget of {max_tokens:,}: {how}",
        )


def budget_metadata(budgets: Mapping[str, int]) -> dict[str, Any]:
    """What a score of a judge that reads conversations says of their budgets: how tokens are counted and
    each field's budget (``metadata["conversation_tokens"]``).

    >>> budget_metadata({"conversation": 1000})
    {'conversation_tokens': {'counted_as': 'utf8_bytes', 'budgets': {'conversation': 1000}}}
    """
    return {"conversation_tokens": {"counted_as": TOKEN_COUNT, "budgets": dict(budgets)}}


def _round_up(tokens: int) -> int:
    """A budget above ``tokens`` to suggest: its next multiple of the largest power of ten below it."""
    step = 10 ** max(len(str(tokens)) - 1, 0)
    return (tokens // step + 1) * step


# ------------------------------------------------------ autoevals' thread variables
class ThreadMessage(PromptText, dict[str, Any]):
    """One message of a thread, printed as autoevals prints it: ``role: content`` (content not text as JSON),
    but for its text's further lines, indented by two spaces, and an odd role, quoted (as in our transcript);
    an empty one (no first message in an empty thread) prints nothing."""

    __slots__ = ()

    def prompt_text(self) -> str:
        if not self:
            return ""
        content = self.get("content")
        text = _indented(content) if isinstance(content, str) else json.dumps(content)
        return f"{_role(self.get('role', ''))}: {text}"


class ThreadMessages(PromptText, tuple[ThreadMessage, ...]):
    """Messages of a thread, printed as autoevals prints a message list (:func:`thread_text`)."""

    __slots__ = ()

    def prompt_text(self) -> str:
        return thread_text(self)


class ThreadPairs(PromptText, tuple[dict[str, ThreadMessage], ...]):
    """``{"human": ..., "assistant": ...}`` pairs, printed as autoevals prints them: Python's ``repr`` of the
    list of plain dicts, nothing when there is no pair."""

    __slots__ = ()

    def prompt_text(self) -> str:
        if not self:
            return ""
        return repr([{role: dict(message) for role, message in pair.items()} for pair in self])


def _role(role: Any) -> str:
    """A thread message's role as a prompt shows it (:func:`_label` of its text)."""
    return _label(role if isinstance(role, str) else str(role))


def _is_message(item: Any) -> bool:
    return isinstance(item, Mapping) and "role" in item and "content" in item


def thread_variables(value: Any, *, scorer: str, field: str = THREAD_FIELD, drop_system: bool = True) -> dict[str, Any]:
    """autoevals' thread variables for the conversation in ``value``.

    A list of role/content messages (what autoevals' ``trace.get_thread()`` returns) is used as it is; any other
    format :func:`~scorers.agents.readers.read_conversation` reads (or JSON text) is first turned into OpenAI chat
    messages. ``thread`` leaves out system messages (unless ``drop_system`` is false), ``thread_with_system`` keeps them.

    >>> variables = thread_variables([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"},
    ...                               {"role": "assistant", "content": "Hello"}], scorer="Demo")
    >>> variables["thread_count"], str(variables["first_message"]), str(variables["thread"])
    (2, 'user: Hi', 'User:\\n  Hi\\n\\nAssistant:\\n  Hello')
    >>> str(variables["human_ai_pairs"])
    "[{'human': {'role': 'user', 'content': 'Hi'}, 'assistant': {'role': 'assistant', 'content': 'Hello'}}]"
    """
    messages = _thread_messages(value, scorer=scorer, field=field)
    with_system = ThreadMessages(ThreadMessage(message) for message in messages)
    thread = ThreadMessages(m for m in with_system if not drop_system or m.get("role") != "system")
    users = ThreadMessages(message for message in thread if message.get("role") == "user")
    assistants = ThreadMessages(message for message in thread if message.get("role") == "assistant")
    return {
        "thread": thread,
        "thread_with_system": with_system,
        "thread_count": len(thread),
        "first_message": thread[0] if thread else ThreadMessage(),
        "last_message": thread[-1] if thread else ThreadMessage(),
        "user_messages": users,
        "assistant_messages": assistants,
        "human_ai_pairs": ThreadPairs({"human": u, "assistant": a} for u, a in zip(users, assistants)),
    }


def _thread_messages(value: Any, *, scorer: str, field: str) -> Sequence[Mapping[str, Any]]:
    if isinstance(value, (list, tuple)) and all(_is_message(item) for item in value):
        return list(value)
    from ..agents.readers import read_conversation

    return read_conversation(value, scorer=scorer, field=field).to_list()


def thread_text(messages: Iterable[Mapping[str, Any]]) -> str:
    """Role/content messages as autoevals 0.4.1 prints a message list: ``Role:`` and the text indented by two
    spaces, one blank line between messages; a message without text is left out; tool results (content parts of
    type ``tool_result``) as ``Tool (name):`` with the call's ``Args:`` and its ``Result:`` or ``Error:``, each
    cut in the middle past 500 characters, as autoevals does.

    >>> print(thread_text([{"role": "user", "content": "Hi"}, {"role": "assistant", "content": [
    ...     {"type": "text", "text": "Checking."},
    ...     {"type": "tool_call", "tool_call_id": "c1", "tool_name": "lookup",
    ...      "arguments": {"type": "valid", "value": {"q": "x"}}}]},
    ...     {"role": "tool", "content": [{"type": "tool_result", "tool_call_id": "c1", "output": "found"}]}]))
    User:
      Hi
    <BLANKLINE>
    Assistant:
      Checking.
    <BLANKLINE>
    Tool (lookup):
      Args:
        {"q": "x"}
      Result:
        found
    """
    messages = list(messages)
    pending: dict[str, tuple[str, str]] = {}
    for message in messages:
        if message.get("role") == "assistant" and isinstance(message.get("content"), list):
            pending.update(_announced_calls(message["content"]))
    entries: list[str] = []
    for message in messages:
        role = _role(message.get("role", ""))
        content = message.get("content")
        if role == "tool" and isinstance(content, list):
            entries += [_tool_result(part, pending) for part in content if _part_type(part) == "tool_result"]
            continue
        text = _message_text(content)
        if text:
            entries.append(f"{role[:1].upper()}{role[1:]}:\n  {_indented(text)}")
    return "\n\n".join(entries)


def _part_type(part: Any) -> str | None:
    """A content part's ``type`` when the part is a mapping whose ``type`` is text."""
    kind = part.get("type") if isinstance(part, Mapping) else None
    return kind if isinstance(kind, str) else None


def _announced_calls(content: list[Any]) -> dict[str, tuple[str, str]]:
    """``tool_call_id → (tool name, arguments text)`` for the ``tool_call`` parts of an assistant message."""
    calls = {}
    for part in content:
        call_id = part.get("tool_call_id") if _part_type(part) == "tool_call" else None
        if not isinstance(call_id, str) or not call_id:
            continue
        name = part.get("tool_name")
        arguments = part.get("arguments")
        text = ""
        if isinstance(arguments, Mapping):
            given = arguments.get("value")
            valid = arguments.get("type") == "valid"
            text = given if isinstance(given, str) and not valid else json.dumps(given)
        calls[call_id] = (name if isinstance(name, str) else "unknown", text)
    return calls


def _tool_result(part: Mapping[str, Any], pending: dict[str, tuple[str, str]]) -> str:
    call_id = part.get("tool_call_id")
    call_id = call_id if isinstance(call_id, str) else ""
    tool_name = part.get("tool_name")
    call = pending.pop(call_id, None)
    name = (tool_name if isinstance(tool_name, str) else "") or (call[0] if call else "tool")
    result = _unwrapped(part.get("output"))
    lines = [f"Tool ({_label(name)}):"]
    if call and call[1]:
        lines += ["  Args:", f"    {_indented(_cut_middle(call[1]), '    ')}"]
    lowered = result.lower()
    failed = "error:" in lowered or '"error"' in lowered or lowered.startswith("error")
    lines += ["  Error:" if failed else "  Result:", f"    {_indented(_cut_middle(result), '    ')}"]
    return "\n".join(lines)


_QUOTED_ERROR = re.compile(r"^error:\s*'(.+)'$", flags=re.DOTALL)


def _unwrapped(content: Any) -> str:
    """A tool result's text as autoevals reads it: JSON text decoded, text parts joined, an ``error: '...'``
    unquoted, anything else as JSON."""
    while isinstance(content, str):
        try:
            content = json.loads(content)
        except ValueError:
            quoted = _QUOTED_ERROR.match(content)
            return quoted.group(1) if quoted else content
    if isinstance(content, list):
        texts = [
            _unwrapped(item["text"]) if isinstance(item, Mapping) else _unwrapped(item)
            for item in content
            if (isinstance(item, Mapping) and isinstance(item.get("text"), str)) or isinstance(item, str)
        ]
        if texts:
            return "\n".join(texts)
    if isinstance(content, Mapping) and isinstance(content.get("text"), str):
        return _unwrapped(content["text"])
    return json.dumps(content)


def _message_text(content: Any) -> str:
    """A message's text as autoevals reads it: text parts joined by newlines, reasoning shown shortened."""
    if isinstance(content, str):
        return content if content.strip() else ""
    if not isinstance(content, list):
        return ""
    texts = []
    for part in content:
        kind = _part_type(part)
        if isinstance(part, str):
            if part.strip():
                texts.append(part)
        elif kind is not None:
            if kind in ("text", "reasoning") and isinstance(part.get("text"), str):
                texts.append(part["text"] if kind == "text" else f"[thinking: {part['text'][:100]}...]")
        elif isinstance(part, Mapping) and isinstance(part.get("text"), str):
            texts.append(part["text"])
    return "\n".join(texts)


def _cut_middle(text: str, limit: int = _AUTOEVALS_TOOL_TEXT) -> str:
    """autoevals' shortening of a long tool text: its middle replaced by a note of how much was removed."""
    if len(text) <= limit:
        return text
    note = f" [...{len(text) - limit + 30} chars truncated...] "
    room = limit - len(note)
    if room <= 0:
        return text[:limit]
    return text[: room // 2] + note + text[len(text) - (room - room // 2) :]


# ----------------------------------------------------------- a template's context
def template_context(
    context: Mapping[str, Any],
    *,
    scorer: str,
    conversations: Mapping[str, int],
    thread_variables_used: Iterable[str],
    thread_max_tokens: int = DEFAULT_MAX_TOKENS,
) -> dict[str, Any]:
    """``context`` with each declared conversation field (``name → max tokens``) read into a
    :class:`ConversationView`, and the thread variables a template uses computed from its ``thread`` field
    (a variable given in ``context`` wins, as in autoevals; ``thread`` given as text that is not JSON is
    shown as it is)."""
    out = dict(context)
    for name, max_tokens in conversations.items():
        if name in out and name != THREAD_FIELD and not isinstance(out[name], ConversationView):
            out[name] = conversation_view(out[name], scorer=scorer, field=name, max_tokens=max_tokens)
    source = out.get(THREAD_FIELD)
    wanted = [
        name
        for name in thread_variables_used
        if name not in out or (name == THREAD_FIELD and not isinstance(source, PromptText))
    ]
    if not wanted:
        return out
    if isinstance(source, str) and not source.lstrip().startswith(("[", "{")):
        if wanted != [THREAD_FIELD]:
            raise ScorerInputError(
                scorer,
                THREAD_FIELD,
                f"is text; {', '.join(n for n in wanted if n != THREAD_FIELD)} need the thread as a list of "
                "messages (or JSON text of one)",
            )
        return out
    computed = thread_variables(source, scorer=scorer)
    check_budget(
        computed["thread_with_system"].prompt_text(), scorer=scorer, field=THREAD_FIELD, max_tokens=thread_max_tokens
    )
    out.update({name: computed[name] for name in wanted})
    return out
