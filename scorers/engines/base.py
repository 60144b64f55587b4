"""The engine interface: where :func:`scorers.evaluate` scores a run's rows.

An :class:`Engine` is a pydantic model whose fields are its options, declared once: its constructor, their
validation (a wrong one is a :class:`~scorers.errors.ConfigError` naming the engine and the options it takes),
its repr and the CLI's ``--engine-option KEY=VALUE`` help all come from them. Its one job, :meth:`Engine.score`,
takes a :class:`Job` (the rows and the unit that scores them) and yields the rows' results in chunks; the
:class:`~scorers.runner.Evaluation` around it keeps the summary, hands out the results and stops on an interrupt.

>>> from scorers.engines import Ray
>>> Ray(address="auto")
Ray(address='auto')
>>> Ray.options()
{'address': 'the cluster to join (e.g. auto; default: start a local one)'}
>>> Ray(adress="auto")
Traceback (most recent call last):
...
scorers.errors.ConfigError: the ray engine has no option 'adress'; did you mean 'address'? (its options: address)
"""

from __future__ import annotations

import asyncio
import itertools
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, AsyncGenerator, ClassVar, Generator, Iterable, Iterator, Mapping, Sequence

from pydantic import BaseModel, ConfigDict, ValidationError

from .._aio import background_loop
from .._util import did_you_mean
from ..batch import BatchScorer, RowResult
from ..errors import ConfigError, ScorerError

__all__ = ["Engine", "Job", "EngineError", "score_chunk"]


class EngineError(ScorerError):
    """The engine did not return every row exactly once (a lost row is never silently skipped)."""


@dataclass(frozen=True)
class Job:
    """What a run gives its engine: the rows (dicts, streamed; the first ones already checked for usage errors)
    and how to score them."""

    rows: Iterable[dict[str, Any]]
    #: The run's scorers, its field mapping and its bound on in-flight judge calls (per worker on a cluster).
    unit: BatchScorer
    workers: int
    #: The index of the first row.
    start: int
    #: Whether results must come in input order (an engine that keeps the order anyway may ignore it).
    ordered: bool
    #: Rows per chunk and chunks in flight, for engines that score in chunks (None: the engine's default).
    chunk_size: int | None = None
    prefetch: int | None = None

    def chunks(self, size: int) -> Iterator[tuple[int, list[dict[str, Any]]]]:
        """The rows in chunks of ``size`` (the last may be shorter), each with the index of its first row.

        >>> from scorers.batch import BatchScorer
        >>> job = Job(rows=[{"output": "a"}] * 5, unit=BatchScorer(["ExactMatch"]), workers=1, start=10, ordered=True)
        >>> [(start, len(rows)) for start, rows in job.chunks(2)]
        [(10, 2), (12, 2), (14, 1)]
        """
        rows, start = iter(self.rows), self.start
        while chunk := list(itertools.islice(rows, size)):
            yield start, chunk
            start += len(chunk)


def score_chunk(unit: BatchScorer, rows: Sequence[Mapping[str, Any]], start: int = 0) -> list[RowResult]:
    """Score one chunk of rows with ``unit`` (a :class:`Job`'s, or its copy in a worker process) here, now: each
    row's :class:`~scorers.RowResult` in order, indexed from ``start``. Sync scorers score in a thread, judges on
    this process's own event loop (their clients live as long as it). A row's error is recorded on it; a
    :class:`~scorers.errors.ConfigError` is raised. What an engine's :meth:`Engine.score` calls for each chunk.

    >>> from scorers.batch import BatchScorer
    >>> [r.scores for r in score_chunk(BatchScorer(["ExactMatch"]), [{"output": "a", "expected": "a"}])]
    [{'ExactMatch': 1.0}]
    """
    return asyncio.run_coroutine_threadsafe(unit.score(rows, start), background_loop()).result()


class Engine(BaseModel, ABC):
    """Where a run's rows are scored; subclasses declare their options as fields (with a ``description``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    #: The name the engine is registered under (``evaluate(engine=NAME)``, ``--engine NAME``).
    name: ClassVar[str]
    #: Whether results always come in input order, ``ordered`` or not (``--resume`` needs ``--ordered`` otherwise).
    keeps_order: ClassVar[bool] = False

    def __init__(self, **options: Any) -> None:
        try:
            super().__init__(**options)
        except ValidationError as exc:
            raise ConfigError(self._refusal(exc)) from None

    @classmethod
    def options(cls) -> dict[str, str]:
        """Each option's name and description."""
        return {name: field.description or "" for name, field in cls.model_fields.items()}

    @classmethod
    def _refusal(cls, exc: ValidationError) -> str:
        """Why the options were refused, naming the engine and the options it takes."""
        takes = f"its options: {', '.join(cls.model_fields)}" if cls.model_fields else "it takes none"
        reasons = []
        for error in exc.errors():
            option = ".".join(map(str, error["loc"]))
            if error["type"] == "extra_forbidden":
                reasons.append(
                    f"the {cls.name} engine has no option {option!r}{did_you_mean(option, cls.model_fields)}"
                )
            else:
                reasons.append(f"the {cls.name} engine's option {option}={error['input']!r}: {error['msg']}")
        return f"{'; '.join(reasons)} ({takes})"

    @abstractmethod
    def score(self, job: Job) -> Generator[list[RowResult], None, None]:
        """Score every row of ``job`` once: yield their results in chunks as they are ready (in input order when
        ``job.ordered``; each result's ``index`` says where it belongs). An empty chunk says that the engine is
        still at work, so that the run can stop on an interrupt meanwhile. A ConfigError stops the run; closing
        the generator stops the engine's work. The simplest engine scores :meth:`Job.chunks` with
        :func:`score_chunk`, one after the other::

            def score(self, job):
                for start, rows in job.chunks(job.chunk_size or 64):
                    yield score_chunk(job.unit, rows, start)
        """

    def ascore(self, job: Job) -> AsyncGenerator[list[RowResult], None]:
        """:meth:`score` for ``async for``, on the caller's event loop; only engines that score there have it."""
        raise ConfigError(f"a run on the {self.name} engine is iterated with for, not async for")
