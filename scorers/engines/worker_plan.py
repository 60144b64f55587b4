"""Whether ``--workers N`` can pay on this machine, for this input: the rule the local engine follows so that a run
with workers is never slower than one without.

Worker processes pay only when there is work to share and cores to share it on. Two checks decide:

- Before the run (:func:`plan_workers`), from facts known at once: the cores this process may use
  (``os.sched_getaffinity``), the input's size in bytes, and the machine's 1-minute load average. One core, an
  input under :data:`MIN_INPUT_BYTES` (the workers' start and the parent's feeding would cost more than they save),
  or a load of :data:`BUSY_LOAD_PER_CORE` per core and more (every core already has a process waiting for it):
  one process. Otherwise no more workers than cores.
- While it runs (:class:`WorkersGain`): each worker's chunk comes back with the CPU seconds it took, which is about
  what one process with a whole core would take to score it. Their sum over the wall time of a window of chunks is
  the workers' gain over one process (an upper bound for one process, so the check errs towards one process). The
  load average lags by a minute; this sees a neighbour that started a second ago. A window whose gain stays under
  :data:`MIN_GAIN` ends the workers: the rest of the run is scored in one process.

The environment variable ``SCORERS_WORKERS=always`` turns both checks off (every worker asked is started and kept):
for tests of the workers themselves on small inputs, and for measuring what workers cost where they do not pay.

>>> plan_workers(2, cores=2, load=0.3, input_bytes=28_000_000)
WorkersUsed(asked=2, used=2, why='')
>>> print(plan_workers(2, cores=2, load=5.0, input_bytes=28_000_000))
1 (asked 2: the machine is busy, load 5.0 on 2 cores)
"""

from __future__ import annotations

import os
from dataclasses import dataclass

__all__ = [
    "MIN_INPUT_BYTES",
    "BUSY_LOAD_PER_CORE",
    "MIN_GAIN",
    "WorkersUsed",
    "always",
    "WorkersGain",
    "cores",
    "plan_workers",
]

#: Inputs smaller than this are scored in one process: about 15,000 rows of short text pairs, a fraction of a
#: second of ROUGE-L, which is what starting and feeding the workers costs back.
MIN_INPUT_BYTES = 4 << 20
#: A 1-minute load average of this much per core and more: the machine is busy, no worker would get a core.
BUSY_LOAD_PER_CORE = 1.5
#: The least gain (the workers' rows per second over one process's, estimated) that keeps the workers running; under
#: it the parent's feeding and writing costs more than the workers give.
MIN_GAIN = 1.25
#: The wall seconds of scored chunks that one gain check looks at.
WINDOW_S = 0.5


@dataclass(frozen=True)
class WorkersUsed:
    """The worker processes a run used (``used``) of those ``asked``, and ``why`` fewer (empty: as asked).

    >>> str(WorkersUsed(2, 2)), str(WorkersUsed(2, 1, "one core"))
    ('2', '1 (asked 2: one core)')
    """

    asked: int
    used: int
    why: str = ""

    def __str__(self) -> str:
        return f"{self.used} (asked {self.asked}: {self.why})" if self.why else str(self.used)

    def notice(self) -> str:
        """The line a run prints when it uses fewer workers than asked.

        >>> WorkersUsed(2, 1, "one core").notice()
        'note: --workers 2: scoring in one process (one core)'
        """
        used = "one process" if self.used == 1 else f"{self.used} worker processes"
        return f"note: --workers {self.asked}: scoring in {used} ({self.why})"


def cores() -> int:
    """The cores this process may run on.

    >>> cores() >= 1
    True
    """
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def always() -> bool:
    """Whether ``SCORERS_WORKERS=always`` turns the checks off."""
    return os.environ.get("SCORERS_WORKERS") == "always"


def plan_workers(
    asked: int, *, cores: int | None = None, load: float | None = None, input_bytes: int | None = None
) -> WorkersUsed:
    """How many of ``asked`` workers to start, from the facts known before the run (None: this machine's now;
    ``input_bytes`` None: unknown, as for standard input).

    >>> [str(plan_workers(4, cores=c, load=0.0, input_bytes=1 << 30)) for c in (1, 2, 8)]
    ['1 (asked 4: one core)', '2 (asked 4: 2 cores)', '4']
    >>> str(plan_workers(2, cores=2, load=0.0, input_bytes=100_000))
    '1 (asked 2: the input is 0.1 MB, under the 4.2 MB that workers need to pay)'
    """
    if asked <= 1 or always():
        return WorkersUsed(asked, asked)
    count = globals()["cores"]() if cores is None else cores
    if count < 2:
        return WorkersUsed(asked, 1, "one core")
    if input_bytes is not None and input_bytes < MIN_INPUT_BYTES:
        return WorkersUsed(
            asked,
            1,
            f"the input is {input_bytes / 1e6:.1f} MB, under the {MIN_INPUT_BYTES / 1e6:.1f} MB that workers need to pay",
        )
    load = os.getloadavg()[0] if load is None and hasattr(os, "getloadavg") else (load or 0.0)
    if load >= BUSY_LOAD_PER_CORE * count:
        return WorkersUsed(asked, 1, f"the machine is busy, load {load:.1f} on {count} cores")
    if asked > count:
        return WorkersUsed(asked, count, f"{count} cores")
    return WorkersUsed(asked, asked)


class WorkersGain:
    """The running check: the workers' CPU seconds per chunk against the wall time, window by window.

    >>> gain = WorkersGain(start=0.0)
    >>> gain.add(cpu_s=0.3, now=0.3), gain.add(cpu_s=0.3, now=0.35)  # the first window is still open
    (None, None)
    >>> gain.add(cpu_s=0.3, now=0.6)  # 0.9 CPU seconds in 0.6 s: 1.5x one process
    1.5
    >>> gain.add(cpu_s=0.5, now=1.1) is not None and gain.pays
    False
    """

    def __init__(self, start: float, window_s: float | None = None) -> None:
        self.window_s = WINDOW_S if window_s is None else window_s
        self.since = start
        self.cpu_s = 0.0
        self.pays = True  # (always, with SCORERS_WORKERS=always)
        self.last: float | None = None  # the last window's gain

    def add(self, cpu_s: float, now: float) -> float | None:
        """Count a chunk that came back at ``now`` after ``cpu_s`` CPU seconds in a worker; at the end of a window,
        its gain (and :attr:`pays` set False if under :data:`MIN_GAIN`), else None."""
        self.cpu_s += cpu_s
        if now - self.since < self.window_s:
            return None
        self.last = self.cpu_s / (now - self.since)
        self.pays = self.pays and (self.last >= MIN_GAIN or always())
        self.since, self.cpu_s = now, 0.0
        return self.last
