"""Typed errors raised by scorers.

Every error a scorer raises on purpose derives from :class:`ScorerError`, so a
harness can catch one type and still tell bad input from bad configuration or
from a judge that failed.

>>> from scorers.errors import ScorerInputError
>>> err = ScorerInputError("Levenshtein", "output", "is required but was missing")
>>> str(err)
"Levenshtein: field 'output' is required but was missing"
"""

from __future__ import annotations

from typing import Any, ClassVar

__all__ = [
    "ScorerError",
    "ScorerInputError",
    "UnknownArgumentError",
    "PositionalArgumentError",
    "ConfigError",
    "MissingExtraError",
    "TemplateError",
    "JudgeError",
    "BudgetExceeded",
    "BatchRequestError",
    "JudgeRefused",
    "UnknownScorerError",
    "DataError",
]


class ScorerError(Exception):
    """Base class of every error raised by ``scorers``."""

    #: Whether a run resumed from its results file (``--resume``) scores again a row that holds this error: the
    #: row was not judged for a reason of the run (:class:`BudgetExceeded`), not of the row.
    redone_on_resume: ClassVar[bool] = False

    def __init__(self, message: str, *, scorer: str | None = None) -> None:
        super().__init__(message)
        self.scorer = scorer

    @property
    def message(self) -> str:
        return str(self)

    def to_dict(self) -> dict[str, Any]:
        """The ``{"type", "message"}`` form recorded for a failed row."""
        return {"type": type(self).__name__, "message": str(self)}

    def __reduce__(self) -> tuple[Any, ...]:
        # subclasses take other constructor arguments than ``args``: rebuild without calling __init__,
        # so that errors cross process boundaries (--workers, Ray, Spark) intact
        return _rebuild, (type(self), self.args, self.__dict__)


def _rebuild(cls: type[ScorerError], args: tuple[Any, ...], state: dict[str, Any]) -> ScorerError:
    error = cls.__new__(cls)
    error.args = args
    error.__dict__.update(state)
    return error


class ScorerInputError(ScorerError, ValueError):
    """A field given to a scorer is missing, of the wrong type or unusable."""

    def __init__(self, scorer: str, field: str, problem: str) -> None:
        super().__init__(f"{scorer}: field {field!r} {problem}", scorer=scorer)
        self.field = field
        self.problem = problem


class UnknownArgumentError(ScorerInputError, TypeError):
    """A keyword argument the scorer does not accept (never silently ignored)."""

    def __init__(self, scorer: str, field: str, accepted: list[str], *, hint: str = "") -> None:
        super().__init__(scorer, field, f"is not an argument of this scorer (accepted: {', '.join(accepted)}){hint}")


class PositionalArgumentError(ScorerError, TypeError):
    """A scorer was called with positional arguments: fields go by keyword, or through ``eval``."""

    def __init__(self, scorer: str, count: int) -> None:
        super().__init__(
            f"{scorer}: fields are passed by keyword, e.g. scorer(output=..., expected=...), or positionally "
            f"through scorer.eval(output, expected); got {count} positional argument{'s' if count != 1 else ''}",
            scorer=scorer,
        )


class ConfigError(ScorerError):
    """The scorer cannot run as configured: a bad parameter, a missing key or data."""


class MissingExtraError(ConfigError, ImportError):
    """An optional dependency is not installed; the message names the extra to install."""

    def __init__(self, scorer: str, package: str, extra: str) -> None:
        super().__init__(
            f"{scorer} needs the Python package {package!r}, which is not installed. "
            f"Install it with: pip install 'scorers[{extra}]' (from a clone of scorers: pip install '.[{extra}]')",
            scorer=scorer,
        )
        self.package = package
        self.extra = extra


class UnknownScorerError(ConfigError, KeyError):
    """No scorer is registered under the requested name."""

    def __str__(self) -> str:  # KeyError would otherwise repr() the message
        return str(self.args[0])


class TemplateError(ConfigError):
    """A judge template is invalid or could not be rendered."""


class JudgeError(ScorerError):
    """An LLM judge failed: transport errors after retries, or unusable replies.

    ``usage``: what the failed row's calls cost (``model``, attempts and tokens; see
    :mod:`scorers.llm.usage`), recorded with the row's error so that a run's usage counts it.
    """

    def __init__(
        self, message: str, *, scorer: str | None = None, raw: Any = None, attempts: int | None = None
    ) -> None:
        super().__init__(message, scorer=scorer)
        self.raw = raw
        self.attempts = attempts
        self.usage: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        """``{"type", "message"}``, and ``usage`` when the calls cost something."""
        record = super().to_dict()
        if self.usage:
            record["usage"] = dict(self.usage)
        return record


class BudgetExceeded(JudgeError):
    """A judge request that was not sent: its cost would have taken the run past its spending cap
    (``Run(max_cost=...)``, ``run --max-cost``). The row is recorded with this error, and ``--resume`` judges it
    again (with a higher cap, or none).

    >>> BudgetExceeded("Polite: not sent: the spending cap of $0.50 is reached", scorer="Polite").to_dict()["type"]
    'BudgetExceeded'
    """

    redone_on_resume = True


class BatchRequestError(JudgeError):
    """A judge request that a provider's batch did not answer (``run --batch``): the batch expired, was cancelled
    or failed, or the line failed (``reason``: ``expired``, ``cancelled``, ``failed`` or ``errored``; ``status``:
    a failed line's HTTP status). Not cached: the next run sends the request again, and ``--resume`` judges the
    row again.

    >>> BatchRequestError("Polite: the batch expired", reason="expired", scorer="Polite").to_dict()["reason"]
    'expired'
    """

    redone_on_resume = True

    def __init__(self, message: str, *, reason: str, status: int | None = None, scorer: str | None = None) -> None:
        super().__init__(message, scorer=scorer, attempts=0)
        self.reason = reason
        self.status = status

    def to_dict(self) -> dict[str, Any]:
        """``{"type", "message", "reason"}``, and a failed line's ``status``."""
        record = {**super().to_dict(), "reason": self.reason}
        if self.status is not None:
            record["status"] = self.status
        return record


class JudgeRefused(JudgeError):
    """The provider refused to answer or stopped for safety (Anthropic ``stop_reason: refusal``, Gemini
    ``finishReason: SAFETY``/``RECITATION``, a Bedrock guardrail): the row fails with this error at once. It is not
    an unreadable reply, so it is neither re-asked nor retried; ``raw`` is the provider's reply."""


class DataError(ScorerError):
    """An input data file is malformed; the message names the file and line."""
