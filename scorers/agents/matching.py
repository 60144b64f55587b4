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

import math
from dataclasses import dataclass
from typing import Any, Callable, Hashable, Mapping, Sequence

import numpy as np

from .model import ToolCall, jsonable
from .rules import MISSING, ArgumentRules, Exact, Ignore, Rule, Subset, Superset, ToolRules, _union, exact_key
from .rules import RULE_NAMES as RULE_NAMES

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


def _holders(
    expected: list[Mapping[str, Any]], actual: list[Mapping[str, Any]]
) -> dict[str, tuple[list[int], list[int]]]:
    """Each key, with the expected calls and the actual calls that hold it."""
    holders: dict[str, tuple[list[int], list[int]]] = {}
    for i, args in enumerate(expected):
        for key in args:
            holders.setdefault(key, ([], []))[0].append(i)
    for j, args in enumerate(actual):
        for key in args:
            holders.setdefault(key, ([], []))[1].append(j)
    return holders


def _counted(
    rules: ToolRules, holders: dict[str, tuple[list[int], list[int]]], counted_keys: list[str], n: int, m: int
) -> np.ndarray:
    """How many keys count for each pair of calls: the union of their keys (a sparse product gives the shared
    ones), or one side's under a subset or superset root rule."""
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
        return np.broadcast_to(per_a, (n, m))
    if isinstance(rules.root, Superset):
        return np.broadcast_to(per_e, (n, m))
    shared = (
        _sparse(present[0], present[1], (n, len(counted_keys)))
        @ _sparse(present[2], present[3], (m, len(counted_keys))).T
    )
    return per_e + per_a - shared.toarray()


def _object_credit(
    rules: ToolRules, expected: list[Mapping[str, Any]], actual: list[Mapping[str, Any]], budget: _Budget
) -> np.ndarray:
    """The credits of every pair of argument objects. Each key costs only the pairs of calls that both hold it:
    how many keys two calls share, and how many agree under a canonical form, are sparse matrix products, so
    that calls with many distinct keys cost time linear in their size (a dense matrix per key would cost the
    number of keys times the number of pairs)."""
    n, m = len(expected), len(actual)
    holders = _holders(expected, actual)
    counted_keys = [key for key in holders if not rules.ignores(key)]
    counted = _counted(rules, holders, counted_keys, n, m)
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
