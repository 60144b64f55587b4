"""ToolLoop: an agent stuck in a loop, found in its calls and its turns; no model, exact, and explained.

Three signals, each a loop when it passes its threshold: the **same call** made more than ``max_repeats`` times
(name and arguments compared under the argument rules of :mod:`scorers.agents.rules`), a **cycle** (a block of two
or more calls repeated back to back more than ``max_cycles`` times), and **near-identical assistant turns** in a
row (Jaccard similarity of their token n-grams at least ``similarity``, tokens split on Unicode word boundaries or
taken character by character, with no stop-word list).

>>> from scorers import get
>>> search = {"name": "search", "arguments": {"q": "paris"}}
>>> score = get("ToolLoop")(output=[search, search, search])
>>> score.score, score.metadata["loops"][0]["kind"], score.metadata["loops"][0]["calls"]
(0.0, 'repeated_call', [0, 1, 2])
>>> get("ToolLoop")(output=[search, {"name": "fetch"}, search]).score
1.0
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import TYPE_CHECKING, Any, Hashable, Mapping, Sequence

from ..errors import ScorerInputError
from ..params import param
from ..registry import register
from ..score import Score
from .model import Conversation, ToolCall, jsonable
from .readers import read_conversation
from .tool_calls import _ARGUMENTS, _RULES, _calls_field, _ToolCallScorer

if TYPE_CHECKING:
    from .rules import ArgumentRules

__all__ = ["ToolLoop", "find_repeats", "find_cycles", "find_similar_turns", "tokens", "jaccard"]

#: How turns are split into tokens: ``words`` (runs of Unicode word characters) or ``characters`` (each character
#: but whitespace, for scripts written without spaces).
TOKENS = ("words", "characters")
_WORD = re.compile(r"\w+")


def tokens(text: str, kind: str = "words") -> list[str]:
    """The tokens of ``text``, case folded: runs of Unicode word characters (``\\w+``: letters, digits and ``_``
    of any script), or each character but whitespace. No token is left out (no stop words).

    >>> tokens("Let's check the Café, again!"), tokens("东京 天气", "characters")
    (['let', 's', 'check', 'the', 'café', 'again'], ['东', '京', '天', '气'])
    """
    folded = text.casefold()
    return _WORD.findall(folded) if kind == "words" else [c for c in folded if not c.isspace()]


def shingles(items: Sequence[str], n: int) -> frozenset[tuple[str, ...]]:
    """The set of runs of ``n`` consecutive tokens (one run of them all when there are fewer than ``n``)."""
    if len(items) <= n:
        return frozenset([tuple(items)]) if items else frozenset()
    return frozenset(tuple(items[i : i + n]) for i in range(len(items) - n + 1))


def jaccard(a: frozenset[Any], b: frozenset[Any]) -> float:
    """``|a ∩ b| / |a ∪ b|``; two empty sets: 1.

    >>> jaccard(frozenset("abc"), frozenset("bcd"))
    0.5
    """
    union = len(a | b)
    return len(a & b) / union if union else 1.0


def _call_key(rules: Any, arguments: Any) -> Hashable | None:
    """A key equal for two calls of a tool exactly when their arguments agree, when the tool's rules have one
    (``exact`` or ``loose`` on every argument); else None."""
    if rules.plain is None or not isinstance(arguments, Mapping):
        return None
    canonical = rules.plain[0]
    return frozenset((key, canonical(value)) for key, value in arguments.items())


def kinds_of_calls(calls: Sequence[ToolCall], rules: ArgumentRules) -> list[int]:
    """Each call's kind: calls of the same kind are the same call under ``rules``. A call is of the kind of the
    first earlier call of the same tool whose arguments it agrees with (that call as the expected side, credit 1),
    else of a new kind; with ``exact`` or ``loose`` rules, by a canonical key (linear time)."""
    from .matching import pair_credit

    kinds: list[int] = []
    by_key: dict[tuple[str, Hashable], int] = {}
    firsts: dict[str, list[tuple[int, Any]]] = defaultdict(list)  # per tool: each kind's first arguments
    count = 0
    for call in calls:
        tool = rules.for_tool(call.name)
        key = _call_key(tool, call.arguments)
        if key is not None:
            kind = by_key.setdefault((call.name, key), count)
        else:
            seen = firsts[call.name]
            kind = next((k for k, first in seen if pair_credit(tool, first, call.arguments) == 1.0), count)
            if kind == count:
                seen.append((kind, call.arguments))
        count += kind == count
        kinds.append(kind)
    return kinds


def find_repeats(kinds: Sequence[int], max_repeats: int) -> list[list[int]]:
    """The indices of each kind of call made more than ``max_repeats`` times, in order of first call.

    >>> find_repeats([0, 1, 0, 2, 0], 2)
    [[0, 2, 4]]
    """
    where: dict[int, list[int]] = defaultdict(list)
    for index, kind in enumerate(kinds):
        where[kind].append(index)
    return [indices for indices in where.values() if len(indices) > max_repeats]


def _primitive(block: Sequence[int]) -> bool:
    """Whether ``block`` is no shorter block repeated (``[0, 1, 0, 1]`` is ``[0, 1]`` twice)."""
    size = len(block)
    return not any(
        size % d == 0 and all(block[i] == block[i + d] for i in range(size - d)) for d in range(1, size // 2 + 1)
    )


def find_cycles(kinds: Sequence[int], max_cycles: int, max_period: int) -> list[tuple[int, int, int, int]]:
    """Each cycle as ``(start, period, repeats, length)``: a maximal stretch ``kinds[start:start + length]`` equal to
    itself shifted by ``period`` (2 to ``max_period`` calls, a block that is no shorter block repeated), holding
    ``repeats = length // period`` whole blocks, more than ``max_cycles``. Sorted by start, then period (the
    earliest and shortest first). Time: calls times ``max_period``.

    >>> find_cycles([5, 0, 1, 0, 1, 0, 1, 0], 2, 10)
    [(1, 2, 3, 7)]
    """
    found = []
    n = len(kinds)
    for period in range(2, min(max_period, n // (max_cycles + 1)) + 1):
        start = 0
        while start + period < n:
            end = start
            while end + period < n and kinds[end] == kinds[end + period]:
                end += 1
            length = end - start + period
            if length // period > max_cycles and _primitive(kinds[start : start + period]):
                found.append((start, period, length // period, length))
            start = end + 1
    return sorted(found)


def find_similar_turns(
    turns: Sequence[tuple[int, frozenset[Any] | None]], similarity: float, max_turn_repeats: int
) -> list[tuple[list[int], float]]:
    """Each run of consecutive turns, each at least ``similarity`` alike to the one before, of more than
    ``max_turn_repeats`` turns: its turns' indices and the least similarity within it. ``turns``: each turn's
    index and its shingles (None: too short to compare, which ends a run).

    >>> a, b = frozenset("ab"), frozenset("cd")
    >>> find_similar_turns([(0, a), (2, a), (4, a), (6, b)], 0.9, 1)
    [([0, 2, 4], 1.0)]
    """
    found = []
    run: list[int] = []
    least = 1.0
    previous: frozenset[Any] | None = None
    for index, current in [*turns, (-1, None)]:  # a last turn that ends the last run
        alike = jaccard(previous, current) if previous is not None and current is not None else -1.0
        if alike >= similarity:
            run.append(index)
            least = min(least, alike)
        else:
            if len(run) > max_turn_repeats:
                found.append((run, least))
            run, least = [index], 1.0
        previous = current
    return found


@register
class ToolLoop(_ToolCallScorer):
    """1 when the agent shows no loop, 0 when it shows one; each loop found is named in the metadata.

    A loop is any of:

    - ``repeated_call``: one call (the same name, arguments that agree under ``arguments`` and ``rules``, as for
      :class:`~scorers.agents.tool_calls.ToolCallMatch`) made more than ``max_repeats`` times anywhere in the
      trajectory. With rules that do not compare equal values (``numeric``, a text scorer, ``subset``), a call is
      the same as the first earlier call of that tool it agrees with, that call as the expected side (time: the
      calls times the distinct calls of a tool; ``exact`` and ``loose`` take linear time).
    - ``cycle``: a block of 2 to ``max_period`` calls, not itself a shorter block repeated, repeated back to back
      more than ``max_cycles`` times (``A B A B A B``: the block ``A B`` three times). The stretch is the longest
      one; the earliest and shortest block is listed first.
    - ``similar_turns``: more than ``max_turn_repeats`` assistant turns in a row (the assistant's messages with
      text, in order, whatever comes between them) each at least ``similarity`` alike to the one before, by the
      Jaccard similarity of their sets of ``ngram``-token runs; tokens are ``words`` (runs of Unicode word
      characters, case folded) or ``characters``; no word is left out. A turn of fewer than ``min_tokens`` tokens
      is not compared and ends a run. Needs a conversation; bare calls are checked for the other two.

    Metadata: ``loops``, each with its ``kind``, ``start`` (the call index, or the message index of a turn) and
    ``repeats``: a repeated call's ``name``, ``arguments`` and ``calls`` (every index); a cycle's ``period``,
    ``length`` (calls in the stretch) and ``block`` (its calls); similar turns' ``messages`` and the least
    ``similarity`` among them. Also ``calls`` (how many) and ``turns_checked``.
    """

    name = "ToolLoop"
    description = "1 unless the agent loops: a call repeated, a cycle of calls, near-identical turns in a row"
    fields = (  # type: ignore[assignment]  # mypy infers the base's as exactly two fields
        _calls_field("output", "the agent's conversation in any format (or its list of tool calls)"),
    )
    example = 'ToolLoop(max_repeats=1)(output=[{"name": "search"}, {"name": "search"}])  # 0.0'

    max_repeats: int = param("most times one call (name and arguments) may be made", default=2, ge=1)
    max_cycles: int = param("most times a block of calls may repeat back to back", default=2, ge=1)
    max_period: int = param("most calls in a repeated block (time grows with it)", default=10, ge=2)
    similarity: float = param("Jaccard similarity at which two turns are near-identical", default=0.9, gt=0, le=1)
    max_turn_repeats: int = param("most near-identical assistant turns allowed in a row", default=1, ge=1)
    ngram: int = param("tokens in each run compared between turns (1: sets of tokens)", default=1, ge=1)
    tokens: str = param("words: runs of Unicode word characters; characters: each one", default="words", choices=TOKENS)
    min_tokens: int = param("fewest tokens a turn must have to be compared", default=5, ge=1)
    arguments: Any = _ARGUMENTS
    rules: Mapping[str, Any] | None = _RULES

    def __post_init__(self) -> None:
        from .rules import ArgumentRules

        self._rules = ArgumentRules(self.arguments, self.rules, owner=self.name)

    def params(self) -> dict[str, Any]:
        return {**super().params(), **self._rules.to_data()}

    # fields by keyword, as Scorer documents its hooks (mypy cannot match that to the base hook's **fields)
    def _score(self, *, output: Any, **_: Any) -> Score:  # type: ignore[override]
        conversation = self._conversation(output)
        calls = conversation.tool_calls if conversation is not None else self._calls(output, "output")
        with self._comparing():
            kinds = kinds_of_calls(calls, self._rules)
        loops = [self._repeat(calls, indices) for indices in find_repeats(kinds, self.max_repeats)]
        loops += [self._cycle(calls, *cycle) for cycle in find_cycles(kinds, self.max_cycles, self.max_period)]
        if conversation is not None:
            loops += [
                {"kind": "similar_turns", "start": run[0], "repeats": len(run), "messages": run, "similarity": least}
                for run, least in find_similar_turns(self._turns(conversation), self.similarity, self.max_turn_repeats)
            ]
        metadata: dict[str, Any] = {"loops": loops, "calls": len(calls), "turns_checked": conversation is not None}
        if loops:
            return self.make_score(0.0, reason=_described(loops[0]), **metadata)
        return self.make_score(1.0, **metadata)

    def _conversation(self, value: Any) -> Conversation | None:
        """The conversation ``value`` holds; None when it holds bare calls, or what neither reader reads (then
        reading it as calls raises the error)."""
        if isinstance(value, Conversation):
            return value
        if isinstance(value, (list, tuple)) and value and all(isinstance(item, ToolCall) for item in value):
            return None
        try:
            return read_conversation(value, scorer=self.name, field="output")
        except ScorerInputError:
            return None

    def _turns(self, conversation: Conversation) -> list[tuple[int, frozenset[Any] | None]]:
        turns = []
        for index, message in enumerate(conversation.messages):
            if message.role == "assistant" and message.content:
                words = tokens(message.content, self.tokens)
                turns.append((index, shingles(words, self.ngram) if len(words) >= self.min_tokens else None))
        return turns

    @staticmethod
    def _repeat(calls: Sequence[ToolCall], indices: list[int]) -> dict[str, Any]:
        first = calls[indices[0]]
        return {
            "kind": "repeated_call",
            "start": indices[0],
            "repeats": len(indices),
            "name": first.name,
            "arguments": jsonable(first.arguments),
            "calls": indices,
        }

    @staticmethod
    def _cycle(calls: Sequence[ToolCall], start: int, period: int, repeats: int, length: int) -> dict[str, Any]:
        block = [{"name": c.name, "arguments": jsonable(c.arguments)} for c in calls[start : start + period]]
        return {"kind": "cycle", "start": start, "repeats": repeats, "period": period, "length": length, "block": block}


def _described(loop: Mapping[str, Any]) -> str:
    """One loop in words (a score's ``reason``)."""
    if loop["kind"] == "repeated_call":
        return (
            f"the call {loop['name']!r} is made {loop['repeats']} times with the same arguments (calls {loop['calls']})"
        )
    if loop["kind"] == "cycle":
        names = " -> ".join(call["name"] for call in loop["block"])
        return f"the calls {names} repeat {loop['repeats']} times in a row from call {loop['start']}"
    return (
        f"{loop['repeats']} assistant turns in a row are near-identical (messages {loop['messages']}, "
        f"similarity at least {loop['similarity']:.2f})"
    )
