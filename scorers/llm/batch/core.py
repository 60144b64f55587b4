"""The interface of one provider's batch API (:class:`BatchAPI`), what it reports (:class:`BatchStatus`,
:data:`Outcome`), and the error of a failed management call (:class:`managing`). One module per provider implements
it (:mod:`~scorers.llm.batch.openai`, :mod:`~scorers.llm.batch.anthropic`); :mod:`~scorers.llm.batch.session` does
the rest, whatever the provider.

>>> BatchStatus("in_progress", False, "(3 done of 10)").ended
False
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Mapping, Sequence

from ..redaction import mask_urls, redact
from .deferral import Answer, BatchAPIError, BatchRequestError, Pending

if TYPE_CHECKING:
    from ..config import LLMSettings

__all__ = ["BatchAPI", "BatchStatus", "Outcome", "managing", "outcomes_of"]

Outcome = Answer | BatchRequestError


@dataclass(frozen=True)
class BatchStatus:
    """A batch's state as its provider reports it: ``state`` (the provider's word), whether it has ``ended``
    (its results can be read), and ``counts`` (requests done, failed and in all, in words, for the log)."""

    state: str
    ended: bool
    counts: str = ""
    #: The batch's own errors, in words (a batch that failed validation).
    problem: str = ""
    #: The provider's own record of the batch (what :meth:`BatchAPI.results` reads the files from).
    raw: Any = field(default=None, compare=False)


class BatchAPI(ABC):
    """One provider's batch API, for the wire protocols (``api`` names) in :attr:`apis`. Subclasses submit a list
    of requests, report a batch's status and read its results; the core does the rest."""

    #: The provider, as the state file and messages name it.
    name: ClassVar[str]
    #: The ``api`` settings whose requests it takes.
    apis: ClassVar[frozenset[str]]
    #: The most requests and bytes one batch may hold (the provider's limits).
    max_requests: ClassVar[int]
    max_bytes: ClassVar[int]

    @abstractmethod
    async def client(self, settings: "LLMSettings") -> Any:
        """The client that manages batches at the endpoint of ``settings``."""

    @abstractmethod
    def line(self, pending: Pending) -> bytes:
        """One request as a line of the batch (JSON, without the newline)."""

    @abstractmethod
    async def submit(self, client: Any, lines: Sequence[bytes], first: Pending) -> str:
        """Submit a batch of ``lines``, all of the protocol and model of its ``first`` request; its id."""

    @abstractmethod
    async def status(self, client: Any, batch_id: str) -> BatchStatus:
        """The batch's status now."""

    @abstractmethod
    async def results(self, client: Any, status: BatchStatus) -> dict[str, Outcome]:
        """The outcome of each line of an ended batch, by ``custom_id``: the reply body a line got, or its error.
        Lines it lists nowhere are given the batch's own failure by the core."""


class managing:
    """``async with managing(client, "OpenAI", "polling batch b1", errors)``: a failed management call (one of
    ``errors``, the SDK's) becomes a :class:`BatchAPIError` saying what was being done where (no credentials)."""

    def __init__(self, client: Any, provider: str, doing: str, errors: tuple[type[BaseException], ...]) -> None:
        self.client, self.provider, self.doing, self.errors = client, provider, doing, errors

    async def __aenter__(self) -> None:
        return None

    async def __aexit__(self, kind: Any, exc: BaseException | None, traceback: Any) -> bool:
        if isinstance(exc, self.errors):
            message = redact(f"{type(exc).__name__}: {exc}"[:500], getattr(self.client, "api_key", None))
            raise BatchAPIError(
                f"run --batch: {self.provider}'s batch API failed while {self.doing} at "
                f"{mask_urls(str(self.client.base_url))}: {message}. The batches already submitted are listed "
                "beside the results (OUT.batch.json): run the same command again to resume them"
            ) from None
        return False


def outcomes_of(content: bytes, outcome: Callable[[Mapping[str, Any]], tuple[str, Outcome]]) -> dict[str, Outcome]:
    """The outcomes of a JSONL results file, by ``custom_id``: ``outcome`` reads each line.

    >>> outcomes_of(b'{"id": "k1"}\\n\\n', lambda line: (line["id"], Answer(line)))
    {'k1': Answer(data={'id': 'k1'})}
    """
    return dict(outcome(json.loads(raw)) for raw in content.splitlines() if raw.strip())
