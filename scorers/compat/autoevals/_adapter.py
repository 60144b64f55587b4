"""How the autoevals names run our scorers: one adapter class, option conversion, and the error for what we lack.

>>> from scorers.compat.autoevals.string import Levenshtein
>>> our_scorer(Levenshtein(), "string_scorer").name
'Levenshtein'
"""

from __future__ import annotations

from typing import Any

from ...base import Scorer as OurScorer
from ...errors import ConfigError
from ...fields import Field
from ...score import Score as OurScore
from .score import Score, Scorer

__all__ = ["Adapter", "NotSupportedError", "Unsupported", "our_scorer", "unsupported_function"]


class NotSupportedError(ConfigError, NotImplementedError):
    """An autoevals feature that ``scorers`` does not provide; the message says what to use instead."""


class Adapter(Scorer):
    """An autoevals scorer computed by one of ours (``self.scorer``); subclasses build it in ``__init__``."""

    scorer: OurScorer

    def _fields(self, output: Any, kwargs: dict[str, Any]) -> dict[str, Any]:
        """Our scorer's keyword fields from autoevals' arguments (``expected`` is absent when it is ``None``,
        unless our scorer takes a ``None`` there)."""
        if "expected" in kwargs and kwargs["expected"] is None and not _takes_none(self.scorer, "expected"):
            del kwargs["expected"]
        return {"output": output, **kwargs}

    def _run_eval_sync(self, output: Any, expected: Any = None, **kwargs: Any) -> Score:
        return Score.from_score(self.scorer(**self._fields(output, {"expected": expected, **kwargs})))

    async def _run_eval_async(self, output: Any, expected: Any = None, **kwargs: Any) -> Score:
        return Score.from_score(await self.scorer.acall(**self._fields(output, {"expected": expected, **kwargs})))

    def __repr__(self) -> str:
        return f"autoevals.{type(self).__name__}({self.scorer!r})"


def _takes_none(scorer: OurScorer, name: str) -> bool:
    return any(f.name == name and f.nullable for f in scorer.fields)


class _Foreign(OurScorer):
    """One of our scorers over an autoevals-style scorer written by the user (for ``string_scorer=`` and the like)."""

    fields = (Field("output", (object,)), Field("expected", (object,), nullable=True))

    def __init__(self, scorer: Scorer) -> None:
        super().__init__(name=scorer._name())
        self.scorer = scorer

    def params(self) -> dict[str, Any]:
        return {"autoevals_scorer": type(self.scorer).__qualname__}

    # fields by keyword, as Scorer documents its hooks (mypy cannot match that to the base hook's **fields)
    def _score(self, *, output: Any, expected: Any) -> OurScore:  # type: ignore[override]
        return self.make_score(self.scorer.eval(output, expected).score)


def our_scorer(value: Any, option: str) -> OurScorer | str | None:
    """Our scorer for a scorer-valued option: an autoevals instance or class, one of ours, or a registered name."""
    if isinstance(value, type) and issubclass(value, Scorer):
        value = value()
    if isinstance(value, Adapter):
        return value.scorer
    if isinstance(value, Scorer):
        return _Foreign(value)
    if value is None or isinstance(value, (OurScorer, str)):
        return value
    raise ConfigError(
        f"{option} must be an autoevals scorer (instance or class), a scorers Scorer or a registered "
        f"name, got {value!r}"
    )


class Unsupported:
    """An autoevals name kept importable for a feature ``scorers`` does not provide; using it raises.

    Construction succeeds (so modules that build one at import still load); any other use raises
    :class:`NotSupportedError` saying what to use instead.

    >>> class Moderation(Unsupported):
    ...     instead = "a moderation endpoint called directly"
    >>> Moderation().eval("text")
    Traceback (most recent call last):
    ...
    scorers.compat.autoevals._adapter.NotSupportedError: autoevals' Moderation is not provided by scorers; use a moderation endpoint called directly
    """

    instead: str = "a scorer from `python -m scorers list`"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def _refuse(self) -> NotSupportedError:
        return NotSupportedError(f"autoevals' {type(self).__name__} is not provided by scorers; use {self.instead}")

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):  # protocol probes (copy, pickle, pytest ids) see a plain object
            raise AttributeError(name)
        raise self._refuse()

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise self._refuse()


def unsupported_function(name: str, instead: str) -> Any:
    """A function named ``name`` that raises :class:`NotSupportedError` saying to use ``instead``."""

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise NotSupportedError(f"autoevals' {name} is not provided by scorers; use {instead}")

    refuse.__name__ = refuse.__qualname__ = name
    return refuse
