"""Run coroutines from synchronous code, also when an event loop is already running.

The sync face of every async scorer goes through :func:`run_sync`. It never
nests event loops (no ``nest_asyncio``): coroutines run on one long-lived
background loop, so async clients bound to that loop stay usable across calls.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import functools
import os
import threading
from typing import Any, Awaitable, Callable, TypeVar

from ._util import memoize

T = TypeVar("T")

#: In-flight async scorer calls (LLM judges) of a run when the caller does not say: the one default that every
#: entry point (``evaluate``, :class:`~scorers.Run`, ``BatchScorer``, ``python -m scorers run``) derives from.
DEFAULT_CONCURRENCY = 16


def background_loop() -> asyncio.AbstractEventLoop:
    """The event loop, running in a daemon thread, that runs sync calls of async code in this process.

    One per process: a forked child (multiprocessing, Spark) gets its own, not the parent's loop whose thread
    did not survive the fork.
    """
    return _loop_of(os.getpid())


def started_background_loop() -> asyncio.AbstractEventLoop | None:
    """This process's background loop if sync code has started it, else None (starts nothing)."""
    return _loop_of.cached(os.getpid())  # type: ignore[attr-defined]  # memoize's .cached


@memoize
def _loop_of(pid: int) -> asyncio.AbstractEventLoop:
    loop = asyncio.new_event_loop()
    threading.Thread(target=loop.run_forever, name="scorers-loop", daemon=True).start()
    return loop


def run_sync(awaitable: Awaitable[T]) -> T:
    """Run ``awaitable`` to completion and return its result, from any thread.

    >>> async def two() -> int:
    ...     return 2
    >>> run_sync(two())
    2
    """
    loop = background_loop()
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if running is loop:
        raise RuntimeError("run_sync() was called from the scorers background loop; await the coroutine instead")

    async def wrapper() -> T:
        return await awaitable

    return asyncio.run_coroutine_threadsafe(wrapper(), loop).result()


class DaemonThreads(concurrent.futures.Executor):
    """Runs each call on a daemon thread of its own. A call that never returns (a hung scorer) then cannot keep
    the process from exiting, as a ``ThreadPoolExecutor``'s would: the interpreter waits for those at exit."""

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> concurrent.futures.Future[T]:
        future: concurrent.futures.Future[T] = concurrent.futures.Future()

        def call() -> None:
            if not future.set_running_or_notify_cancel():
                return
            try:
                result = fn(*args, **kwargs)
            except BaseException as exc:
                future.set_exception(exc)
            else:
                future.set_result(result)

        threading.Thread(target=call, name="scorers-call", daemon=True).start()
        return future


async def to_daemon_thread(fn: Callable[..., T], /, *args: Any) -> T:
    """``asyncio.to_thread`` on a daemon thread (:class:`DaemonThreads`), in the caller's context."""
    call = functools.partial(contextvars.copy_context().run, fn, *args)
    return await asyncio.get_running_loop().run_in_executor(DaemonThreads(), call)
