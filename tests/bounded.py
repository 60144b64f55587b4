"""Run a test's callable in a child process under a wall-clock and memory limit.

``run_bounded(fn, *args, timeout_s=..., memory_mb=..., **kwargs)`` calls ``fn(*args, **kwargs)`` in a fresh child
started with multiprocessing's ``spawn`` context and returns its result, or re-raises the exception it raised (its
own type: :class:`~scorers.errors.ScorerError` subclasses round-trip intact). A call that runs past ``timeout_s`` or
exhausts its memory is an :class:`AssertionError` naming the limit; the child is always killed.

:class:`BoundedWorker` is the same for many calls: one child serves them in turn (what a call imports or builds
stays loaded for the next), each under its own limits; a call past its time is killed with the child, and the next
call starts a fresh one.

The memory limit is ``RLIMIT_AS`` (address space), set inside the child before each call to its size at that moment
plus ``memory_mb``, so that what numpy or torch reserve at import does not count against the case (``None``: no
limit). ``fn`` must be picklable: a function defined at a module's top level (a test module is fine).
"""

from __future__ import annotations

import multiprocessing
import os
import pickle
import resource
import traceback
from multiprocessing.connection import Connection
from typing import Any, Callable, TypeVar

__all__ = ["BoundedWorker", "run_bounded"]

T = TypeVar("T")

_PAGE = os.sysconf("SC_PAGE_SIZE")


def _address_space() -> int:
    """This process's virtual memory size in bytes (Linux: /proc/self/statm)."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[0]) * _PAGE


def _serve(conn: Connection) -> None:
    """The child: run each ``(payload, memory_mb)`` received, send back what came of it, until the pipe closes."""
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    while True:
        try:
            payload, memory_mb = conn.recv()
        except EOFError:
            return
        try:
            fn, args, kwargs = pickle.loads(payload)  # imports fn's module before the limit is measured
            if memory_mb is not None:
                limit = _address_space() + memory_mb * 2**20
                resource.setrlimit(
                    resource.RLIMIT_AS, (limit if hard == resource.RLIM_INFINITY else min(limit, hard), hard)
                )
            try:
                result = fn(*args, **kwargs)
            finally:
                resource.setrlimit(resource.RLIMIT_AS, (hard, hard))
        except MemoryError:
            conn.send(("memory", None, traceback.format_exc()))
            continue
        except BaseException as error:  # every exception goes back to the parent
            text = traceback.format_exc()
            try:
                conn.send(("raised", pickle.dumps(error), text))
            except Exception:  # an exception that does not pickle: its type, message and traceback
                conn.send(("unpicklable", f"{type(error).__module__}.{type(error).__qualname__}: {error}", text))
            continue
        conn.send(("returned", result, ""))


class BoundedWorker:
    """A child process that runs calls one at a time, each under its own time and memory limit."""

    def __init__(self) -> None:
        self._context = multiprocessing.get_context("spawn")
        self._child: Any = None
        self._conn: Connection | None = None

    def _start(self) -> Connection:
        if self._conn is None:
            parent, child_end = self._context.Pipe()
            self._child = self._context.Process(target=_serve, args=(child_end,), daemon=True)
            self._child.start()
            child_end.close()
            self._conn = parent
        return self._conn

    def close(self) -> None:
        """Kill the child, if one runs (the next call starts another)."""
        if self._child is not None:
            self._child.kill()
            self._child.join()
        if self._conn is not None:
            self._conn.close()
        self._child = self._conn = None

    def __enter__(self) -> BoundedWorker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def call(self, fn: Callable[..., T], *args: Any, timeout_s: float, memory_mb: int | None, **kwargs: Any) -> T:
        """``fn(*args, **kwargs)`` in the child, within ``timeout_s`` seconds and ``memory_mb`` MiB more memory."""
        name = getattr(fn, "__qualname__", repr(fn))
        conn = self._start()
        conn.send((pickle.dumps((fn, args, kwargs)), memory_mb))
        try:
            if not conn.poll(timeout_s):
                self.close()
                raise AssertionError(f"{name} still running after the {timeout_s} s limit of its bounded call (killed)")
            kind, value, text = conn.recv()
        except (EOFError, OSError):
            self._child.join(5)
            exitcode = self._child.exitcode
            self.close()
            raise AssertionError(
                f"{name}'s child process died (exit code {exitcode}) without a result "
                f"(memory limit {memory_mb} MiB above its size, or a crash)"
            ) from None
        if kind == "returned":
            return value  # type: ignore[no-any-return]
        if kind == "memory":
            raise AssertionError(f"{name} exceeded the memory limit of its bounded call ({memory_mb} MiB):\n{text}")
        if kind == "unpicklable":
            raise RuntimeError(f"{name} raised {value} in its bounded child:\n{text}")
        error = pickle.loads(value)
        if hasattr(error, "add_note"):  # Python 3.11+: keep the child's traceback in the report
            error.add_note(f"raised in a bounded child process:\n{text}")
        raise error


def run_bounded(fn: Callable[..., T], *args: Any, timeout_s: float, memory_mb: int | None, **kwargs: Any) -> T:
    """``fn(*args, **kwargs)`` in a fresh spawned child limited to ``timeout_s`` s and ``memory_mb`` MiB more memory."""
    with BoundedWorker() as worker:
        return worker.call(fn, *args, timeout_s=timeout_s, memory_mb=memory_mb, **kwargs)
