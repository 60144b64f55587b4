"""Pairing expected tool calls with actual ones: argument rules, per-pair credit, and the best pairing.

Pure functions over tuples of :class:`~scorers.agents.model.ToolCall`; the scorers of
:mod:`scorers.agents.tool_calls` read their fields and call these.

**Credit of a pair.** 0 when the names differ. Otherwise the share of the arguments' top-level keys (the union of
both sides') whose values agree under their rule; a key whose rule is ``ignore`` is left out of the share, and a
pair with no key left gets 1. Under a ``subset`` root rule only the actual call's keys count (it may leave out
expected ones), under ``superset`` only the expected call's (it may add keys).

**Rules** are data: a name (``"exact"``, ``"loose"``, ``"ignore"``, ``"subset"``, ``"superset"``, ``"numeric"``)
or an object (``{"rule": "numeric", "tolerance": 0.5}``, ``{"scorer": "Levenshtein", "threshold": 0.9}``).
:class:`ArgumentRules` takes a default rule and, per tool name (``"*"``: every tool), either one rule for its
arguments or a mapping from dot paths into its arguments (``"*"``: the tool's default) to rules.

>>> from scorers.agents.model import ToolCall, freeze
>>> rules = ArgumentRules("exact", {"search": {"limit": {"rule": "numeric", "tolerance": 5}}})
>>> expected = (ToolCall("search", freeze({"q": "paris", "limit": 10})), ToolCall("weather", freeze({})))
>>> actual = (ToolCall("weather", freeze({})), ToolCall("search", freeze({"q": "Paris", "limit": 12})))
>>> matching = match_calls(expected, actual, rules)
>>> [(p.expected, p.actual, p.credit) for p in matching.pairs], matching.total
([(0, 1, 0.5), (1, 0, 1.0)], 1.5)
>>> [v.to_dict() for v in explain_pair(rules.for_tool("search"), expected[0].arguments, actual[1].arguments)[1]]
... # doctest: +NORMALIZE_WHITESPACE
[{'path': 'q', 'rule': 'exact', 'agree': False, 'expected': 'paris', 'actual': 'Paris'},
 {'path': 'limit', 'rule': 'numeric(tolerance=5.0)', 'agree': True, 'expected': 10, 'actual': 12}]
"""

from __future__ import annotations

import bisect
import decimal
import math
from dataclasses import dataclass
from typing import Annotated, Any, Callable, Hashable, Literal, Mapping, Sequence, Union

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, TypeAdapter, ValidationError

from ..errors import ConfigError
from .model import ToolCall, jsonable

__all__ = [
    "RULE_NAMES",
    "Rule",
    "ArgumentRules",
    "ToolRules",
    "Verdict",
    "Pair",
    "Matching",
    "ComparisonLimit",
    "MAX_COMPARISONS",
    "credit_matrix",
    "explain_pair",
    "pair_credit",
    "match_calls",
    "perfect_matching",
    "score_of",
]


class _Missing:
    """A key one side does not have."""

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()


class _Tag:
    """A marker in a canonical value (a JSON boolean, an array) that equals nothing but itself."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


_TRUE, _FALSE, _ARRAY, _NAN = _Tag("true"), _Tag("false"), _Tag("array"), _Tag("NaN")


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def exact_key(value: Any) -> Hashable:
    """A hashable form of a JSON value, equal for values equal as JSON: ``1`` and ``1.0`` alike, ``1``, ``"1"``
    and ``true`` all different, key order ignored; NaN equals NaN (as the JSON text ``NaN`` equals itself).

    >>> exact_key(1) == exact_key(1.0), exact_key(1) == exact_key(True), exact_key({"a": [1]}) == exact_key({"a": (1.0,)})
    (True, False, True)
    >>> exact_key(float("nan")) == exact_key(float("nan")), exact_key(float("nan")) == exact_key(float("inf"))
    (True, False)
    """
    kind = type(value)
    if kind is str or kind is int or value is None:  # the usual leaves, by exact type first
        return value
    if kind is float:
        return value if value == value else _NAN
    if isinstance(value, bool):
        return _TRUE if value else _FALSE
    if isinstance(value, dict):
        return frozenset((key, exact_key(item)) for key, item in value.items())
    if isinstance(value, (list, tuple)):
        return (_ARRAY, *map(exact_key, value))
    return value


def _as_number(value: Any) -> int | float | None:
    """The number a value is or a string spells (``" 1e3 "``, ``"01"``), else None; non-finite ones are not."""
    if _is_number(value):
        return value if not isinstance(value, float) or math.isfinite(value) else None
    if isinstance(value, str) and "_" not in value:
        text = value.strip()
        try:
            return int(text)
        except ValueError:
            pass
        try:
            number = float(text)
        except ValueError:
            return None
        return number if math.isfinite(number) else None
    return None


def loose_key(value: Any) -> Hashable:
    """A hashable form of a JSON value under ``loose``: numbers and the strings that spell them by value, other
    strings with case folded and whitespace collapsed, booleans as ``"true"``/``"false"``.

    >>> loose_key(" New  York ") == loose_key("new york"), loose_key("1.0") == loose_key(1), loose_key(True)
    (True, True, 'true')
    """
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return frozenset((key, loose_key(item)) for key, item in value.items())
    if isinstance(value, (list, tuple)):
        return (_ARRAY, *map(loose_key, value))
    number = _as_number(value)
    if number is not None:
        return number
    if isinstance(value, str):
        return " ".join(value.split()).casefold()
    return exact_key(value)


def _structurally(expected: Any, actual: Any, leaf: Callable[[Any, Any], bool | None]) -> bool:
    """Objects with the same keys and arrays of the same length, agreeing item by item; ``leaf`` decides a pair of
    other values (None: compare them exactly)."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        return expected.keys() == actual.keys() and all(
            _structurally(expected[key], actual[key], leaf) for key in expected
        )
    if isinstance(expected, (list, tuple)) and isinstance(actual, (list, tuple)):
        return len(expected) == len(actual) and all(_structurally(e, a, leaf) for e, a in zip(expected, actual))
    verdict = leaf(expected, actual)
    return exact_key(expected) == exact_key(actual) if verdict is None else verdict


def _union(expected: Mapping[str, Any], actual: Mapping[str, Any]) -> list[str]:
    """Both objects' keys, the expected one's order first."""
    return [*expected, *(key for key in actual if key not in expected)]


class Rule(BaseModel):
    """How two values of an argument are compared."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    def label(self) -> str:
        """The rule as a verdict names it."""
        return str(getattr(self, "rule"))

    def agree(self, expected: Any, actual: Any) -> bool:
        raise NotImplementedError

    def keys(self, expected: Mapping[str, Any], actual: Mapping[str, Any]) -> list[str]:
        """The keys of two objects that are compared: both sides'."""
        return _union(expected, actual)


class Exact(Rule):
    """JSON-typed equality: ``1 == 1.0``, ``1 != "1"``, ``true != 1``; key order ignored."""

    rule: Literal["exact"] = "exact"

    def key(self, value: Any) -> Hashable:
        return exact_key(value)

    def agree(self, expected: Any, actual: Any) -> bool:
        return exact_key(expected) == exact_key(actual)


class Loose(Rule):
    """Equality after normalising type, case and whitespace (:func:`loose_key`)."""

    rule: Literal["loose"] = "loose"

    def key(self, value: Any) -> Hashable:
        return loose_key(value)

    def agree(self, expected: Any, actual: Any) -> bool:
        return loose_key(expected) == loose_key(actual)


class Ignore(Rule):
    """Any two values agree (and a key under ``ignore`` is left out of a pair's credit)."""

    rule: Literal["ignore"] = "ignore"

    def agree(self, expected: Any, actual: Any) -> bool:
        return True


class Subset(Rule):
    """Objects: the actual one's keys are among the expected one's, with equal values. Other values: ``exact``."""

    rule: Literal["subset"] = "subset"

    def agree(self, expected: Any, actual: Any) -> bool:
        return exact_key(expected) == exact_key(actual)

    def keys(self, expected: Mapping[str, Any], actual: Mapping[str, Any]) -> list[str]:
        return list(actual)


class Superset(Rule):
    """Objects: the actual one holds every key of the expected one, with equal values. Other values: ``exact``."""

    rule: Literal["superset"] = "superset"

    def agree(self, expected: Any, actual: Any) -> bool:
        return exact_key(expected) == exact_key(actual)

    def keys(self, expected: Mapping[str, Any], actual: Mapping[str, Any]) -> list[str]:
        return list(expected)


#: Decimal arithmetic without rounding (as many digits as a result needs) for :class:`Numeric`.
_EXACT = decimal.Context(prec=decimal.MAX_PREC, Emax=decimal.MAX_EMAX, Emin=decimal.MIN_EMIN)


def _decimal(number: int | float) -> decimal.Decimal:
    """A number as the decimal it is written as: a float as its shortest ``repr`` (``0.3``, not the binary
    0.299999999999999988897...), an integer as it is."""
    return decimal.Decimal(number) if isinstance(number, int) else decimal.Decimal(repr(number))


class Numeric(Rule):
    """Numbers (and strings that spell one) agree within ``tolerance`` (absolute), compared as the decimals they
    are written as (``0.4`` and ``0.3`` are within ``0.1``); other values, NaN and infinities: ``exact``."""

    rule: Literal["numeric"] = "numeric"
    tolerance: Annotated[float, Field(ge=0, allow_inf_nan=False, strict=True)] = 0.0
    _tolerance: decimal.Decimal = PrivateAttr(decimal.Decimal(0))

    def model_post_init(self, context: Any) -> None:
        self._tolerance = _decimal(self.tolerance)

    def label(self) -> str:
        return f"numeric(tolerance={self.tolerance})"

    def _close(self, expected: Any, actual: Any) -> bool | None:
        e, a = _as_number(expected), _as_number(actual)
        if e is None or a is None:
            return None
        if e == a:
            return True
        try:  # in floats first: decided there unless the difference is within rounding of the tolerance
            difference, rounding = abs(float(e) - float(a)), (abs(float(e)) + abs(float(a)) + self.tolerance) * 2**-50
            if abs(difference - self.tolerance) > rounding:
                return difference < self.tolerance
        except OverflowError:  # an integer beyond a float's range
            pass
        return _EXACT.subtract(_decimal(e), _decimal(a)).copy_abs() <= self._tolerance

    def agree(self, expected: Any, actual: Any) -> bool:
        return _structurally(expected, actual, self._close)


class TextScorer(Rule):
    """Strings agree when a registered text scorer (``scorers.get(scorer, **params)``) scores the actual one
    against the expected one at least ``threshold``; other values: ``exact``."""

    rule: Literal["scorer"] = "scorer"
    scorer: str
    threshold: Annotated[float, Field(ge=0, le=1, strict=True)]
    params: dict[str, Any] = {}
    _instance: Any = PrivateAttr(None)

    def label(self) -> str:
        return f"{self.scorer}>={self.threshold}"

    def resolve(self, where: str, owner: str) -> None:
        """Build the scorer once: an unknown name, bad parameters or a judge (asynchronous) is a ConfigError."""
        from ..registry import get

        try:
            instance = get(self.scorer, **self.params)
        except ConfigError as exc:
            raise ConfigError(f"{owner}: {where}: {exc}", scorer=owner) from exc
        if instance.is_async or not set(instance.required_fields()) <= {"output", "expected"}:
            raise ConfigError(
                f"{owner}: {where}: {self.scorer} cannot compare two strings here: a rule's scorer must run locally "
                f"and read only output and expected (it reads {instance.required_fields()}"
                f"{', and is asynchronous' if instance.is_async else ''}), e.g. Levenshtein or ExactMatch",
                scorer=owner,
            )
        self._instance = instance

    def _similar(self, expected: Any, actual: Any) -> bool | None:
        if not (isinstance(expected, str) and isinstance(actual, str)):
            return None
        score = self._instance(output=actual, expected=expected).score
        return score is not None and score >= self.threshold

    def agree(self, expected: Any, actual: Any) -> bool:
        return _structurally(expected, actual, self._similar)

    def data(self) -> dict[str, Any]:
        """The rule as the signature records it: the scorer's own signature included."""
        return {**self.model_dump(), "signature": self._instance.signature()}


RULE_NAMES = ("exact", "loose", "ignore", "subset", "superset", "numeric")
_RULE: TypeAdapter[Rule] = TypeAdapter(
    Annotated[
        Union[Exact, Loose, Ignore, Subset, Superset, Numeric, TextScorer],
        Field(discriminator="rule"),
    ]
)


def parse_rule(spec: Any, where: str, owner: str) -> Rule:
    """A rule from its data; anything else is a ConfigError naming ``where``.

    >>> parse_rule({"scorer": "Levenshtein", "threshold": 0.9}, "arguments", "ToolCallMatch").label()
    'Levenshtein>=0.9'
    >>> parse_rule("exactly", "rules['search']['q']", "ToolCallMatch")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    scorers.errors.ConfigError: ToolCallMatch: rules['search']['q']: unknown rule 'exactly' ...
    """
    if isinstance(spec, Rule):
        return spec
    if isinstance(spec, str):
        if spec not in RULE_NAMES:
            raise ConfigError(f"{owner}: {where}: unknown rule {spec!r} ({_RULE_HELP})", scorer=owner)
        spec = {"rule": spec}
    elif isinstance(spec, Mapping) and "rule" not in spec and "scorer" in spec:
        spec = {"rule": "scorer", **spec}
    try:
        rule = _RULE.validate_python(spec)
    except ValidationError as exc:
        error = exc.errors()[0]
        at = "".join(f"[{part!r}]" for part in error["loc"][1:])
        raise ConfigError(f"{owner}: {where}{at}: {error['msg']} ({_RULE_HELP})", scorer=owner) from None
    if isinstance(rule, TextScorer):
        rule.resolve(where, owner)
    return rule


_RULE_HELP = (
    "a rule is one of " + ", ".join(RULE_NAMES) + ', or an object such as {"rule": "numeric", "tolerance": 0.5} '
    'or {"scorer": "Levenshtein", "threshold": 0.9}'
)


class ToolRules:
    """The rules of one tool's arguments: the ``root`` rule and the rules at dot paths."""

    def __init__(self, root: Rule, paths: Mapping[str, Rule]) -> None:
        self.root = root
        self.paths = dict(paths)
        #: The paths in order, to find those below a path by bisection (a set of every path's prefixes would take
        #: memory quadratic in a path's length)
        self._sorted = sorted(paths)
        #: The rule of a top-level key without one of its own: subset and superset compare values exactly.
        self.child_default: Rule = Exact() if isinstance(root, (Subset, Superset)) else root
        self._ignored: dict[str, bool] = {}
        #: With no paths and an ``exact`` or ``loose`` root, every key of both sides counts and is compared by its
        #: canonical form: that form's function and the rule's label (:func:`pair_credit`'s short route).
        self.plain: tuple[Callable[[Any], Hashable], str] | None = None
        if not paths and isinstance(root, (Exact, Loose)):
            self.plain = (exact_key if isinstance(root, Exact) else loose_key), root.label()

    def rule_at(self, path: str, inherited: Rule) -> Rule:
        return self.paths.get(path, inherited)

    def has_rules_below(self, path: str) -> bool:
        """Whether a rule is set at a path below ``path`` (then objects there are compared key by key)."""
        prefix = path + "."
        at = bisect.bisect_left(self._sorted, prefix)
        return at < len(self._sorted) and self._sorted[at].startswith(prefix)

    def canonical(self, path: str, rule: Rule) -> Callable[[Any], Hashable] | None:
        """The canonical form under which values at ``path`` agree when equal (``exact``, ``loose``, and
        ``subset``/``superset`` on values that are no objects), or None when the rule compares otherwise."""
        if self.has_rules_below(path):
            return None
        return rule.key if isinstance(rule, (Exact, Loose)) else None

    def ignores(self, key: str) -> bool:
        """Whether a top-level key is left out of the credit (``ignore``, and no rule below it)."""
        ignored = self._ignored.get(key)
        if ignored is None:
            ignored = isinstance(self.rule_at(key, self.child_default), Ignore) and not self.has_rules_below(key)
            if len(self._ignored) < 1_000:  # keys seen so far; a bound, as rows may bring any number of keys
                self._ignored[key] = ignored
        return ignored

    def counted(self, in_expected: Any, in_actual: Any) -> Any:
        """Whether a top-level key counts, given where it is present (bools, or numpy arrays that broadcast)."""
        if isinstance(self.root, Subset):
            return in_actual
        if isinstance(self.root, Superset):
            return in_expected
        return in_expected | in_actual


class ArgumentRules:
    """The argument rules of every tool, validated from data (a ConfigError names what is wrong and where).

    ``default``: the rule of every argument of every tool. ``tools``: per tool name (``"*"`` for every tool), one
    rule for all its arguments, or a mapping from dot paths (``"location.lat"``) to rules, where ``"*"`` is that
    tool's default. A tool's own entry wins over ``"*"``'s, path by path.

    >>> ArgumentRules("loose", {"*": {"request_id": "ignore"}, "search": "superset"}).for_tool("search").root.label()
    'superset'
    """

    def __init__(self, default: Any = "exact", tools: Mapping[str, Any] | None = None, *, owner: str = "") -> None:
        self.default = parse_rule(default, "arguments", owner)
        if tools is None:
            tools = {}
        if not isinstance(tools, Mapping) or not all(isinstance(name, str) for name in tools):
            raise ConfigError(
                f"{owner}: rules must map tool names (or '*') to a rule or to {{path: rule}}, got {tools!r}",
                scorer=owner,
            )
        #: per tool name as given ("*" included): its own root rule (or None) and its rules by path
        self._given = {name: self._parse_tool(name, spec, owner) for name, spec in tools.items()}
        wildcard_root, wildcard_paths = self._given.get("*", (None, {}))
        self._wildcard = ToolRules(wildcard_root or self.default, wildcard_paths)
        self._tools = {
            name: ToolRules(root or wildcard_root or self.default, {**wildcard_paths, **paths})
            for name, (root, paths) in self._given.items()
            if name != "*"
        }

    @staticmethod
    def _parse_tool(name: str, spec: Any, owner: str) -> tuple[Rule | None, dict[str, Rule]]:
        if not isinstance(spec, Mapping) or "rule" in spec or "scorer" in spec:
            return parse_rule(spec, f"rules[{name!r}]", owner), {}
        root = None
        paths: dict[str, Rule] = {}
        for path, rule in spec.items():
            where = f"rules[{name!r}][{path!r}]"
            if not isinstance(path, str) or not path or path.startswith(".") or path.endswith(".") or ".." in path:
                raise ConfigError(f"{owner}: {where}: a path is keys joined by dots, such as 'location.lat'")
            if path == "*":
                root = parse_rule(rule, where, owner)
            else:
                paths[path] = parse_rule(rule, where, owner)
        return root, paths

    def for_tool(self, name: str) -> ToolRules:
        """The rules of the tool ``name``."""
        return self._tools.get(name, self._wildcard)

    def to_data(self) -> dict[str, Any]:
        """The rules as data, as a signature records them."""

        def dump(rule: Rule) -> Any:
            return rule.data() if isinstance(rule, TextScorer) else rule.label()

        def tool(root: Rule | None, paths: Mapping[str, Rule]) -> dict[str, Any]:
            return {**({"*": dump(root)} if root is not None else {}), **{p: dump(r) for p, r in paths.items()}}

        rules = {name: tool(root, paths) for name, (root, paths) in self._given.items()}
        return {"arguments": dump(self.default), "rules": rules}


@dataclass(frozen=True)
class Verdict:
    """How one argument compared: its dot ``path``, the ``rule``, both values (``MISSING`` when absent), ``agree``."""

    path: str
    rule: str
    expected: Any
    actual: Any
    agree: bool

    def to_dict(self) -> dict[str, Any]:
        """JSON (NaN and infinities as strings, :func:`~scorers.agents.model.jsonable`); a side without the
        argument has no key."""
        out: dict[str, Any] = {"path": self.path, "rule": self.rule, "agree": self.agree}
        if self.expected is not MISSING:
            out["expected"] = jsonable(self.expected)
        if self.actual is not MISSING:
            out["actual"] = jsonable(self.actual)
        return out


def compare_values(
    rules: ToolRules, path: str, expected: Any, actual: Any, inherited: Rule, verdicts: list[Verdict] | None
) -> bool:
    """Whether two values at ``path`` agree; with ``verdicts``, each comparison made is appended to it."""
    rule = rules.rule_at(path, inherited)
    if (
        isinstance(expected, dict)
        and isinstance(actual, dict)
        and (isinstance(rule, (Subset, Superset)) or rules.has_rules_below(path))
    ):
        child = Exact() if isinstance(rule, (Subset, Superset)) else rule
        outcomes = (
            compare_values(
                rules, f"{path}.{key}", expected.get(key, MISSING), actual.get(key, MISSING), child, verdicts
            )
            for key in rule.keys(expected, actual)
        )
        return all(list(outcomes) if verdicts is not None else outcomes)
    if expected is MISSING or actual is MISSING:
        agree = isinstance(rule, Ignore)
    else:
        agree = rule.agree(expected, actual)
    if verdicts is not None:
        verdicts.append(Verdict(path, rule.label(), expected, actual, agree))
    return agree


def pair_credit(rules: ToolRules, expected: Any, actual: Any, verdicts: list[Verdict] | None = None) -> float:
    """The credit of two calls of the same tool, from their arguments; with ``verdicts``, each comparison made is
    appended to it."""
    if not (isinstance(expected, dict) and isinstance(actual, dict)):
        return float(compare_values(rules, "", expected, actual, rules.root, verdicts))
    if rules.plain is not None:
        return _plain_credit(*rules.plain, expected, actual, verdicts)
    counted = agreeing = 0
    for key in _union(expected, actual):
        if rules.ignores(key) or not rules.counted(key in expected, key in actual):
            continue
        counted += 1
        agreeing += compare_values(
            rules, key, expected.get(key, MISSING), actual.get(key, MISSING), rules.child_default, verdicts
        )
    return agreeing / counted if counted else 1.0


def _plain_credit(
    key: Callable[[Any], Hashable],
    label: str,
    expected: Mapping[str, Any],
    actual: Mapping[str, Any],
    verdicts: list[Verdict] | None,
) -> float:
    """:func:`pair_credit` under one ``exact`` or ``loose`` rule and no paths: each key of either side counts, and
    agrees when both sides hold it with values of the same canonical form ``key``."""
    agreeing = 0
    for name, value in expected.items():
        other = actual.get(name, MISSING)
        agree = other is not MISSING and key(value) == key(other)
        agreeing += agree
        if verdicts is not None:
            verdicts.append(Verdict(name, label, value, other, agree))
    extra = [name for name in actual if name not in expected]
    if verdicts is not None:
        verdicts += (Verdict(name, label, MISSING, actual[name], False) for name in extra)
    counted = len(expected) + len(extra)
    return agreeing / counted if counted else 1.0


def explain_pair(rules: ToolRules, expected: Any, actual: Any) -> tuple[float, list[Verdict]]:
    """The credit of two calls of the same tool, from their arguments, and the verdict of each argument compared."""
    verdicts: list[Verdict] = []
    return pair_credit(rules, expected, actual, verdicts), verdicts


#: The most comparisons of values one row's pairing may make under rules that have no canonical form (``numeric``,
#: a text scorer, rules on nested paths): each distinct expected value of an argument against each distinct actual
#: one, a comparison weighing the leaves of both values (text: a leaf per 64 characters begun). About 5 s of CPU
#: time; rules with a canonical form (``exact``, ``loose``, ``ignore``) take time linear in the calls' size.
MAX_COMPARISONS = 2_000_000


class ComparisonLimit(ValueError):
    """A row's pairing would compare more values than :data:`MAX_COMPARISONS`; the scorers raise it as the row's
    :class:`~scorers.errors.ScorerInputError`."""

    def __init__(self, path: str, rule: str, needed: int) -> None:
        where = f"the argument {path!r}" if path else "the arguments"
        super().__init__(
            f"would take more than {MAX_COMPARISONS:,} comparisons of argument values to pair ({where} under the "
            f"rule {rule} alone: {needed:,}, every distinct expected value against every distinct actual one of "
            "the same tool; a bound on time): compare fewer calls per row, or use exact or loose there, which "
            "compare in linear time"
        )


class _Budget:
    """What is left of :data:`MAX_COMPARISONS` for one row."""

    def __init__(self) -> None:
        self.left = MAX_COMPARISONS

    def spend(self, path: str, rule: Rule, needed: int) -> None:
        self.left -= needed
        if self.left < 0:
            raise ComparisonLimit(path, rule.label(), needed)


def _size(value: Any) -> int:
    """The leaves of a JSON value, text counting one per 64 characters begun: what comparing it costs."""
    size, stack = 0, [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
        else:
            size += 1 + len(item) // 64 if isinstance(item, str) else 1
    return max(size, 1)


def _ids(keys: Sequence[Hashable], table: dict[Hashable, int]) -> np.ndarray:
    return np.fromiter((table.setdefault(key, len(table)) for key in keys), dtype=np.int64, count=len(keys))


def _agreement(
    rules: ToolRules, path: str, rule: Rule, inherited: Rule, expected: list[Any], actual: list[Any], budget: _Budget
) -> np.ndarray:
    """Whether each expected value at ``path`` agrees with each actual one (``rule``: the rule there, ``inherited``:
    the rule above it): a boolean matrix. A rule with a canonical form compares those forms (one numpy
    comparison); another compares each distinct pair of values once, within the row's budget."""
    canonical = rules.canonical(path, rule)
    if canonical is not None:
        table: dict[Hashable, int] = {}
        ids_e, ids_a = _ids([canonical(v) for v in expected], table), _ids([canonical(v) for v in actual], table)
        return ids_e[:, None] == ids_a[None, :]
    if isinstance(rule, Ignore) and not rules.has_rules_below(path):
        return np.ones((len(expected), len(actual)), dtype=bool)
    distinct: dict[Hashable, int] = {}
    ids_e, ids_a = _ids([exact_key(v) for v in expected], distinct), _ids([exact_key(v) for v in actual], distinct)
    values = dict(zip([*ids_e.tolist(), *ids_a.tolist()], [*expected, *actual]))
    rows, cols = np.unique(ids_e).tolist(), np.unique(ids_a).tolist()
    sizes = {key: _size(values[key]) for key in {*rows, *cols}}
    budget.spend(path, rule, len(cols) * sum(sizes[e] for e in rows) + len(rows) * sum(sizes[a] for a in cols))
    agree = np.array(
        [[compare_values(rules, path, values[e], values[a], inherited, None) for a in cols] for e in rows], dtype=bool
    ).reshape(len(rows), len(cols))
    return agree[np.searchsorted(rows, ids_e)[:, None], np.searchsorted(cols, ids_a)[None, :]]


#: Pairs of calls of one tool from which their credits are computed over numpy arrays and sparse matrices; fewer
#: are compared pair by pair (numpy's overhead per call outweighs the loop's).
VECTORISE_FROM = 64


def _block_credit(rules: ToolRules, expected: list[Any], actual: list[Any], budget: _Budget) -> np.ndarray:
    """The credits of every pair of calls of one tool, from their arguments (what :func:`pair_credit` gives):
    objects a top-level key at a time (:func:`_object_credit`), other arguments compared whole."""
    credit = np.zeros((len(expected), len(actual)))
    objects_e = [i for i, args in enumerate(expected) if isinstance(args, dict)]
    objects_a = [j for j, args in enumerate(actual) if isinstance(args, dict)]
    others_e = [i for i, args in enumerate(expected) if not isinstance(args, dict)]
    others_a = [j for j, args in enumerate(actual) if not isinstance(args, dict)]
    whole = Exact() if isinstance(rules.root, (Subset, Superset)) else rules.root  # as compare_values has it
    if others_e:
        others = [expected[i] for i in others_e]
        credit[others_e, :] = _agreement(rules, "", whole, rules.root, others, actual, budget)
    if others_a:
        others = [actual[j] for j in others_a]
        credit[:, others_a] = _agreement(rules, "", whole, rules.root, expected, others, budget)
    if objects_e and objects_a:
        block = _object_credit(rules, [expected[i] for i in objects_e], [actual[j] for j in objects_a], budget)
        credit[np.ix_(objects_e, objects_a)] = block
    return credit


def _sparse(rows: list[int], cols: list[int], shape: tuple[int, int]) -> Any:
    """A sparse 0/1 matrix with ones at (``rows[k]``, ``cols[k]``)."""
    from scipy import sparse

    return sparse.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=shape)


def _object_credit(
    rules: ToolRules, expected: list[Mapping[str, Any]], actual: list[Mapping[str, Any]], budget: _Budget
) -> np.ndarray:
    """The credits of every pair of argument objects. Each key costs only the pairs of calls that both hold it:
    how many keys two calls share, and how many agree under a canonical form, are sparse matrix products, so
    that calls with many distinct keys cost time linear in their size (a dense matrix per key would cost the
    number of keys times the number of pairs)."""
    n, m = len(expected), len(actual)
    holders: dict[str, tuple[list[int], list[int]]] = {}
    for i, args in enumerate(expected):
        for key in args:
            holders.setdefault(key, ([], []))[0].append(i)
    for j, args in enumerate(actual):
        for key in args:
            holders.setdefault(key, ([], []))[1].append(j)
    counted_keys = [key for key in holders if not rules.ignores(key)]
    present: tuple[list[int], list[int], list[int], list[int]] = ([], [], [], [])  # rows, keys; cols, keys
    for k, key in enumerate(counted_keys):
        rows, cols = holders[key]
        present[0].extend(rows)
        present[1].extend([k] * len(rows))
        present[2].extend(cols)
        present[3].extend([k] * len(cols))
    per_e = np.bincount(present[0], minlength=n).astype(float)[:, None]
    per_a = np.bincount(present[2], minlength=m).astype(float)[None, :]
    if isinstance(rules.root, Subset):
        counted = np.broadcast_to(per_a, (n, m))
    elif isinstance(rules.root, Superset):
        counted = np.broadcast_to(per_e, (n, m))
    else:
        shared = (
            _sparse(present[0], present[1], (n, len(counted_keys)))
            @ _sparse(present[2], present[3], (m, len(counted_keys))).T
        )
        counted = per_e + per_a - shared.toarray()
    agreeing = np.zeros((n, m))
    equal: dict[Hashable, int] = {}  # (key, canonical value): its column
    forms: tuple[list[int], list[int], list[int], list[int]] = ([], [], [], [])
    for key in counted_keys:
        rows, cols = holders[key]
        rule = rules.rule_at(key, rules.child_default)
        canonical = rules.canonical(key, rule)
        if canonical is not None:
            forms[0].extend(rows)
            forms[1].extend(equal.setdefault((key, canonical(expected[i][key])), len(equal)) for i in rows)
            forms[2].extend(cols)
            forms[3].extend(equal.setdefault((key, canonical(actual[j][key])), len(equal)) for j in cols)
        elif isinstance(rule, Ignore):  # rules below it: a side without the key agrees too, where the key counts
            values_e = [args.get(key, MISSING) for args in expected]
            values_a = [args.get(key, MISSING) for args in actual]
            agree = _agreement(rules, key, rule, rules.child_default, values_e, values_a, budget)
            in_e = np.array([v is not MISSING for v in values_e])[:, None]
            in_a = np.array([v is not MISSING for v in values_a])[None, :]
            agreeing += agree & rules.counted(in_e, in_a)
        else:
            values_e, values_a = [expected[i][key] for i in rows], [actual[j][key] for j in cols]
            agreeing[np.ix_(rows, cols)] += _agreement(
                rules, key, rule, rules.child_default, values_e, values_a, budget
            )
    if equal:
        agreeing += (
            _sparse(forms[0], forms[1], (n, len(equal))) @ _sparse(forms[2], forms[3], (m, len(equal))).T
        ).toarray()
    return np.divide(agreeing, counted, out=np.ones((n, m)), where=counted > 0)


def _by_name(expected: Sequence[ToolCall], actual: Sequence[ToolCall]) -> list[tuple[str, list[int], list[int]]]:
    """Each tool called on both sides, with the indices of its expected calls and of its actual ones."""
    rows: dict[str, list[int]] = {}
    cols: dict[str, list[int]] = {}
    for i, call in enumerate(expected):
        rows.setdefault(call.name, []).append(i)
    for j, call in enumerate(actual):
        cols.setdefault(call.name, []).append(j)
    return [(name, indices, cols[name]) for name, indices in rows.items() if name in cols]


def credit_matrix(expected: Sequence[ToolCall], actual: Sequence[ToolCall], rules: ArgumentRules) -> np.ndarray:
    """The credit of every (expected, actual) pair: rows are expected calls, columns actual ones. More comparisons
    than :data:`MAX_COMPARISONS` under rules with no canonical form is a :class:`ComparisonLimit`."""
    return _credit(expected, actual, rules, _by_name(expected, actual))


def _credit(
    expected: Sequence[ToolCall],
    actual: Sequence[ToolCall],
    rules: ArgumentRules,
    groups: list[tuple[str, list[int], list[int]]],
) -> np.ndarray:
    """:func:`credit_matrix`, given the calls grouped by tool (:func:`_by_name`)."""
    credit = np.zeros((len(expected), len(actual)))
    budget = _Budget()
    for name, rows, cols in groups:
        tool = rules.for_tool(name)
        if len(rows) * len(cols) < VECTORISE_FROM:
            for i in rows:
                arguments = expected[i].arguments
                for j in cols:
                    credit[i, j] = pair_credit(tool, arguments, actual[j].arguments)
        else:
            block = _block_credit(
                tool, [expected[i].arguments for i in rows], [actual[j].arguments for j in cols], budget
            )
            credit[np.ix_(rows, cols)] = block
    return credit


@dataclass(frozen=True)
class Pair:
    """An expected call (its index) paired with an actual call, and the pair's credit."""

    expected: int
    actual: int
    credit: float


@dataclass(frozen=True)
class Matching:
    """The pairs of a pairing, the calls left out on each side (indices), and the total credit."""

    pairs: tuple[Pair, ...]
    unmatched_expected: tuple[int, ...]
    unmatched_actual: tuple[int, ...]
    total: float


def _optimal(weights: np.ndarray, groups: list[tuple[str, list[int], list[int]]]) -> list[tuple[int, int]]:
    """The pairs of calls of the same tool that maximise the total weight (an assignment per tool)."""
    from scipy.optimize import linear_sum_assignment

    pairs: list[tuple[int, int]] = []
    for _, rows, cols in groups:
        if len(rows) == 1 and len(cols) == 1:  # one call of the tool on each side: the assignment pairs them
            pairs.append((rows[0], cols[0]))
            continue
        chosen_rows, chosen_cols = linear_sum_assignment(weights[np.ix_(rows, cols)], maximize=True)
        pairs += [(rows[r], cols[c]) for r, c in zip(chosen_rows.tolist(), chosen_cols.tolist())]
    return sorted(pairs)


def _in_order(weights: np.ndarray, same: np.ndarray) -> list[tuple[int, int]]:
    """The order-preserving pairs that maximise the total weight: a weighted longest common subsequence."""
    n_expected, n_actual = weights.shape
    best = np.zeros((n_expected + 1, n_actual + 1))
    for i in range(1, n_expected + 1):
        best[i, 1:] = np.maximum.accumulate(np.maximum(best[i - 1, 1:], best[i - 1, :-1] + weights[i - 1]))
    pairs = []
    i, j = n_expected, n_actual
    while i and j:
        if same[i - 1, j - 1] and best[i, j] == best[i - 1, j - 1] + weights[i - 1, j - 1]:
            pairs.append((i - 1, j - 1))
            i, j = i - 1, j - 1
        elif best[i, j] == best[i - 1, j]:
            i -= 1
        else:
            j -= 1
    return pairs[::-1]


def _matching(pairs: list[tuple[int, int, float]], n_expected: int, n_actual: int) -> Matching:
    paired = [Pair(i, j, float(credit)) for i, j, credit in pairs]
    used_e, used_a = {i for i, _, _ in pairs}, {j for _, j, _ in pairs}
    return Matching(
        tuple(paired),
        tuple(i for i in range(n_expected) if i not in used_e),
        tuple(j for j in range(n_actual) if j not in used_a),
        math.fsum(p.credit for p in paired),
    )


def match_calls(
    expected: Sequence[ToolCall], actual: Sequence[ToolCall], rules: ArgumentRules, order: str = "any"
) -> Matching:
    """The best pairing of calls of the same tool under ``order``: ``any`` (optimal assignment), ``in_order`` (the
    best order-preserving pairing) or ``exact`` (position by position: only those pairs are compared, in time
    linear in the calls' size)."""
    n_expected, n_actual = len(expected), len(actual)
    if order == "exact":
        pairs = [
            (i, i, pair_credit(rules.for_tool(want.name), want.arguments, got.arguments))
            for i, (want, got) in enumerate(zip(expected, actual))
            if want.name == got.name
        ]
        return _matching(pairs, n_expected, n_actual)
    groups = _by_name(expected, actual)
    credit = _credit(expected, actual, rules, groups)
    if order == "any":
        chosen = _optimal(credit, groups)
    else:
        names: dict[Hashable, int] = {}
        same = _ids([c.name for c in expected], names)[:, None] == _ids([c.name for c in actual], names)[None, :]
        chosen = _in_order(credit, same)
    return _matching([(i, j, credit[i, j]) for i, j in chosen], n_expected, n_actual)


def perfect_matching(expected: Sequence[ToolCall], actual: Sequence[ToolCall], rules: ArgumentRules) -> Matching:
    """The most pairs of calls that match perfectly (credit 1), each call used once (a maximum bipartite
    matching, never a greedy one)."""
    groups = _by_name(expected, actual)
    perfect = (_credit(expected, actual, rules, groups) == 1.0).astype(float)
    pairs = _optimal(perfect, groups)
    return _matching([(i, j, 1.0) for i, j in pairs if perfect[i, j]], len(expected), len(actual))


def score_of(total: float, n_expected: int, n_actual: int, extra_calls: str) -> float:
    """The score of a pairing's total credit: ``S / n_expected`` when extra calls are ignored (1 with nothing
    expected), ``2S / (n_expected + n_actual)`` when they are penalised; 1 when both sides are empty.

    >>> score_of(1.5, 2, 3, "ignore"), score_of(1.5, 2, 3, "penalise"), score_of(0, 0, 0, "penalise")
    (0.75, 0.6, 1.0)
    """
    if n_expected == 0 and n_actual == 0:
        return 1.0
    if extra_calls == "ignore":
        return min(total / n_expected, 1.0) if n_expected else 1.0
    return min(2 * total / (n_expected + n_actual), 1.0)
