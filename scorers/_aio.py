"""Run coroutines from synchronous code, also when an event loop is already running.

The sync face of every async scorer goes through :func:`run_sync`. It never
nests event loops (no ``nest_asyncio``): coroutines run on one long-lived
background loop, so async clients bound to that loop stay usable across calls.
"""
from __future__ import annotations

import asyncio
import threading
from typing import Awaitable, TypeVar

T = TypeVar("T")

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None


def background_loop() -> asyncio.AbstractEventLoop:
    """The process-wide event loop that runs sync calls of async code."""
    global _loop
    with _lock:
        if _loop is None or _loop.is_closed():
            loop = asyncio.new_event_loop()
            thread = threading.Thread(target=loop.run_forever, name="scorers-loop", daemon=True)
            thread.start()
            _loop = loop
        return _loop


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
