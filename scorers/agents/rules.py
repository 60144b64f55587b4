"""Argument rules of the tool-call scorers: how two values of an argument are compared, as data.

A rule is a name (``"exact"``, ``"loose"``, ``"ignore"``, ``"subset"``, ``"superset"``, ``"numeric"``) or an object
(``{"rule": "numeric", "tolerance": 0.5}``, ``{"scorer": "Levenshtein", "threshold": 0.9}``). :class:`ArgumentRules`
takes a default rule and, per tool name (``"*"``: every tool), either one rule for its arguments or a mapping from
dot paths into its arguments (``"*"``: the tool's default) to rules; :mod:`scorers.agents.matching` pairs calls
under them.

>>> ArgumentRules("exact", {"search": {"limit": {"rule": "numeric", "tolerance": 5}}}).to_data()["rules"]
{'search': {'limit': 'numeric(tolerance=5.0)'}}
"""

from __future__ import annotations

import bisect
import decimal
import math
from typing import Annotated, Any, Callable, Hashable, Literal, Mapping, Union

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, TypeAdapter, ValidationError

from ..errors import ConfigError

__all__ = ["RULE_NAMES", "Rule", "ArgumentRules", "ToolRules", "MISSING", "exact_key", "loose_key", "parse_rule"]


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
