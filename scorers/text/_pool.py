"""Worker processes a scorer owns, for batches too slow to score in one process (TER's edit search).

Nothing here is process-wide. A :class:`ProcessPool` belongs to the scorer that
made it and starts its workers on first use with the ``forkserver`` start method
(``spawn`` where there is none): each worker starts from a fresh process, never
from a fork of this one, which may run threads. :meth:`ProcessPool.close` stops
them; so does collecting the pool (``weakref.finalize``, which also runs at
interpreter exit). No ``atexit`` hook, no change to multiprocessing's default
context or to the forkserver's preload list.

Like the runner's ``workers``, the workers import the caller's ``__main__``
module: a script must guard its entry point with ``if __name__ == "__main__":``.
A process that is itself a worker of some pool (the runner's ``workers``, a
multiprocessing pool) does not start one: its parent already spread the work.
"""

from __future__ import annotations

import multiprocessing
import threading
import warnings
import weakref
from typing import Any, Callable, Iterable, TypeVar

__all__ = ["ProcessPool"]

T = TypeVar("T")


def _shutdown(executor: Any) -> None:
    executor.shutdown(wait=True, cancel_futures=True)


class ProcessPool:
    """``processes`` worker processes, started on the first :meth:`map` and stopped by :meth:`close`.

    After :meth:`close` the pool can be used again: the next :meth:`map` starts new workers.

    >>> pool = ProcessPool(2, owner="TER")
    >>> pool.started
    False
    >>> pool.close()  # nothing to stop
    """

    def __init__(self, processes: int, *, owner: str) -> None:
        self.processes = processes
        self.owner = owner
        self._lock = threading.Lock()
        self._executor: Any = None
        self._finalizer: weakref.finalize[[Any], ProcessPool] | None = None

    @property
    def started(self) -> bool:
        """Whether worker processes are running (or starting)."""
        return self._executor is not None

    def map(self, func: Callable[[Any], T], chunks: Iterable[Any]) -> list[T] | None:
        """``func`` on each chunk in the workers, results in order; None where the caller should compute here.

        None in a process that is itself a worker, and when the pool broke (a worker
        died, or could not start: then a warning says why, and the pool is closed).
        """
        executor = self._start()
        if executor is None:
            return None
        try:
            return list(executor.map(func, chunks))
        except (OSError, RuntimeError) as exc:  # BrokenProcessPool, or closed by another thread meanwhile
            warnings.warn(
                f"{self.owner}: worker processes failed ({exc!r}); scoring in this process. A script that "
                "starts worker processes must guard its entry point with `if __name__ == '__main__':`",
                RuntimeWarning,
                stacklevel=3,
            )
            self.close()
            return None

    def _start(self) -> Any:
        with self._lock:
            if self._executor is None and multiprocessing.parent_process() is None:
                from concurrent.futures import ProcessPoolExecutor

                method = "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"
                self._executor = ProcessPoolExecutor(self.processes, mp_context=multiprocessing.get_context(method))
                self._finalizer = weakref.finalize(self, _shutdown, self._executor)
            return self._executor

    def close(self) -> None:
        """Stop the workers (waiting for them to exit); a no-op when none run."""
        with self._lock:
            finalizer, self._executor, self._finalizer = self._finalizer, None, None
        if finalizer is not None:
            finalizer()  # shuts the executor down once, and forgets it

    def __repr__(self) -> str:
        return f"ProcessPool(processes={self.processes}, started={self.started})"
