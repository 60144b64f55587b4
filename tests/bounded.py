"""Run a test's callable in a fresh child process under a wall-clock and memory limit.

``run_bounded(fn, *args, timeout_s=..., memory_mb=..., **kwargs)`` calls ``fn(*args, **kwargs)`` in a child started
with multiprocessing's ``spawn`` context and returns its result, or re-raises the exception it raised (its own type:
:class:`~scorers.errors.ScorerError` subclasses round-trip intact). A child that runs past ``timeout_s`` or exhausts
its memory is an :class:`AssertionError` naming the limit; the child is always killed.

The memory limit is ``RLIMIT_AS`` (address space), set inside the child to its own size once ``fn``'s module is
imported plus ``memory_mb``, so that what numpy or torch reserve at import does not count against the case.
``fn`` must be picklable: a function defined at a module's top level (a test module is fine).
"""

from __future__ import annotations

import multiprocessing
import os
import pickle
import resource
import traceback
from multiprocessing.connection import Connection
from typing import Any, Callable, TypeVar

__all__ = ["run_bounded"]

T = TypeVar("T")

_PAGE = os.sysconf("SC_PAGE_SIZE")


def _address_space() -> int:
    """This process's virtual memory size in bytes (Linux: /proc/self/statm)."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[0]) * _PAGE


def _child(conn: Connection, payload: bytes, memory_mb: int) -> None:
    try:
        fn, args, kwargs = pickle.loads(payload)  # imports fn's module before the limit is measured
        limit = _address_space() + memory_mb * 2**20
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        result = fn(*args, **kwargs)
    except MemoryError:
        conn.send(("memory", None, traceback.format_exc()))
        return
    except BaseException as error:  # every exception goes back to the parent
        text = traceback.format_exc()
        try:
            conn.send(("raised", pickle.dumps(error), text))
        except Exception:  # an exception that does not pickle: its type, message and traceback
            conn.send(("unpicklable", f"{type(error).__module__}.{type(error).__qualname__}: {error}", text))
        return
    conn.send(("returned", result, ""))


def run_bounded(fn: Callable[..., T], *args: Any, timeout_s: float, memory_mb: int, **kwargs: Any) -> T:
    """``fn(*args, **kwargs)`` in a spawned child limited to ``timeout_s`` seconds and ``memory_mb`` MiB more memory."""
    context = multiprocessing.get_context("spawn")
    receiver, sender = context.Pipe(duplex=False)
    payload = pickle.dumps((fn, args, kwargs))
    child = context.Process(target=_child, args=(sender, payload, memory_mb), daemon=True)
    name = getattr(fn, "__qualname__", repr(fn))
    child.start()
    sender.close()
    try:
        if not receiver.poll(timeout_s):
            raise AssertionError(f"{name} still running after the {timeout_s} s limit of run_bounded (killed)")
        try:
            kind, value, text = receiver.recv()
        except EOFError:
            child.join(5)
            raise AssertionError(
                f"{name}'s child process died with exit code {child.exitcode} without a result "
                f"(memory limit {memory_mb} MiB above its baseline, or a crash)"
            ) from None
    finally:
        child.kill()
        child.join()
        receiver.close()
    if kind == "returned":
        return value  # type: ignore[no-any-return]
    if kind == "memory":
        raise AssertionError(f"{name} exceeded the memory limit of run_bounded ({memory_mb} MiB):\n{text}")
    if kind == "unpicklable":
        raise RuntimeError(f"{name} raised {value} in its bounded child:\n{text}")
    error = pickle.loads(value)
    if hasattr(error, "add_note"):  # Python 3.11+: keep the child's traceback in the report
        error.add_note(f"raised in run_bounded's child process:\n{text}")
    raise error
