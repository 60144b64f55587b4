"""The pytest adapter: ``assert_score`` and the ``scorers`` pytest plugin.

``assert_score(scorer, threshold, **fields)`` scores one example and raises an
``AssertionError`` that says why when the score is below ``threshold`` or the
scorer skipped the example (score ``None``). Bad input is not a failed
assertion: the scorer's :class:`~scorers.errors.ScorerError` propagates as
itself.

The plugin is registered through the ``pytest11`` entry point under the name
``scorers`` (disable it with ``-p no:scorers``). It does nothing unless a test
calls ``assert_score``; then it records every call (test node id, scorer,
score, threshold, passed) and, at the end of the session, prints a table per
scorer (calls, mean, min, failures). ``--scorers-report PATH`` also writes the
calls and the per-scorer summary as JSON. Under pytest-xdist the workers'
calls travel to the controller on the test reports; nothing needs xdist.

>>> from scorers.adapters.pytest_plugin import assert_score, recording
>>> with recording() as calls:
...     score = assert_score("Levenshtein", 0.5, output="kitten", expected="sitting")
...     assert_score("ExactMatch", 1.0, output="Lyon", expected="Paris")
Traceback (most recent call last):
  ...
AssertionError: ExactMatch scored 0.0, below the threshold 1.0
  output: 'Lyon'
  expected: 'Paris'
>>> [(call["scorer"], call["score"], call["passed"]) for call in calls]
[('Levenshtein', 0.5714285714285714, True), ('ExactMatch', 0.0, False)]
"""

from __future__ import annotations

import contextlib
import functools
import json
import math
import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

from .._util import is_number
from ..base import Scorer
from ..errors import ScorerError
from ..score import Score
from .common import build_scorer

try:  # pluggy comes with pytest; without it the hooks below are plain functions nobody calls
    from pluggy import HookimplMarker

    hookimpl = HookimplMarker("pytest")
except ImportError:  # pragma: no cover

    def hookimpl(**_: Any) -> Any:  # type: ignore[misc]
        return lambda function: function


if TYPE_CHECKING:
    import pytest

__all__ = ["assert_score", "recording", "summarize"]

#: Longest shown form of one field (or a judge's rationale) in a failure message.
FIELD_WIDTH = 200
RATIONALE_WIDTH = 1000
#: Most lines a failure message gives to a tool-call scorer's disagreements (arguments, unmatched calls).
DISAGREEMENTS_SHOWN = 10

_lock = threading.Lock()
#: Recorders in force, innermost last: one per pytest session (nested pytester runs push their own) or recording().
_stack: list[list[dict[str, Any]]] = []


# ------------------------------------------------------------------ assert_score
def assert_score(scorer: Scorer | str, threshold: float, /, **fields: Any) -> Score:
    """Score ``fields`` with ``scorer`` and assert the score is at least ``threshold``; returns the Score.

    ``scorer`` is a :class:`~scorers.base.Scorer` or a registered name (as for
    ``scorers.get``; anything else is a :class:`~scorers.errors.ConfigError`).
    ``threshold`` is a number in [0, 1]. The AssertionError names the scorer,
    the score and the threshold, a judge's choice and rationale, a tool-call
    scorer's disagreements (each argument that disagreed, each call unmatched or
    invalid), and the fields (truncated). A skipped example (score ``None``) fails. A
    ``ScorerError`` (bad input, a judge that gave up) propagates.

    >>> from scorers.adapters.pytest_plugin import recording
    >>> with recording():
    ...     assert_score("ExactMatch", 0.5, output="Paris", expected="Paris").score
    1.0
    >>> assert_score("ExactMatch", 2, output="Paris", expected="Paris")
    Traceback (most recent call last):
      ...
    ValueError: assert_score: threshold must be a number in [0, 1], got 2
    """
    __tracebackhide__ = True  # pytest shows the failure at the test's line, not in here
    threshold = _check_threshold(threshold)
    scorer = build_scorer(scorer, {})
    call: dict[str, Any] = {
        "nodeid": _current_nodeid(),
        "scorer": scorer.name,
        "score": None,
        "threshold": threshold,
        "passed": False,
    }
    try:
        result = scorer(**fields)
    except Exception as exc:
        call["error"] = (
            exc.to_dict() if isinstance(exc, ScorerError) else {"type": type(exc).__name__, "message": str(exc)}
        )
        _record(call)
        raise
    call["score"] = result.score
    call["passed"] = result.score is not None and result.score >= threshold
    for key in ("choice", "rationale"):
        if result.metadata.get(key) is not None:
            call[key] = _jsonable(result.metadata[key])
    _record(call)
    if not call["passed"]:
        raise AssertionError(_failure_message(scorer.name, result, threshold, fields))
    return result


def _check_threshold(threshold: Any) -> float:
    if not is_number(threshold):
        raise TypeError(f"assert_score: threshold must be a number in [0, 1], got {type(threshold).__name__}")
    if not (math.isfinite(threshold) and 0.0 <= threshold <= 1.0):
        raise ValueError(f"assert_score: threshold must be a number in [0, 1], got {threshold!r}")
    return float(threshold)


def _failure_message(name: str, result: Score, threshold: float, fields: dict[str, Any]) -> str:
    if result.score is None:
        lines = [f"{name} skipped this example (score None), so it cannot reach the threshold {threshold}"]
    else:
        lines = [f"{name} scored {result.score}, below the threshold {threshold}"]
    metadata = result.metadata
    if metadata.get("choice") is not None:
        lines.append(f"  choice: {metadata['choice']!r}")
    if metadata.get("rationale") is not None:
        rationale = metadata["rationale"]
        text = rationale if isinstance(rationale, str) else json.dumps(rationale, ensure_ascii=False)
        lines.append(f"  rationale: {_truncate(text, RATIONALE_WIDTH)}")
    disagreements = _tool_call_disagreements(metadata)
    lines += [f"  {_truncate(line, FIELD_WIDTH)}" for line in disagreements[:DISAGREEMENTS_SHOWN]]
    if len(disagreements) > DISAGREEMENTS_SHOWN:
        lines.append(f"  ... and {len(disagreements) - DISAGREEMENTS_SHOWN} more (the score's metadata has them all)")
    for key, value in fields.items():
        lines.append(f"  {key}: {_truncate(repr(value), FIELD_WIDTH)}")
    return "\n".join(lines)


def _tool_call_disagreements(metadata: dict[str, Any]) -> list[str]:
    """What a tool-call scorer's metadata says went wrong (scorers.agents.tool_calls): each argument that
    disagreed, each call left unmatched or invalid, where trajectories part, the names missing or extra."""

    def call(entry: dict[str, Any]) -> str:
        return f"{entry.get('name')}({json.dumps(entry.get('arguments'), ensure_ascii=False, default=str)})"

    lines = []
    parts_at = metadata.get("parts_at")
    if isinstance(parts_at, dict):
        where = ", ".join(f"{key} {value}" for key, value in parts_at.items() if key != "reason")
        lines.append(f"parts at {where}: {parts_at.get('reason')}")
    for pair in metadata.get("pairs") or []:
        for verdict in pair.get("arguments") or []:
            if not verdict.get("agree", True):
                sides = ", ".join(
                    f"{side} {json.dumps(verdict[side], ensure_ascii=False, default=str)}"
                    if side in verdict
                    else f"{side}: missing"
                    for side in ("expected", "actual")
                )
                lines.append(
                    f"argument {verdict.get('path')!r} of {pair.get('name')} (expected call {pair.get('expected')}, "
                    f"actual call {pair.get('actual')}) disagrees under {verdict.get('rule')}: {sides}"
                )
    for side in ("expected", "actual"):
        for entry in metadata.get(f"unmatched_{side}") or []:
            lines.append(f"{side} call {entry.get('index')} unmatched: {call(entry)}")
    for entry in metadata.get("invalid") or []:
        lines.append(f"call {entry.get('index')} invalid: {call(entry)}: {entry.get('error')}")
    for key in ("missing", "extra"):
        if metadata.get(key):
            lines.append(f"{key} tool names: {', '.join(map(str, metadata[key]))}")
    return lines


def _truncate(text: str, width: int) -> str:
    text = " ".join(text.split()) if "\n" in text else text
    if len(text) <= width:
        return text
    return f"{text[:width]}... ({len(text)} characters)"


def _jsonable(value: Any) -> Any:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return repr(value)
    return value


def _current_nodeid() -> str | None:
    current = os.environ.get("PYTEST_CURRENT_TEST")  # "path::test (call)", set by pytest for every phase
    return current.rsplit(" (", 1)[0] if current else None


def _record(call: dict[str, Any]) -> None:
    with _lock:
        if _stack:
            _stack[-1].append(call)


@contextlib.contextmanager
def recording() -> Iterator[list[dict[str, Any]]]:
    """Record the ``assert_score`` calls made inside the block into the list it yields (and nowhere else)."""
    calls: list[dict[str, Any]] = []
    with _lock:
        _stack.append(calls)
    try:
        yield calls
    finally:
        with _lock:
            _remove(calls)


def _remove(calls: list[dict[str, Any]]) -> None:
    for index in range(len(_stack) - 1, -1, -1):
        if _stack[index] is calls:
            del _stack[index]
            return


# ------------------------------------------------------------------ summary
def summarize(calls: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per scorer, in first-call order: calls, mean, min, max (over scored calls), failures, skipped, errors.

    >>> summarize([{"scorer": "ExactMatch", "score": 1.0, "passed": True},
    ...            {"scorer": "ExactMatch", "score": 0.0, "passed": False}])
    {'ExactMatch': {'calls': 2, 'mean': 0.5, 'min': 0.0, 'max': 1.0, 'failures': 1, 'skipped': 0, 'errors': 0}}
    """
    groups: dict[str, list[dict[str, Any]]] = {}
    for call in calls:
        groups.setdefault(call["scorer"], []).append(call)
    summary = {}
    for name, group in groups.items():
        scores = [c["score"] for c in group if c.get("score") is not None]
        summary[name] = {
            "calls": len(group),
            "mean": math.fsum(scores) / len(scores) if scores else None,
            "min": min(scores) if scores else None,
            "max": max(scores) if scores else None,
            "failures": sum(1 for c in group if not c["passed"]),
            "skipped": sum(1 for c in group if c.get("score") is None and not c.get("error")),
            "errors": sum(1 for c in group if c.get("error")),
        }
    return summary


def _table(summary: dict[str, dict[str, Any]]) -> list[str]:
    header = ("scorer", "calls", "mean", "min", "failures", "skipped", "errors")
    rows = [header] + [
        (
            name,
            str(s["calls"]),
            _number(s["mean"]),
            _number(s["min"]),
            str(s["failures"]),
            str(s["skipped"]),
            str(s["errors"]),
        )
        for name, s in summary.items()
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    return [
        "  ".join(cell.ljust(widths[i]) if i == 0 else cell.rjust(widths[i]) for i, cell in enumerate(row)).rstrip()
        for row in rows
    ]


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


# ------------------------------------------------------------------ pytest hooks
_REPORT_ATTRIBUTE = "scorers_calls"  # carries a worker's calls to the xdist controller on a test report


def _is_worker(config: "pytest.Config") -> bool:
    return hasattr(config, "workerinput")


def pytest_addoption(parser: "pytest.Parser") -> None:
    group = parser.getgroup("scorers", "scorers: assert_score reports")
    group.addoption(
        "--scorers-report",
        metavar="PATH",
        default=None,
        help="write the assert_score calls and a per-scorer summary to PATH as JSON "
        "(only when a test called assert_score)",
    )


@functools.cache
def _session_key() -> "pytest.StashKey[_Session]":
    """Where a run's :class:`_Session` lives in ``config.stash`` (pytest is imported once a hook runs)."""
    import pytest

    return pytest.StashKey()


def pytest_configure(config: "pytest.Config") -> None:
    session = _Session(config)
    config.stash[_session_key()] = session
    config.pluginmanager.register(session, f"scorers-session-{id(config)}")


def pytest_unconfigure(config: "pytest.Config") -> None:
    session = config.stash.get(_session_key(), None)
    if session is not None:
        session.close()


class _Session:
    """The state of one pytest run: its recorder, pushed at session start and popped at unconfigure."""

    def __init__(self, config: "pytest.Config") -> None:
        self.config = config
        self.calls: list[dict[str, Any]] = []
        self.forwarded = 0
        self.report_path: Path | None = None

    def close(self) -> None:
        with _lock:
            _remove(self.calls)

    def pytest_sessionstart(self, session: "pytest.Session") -> None:
        with _lock:
            _remove(self.calls)
            self.calls = []
            self.forwarded = 0
            _stack.append(self.calls)

    @hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item: "pytest.Item", call: "pytest.CallInfo[None]") -> Iterator[None]:
        outcome = yield
        if _is_worker(self.config) and len(self.calls) > self.forwarded:
            with _lock:
                new, self.forwarded = self.calls[self.forwarded :], len(self.calls)
            setattr(outcome.get_result(), _REPORT_ATTRIBUTE, new)  # type: ignore[attr-defined]

    def pytest_runtest_logreport(self, report: "pytest.TestReport") -> None:
        calls = getattr(report, _REPORT_ATTRIBUTE, None)
        if calls and not _is_worker(self.config):  # a worker's calls, arrived at the xdist controller
            with _lock:
                self.calls.extend(calls)

    def pytest_sessionfinish(self, session: "pytest.Session") -> None:
        path = self.config.getoption("scorers_report", None)
        if not path or not self.calls or _is_worker(self.config):
            return
        from .. import __version__

        target = Path(self.config.invocation_params.dir, os.path.expanduser(path))
        target.parent.mkdir(parents=True, exist_ok=True)
        report = {"scorers_version": __version__, "calls": self.calls, "summary": summarize(self.calls)}
        target.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        self.report_path = target

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not self.calls or _is_worker(self.config):
            return
        terminalreporter.write_sep("=", "scorers: assert_score")
        for line in _table(summarize(self.calls)):
            terminalreporter.write_line(line)
        if self.report_path is not None:
            terminalreporter.write_line(f"scorers report: {self.report_path}")
