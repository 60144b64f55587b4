"""Braintrust adapter: our scorers and judges in ``braintrust.Eval(..., scores=[...])``.

A scorer cannot go into ``Eval`` as it is, for two reasons (braintrust 0.48):

- ``Eval`` calls each scorer by keyword with ``input``, ``output``,
  ``expected``, ``metadata`` and three keywords of its own: ``trace`` (its
  tracing handle), ``id`` (the dataset row's id) and ``tags`` (the row's tags).
  Our scorers read none of those three and reject unknown keywords with
  :class:`~scorers.errors.UnknownArgumentError`.
- ``Eval`` recognises a returned score only when it has ``name``, ``score``,
  ``metadata`` and an ``as_dict`` method; it reads anything else as a bare
  number, which a :class:`~scorers.score.Score` is not.

:func:`scorer` wraps one of ours so that it fits: it drops exactly the keywords
listed in :data:`DROPPED` (any other keyword Braintrust may add later still
raises, so nothing is ignored silently), passes ``input``, ``output``,
``expected`` and ``metadata`` through, and returns the score as the
``{"name", "score", "metadata"}`` dict Braintrust accepts. A skipped score
stays ``None``: Braintrust records it and leaves it out of its averages, as we
do. Judges run on Braintrust's event loop through ``eval_async``.

Agents: a task that returns messages or tool calls works with our tool-call scorers
(``ToolCallMatch``, ``TrajectoryMatch``, ``ToolCallValid``, ``ToolCallF1``) as
it is: a list of messages in any format :mod:`scorers.agents.readers` reads, a
dict with ``messages`` or ``tool_calls``, a list of calls; SDK objects in it
(the OpenAI SDK's ``ChatCompletionMessage``, LangChain's messages: pydantic
models) are read as their ``model_dump()``. The expected calls are the row's
``expected``.

A row that makes one of our scorers raise is handled by Braintrust: it records
the error under the row's ``metadata["scorer_errors"]``, prints it and goes on
with the other rows. Braintrust's averages are plain means over the rows, so a
corpus figure (corpus BLEU, chrF, TER) is not what ``Eval`` reports; use
:func:`scorers.evaluate` for those.

Building the wrapper needs nothing from Braintrust:

>>> from scorers.adapters.braintrust import scorer
>>> lev = scorer("Levenshtein")
>>> result = lev(input="q", output="kitten", expected="sitting", metadata={}, trace=None, id="row-1", tags=None)
>>> result["name"], result["score"], result["metadata"]["signature"]["scorer"]
('Levenshtein', 0.5714285714285714, 'Levenshtein')

In an experiment (``no_send_logs=True`` keeps it local; drop it to log to Braintrust)::

    from braintrust import Eval
    from scorers.adapters.braintrust import scorer, scorers

    result = Eval(
        "capitals",
        data=lambda: [{"input": "Capital of France?", "expected": "Paris"}],
        task=lambda input: "Paris",
        scores=scorers("ExactMatch", "Levenshtein", "Factuality"),
        no_send_logs=True,
    )
    result.summary.scores["ExactMatch"].score   # 1.0
"""

from __future__ import annotations

from typing import Any

from ..base import Scorer
from ..errors import ConfigError
from ..score import Score
from ._common import build_scorer, plain_data

__all__ = ["DROPPED", "BraintrustScorer", "scorer", "scorers"]

#: The keywords ``braintrust.Eval`` passes to every scorer that ours do not read, dropped by the wrapper:
#: ``trace`` (Braintrust's tracing handle), ``id`` (the dataset row's id), ``tags`` (the row's tags).
DROPPED = frozenset({"trace", "id", "tags"})


class BraintrustScorer:
    """One of our scorers in the shape ``braintrust.Eval`` calls and reads; build it with :func:`scorer`.

    ``Eval`` names the score after ``_name()`` (the scorer's name) and awaits
    :meth:`eval_async`; :meth:`__call__` is the synchronous form.
    """

    def __init__(self, wrapped: Scorer) -> None:
        if not isinstance(wrapped, Scorer):
            raise ConfigError(f"not a scorer: {wrapped!r}")
        self.scorer = wrapped
        self.__name__ = wrapped.name

    def _name(self) -> str:
        return self.scorer.name

    def __call__(self, **kwargs: Any) -> dict[str, Any]:
        return _as_braintrust(self.scorer(**_fields(kwargs)))

    async def eval_async(self, **kwargs: Any) -> dict[str, Any]:
        return _as_braintrust(await self.scorer.acall(**_fields(kwargs)))

    def __repr__(self) -> str:
        return f"braintrust scorer for {self.scorer!r}"


def scorer(s: Scorer | str, **params: Any) -> BraintrustScorer:
    """Wrap a scorer instance, or the scorer registered as ``s`` built with ``params``, for ``braintrust.Eval``.

    Fields other than the four Braintrust passes (a judge's template variables)
    are bound first with :meth:`~scorers.base.Scorer.partial`:

    >>> from scorers import get
    >>> scorer(get("Levenshtein").partial(expected="abcd"))(output="abc", trace=None, id=None, tags=None)["score"]
    0.75
    """
    return BraintrustScorer(build_scorer(s, params))


def scorers(*items: Scorer | str) -> list[BraintrustScorer]:
    """Wrap several scorers (instances or registered names) for ``Eval(..., scores=...)``.

    >>> [s._name() for s in scorers("ExactMatch", "Levenshtein")]
    ['ExactMatch', 'Levenshtein']
    """
    return [scorer(item) for item in items]


def _fields(kwargs: dict[str, Any]) -> dict[str, Any]:
    return {key: plain_data(value) for key, value in kwargs.items() if key not in DROPPED}


def _as_braintrust(score: Score) -> dict[str, Any]:
    # Braintrust takes a dict with name, score (a float in [0, 1] or None: skipped) and metadata
    return {"name": score.name, "score": score.score, "metadata": score.metadata}
