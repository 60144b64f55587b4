"""Judges over conversations and tool calls: a small, fixed number of requests per row, whatever its length.

Each metric here is a :class:`~scorers.judges.rag.MultiStepJudge` over one field, ``conversation`` (any format
:func:`~scorers.agents.readers.read_conversation` reads: OpenAI chat or Responses, Anthropic, LangChain,
OpenTelemetry GenAI spans, or JSON text of one). Where a peer sends one request per turn, call or intention
(so requests, and the context resent with each, grow with the conversation), these send the transcript once
and ask for every verdict in one structured reply (one per item, in order; a reply with another count is
unusable and re-asked):

- ``ArgumentCorrectness``: per tool call, are its arguments right for the user's request? 1 request.
- ``TurnRelevancy``: per assistant reply, is it relevant given the ``window`` messages before it? 1 request.
- ``KnowledgeRetention``: facts the user gave (1 request), then per later assistant message, does it keep to
  them (1 request): 2 requests.
- ``ConversationCompleteness``: what the user wanted (1 request), then per intention, was it satisfied
  (1 request): 2 requests.

A request shows the conversation as a transcript whose messages are headed by their index (``[3] user: ...``),
so verdicts and metadata name messages by the index the reader's own list has. A malformed conversation is the
row's :class:`~scorers.errors.ScorerInputError` naming the message index; one whose transcript passes
``max_conversation_tokens`` (counted as UTF-8 bytes, a bound no tokenizer exceeds; default 128,000) is one too,
saying how to raise it: never cut. ``metadata["conversation_tokens"]`` says how tokens are counted.
Every score's metadata holds the items, each verdict (with its reason under chain of thought) and the usage
summed over the row's requests; ``python -m scorers show NAME`` states the requests per row. The step prompts
are package data (``scorers/judges/prompts/conversational/<step>.md``); ``prompts={step: text}`` replaces them.

>>> from scorers.llm import LLMEngine
>>> from scorers.testing import LoopbackLLM, Reply
>>> conversation = [
...     {"role": "user", "content": "Weather in Paris tomorrow?"},
...     {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function",
...      "function": {"name": "get_weather", "arguments": '{"city": "Lyon"}'}}]},
...     {"role": "tool", "tool_call_id": "c1", "content": "rain"},
...     {"role": "assistant", "content": "Rain in Lyon."},
... ]
>>> verdicts = Reply.tool_call({"verdicts": [{"reason": "the user asked about Paris", "verdict": "no"}]},
...                            name="record_verdicts")
>>> with LoopbackLLM(default=verdicts) as server:
...     engine = LLMEngine(base_url=server.base_url, api_key="placeholder", cache=False)
...     score = ArgumentCorrectness(engine=engine)(conversation=conversation)
>>> score.score, score.metadata["calls"][0]["verdict"], score.metadata["usage"]["requests"]
(0.0, 'no', 1)
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from .._util import is_int
from ..errors import ConfigError, ScorerInputError
from ..fields import Field
from ..llm import ChatResult, InvalidReply
from ..registry import register
from .base import sum_usage
from .conversation import DEFAULT_MAX_TOKENS, ConversationView, MessageView, budget_metadata, conversation_view
from .rag import YES_NO, ItemVerdict, MultiStepJudge, items_format, read_items
from .reply import ReplyFormat

__all__ = [
    "ConversationJudge",
    "ArgumentCorrectness",
    "TurnRelevancy",
    "KnowledgeRetention",
    "ConversationCompleteness",
]

#: The row field every judge here reads.
FIELD = "conversation"


class ConversationJudge(MultiStepJudge):
    """Base of the conversation judges: the ``conversation`` field, read and numbered once per row, within
    ``max_conversation_tokens`` (tokens of its transcript as UTF-8 bytes; a bound that refuses a row, never a
    setting that changes a score)."""

    fields = (
        Field(
            FIELD,
            (list, tuple, dict, str),
            description="the conversation: its messages in any format scorers.agents reads, or JSON text of them",
        ),
    )
    prompt_dir = "prompts/conversational"

    def __init__(self, *, max_conversation_tokens: int = DEFAULT_MAX_TOKENS, **settings: Any) -> None:
        super().__init__(**settings)
        if not is_int(max_conversation_tokens) or max_conversation_tokens < 1:
            raise ConfigError(
                f"{self.name}: max_conversation_tokens must be a positive integer, got {max_conversation_tokens!r}",
                scorer=self.name,
            )
        self.max_conversation_tokens = max_conversation_tokens

    def _raise_budget(self, budget: int) -> str:
        return (
            f"raise it with {type(self).__name__}(max_conversation_tokens={budget}) "
            f"(command line: -p {self.name}.max_conversation_tokens={budget})"
        )

    def read(self, row: Mapping[str, Any]) -> ConversationView:
        """The row's conversation, checked against the budget; a :class:`ScorerInputError` of the field otherwise."""
        return conversation_view(
            row[FIELD],
            scorer=self.name,
            field=FIELD,
            max_tokens=self.max_conversation_tokens,
            raise_budget=self._raise_budget,
        )

    def user_messages(self, view: ConversationView) -> list[MessageView]:
        """The user's messages with text; a conversation with none is the row's :class:`ScorerInputError`."""
        messages = [m for m in view if m["role"] == "user" and m["content"].strip()]
        if not messages:
            raise ScorerInputError(self.name, FIELD, "holds no user message with text: there is nothing to judge")
        return messages

    def call_metadata(self, results: Sequence[ChatResult], latency: float) -> dict[str, Any]:
        """As every judge's (for a row that needed no request: zero usage, nothing sent), and how the
        conversation's tokens are counted against its budget."""
        budget = budget_metadata({FIELD: self.max_conversation_tokens})
        if results:
            return {**super().call_metadata(results, latency), **budget}
        return {
            "response_mode": self.response_mode,
            "model": self._model_name(),
            "sent": {},
            "usage": sum_usage(()),
            "latency_s": latency,
            "attempts": 0,
            "reasks": 0,
            "cached": False,
            **budget,
        }


def numbered_transcript(messages: Sequence[MessageView]) -> str:
    """Messages as the transcript, each headed by its index in the conversation.

    >>> view = conversation_view([{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello!"}],
    ...                          scorer="Demo", field="conversation")
    >>> print(numbered_transcript(view))
    [0] user: Hi
    [1] assistant: Hello!
    """
    return "\n".join(f"[{m['index']}] {m.prompt_text()}" for m in messages)


def _share_yes(verdicts: Sequence[ItemVerdict]) -> float:
    return sum(v.verdict == "yes" for v in verdicts) / len(verdicts)


def _verdict(v: ItemVerdict) -> dict[str, Any]:
    return {"verdict": v.verdict, **({"reason": v.reason} if v.reason is not None else {})}


# ----------------------------------------------------------------------- metrics
@register
class ArgumentCorrectness(ConversationJudge):
    """Argument correctness: the share of the conversation's tool calls whose arguments are right for the
    user's request (no reference).

    One request shows the transcript and lists every call; the reply holds one verdict per call (yes / no):
    ``score = #yes / #calls``. A conversation that makes no tool call scores 1 with no request, as a
    metric that counts errors does (no argument is wrong; whether a call was needed is TaskCompletion's
    and ToolSelection's question); ``metadata["reason"]`` says so. Refusing such rows instead would turn
    every answer given without tools into an error row.
    """

    description = (
        "Share of the tool calls whose arguments fit the user's request. Requests per row: 1 (0 with no call)."
    )
    steps = ("argument_correctness",)
    requests_per_row = "1 (0 when the conversation makes no tool call)"
    example = "scorers.get('ArgumentCorrectness')(conversation=[{'role': 'user', 'content': '...'}, ...])"

    async def _evaluate(self, row: Mapping[str, Any], calls: list[ChatResult]) -> tuple[float, dict[str, Any]]:
        view = self.read(row)
        made = [(m["index"], call) for m in view for call in m["tool_calls"]]
        if not made:
            return 1.0, {"calls": [], "reason": "the conversation makes no tool call, so no argument is wrong"}
        items = [f"message {index}: {call.prompt_text()}" for index, call in made]
        verdicts = await self.judge_items(
            "argument_correctness", items, YES_NO, calls, conversation=numbered_transcript(view)
        )
        records = [
            {"call": k, "message": index, "name": call["name"], "arguments": call["arguments"], **_verdict(v)}
            for k, ((index, call), v) in enumerate(zip(made, verdicts))
        ]
        return _share_yes(verdicts), {"calls": records}


@register
class TurnRelevancy(ConversationJudge):
    """Turn relevancy: the share of the assistant's replies relevant given the ``window`` messages before each.

    A reply is an assistant message with text; message i is judged against messages ``i - window`` to
    ``i - 1`` (any role: tool calls and results count as messages; a system message is always context).
    One request shows the transcript once and lists every reply with its window; the reply holds one
    verdict per reply (yes / no): ``score = #yes / #replies``. A conversation with no reply is the row's
    ScorerInputError.

    The trade-off: a request per reply with only its window (as peers do) sends ``n`` requests and
    ``n · window`` messages; one request sends each message once, so tokens grow linearly, at the cost of
    the judge seeing the replies' later context, which the prompt tells it to ignore. The reply's length
    grows with ``n``: raise ``max_tokens`` for conversations of many dozens of replies.
    """

    description = "Share of the assistant's replies relevant to the messages before them. Requests per row: 1."
    steps = ("turn_relevancy",)
    requests_per_row = "1 (whatever the number of turns)"
    example = "scorers.get('TurnRelevancy', window=5)(conversation=[{'role': 'user', 'content': '...'}, ...])"

    def __init__(self, *, window: int = 5, max_conversation_tokens: int = DEFAULT_MAX_TOKENS, **settings: Any) -> None:
        super().__init__(max_conversation_tokens=max_conversation_tokens, **settings)
        if not is_int(window) or window < 1:
            raise ConfigError(f"{self.name}: window must be a positive integer, got {window!r}", scorer=self.name)
        self.window = window

    def kind_params(self) -> dict[str, Any]:
        return {"window": self.window}

    async def _evaluate(self, row: Mapping[str, Any], calls: list[ChatResult]) -> tuple[float, dict[str, Any]]:
        view = self.read(row)
        replies = [m["index"] for m in view if m["role"] == "assistant" and m["content"].strip()]
        if not replies:
            raise ScorerInputError(self.name, FIELD, "holds no assistant message with text: there is nothing to judge")
        windows = [(max(0, i - self.window), i - 1) for i in replies]
        items = [
            f"message {i}, against messages {first} to {last}" if i else "message 0, with no message before it"
            for i, (first, last) in zip(replies, windows)
        ]
        verdicts = await self.judge_items(
            "turn_relevancy", items, YES_NO, calls, conversation=numbered_transcript(view), window=self.window
        )
        records = [
            {"message": i, "context": [first, last] if i else [], **_verdict(v)}
            for i, (first, last), v in zip(replies, windows, verdicts)
        ]
        return _share_yes(verdicts), {"window": self.window, "turns": records}


def facts_format(messages: Sequence[int]) -> ReplyFormat:
    """``{"facts": [{"message", "fact"}, ...]}``: each fact the user gave, with the index of its message, one of
    ``messages`` (the user's: a server that constrains replies to the schema can name no other)."""
    item = {
        "type": "object",
        "properties": {"message": {"type": "integer", "enum": list(messages)}, "fact": {"type": "string"}},
        "required": ["message", "fact"],
        "additionalProperties": False,
    }
    return ReplyFormat(
        "record_facts",
        "Record the facts the user gave, each with the number of its message.",
        {
            "type": "object",
            "properties": {"facts": {"type": "array", "items": item}},
            "required": ["facts"],
            "additionalProperties": False,
        },
    )


def read_facts(parsed: Mapping[str, Any], messages: Sequence[int]) -> tuple[tuple[int, str], ...]:
    """``(message, fact)`` pairs, each message one of ``messages``; raises :class:`InvalidReply` otherwise.

    >>> read_facts({"facts": [{"message": 2, "fact": "Ann is vegan."}]}, [0, 2])
    ((2, 'Ann is vegan.'),)
    >>> read_facts({"facts": [{"message": 1, "fact": "x"}]}, [0, 2])
    Traceback (most recent call last):
    ...
    scorers.llm.protocol.InvalidReply: facts[0] names message 1, which is not one of the user's messages (0, 2)
    """
    facts = parsed.get("facts")
    if not isinstance(facts, list):
        raise InvalidReply("no 'facts' list in the reply")
    out = []
    for i, entry in enumerate(facts):
        message = entry.get("message") if isinstance(entry, dict) else None
        fact = entry.get("fact") if isinstance(entry, dict) else None
        if not isinstance(fact, str) or not fact.strip():
            raise InvalidReply(f"facts[{i}] needs a fact as non-empty text, got {entry!r}")
        if not is_int(message) or message not in messages:
            raise InvalidReply(
                f"facts[{i}] names message {message!r}, which is not one of the user's messages "
                f"({', '.join(map(str, messages))})"
            )
        out.append((message, fact.strip()))
    return tuple(out)


@register
class KnowledgeRetention(ConversationJudge):
    """Knowledge retention: the share of the assistant's messages that keep to the facts the user gave before them.

    One request extracts the facts the user gave (from the user's messages, each fact with its message);
    one request judges every assistant message after the first fact (its text and its tool calls) against
    the facts given before it (yes: keeps to them / no: forgets or contradicts one):
    ``score = #yes / #judged messages``. No fact, or no assistant message after one, scores 1 (nothing
    could be forgotten) after the one request. A conversation with no user message is the row's
    ScorerInputError.
    """

    description = "Share of the assistant's messages that keep to the facts the user gave. Requests per row: 2."
    steps = ("facts", "retention")
    requests_per_row = "2 (1 when the user gives no fact, or no assistant message follows one)"
    example = "scorers.get('KnowledgeRetention')(conversation=[{'role': 'user', 'content': '...'}, ...])"

    async def _evaluate(self, row: Mapping[str, Any], calls: list[ChatResult]) -> tuple[float, dict[str, Any]]:
        view = self.read(row)
        users = self.user_messages(view)
        indices = [m["index"] for m in users]
        fmt = facts_format(indices)
        request = self.step_request("facts", {"user_turns": numbered_transcript(users)}, fmt)
        facts = await self.step(
            request, lambda result: read_facts(fmt.read(result, self.response_mode), indices), calls
        )
        given = [{"message": message, "fact": fact} for message, fact in facts]
        first = min((message for message, _ in facts), default=None)
        judged = [m["index"] for m in view if m["role"] == "assistant" and first is not None and m["index"] > first]
        if not judged:
            reason = "the user gives no fact" if first is None else "no assistant message follows the user's facts"
            return 1.0, {"facts": given, "turns": [], "reason": f"{reason}, so none is forgotten"}
        verdicts = await self.judge_items(
            "retention",
            [f"message {i}" for i in judged],
            YES_NO,
            calls,
            facts="\n".join(f"- (message {message}) {fact}" for message, fact in facts),
            conversation=numbered_transcript(view),
        )
        records = [{"message": i, **_verdict(v)} for i, v in zip(judged, verdicts)]
        return _share_yes(verdicts), {"facts": given, "turns": records}


@register
class ConversationCompleteness(ConversationJudge):
    """Conversation completeness: the share of what the user wanted that the conversation satisfied.

    One request extracts the user's intentions (from the user's messages); one request judges each
    against the whole conversation (yes: satisfied / no): ``score = #yes / #intentions``. A user who
    wanted nothing (greetings, thanks) scores 1 after the one request: nothing was left undone. A
    conversation with no user message is the row's ScorerInputError.
    """

    description = "Share of the user's intentions that the conversation satisfied. Requests per row: 2."
    steps = ("intentions", "intention_satisfaction")
    requests_per_row = "2 (1 when the user expresses no intention)"
    example = "scorers.get('ConversationCompleteness')(conversation=[{'role': 'user', 'content': '...'}, ...])"

    async def _evaluate(self, row: Mapping[str, Any], calls: list[ChatResult]) -> tuple[float, dict[str, Any]]:
        view = self.read(row)
        fmt = items_format("intentions")
        request = self.step_request("intentions", {"user_turns": numbered_transcript(self.user_messages(view))}, fmt)
        intentions = await self.step(
            request, lambda result: read_items(fmt.read(result, self.response_mode), "intentions"), calls
        )
        if not intentions:
            return 1.0, {"intentions": [], "reason": "the user expresses no intention, so none is left unsatisfied"}
        verdicts = await self.judge_items(
            "intention_satisfaction", intentions, YES_NO, calls, conversation=numbered_transcript(view)
        )
        records = [{"intention": text, **_verdict(v)} for text, v in zip(intentions, verdicts)]
        return _share_yes(verdicts), {"intentions": records}
