"""CodeExecution: the program in the output, run against tests in the sandbox; the score is the share that pass."""

from __future__ import annotations

import os
import reprlib
import signal
import warnings
from typing import Any

from ..base import Scorer
from ..errors import ConfigError, ScorerInputError
from ..fields import Field, text_field
from ..params import param, seconds
from ..registry import register
from ..score import Score
from . import sandbox
from .extract import extract_code
from .runners import get_runner, languages

__all__ = ["CodeExecution", "ALLOW_NETWORK_ENV", "compare_output"]

#: The environment switch that must be "1" besides ``network="allow"``.
ALLOW_NETWORK_ENV = "SCORERS_CODE_ALLOW_NETWORK"
_TEST_TYPES = (list, tuple, str, dict)


def compare_output(actual: str, expected: str, rule: str) -> bool:
    """Whether a program's stdout is the expected one: ``exact``, or ``rstrip`` (each line's trailing spaces and tabs,
    and trailing blank lines, ignored; line endings ``\\r\\n`` read as ``\\n``).

    >>> compare_output("3 \\n\\n", "3", "rstrip"), compare_output("3\\n", "3", "exact")
    (True, False)
    """
    if rule == "exact":
        return actual == expected

    def lines(text: str) -> list[str]:
        return [line.rstrip(" \t") for line in text.replace("\r\n", "\n").rstrip(" \t\n").split("\n")]

    return lines(actual) == lines(expected)


def _short(value: Any) -> str:
    """A value in a message: its repr to two levels and 80 characters (a deeply nested one is not walked)."""
    short = reprlib.Repr()
    short.maxlevel, short.maxstring, short.maxother = 2, 60, 60
    return short.repr(value)[:80]


def _tests(value: Any, scorer: str, field: str) -> list[str | dict[str, str]]:
    """The tests as a list: each an assert-style source, or ``{"input": ..., "output": ...}``."""
    if not isinstance(value, _TEST_TYPES):
        raise ScorerInputError(scorer, field, f"tests must be a list, a source text or a dict, got {_short(value)}")
    items = [value] if isinstance(value, (str, dict)) else list(value)
    for item in items:
        io = isinstance(item, dict) and set(item) <= {"input", "output"} and "output" in item
        if not (isinstance(item, str) or (io and all(isinstance(v, str) for v in item.values()))):
            raise ScorerInputError(
                scorer, field, f"a test must be source text or {{'input': str, 'output': str}}, got {_short(item)}"
            )
        for text in [item] if isinstance(item, str) else item.values():
            try:
                text.encode("utf-8")
            except UnicodeEncodeError:
                raise ScorerInputError(scorer, field, "a test holds a lone surrogate (not UTF-8)") from None
    if not items:
        raise ScorerInputError(scorer, field, "no tests: give at least one")
    return items


@register
class CodeExecution(Scorer):
    """The share of tests that the program in ``output`` passes, each run in a sandbox of its own.

    The program is the output's code block (:mod:`scorers.code.extract` states the rule). The tests are the row's
    ``tests``, else the scorer's: each is assert-style source run after the program (it passes when the run exits
    with status 0), or ``{"input": ..., "output": ...}``, the program's stdin and its expected stdout, compared by
    ``match``. Each test is one process under the limits below (:mod:`scorers.code.sandbox`); metadata lists each
    test's ``passed``, ``reason`` (``timeout``, ``memory``, ``crash``, ``wrong answer``, ``output``, ``refused``),
    and its bounded ``stdout`` and ``stderr``. docs/code.md states what the sandbox does and does not protect.

    ``network="deny"`` (the default) needs the kernel's user namespaces (the program gets no network at all);
    where they are not allowed the scorer is refused (ConfigError). ``network="allow"`` runs programs with the
    host's network, and without namespaces where there are none, only when the environment variable
    ``SCORERS_CODE_ALLOW_NETWORK`` is ``1``; it warns.
    """

    name = "CodeExecution"
    kind = "heuristic"
    description = "the share of tests a generated program passes, run in a sandbox"
    example = "CodeExecution()(output='def add(a, b):\\n    return a + b', tests=['assert add(1, 2) == 3']).score"
    fields = (
        text_field("output", description="the model's answer: a program, in a code block or alone", utf8=True),
        Field("tests", _TEST_TYPES, required=False, description="assert-style sources or input/output pairs"),
    )
    tests: Any = param("the tests of rows that give none (same shape as the field; None: each row's)", default=None)
    language: str = param("the program's language: a runner module of scorers.code.runners", default="python")
    interpreter: str | None = param("the program that runs the code (None: the runner's default)", default=None)
    match: str = param("how stdout is compared with the expected output", default="rstrip", choices=("rstrip", "exact"))
    timeout_s: float | None = seconds("wall-clock limit of one test's run", default=10.0)
    cpu_s: float | None = seconds("CPU-time limit of one test's run", default=5.0)
    memory_mb: int = param("address-space limit of each process, in MiB", default=1024, ge=16, signed=False)
    file_mb: int = param("largest file a program may write, in MiB", default=16, ge=0, signed=False)
    processes: int = param("processes a run may have at once", default=32, ge=1, signed=False)
    output_kb: int = param("stdout and stderr kept per test, in KiB (past it the run is stopped)", default=32, ge=1)
    network: str = param(
        "'deny': no network (needs user namespaces); 'allow': the host's (also needs the environment switch)",
        default="deny",
        choices=("deny", "allow"),
        signed=False,
    )

    def __post_init__(self) -> None:
        if self.language not in languages():
            raise ConfigError(f"{self.name}: language must be one of {', '.join(languages())}, got {self.language!r}")
        if self.tests is not None:
            try:
                _tests(self.tests, self.name, "tests")
            except ScorerInputError as exc:
                raise ConfigError(f"{self.name}: the scorer's {exc}", scorer=self.name) from None
        runner = get_runner(self.language, self.interpreter)
        if not (os.path.isfile(runner.interpreter) and os.access(runner.interpreter, os.X_OK)):
            raise ConfigError(
                f"{self.name}: interpreter {runner.interpreter!r} is not an executable file", scorer=self.name
            )
        allow = self.network == "allow"
        if allow and os.environ.get(ALLOW_NETWORK_ENV) != "1":
            raise ConfigError(
                f"{self.name}: network='allow' also needs the environment variable {ALLOW_NETWORK_ENV}=1 "
                "(programs then reach the host's network)",
                scorer=self.name,
            )
        unavailable = sandbox.namespaces_available(runner.interpreter, allow)
        if unavailable is not None and not allow:
            raise ConfigError(
                f"{self.name}: this machine does not allow the sandbox's namespaces ({unavailable}); without them "
                f"programs would reach the network. To run them anyway: network='allow' and {ALLOW_NETWORK_ENV}=1",
                scorer=self.name,
            )
        if allow:
            warnings.warn(
                f"{self.name}: network='allow': programs can reach the network"
                + ("" if unavailable is None else f" and run without namespaces ({unavailable})"),
                stacklevel=2,
            )
        self._namespaces = unavailable is None

    def _score(self, *, output: str, tests: Any = None) -> Score:  # type: ignore[override]
        given = tests if tests is not None else self.tests
        if given is None:
            raise ScorerInputError(self.name, "tests", "no tests: give them in the row or the scorer's tests")
        cases = _tests(given, self.name, "tests")
        runner = get_runner(self.language, self.interpreter)
        program = extract_code(output, runner.tags)
        limits = sandbox.Limits(
            wall_s=self.timeout_s or float("inf"),
            cpu_s=self.cpu_s or float(2**31),
            memory_mb=self.memory_mb,
            file_mb=self.file_mb,
            processes=self.processes,
            output_kb=self.output_kb,
        )
        results = []
        for case in cases:
            argv, files = runner.on_stdin(program) if isinstance(case, dict) else runner.with_test(program, case)
            stdin = case.get("input", "") if isinstance(case, dict) else ""
            outcome = sandbox.run(
                argv,
                files=files,
                limits=limits,
                namespaces=self._namespaces,
                network=self.network == "allow",
                stdin=stdin,
            )
            results.append(self._result(runner.failure, outcome, case))
        passed = sum(result["passed"] for result in results)
        return self.make_score(passed / len(results), passed=passed, total=len(results), tests=results)

    def _result(self, failure: Any, outcome: sandbox.Outcome, case: str | dict[str, str]) -> dict[str, Any]:
        if outcome.status == "exit" and outcome.code == 0:
            right = not isinstance(case, dict) or compare_output(outcome.stdout, case["output"], self.match)
            reason = None if right else "wrong answer"
        elif outcome.status == "exit":
            reason = failure(outcome.stderr)
        elif outcome.status == "signal":
            reason = "timeout" if outcome.code in (signal.SIGXCPU, signal.SIGKILL) else "crash"
        else:
            reason = {"sandbox": "refused"}.get(outcome.status, outcome.status)
        return {"passed": reason is None, "reason": reason, "stdout": outcome.stdout, "stderr": outcome.stderr}
