"""autoevals' ``JSONDiff`` and ``ValidJSON``, computed by :mod:`scorers.heuristic`'s scorers of those names.

>>> JSONDiff()({"a": 1, "b": "x"}, {"a": 1, "b": "y"}).score
0.5
>>> ValidJSON()('{"a": 1}', {"type": "object"}).score
1.0
"""

from __future__ import annotations

from typing import Any

from ...registry import get
from ._adapter import Adapter, our_scorer
from .score import Score

__all__ = ["JSONDiff", "ValidJSON"]


class JSONDiff(Adapter):
    """Recursive JSON similarity; ``string_scorer``/``number_scorer`` may be autoevals scorers (instances, classes)."""

    def __init__(self, string_scorer: Any = None, number_scorer: Any = None, preserve_strings: bool = False) -> None:
        self.scorer = get(
            "JSONDiff",
            string_scorer=our_scorer(string_scorer, "string_scorer"),
            number_scorer=our_scorer(number_scorer, "number_scorer"),
            preserve_strings=preserve_strings,
        )


class ValidJSON(Adapter):
    """1 if ``output`` is a JSON object or array, or validates against the schema (the second positional argument,
    or ``schema=`` in the constructor, which is honoured here)."""

    def __init__(self, schema: Any = None) -> None:
        self.scorer = get("ValidJSON", schema=schema)

    def _run_eval_sync(self, output: Any, expected: Any = None, **kwargs: Any) -> Score:
        return super()._run_eval_sync(output, **self._schema(expected, kwargs))

    async def _run_eval_async(self, output: Any, expected: Any = None, **kwargs: Any) -> Score:
        return await super()._run_eval_async(output, **self._schema(expected, kwargs))

    @staticmethod
    def _schema(expected: Any, kwargs: dict[str, Any]) -> dict[str, Any]:
        if expected is not None:  # autoevals' second positional argument is the schema
            kwargs.setdefault("schema", expected)
        return kwargs
