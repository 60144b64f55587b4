"""The engine's side of a batch run: requests held back instead of sent, and the batch's answers fed back in.

While a :class:`Deferral` is current (:func:`deferring`, set by the batch layer around one pass over a chunk of
rows), :meth:`LLMEngine.complete <scorers.llm.engine.LLMEngine.complete>` does not send a request that the cache
cannot answer: it records it (:meth:`Deferral.defer`) and raises :class:`Deferred`, which fails the row for this
pass only. Once the batch has answered, the next pass finds each answer here (:meth:`Deferral.settle`) and runs
it through the engine's own path, as the first attempt of an online call: the same parsing, ``validate``, re-asks
(online), cache entry and usage. A request the batch did not answer raises its :class:`BatchRequestError`.

>>> deferral = Deferral()
>>> with deferring(deferral):
...     current() is deferral
True
>>> current() is None, "k" in deferral
(True, False)
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import copy
import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Iterable, Iterator, Mapping, NoReturn

from ...errors import BatchRequestError, ConfigError, JudgeError

if TYPE_CHECKING:
    from ..config import LLMSettings
    from ..protocol import ChatResult

__all__ = ["Pending", "Deferred", "BatchRequestError", "BatchAPIError", "Deferral", "current", "deferring"]

_CURRENT: contextvars.ContextVar["Deferral | None"] = contextvars.ContextVar("scorers_batch_deferral", default=None)


def current() -> "Deferral | None":
    """The deferral of the pass running in this task, or ``None`` (requests are sent online)."""
    return _CURRENT.get()


@contextlib.contextmanager
def deferring(deferral: "Deferral") -> Iterator["Deferral"]:
    """Make ``deferral`` current in this task and the tasks it starts."""
    token = _CURRENT.set(deferral)
    try:
        yield deferral
    finally:
        _CURRENT.reset(token)


@dataclass(frozen=True)
class Pending:
    """A request held for the batch: its cache key (the batch line's ``custom_id``), the body the online path
    would post, its API (``chat``, ``responses``, ``anthropic``, ...), the settings of its endpoint, and the judge
    that asked."""

    key: str
    body: Mapping[str, Any]
    api: str
    settings: "LLMSettings"
    scorer: str | None = None


class Deferred(JudgeError):
    """A request of this pass went into the batch; the row is judged again once the batch has answered."""


class BatchAPIError(ConfigError):
    """The provider's batch API itself failed (a submission, a poll or a download): the run stops; the batches
    out stay listed beside the results (``OUT.batch.json``), so that running it again resumes them."""


def labelled(error: BatchRequestError, scorer: str | None) -> BatchRequestError:
    """``error`` as judge ``scorer``'s (its message names it)."""
    if scorer is None:
        return error
    return BatchRequestError(f"{scorer}: {error}", reason=error.reason, status=error.status, scorer=scorer)


@dataclass(frozen=True)
class Answer:
    """A batch line's reply body, not yet read by the engine."""

    data: Any


class Deferral:
    """What one chunk of rows knows of its batch requests across passes: those held in the current pass
    (:attr:`pending`) and the outcome of each request the batch answered (or failed)."""

    def __init__(self) -> None:
        self.pending: dict[str, Pending] = {}
        self._outcomes: dict[str, Answer | BatchRequestError | asyncio.Future[ChatResult]] = {}
        self._used: set[str] = set()
        #: The batches (ids) whose outcomes this chunk took.
        self.batches: set[str] = set()

    def __contains__(self, key: object) -> bool:
        return key in self._outcomes

    def __len__(self) -> int:
        return len(self._outcomes)

    def keys(self) -> Iterable[str]:
        """The requests the batch answered (or failed)."""
        return self._outcomes.keys()

    def take(self, key: str, outcome: Answer | BatchRequestError) -> None:
        """Record the batch's outcome for request ``key``."""
        self._outcomes[key] = outcome

    def unanswered(self, stored: Mapping[str, Any]) -> Mapping[str, Any]:
        """``stored`` (cache entries by key) without those of requests this batch answered: an earlier pass of this
        chunk put them there, and they are read again through :meth:`settle` (fresh, not cached)."""
        if not self._outcomes or not any(key in self._outcomes for key in stored):
            return stored
        return {key: entry for key, entry in stored.items() if key not in self._outcomes}

    def defer(self, pending: Pending) -> NoReturn:
        """Hold ``pending`` for the batch and end this call (:class:`Deferred`)."""
        self.pending[pending.key] = pending
        raise Deferred(f"{pending.scorer or 'judge'}: request held for the batch", scorer=pending.scorer)

    async def settle(self, key: str, ask: Callable[[Any], Awaitable["ChatResult"]]) -> "ChatResult":
        """The reply to request ``key`` (in this deferral): the batch's reply read by ``ask`` (the engine's online
        path with that reply as its first attempt) once, every later pass or row given the same result; or the
        request's :class:`BatchRequestError`, a JudgeError ``ask`` raised included (a copy each time, since a row
        records its usage on it). The same request in another row of a pass is a cache hit there (``cached``, no
        attempts), as online, where a later row finds the first one's reply in the cache."""
        outcome = self._outcomes[key]
        if isinstance(outcome, Answer):
            outcome = self._outcomes[key] = asyncio.ensure_future(ask(outcome.data))
        if isinstance(outcome, BaseException):
            raise copy.copy(outcome)
        again = key in self._used
        self._used.add(key)
        try:
            result = await asyncio.shield(outcome)
        except JudgeError as exc:
            raise copy.copy(exc) from None
        # the same request in another row of the pass: paid once, so a cache hit there, as a later row's is online
        return dataclasses.replace(result, cached=True, attempts=0) if again else result

    def new_pass(self) -> None:
        """A pass over the chunk begins: the first row to use each reply in it is the one that paid for it."""
        self._used.clear()
