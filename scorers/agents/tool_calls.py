"""Deterministic scorers of tool calls and trajectories: no model, exact, and explained in their metadata.

``output`` holds the actual calls and ``expected`` the expected ones, each as a list of calls in any shape or a
whole conversation in any format :mod:`scorers.agents.readers` reads (OpenAI chat or Responses, Anthropic,
LangChain, OpenTelemetry GenAI spans, or JSON text of one).

>>> from scorers import get
>>> expected = [{"name": "get_weather", "arguments": {"city": "Paris"}}] * 2
>>> get("ToolCallMatch")(output=expected, expected=expected).score  # the same call twice, expected twice
1.0
>>> get("ToolCallF1")(output=[{"name": "search"}, {"name": "search"}], expected="search").score
0.6666666666666666
"""

from __future__ import annotations

import json
import sys
from contextlib import contextmanager
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Iterator, Mapping, Sequence, cast

from ..base import Scorer
from ..errors import ConfigError, ScorerError, ScorerInputError
from ..fields import Field
from ..params import param, seconds
from ..registry import register
from ..score import Score
from .model import Conversation, ToolCall, jsonable, thaw
from .readers import CallLimitError, read_conversation, read_tool_calls

if TYPE_CHECKING:
    from .matching import Matching
    from .rules import ArgumentRules, ToolRules

__all__ = ["ToolCallMatch", "TrajectoryMatch", "ToolCallValid", "ToolCallF1"]

#: ToolCallMatch's orders and policies for extra calls (scorers.agents.matching, which needs numpy, loads on first use).
ORDERS = ("any", "in_order", "exact")
EXTRA_CALLS = ("penalise", "ignore")

#: The Python types a field of calls or a conversation may hold (text: JSON text of one).
CALL_TYPES = (list, tuple, dict, str, Conversation)
_CALLS_HELP = "calls: a list of calls in any shape, or a whole conversation in any format"


def _calls_field(name: str, description: str) -> Field:
    return Field(name, CALL_TYPES, description=description)


def _call_dict(index: int, call: ToolCall) -> dict[str, Any]:
    out = {"index": index, "name": call.name, "arguments": jsonable(call.arguments)}
    if call.kind != "function":  # an MCP call says so (and its server); a function call's entry is as it was
        out.update(kind=call.kind, server=call.server)
    return out


#: How the ruled scorers treat an MCP call and a function call of the same name.
TOOL_KINDS = ("distinct", "ignore")
#: What an MCP call's name carries while calls are paired, so that it pairs only with MCP calls.
_MCP_KEY = "\x00mcp"


class _ByKind:
    """Argument rules looked up by the name an MCP call carries while paired (its rules are its tool's)."""

    def __init__(self, rules: ArgumentRules) -> None:
        self._rules = rules

    def for_tool(self, key: str) -> ToolRules:
        return self._rules.for_tool(key.removesuffix(_MCP_KEY))


class _ToolCallScorer(Scorer):
    """What the tool-call scorers share: reading calls from a field (cost linear in its size)."""

    fields = (
        _calls_field("output", f"the actual {_CALLS_HELP}"),
        _calls_field("expected", f"the expected {_CALLS_HELP}"),
    )

    def _calls(self, value: Any, field: str, max_calls: int | None = None) -> tuple[ToolCall, ...]:
        """The calls ``value`` holds (also a Conversation or ToolCalls built in Python); more than ``max_calls`` is
        a ScorerInputError, raised while reading."""
        if isinstance(value, Conversation):
            calls = value.tool_calls
        elif isinstance(value, (list, tuple)) and value and all(isinstance(item, ToolCall) for item in value):
            calls = tuple(value)
        else:
            return read_tool_calls(value, scorer=self.name, field=field, max_calls=max_calls)
        if max_calls is not None and len(calls) > max_calls:
            raise CallLimitError(self.name, field, max_calls, len(calls))
        return calls

    @contextmanager
    def _comparing(self) -> Iterator[None]:
        """Errors while comparing arguments become this scorer's ScorerInputError."""
        from .matching import ComparisonLimit

        try:
            yield
        except RecursionError:
            raise ScorerInputError(self.name, "output", "holds arguments nested too deeply to compare") from None
        except ComparisonLimit as exc:
            raise ScorerInputError(self.name, "output", str(exc)) from None
        except ScorerError as exc:  # a rule's text scorer refused a value
            field = getattr(exc, "field", "output")
            raise ScorerInputError(self.name, field, f"holds an argument a rule's scorer refused: {exc}") from exc


#: The parameters of the scorers that compare arguments (ToolCallMatch, TrajectoryMatch), declared once here.
_ARGUMENTS = param(
    "the rule of every argument: exact, loose, ignore, subset, superset, or a rule as a mapping",
    default="exact",
    signed=False,  # in the signature as the rules' data (ArgumentRules.to_data)
)
_RULES = param(
    "rules per tool and per dot path, overriding arguments (e.g. {search: {query: loose}})",
    default=None,
    signed=False,
    expected="a mapping of tool names (or '*') to a rule or to {path: rule}, or None",
)
_TOOL_KINDS = param(
    "distinct: an MCP call and a function call of one name are different calls; ignore: names alone",
    default="distinct",
    choices=TOOL_KINDS,
    signed=False,  # in the signature when not the default (params), so that earlier signatures stay as they were
)
_MAX_CALLS = param(
    "most calls a side may hold (pairing compares every expected call with every actual one); None: no limit",
    default=1_000,
    ge=1,
    signed=False,
)


class _RuledScorer(_ToolCallScorer):
    """A tool-call scorer that compares arguments under :class:`~scorers.agents.matching.ArgumentRules`, pairing
    calls through a matrix of every expected call against every actual one of the same tool: ``max_calls`` bounds
    the calls on a side."""

    #: 2: NaN agrees with NaN; numeric tolerances compare the decimals as written (0.4 and 0.3 within 0.1)
    #: 3: an MCP call pairs only with an MCP call (tool_kinds="ignore": by name, as before)
    algorithm_version = "3"

    # the parameters ToolCallMatch and TrajectoryMatch declare (each in its constructor's order)
    arguments: Any
    rules: Any
    max_calls: int | None
    tool_kinds: str

    def __post_init__(self) -> None:
        from .matching import ArgumentRules

        self._rules = ArgumentRules(self.arguments, self.rules, owner=self.name)
        self.rules = self._rules  # as read

    def _paired(
        self, expected: Sequence[ToolCall], actual: Sequence[ToolCall]
    ) -> tuple[Sequence[ToolCall], Sequence[ToolCall], ArgumentRules]:
        """The calls and rules that pairing compares: under ``tool_kinds="distinct"``, an MCP call's name carries
        its kind, so that it pairs only with an MCP call of its name (the server is not compared)."""
        if self.tool_kinds == "ignore" or not any(c.kind == "mcp" for c in (*expected, *actual)):
            return expected, actual, self._rules

        def keyed(calls: Sequence[ToolCall]) -> tuple[ToolCall, ...]:
            return tuple(replace(c, name=c.name + _MCP_KEY) if c.kind == "mcp" else c for c in calls)

        return keyed(expected), keyed(actual), cast("ArgumentRules", _ByKind(self._rules))

    def _kinds(self) -> dict[str, Any]:
        return {"tool_kinds": self.tool_kinds} if self.tool_kinds != "distinct" else {}

    def _bounded_calls(self, value: Any, field: str) -> tuple[ToolCall, ...]:
        """The calls ``value`` holds; more than ``max_calls`` is a ScorerInputError, raised while reading."""
        try:
            return self._calls(value, field, self.max_calls)
        except CallLimitError as exc:
            raise ScorerInputError(self.name, field, f"{exc.problem} (refused while reading): {self._why()}") from None

    def _check_count(self, field: str, count: int) -> None:
        if self.max_calls is not None and count > self.max_calls:
            raise ScorerInputError(
                self.name, field, f"holds {count:,} tool calls, more than max_calls={self.max_calls:,}: {self._why()}"
            )

    def _why(self) -> str:
        return (
            "a bound on time and memory, as pairing compares every expected call with every actual call of the "
            "same tool (memory grows with their product) and the best pairing takes time that grows faster still; "
            f"raise it if the cost is acceptable, with scorers.get({self.name!r}, max_calls=...) or "
            f"-p {self.name}.max_calls=... (null: no limit)"
        )

    def params(self) -> dict[str, Any]:
        return {**self._rules.to_data(), **super().params(), **self._kinds()}

    def _explained(
        self, expected: Sequence[ToolCall], actual: Sequence[ToolCall], matching: Matching
    ) -> dict[str, Any]:
        """The pairing as metadata: each pair with the verdict of each argument, and the calls left unmatched."""
        from .matching import explain_pair

        pairs = []
        for pair in matching.pairs:
            call = expected[pair.expected]
            _, verdicts = explain_pair(self._rules.for_tool(call.name), call.arguments, actual[pair.actual].arguments)
            pairs.append(
                {
                    "expected": pair.expected,
                    "actual": pair.actual,
                    "name": call.name,
                    "credit": pair.credit,
                    "arguments": [verdict.to_dict() for verdict in verdicts],
                }
            )
        return {
            "pairs": pairs,
            "unmatched_expected": [_call_dict(i, expected[i]) for i in matching.unmatched_expected],
            "unmatched_actual": [_call_dict(j, actual[j]) for j in matching.unmatched_actual],
        }


@register
class ToolCallMatch(_RuledScorer):
    """Expected tool calls against actual ones, with partial credit, under the best pairing.

    Calls are paired by an **optimal assignment** (the pairing of greatest total credit, never a greedy one; the
    same call made twice and expected twice pairs twice). A pair's credit is 0 when the names differ, else the
    share of argument keys (both sides' top-level keys) whose values agree under their rule; a pair with no
    arguments gets 1. Rules are data (see :class:`~scorers.agents.matching.ArgumentRules`): ``arguments`` is the
    rule of every argument (``"exact"``: JSON-typed, ``1 == 1.0``, ``1 != "1"``; ``"loose"``, ``"ignore"``,
    ``"subset"``, ``"superset"``, ``{"rule": "numeric", "tolerance": t}``, ``{"scorer": "Levenshtein",
    "threshold": 0.9}``) and ``rules`` overrides it per tool and per dot path, e.g. ``{"search": {"query":
    "loose"}, "*": {"request_id": "ignore"}}``.

    With ``S`` the total credit, ``extra_calls="penalise"`` scores ``2S / (n_expected + n_actual)`` (an F1 with
    partial credit) and ``"ignore"`` scores ``S / n_expected`` (recall; 1 when nothing is expected); no calls on
    either side scores 1. ``order="any"`` pairs in any order; ``"in_order"`` keeps the order of both lists (the
    best order-preserving pairing, a weighted longest common subsequence); ``"exact"`` pairs position by position
    and scores 0 when the lengths differ.

    An MCP call (Anthropic's ``mcp_tool_use``, Responses' ``mcp_call``, a JSON-RPC ``tools/call``; an expected call
    says it is one with ``"type": "mcp_call"``) pairs only with an MCP call of its name: a function and an MCP
    server's tool of one name are different tools. ``tool_kinds="ignore"`` pairs by name alone. Servers are not
    compared (a server's label is the deployment's, not the agent's choice).

    Metadata: ``pairs`` (expected index, actual index, name, credit and each argument's verdict: path, rule,
    expected, actual, agree), ``unmatched_expected`` and ``unmatched_actual``. A row of more than ``max_calls``
    calls on a side is a :class:`~scorers.errors.ScorerInputError` (``None``: no limit), except under
    ``order="exact"``, which compares only the pairs at the same position.
    """

    name = "ToolCallMatch"
    description = "expected vs actual tool calls: optimal pairing, per-argument rules, partial credit"
    example = (
        'ToolCallMatch()(output=[{"name": "search", "arguments": {"q": "paris", "n": 5}}], '
        'expected=[{"name": "search", "arguments": {"q": "paris", "n": 3}}])  # 0.5'
    )

    arguments: Any = _ARGUMENTS
    rules: Mapping[str, Any] | None = _RULES
    order: str = param(
        "any: pair in any order; in_order: keep both lists' order; exact: position by position",
        default="any",
        choices=ORDERS,
    )
    extra_calls: str = param(
        "penalise: an F1 with partial credit; ignore: recall (credit over the expected calls)",
        default="penalise",
        choices=EXTRA_CALLS,
    )
    max_calls: int | None = _MAX_CALLS
    tool_kinds: str = _TOOL_KINDS

    # fields by keyword, as Scorer documents its hooks (mypy cannot match that to the base hook's **fields)
    def _score(self, *, output: Any, expected: Any, **_: Any) -> Score:  # type: ignore[override]
        from .matching import match_calls, score_of

        if self.order == "exact":  # position by position: linear, no bound needed
            actual, wanted = self._calls(output, "output"), self._calls(expected, "expected")
        else:
            actual, wanted = self._bounded_calls(output, "output"), self._bounded_calls(expected, "expected")
        with self._comparing():
            matching = match_calls(*self._paired(wanted, actual), self.order)
            metadata = self._explained(wanted, actual, matching)
        if self.order == "exact" and len(wanted) != len(actual):
            reason = f"order='exact' needs as many calls as expected: {len(actual)} made, {len(wanted)} expected"
            return self.make_score(0.0, reason=reason, **metadata)
        return self.make_score(score_of(matching.total, len(wanted), len(actual), self.extra_calls), **metadata)


#: TrajectoryMatch's modes, as openevals names them.
TRAJECTORY_MODES = ("strict", "unordered", "subset", "superset")


@register
class TrajectoryMatch(_RuledScorer):
    """1 if the actual trajectory matches the expected one under ``mode`` (openevals' trajectory match), else 0.

    - ``strict``: both are conversations with the same number of messages, the same role at each position, and at
      each position the same tool calls (in any order within the message). As in openevals, **message content is
      ignored**: different user text or final answer still match.
    - ``unordered``: the same calls, in any order, across messages (a multiset: one extra duplicate fails).
    - ``superset``: every expected call is among the actual ones (each actual call used once).
    - ``subset``: every actual call is among the expected ones.

    Two calls match when their credit under the argument rules is 1 (same name, every counted argument agreeing;
    ``arguments``, ``rules`` and ``tool_kinds`` as for :class:`ToolCallMatch`: an MCP call matches only an MCP call
    by default). Calls are paired by a maximum matching, never
    greedily, so a valid pairing is always found. Metadata: ``parts_at``, the first point where the trajectories
    part (a message index for ``strict``, else the first call left unmatched), with the pairing.
    """

    name = "TrajectoryMatch"
    description = "1 if the trajectory matches the expected one (openevals' strict, unordered, subset, superset)"
    example = 'TrajectoryMatch(mode="unordered")(output=[{"name": "a"}, {"name": "b"}], expected=[{"name": "b"}, {"name": "a"}])  # 1.0'

    mode: str = param("how the trajectories must match (openevals' modes)", default="strict", choices=TRAJECTORY_MODES)
    arguments: Any = _ARGUMENTS
    rules: Mapping[str, Any] | None = _RULES
    max_calls: int | None = _MAX_CALLS
    tool_kinds: str = _TOOL_KINDS

    def params(self) -> dict[str, Any]:
        return {**_ToolCallScorer.params(self), **self._rules.to_data(), **self._kinds()}  # mode first

    # fields by keyword, as Scorer documents its hooks (mypy cannot match that to the base hook's **fields)
    def _score(self, *, output: Any, expected: Any, **_: Any) -> Score:  # type: ignore[override]
        from .matching import perfect_matching

        if self.mode == "strict":
            return self._strict(self._conversation(output, "output"), self._conversation(expected, "expected"))
        actual, wanted = self._bounded_calls(output, "output"), self._bounded_calls(expected, "expected")
        with self._comparing():
            matching = perfect_matching(*self._paired(wanted, actual))
            metadata = self._explained(wanted, actual, matching)
        must_match_expected = self.mode in ("superset", "unordered")
        must_match_actual = self.mode in ("subset", "unordered")
        parts_at = None
        if must_match_expected and matching.unmatched_expected:
            parts_at = {"expected_call": matching.unmatched_expected[0], "reason": "no actual call matches it"}
        elif must_match_actual and matching.unmatched_actual:
            parts_at = {"actual_call": matching.unmatched_actual[0], "reason": "no expected call matches it"}
        return self.make_score(float(parts_at is None), parts_at=parts_at, **metadata)

    def _conversation(self, value: Any, field: str) -> Conversation:
        """The conversation strict mode compares; a list of bare calls is an error that says which modes take it."""
        if isinstance(value, Conversation):
            conversation = value
        else:
            try:
                conversation = read_conversation(value, scorer=self.name, field=field, max_calls=self.max_calls)
            except CallLimitError as exc:
                raise ScorerInputError(
                    self.name, field, f"{exc.problem} (refused while reading): {self._why()}"
                ) from None
            except ScorerInputError as exc:
                if not self._bare_calls(value, field):
                    raise
                raise ScorerInputError(
                    self.name,
                    field,
                    "is a list of tool calls, not a conversation: mode='strict' (the default) compares messages, "
                    "each message's role and its calls, as openevals does; mode='unordered', 'subset' or "
                    f"'superset' compares bare calls (reading it as a conversation: {exc.problem})",
                ) from None
        self._check_count(field, len(conversation.tool_calls))
        return conversation

    def _bare_calls(self, value: Any, field: str) -> bool:
        """Whether ``value`` reads as a non-empty list of calls."""
        try:
            return bool(read_tool_calls(value, scorer=self.name, field=field, max_calls=self.max_calls))
        except ScorerInputError:
            return False

    def _strict(self, actual: Conversation, wanted: Conversation) -> Score:
        from .matching import perfect_matching

        for index, (want, got) in enumerate(zip(wanted.messages, actual.messages)):
            if want.role != got.role:
                reason = f"the message's role is {got.role!r}, expected {want.role!r}"
                return self.make_score(0.0, parts_at={"message": index, "reason": reason})
            if not (want.tool_calls or got.tool_calls):
                continue
            with self._comparing():
                matching = perfect_matching(*self._paired(want.tool_calls, got.tool_calls))
                if matching.unmatched_expected or matching.unmatched_actual:
                    reason = "the message's tool calls differ from the expected ones"
                    metadata = self._explained(want.tool_calls, got.tool_calls, matching)
                    return self.make_score(0.0, parts_at={"message": index, "reason": reason}, **metadata)
        if len(wanted) != len(actual):
            reason = f"the conversation has {len(actual)} messages, expected {len(wanted)}"
            return self.make_score(0.0, parts_at={"message": min(len(wanted), len(actual)), "reason": reason})
        return self.make_score(1.0, parts_at=None)


def _tools_json(tools: Any) -> str:
    """The tools as canonical JSON text (the validators' cache key); a value JSON cannot hold is a ValueError."""
    if isinstance(tools, str):
        try:
            tools = json.loads(tools)
        except json.JSONDecodeError as exc:
            raise ValueError(f"is text that is not JSON ({exc.msg} at character {exc.pos})") from None
        except ValueError:  # an integer of more digits than Python reads from text
            raise ValueError(
                f"is JSON text holding an integer of more than {sys.get_int_max_str_digits():,} digits, more than "
                "Python reads from text (sys.set_int_max_str_digits raises the limit)"
            ) from None
        except RecursionError:
            raise ValueError("is JSON text nested too deeply to read") from None
    try:
        return json.dumps(tools, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError, RecursionError) as exc:
        raise ValueError(f"is not a JSON list of tool definitions: {exc}") from None


#: CPU seconds the validation of one call's arguments may take by default (``ToolCallValid(timeout_s=...)``).
VALIDATION_TIMEOUT_S = 1.0


@register
class ToolCallValid(_ToolCallScorer):
    """The share of tool calls that name a known tool and whose arguments validate against its JSON Schema.

    ``tools`` is a list of tool definitions in OpenAI's ``tools`` format (``{"type": "function", "function":
    {"name", "parameters"}}``), or flat (``{"name", "parameters"}``, as the Responses API writes them), or
    Anthropic's (``{"name", "input_schema"}``), or MCP's (``{"name", "description", "inputSchema"}``); or an MCP
    ``tools/list`` result (``{"tools": [...]}``, bare or in its JSON-RPC response) or a Responses
    ``mcp_list_tools`` item; given to the constructor or as a row's ``tools`` field (a row's wins). A call, of a
    function or an MCP tool, is checked against the definition of its name, whichever kind: agent frameworks
    offer an MCP server's tools to the model as functions. Each schema is checked once (an invalid one is a ConfigError, or the row's ScorerInputError) and
    nothing is fetched for a ``$ref``. No calls scores 1 (nothing invalid was called). Metadata: ``invalid``, each
    invalid call (index, name, arguments) and why, from the schema's most relevant error.

    Validating takes time linear in the calls, each call within ``timeout_s`` seconds of CPU time (1 by default;
    ``None``: no limit): a call that takes longer (a schema whose ``anyOf`` or ``$ref`` branch at every level, a
    ``pattern`` that backtracks without end) is the row's :class:`~scorers.errors.ScorerInputError`. Patterns
    match with the ``regex`` package, ``multipleOf`` compares decimals as written and ``uniqueItems`` hashes
    (:mod:`scorers.agents.schemas`).
    """

    name = "ToolCallValid"
    description = "share of tool calls naming a known tool with arguments valid against its JSON Schema"
    fields = (
        _calls_field("output", f"the {_CALLS_HELP}"),
        Field(
            "tools",
            (list, tuple, dict, str),
            required=False,
            description="tool definitions (OpenAI, Anthropic or MCP format, or an MCP tools/list result)",
        ),
    )
    example = (
        'ToolCallValid(tools=[{"name": "search", "parameters": {"type": "object", "required": ["q"]}}])'
        '(output=[{"name": "search", "arguments": {}}])  # 0.0'
    )
    #: 2: multipleOf compares decimals as written (0.3 is a multiple of 0.1); uniqueItems: NaN equals NaN
    algorithm_version = "2"

    tools: Any = param("the tool definitions, OpenAI tools format (None: each row's tools)", default=None)
    timeout_s: float | None = seconds(
        "CPU seconds the validation of one row may take (a longer one is the row's error)",
        default=VALIDATION_TIMEOUT_S,
    )

    def __post_init__(self) -> None:
        from .schemas import validators

        self._tools_key = None
        if self.tools is not None:
            try:
                self._tools_key = _tools_json(self.tools)
                validators(self._tools_key)
            except ValueError as exc:
                raise ConfigError(f"{self.name}: tools {exc}", scorer=self.name) from None

    # fields by keyword, as Scorer documents its hooks (mypy cannot match that to the base hook's **fields)
    def _score(self, *, output: Any, tools: Any = None, **_: Any) -> Score:  # type: ignore[override]
        from .schemas import validators

        calls = self._calls(output, "output")
        if tools is None and self._tools_key is None:
            raise ScorerInputError(
                self.name, "tools", "is required: give the tool definitions to the scorer (tools=...) or in the row"
            )
        key = self._tools_key if tools is None else None
        try:
            found = validators(key or _tools_json(tools))
        except ValueError as exc:
            raise ScorerInputError(self.name, "tools", str(exc)) from None
        invalid = []
        for index, call in enumerate(calls):
            error = self._error(index, call, found, "tools" if tools is not None else "output")
            if error is not None:
                invalid.append({**_call_dict(index, call), "error": error})
        value = (len(calls) - len(invalid)) / len(calls) if calls else 1.0
        return self.make_score(value, invalid=invalid, calls=len(calls))

    def _error(self, index: int, call: ToolCall, validators: Mapping[str, Any], schema_field: str) -> str | None:
        """Why ``call`` is invalid, or None when it is valid (``schema_field``: the field a schema at fault is in)."""
        from referencing.exceptions import Unresolvable

        from .schemas import ValidationTimeout, validate

        validator = validators.get(call.name)
        if validator is None:
            return f"no tool is named {call.name!r} (tools: {', '.join(validators) or 'none'})"
        try:
            error = validate(validator, thaw(call.arguments), self.timeout_s)
        except RecursionError:
            raise ScorerInputError(self.name, "output", "holds arguments nested too deeply to validate") from None
        except Unresolvable as exc:
            raise ScorerInputError(
                self.name, schema_field, f"the tool {call.name!r} has a $ref that resolves to nothing here: {exc}"
            ) from None
        except ValidationTimeout:
            raise ScorerInputError(
                self.name,
                schema_field,
                f"took more than timeout_s={self.timeout_s} s of CPU time to validate call {index}'s arguments "
                f"against the schema of {call.name!r} (a schema whose anyOf, oneOf or $ref branch at every level, "
                "a pattern that backtracks without end such as ^(a+)+$, or very large arguments): simplify the "
                f"schema, or raise the limit with scorers.get({self.name!r}, timeout_s=...) or "
                f"-p {self.name}.timeout_s=... (null: no limit)",
            ) from None
        if error is None:
            return None
        where = error.json_path if error.path else "the arguments"
        return f"{where}: {error.message}"


def _tool_names(value: Any) -> list[str] | None:
    """The tool names of promptfoo's ``tool-call-f1`` value (a list of names, or names separated by commas),
    else None (calls or a conversation)."""
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except json.JSONDecodeError:
            return [name.strip() for name in value.split(",") if name.strip()]
        except (RecursionError, ValueError):  # nested too deep, an integer too long: the reader says so
            return None
        return _tool_names(parsed) if isinstance(parsed, list) else None
    if isinstance(value, (list, tuple)) and value and all(isinstance(item, str) for item in value):
        return [name.strip() for name in value if name.strip()]
    return None


@register
class ToolCallF1(_ToolCallScorer):
    """F1 of the tool names called against the names expected, as promptfoo's ``tool-call-f1`` computes it, but
    over **multisets**: a tool called twice when expected once counts one right call and one extra.

    ``multiset=False`` compares sets of names instead, as promptfoo does (duplicates ignored). Arguments and order
    are not compared (see :class:`ToolCallMatch`). ``expected`` may also be promptfoo's value: a list of names or
    names separated by commas. Both sides empty scores 1 (promptfoo refuses an empty expected list). Metadata:
    ``precision``, ``recall``, ``missing`` and ``extra`` names.
    """

    name = "ToolCallF1"
    description = "F1 of tool names called vs expected (promptfoo's tool-call-f1, over multisets)"
    example = 'ToolCallF1()(output=[{"name": "search"}, {"name": "fetch"}], expected="search,summarise")  # 0.5'

    multiset: bool = param("count a name called twice twice (False: sets of names)", default=True)

    # fields by keyword, as Scorer documents its hooks (mypy cannot match that to the base hook's **fields)
    def _score(self, *, output: Any, expected: Any, **_: Any) -> Score:  # type: ignore[override]
        from collections import Counter

        names = _tool_names(expected)
        wanted = Counter(names if names is not None else (call.name for call in self._calls(expected, "expected")))
        actual = Counter(call.name for call in self._calls(output, "output"))
        if not self.multiset:
            wanted, actual = Counter(set(wanted)), Counter(set(actual))
        right = sum((wanted & actual).values())
        n_wanted, n_actual = sum(wanted.values()), sum(actual.values())
        precision = right / n_actual if n_actual else float(not n_wanted)
        recall = right / n_wanted if n_wanted else float(not n_actual)
        value = 1.0 if not (n_wanted or n_actual) else 2 * right / (n_wanted + n_actual)
        return self.make_score(
            value,
            precision=precision,
            recall=recall,
            missing=sorted((wanted - actual).elements()),
            extra=sorted((actual - wanted).elements()),
        )
