"""tests/bounded.py: a callable in a child process under a time and memory limit, its result or its typed error."""

from __future__ import annotations

import os
import time

import pytest
from bounded import BoundedWorker, run_bounded

from scorers.errors import ScorerInputError


def add(a: int, b: int, *, scale: int = 1) -> int:
    return (a + b) * scale


def child_pid() -> int:
    return os.getpid()


def sleep_for(seconds: float) -> None:
    time.sleep(seconds)


def allocate(megabytes: int) -> int:
    return len(bytearray(megabytes * 2**20))


def refuse() -> None:
    raise ScorerInputError("Levenshtein", "output", "is required but was missing")


def fail_plainly() -> None:
    raise KeyError("no such key")


def test_returns_the_result_from_another_process() -> None:
    assert run_bounded(add, 2, 3, scale=4, timeout_s=60, memory_mb=100) == 20
    assert run_bounded(child_pid, timeout_s=60, memory_mb=100) != os.getpid()


@pytest.mark.slow
def test_a_call_past_the_time_limit_is_an_assertion_naming_it() -> None:
    with pytest.raises(AssertionError, match=r"sleep_for still running after the 3 s limit"):
        run_bounded(sleep_for, 600, timeout_s=3, memory_mb=100)


def test_a_call_past_the_memory_limit_is_an_assertion_naming_it() -> None:
    with pytest.raises(AssertionError, match=r"allocate exceeded the memory limit of its bounded call \(200 MiB\)"):
        run_bounded(allocate, 2000, timeout_s=60, memory_mb=200)
    # the limit counts from the child's own size after imports: an allocation under it succeeds
    assert run_bounded(allocate, 100, timeout_s=60, memory_mb=200) == 100 * 2**20


def test_errors_come_back_as_their_own_types() -> None:
    with pytest.raises(ScorerInputError, match="field 'output' is required") as caught:
        run_bounded(refuse, timeout_s=60, memory_mb=100)
    assert (caught.value.scorer, caught.value.field) == ("Levenshtein", "output")
    with pytest.raises(KeyError, match="no such key"):
        run_bounded(fail_plainly, timeout_s=60, memory_mb=100)


def exit_abruptly() -> None:
    os._exit(3)


def test_a_child_that_dies_without_a_result_is_an_assertion() -> None:
    with pytest.raises(AssertionError, match=r"exit_abruptly's child process died \(exit code 3\)"):
        run_bounded(exit_abruptly, timeout_s=60, memory_mb=100)


@pytest.mark.slow
def test_a_worker_serves_calls_in_one_child_and_starts_another_after_a_timeout() -> None:
    with BoundedWorker() as worker:
        first = worker.call(child_pid, timeout_s=60, memory_mb=100)
        assert worker.call(child_pid, timeout_s=60, memory_mb=None) == first != os.getpid()
        with pytest.raises(AssertionError, match="allocate exceeded the memory limit"):
            worker.call(allocate, 2000, timeout_s=60, memory_mb=200)
        assert worker.call(allocate, 500, timeout_s=60, memory_mb=None) == 500 * 2**20  # the limit was per call
        assert worker.call(child_pid, timeout_s=60, memory_mb=100) == first
        with pytest.raises(AssertionError, match="sleep_for still running after the 2 s limit"):
            worker.call(sleep_for, 600, timeout_s=2, memory_mb=100)
        assert worker.call(child_pid, timeout_s=60, memory_mb=100) != first
