"""RegexMatch: a regular expression matched with a time limit, and the analysis that refuses costly patterns."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from ..base import Scorer
from ..errors import ConfigError, ScorerInputError
from ..fields import Field, text_field
from ..params import param, seconds
from ..registry import register
from ..score import Score

__all__ = ["RegexMatch", "REGEX_TIMEOUT_S", "MAX_PATTERN_CHARS", "MAX_PATTERN_ITEMS", "MAX_LITERAL_CHARS"]


#: catastrophically, such as ``(a|a)+$`` on a long run of ``a``, takes time exponential in the text's length.
REGEX_TIMEOUT_S = 1.0
#: The longest pattern :class:`RegexMatch` compiles: compiling takes time that grows faster than its length
#: (100,000 characters of ``a|a|…``: about 1 s).
MAX_PATTERN_CHARS = 10_000
#: The most items (characters, classes, groups, repeats) a pattern may have once each counted repetition is
#: written out its minimum number of times, as the matching engine compiles it (``(?:ab){3,5}`` counts 1 + 3 x 2):
#: ``(?:a{1000}){1000}`` would take 300 MB and 1 s to compile; this many, under 50 MB.
MAX_PATTERN_ITEMS = 100_000
#: The most literal characters in a row a pattern may hold: the regex engine builds its search tables for the
#: string they form, on the first match, in time that grows with the cube of its length and that ``timeout_s`` does
#: not count (2,000 ``a``: 2.5 s; 9,999: 325 s; this many: at most 0.4 s).
MAX_LITERAL_CHARS = 1_000
#: Compiled patterns at most this size are kept (by the engine's cache) for the next row.
_CACHED_PATTERN_ITEMS = 1_000


def _regex_module() -> Any:
    try:
        import regex
    except ImportError:
        raise ConfigError(
            "RegexMatch needs the Python package 'regex' (a dependency of scorers), which is not "
            "installed. Install it with: pip install 'regex>=2022.10.31'",
            scorer="RegexMatch",
        ) from None
    return regex


def _sre_parse() -> Any:
    try:
        from re import _parser as sre_parse  # type: ignore[attr-defined]  # 3.11+; typeshed leaves it out
    except ImportError:  # Python 3.10
        import sre_parse
    return sre_parse


@lru_cache(maxsize=1024)
def _pattern_shape(pattern: str, flags: int) -> tuple[int, int]:
    """``(items, longest literal)`` of ``pattern`` (valid for :mod:`re`), read from :mod:`re`'s parse of it.

    ``items``: how many items it has once each counted repetition is written out its minimum number of times (at
    most :data:`MAX_PATTERN_ITEMS` + 1). ``longest literal``: the most characters in a row that the engine may join
    into one string to search for (literals, one-character classes and escapes, through non-capturing groups)."""
    sre_parse = _sre_parse()
    repeats = {getattr(sre_parse, name, None) for name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT")} - {None}
    parsed = sre_parse.parse(pattern, flags)
    limit = MAX_PATTERN_ITEMS + 1
    total = 0
    stack: list[tuple[Any, int]] = [(parsed, 1)]
    while stack and total < limit:
        node, times = stack.pop()
        if isinstance(node, sre_parse.SubPattern):
            for op, av in node.data:
                total += times
                if op in repeats:  # (min, max, the item repeated)
                    stack.append((av[2], min(times * max(av[0], 1), limit)))
                elif isinstance(av, (tuple, list)):
                    stack.append((av, times))
        elif isinstance(node, (tuple, list)):  # a group's, branch's or condition's arguments: find the patterns
            stack.extend((child, times) for child in node if isinstance(child, (sre_parse.SubPattern, tuple, list)))
    return min(total, limit), _longest_literal(sre_parse, parsed)


def _longest_literal(sre_parse: Any, parsed: Any) -> int:
    """The longest run of one-character items in ``parsed``, read through non-capturing groups."""
    longest = 0
    sequences = [parsed]
    while sequences:
        run = 0
        walk = [iter(sequences.pop().data)]  # a sequence, and the non-capturing groups in it being read through
        while walk:
            item = next(walk[-1], None)
            if item is None:
                walk.pop()
                continue
            op, av = item
            if op is sre_parse.LITERAL or (op is sre_parse.IN and len(av) == 1 and av[0][0] is sre_parse.LITERAL):
                run += 1
                longest = max(longest, run)
            elif op is sre_parse.SUBPATTERN and av[0] is None:  # (?:...) and (?i:...): the engine joins through
                walk.append(iter(av[-1].data))
            else:  # a group, branch, repeat or condition: ends the run; its sequences have runs of their own
                run = 0
                found = [av] if isinstance(av, (tuple, list, sre_parse.SubPattern)) else []
                while found:
                    node = found.pop()
                    if isinstance(node, sre_parse.SubPattern):
                        sequences.append(node)
                    elif isinstance(node, (tuple, list)):
                        found.extend(node)
    return longest


@register
class RegexMatch(Scorer):
    r"""1 if ``output`` matches a regular expression.

    The pattern is the constructor's ``pattern`` or, when absent, ``expected``.
    ``full=True`` requires the whole output to match (``fullmatch``),
    otherwise a match anywhere counts (``search``).

    Patterns are Python's :mod:`re` syntax (``re`` checks them, with its error
    messages), matched by the `regex <https://pypi.org/project/regex/>`_ package
    (its ``VERSION0``, re-compatible), which can stop a match: one that takes more
    than ``timeout_s`` seconds of CPU time (1 by default; the engine counts the
    process's CPU time, all threads) is that row's
    :class:`~scorers.errors.ScorerInputError` (a pattern given with the row: field
    ``expected``; the constructor's: field ``output``); ``timeout_s=None`` lifts
    the limit. Below it the number does not depend on ``timeout_s``. A pattern
    longer than :data:`MAX_PATTERN_CHARS`, that holds more than
    :data:`MAX_PATTERN_ITEMS` items once its counted repetitions are written out,
    or more than :data:`MAX_LITERAL_CHARS` literal characters in a row, is refused
    (compiling it, or the engine's search tables, would take seconds or gigabytes).

    Where the engines differ, on rare patterns, the number follows ``regex``: a
    POSIX class such as ``[[:alpha:]]`` is one (``re`` reads a set of the
    characters ``[:alph`` and then ``]``, and warns), ``\B`` matches empty text
    (as ``re`` does from Python 3.14), and under ``ignore_case`` a backreference
    also matches characters that fold alike (``ſ`` and ``s``).
    """

    name = "RegexMatch"
    description = "1 if output matches a regular expression (pattern or expected)"
    fields = (text_field("output"), Field("expected", (str,), required=False))
    example = r'RegexMatch(pattern=r"\d{4}-\d{2}-\d{2}")(output="due 2024-06-11")  # 1.0'
    #: 2: matched by the regex package (a time limit); it differs from re on a few rare patterns (see above)
    algorithm_version = "2"

    pattern: str | None = param("the regular expression (None: each row's expected is its pattern)", default=None)
    full: bool = param("the whole output must match (fullmatch), not a part of it (search)", default=False)
    ignore_case: bool = param("match case-insensitively", default=False)
    timeout_s: float | None = seconds(
        "CPU seconds one match may take (a longer one is the row's error)", default=REGEX_TIMEOUT_S
    )

    def __post_init__(self) -> None:
        self._compiled = self._compile(self.pattern, "pattern") if self.pattern is not None else None

    def params(self) -> dict[str, Any]:
        return {**super().params(), "regex": _regex_module().__version__}

    def _compile(self, pattern: str, source: str) -> Any:
        """``pattern`` compiled by the regex package; one that is invalid or too large is a ConfigError for the
        constructor's ``pattern``, a ScorerInputError naming ``source`` for a row's."""
        regex = _regex_module()
        flags = re.IGNORECASE if self.ignore_case else 0
        try:
            if len(pattern) > MAX_PATTERN_CHARS:
                raise ValueError(
                    f"is a pattern of {len(pattern):,} characters, more than {MAX_PATTERN_CHARS:,} "
                    "(compiling takes time that grows faster than its length)"
                )
            re.compile(pattern, flags)  # the syntax accepted, and its error messages, are re's
            items, literal = _pattern_shape(pattern, flags)
            if items > MAX_PATTERN_ITEMS:
                raise ValueError(
                    f"is a pattern of more than {MAX_PATTERN_ITEMS:,} items once its counted "
                    "repetitions such as {1000} are written out (the engine builds every copy when it compiles: "
                    "time and memory): "
                    "repeat fewer times, or use an open bound such as {1,}"
                )
            if literal > MAX_LITERAL_CHARS:
                raise ValueError(
                    f"holds {literal:,} literal characters in a row, more than {MAX_LITERAL_CHARS:,} (the engine's "
                    "search tables for a literal take time that grows with the cube of its length, outside "
                    "timeout_s): to find a long text, use Contains"
                )
            return regex.compile(
                pattern,
                (regex.IGNORECASE if self.ignore_case else 0) | regex.VERSION0,
                cache_pattern=items <= _CACHED_PATTERN_ITEMS,
            )
        except (re.error, regex.error) as exc:
            reason, problem = str(exc), f"is not a valid regular expression: {exc}"
        except RecursionError:
            reason = problem = "nests groups more deeply than Python can parse"
        except ValueError as exc:
            reason = problem = str(exc)
        if source == "pattern":
            raise ConfigError(f"{self.name}: invalid regular expression {pattern[:200]!r}: {reason}", scorer=self.name)
        raise ScorerInputError(self.name, source, problem)

    # fields by keyword, as Scorer documents its hooks (mypy cannot match that to the base hook\'s **fields)
    def _score(self, *, output: str, expected: str | None = None, **_: Any) -> Score:  # type: ignore[override]
        compiled = self._compiled
        if compiled is None:
            if expected is None:
                raise ScorerInputError(
                    self.name, "expected", "is required (it is the pattern) when no pattern is configured"
                )
            compiled = self._compile(expected, "expected")
        try:
            match = (compiled.fullmatch if self.full else compiled.search)(output, timeout=self.timeout_s)
        except TimeoutError:
            field, against = (
                ("expected", "the output")
                if self._compiled is None
                else ("output", f"the pattern {compiled.pattern[:60]!r}")  # compiled is self._compiled: its pattern
            )
            raise ScorerInputError(
                self.name,
                field,
                f"took more than timeout_s={self.timeout_s} s of CPU time to match against {against} "
                "(a pattern that backtracks without end, as nested repeats such as (a|a)+ do on some texts): simplify "
                f"the pattern, or raise the limit with scorers.get({self.name!r}, timeout_s=...) or "
                f"-p {self.name}.timeout_s=... (null: no limit)",
            ) from None
        return self.make_score(1.0 if match else 0.0, match=match.group(0) if match else None)
