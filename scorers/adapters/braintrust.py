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
``expected``. With ``scorer(name, calls_from_trace=True)`` the actual calls are
read from Braintrust's ``trace`` instead: its tool spans
(``trace.get_spans(span_type=["tool"])``, e.g. functions decorated with
``@traced(type="tool")``), each span's name and input as a call, in the order
they started. Braintrust reads a trace's spans from the spans it logged, so
this needs an experiment that logs (not ``no_send_logs=True``).

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

import asyncio
from typing import Any

from ..base import Scorer
from ..errors import ConfigError, ScorerInputError
from ..score import Score
from .common import build_scorer, plain_data, reads_calls

__all__ = ["DROPPED", "BraintrustScorer", "scorer", "scorers"]

#: The keywords ``braintrust.Eval`` passes to every scorer that ours do not read, dropped by the wrapper:
#: ``trace`` (Braintrust's tracing handle), ``id`` (the dataset row's id), ``tags`` (the row's tags).
DROPPED = frozenset({"trace", "id", "tags"})


class BraintrustScorer:
    """One of our scorers in the shape ``braintrust.Eval`` calls and reads; build it with :func:`scorer`.

    ``Eval`` names the score after ``_name()`` (the scorer's name) and awaits
    :meth:`eval_async`; :meth:`__call__` is the synchronous form.
    """

    def __init__(self, wrapped: Scorer, *, calls_from_trace: bool = False) -> None:
        if not isinstance(wrapped, Scorer):
            raise ConfigError(f"not a scorer: {wrapped!r}")
        if calls_from_trace and not reads_calls(wrapped):
            raise ConfigError(f"{wrapped.name}: calls_from_trace is for a scorer that reads tool calls in its output")
        self.scorer = wrapped
        self.calls_from_trace = calls_from_trace
        self.__name__ = wrapped.name

    def _name(self) -> str:
        return self.scorer.name

    def __call__(self, **kwargs: Any) -> dict[str, Any]:
        fields = _fields(kwargs)
        if self.calls_from_trace:
            fields["output"] = asyncio.run(self._trace_calls(kwargs.get("trace")))
        return _as_braintrust(self.scorer(**fields))

    async def eval_async(self, **kwargs: Any) -> dict[str, Any]:
        fields = _fields(kwargs)
        if self.calls_from_trace:
            fields["output"] = await self._trace_calls(kwargs.get("trace"))
        return _as_braintrust(await self.scorer.acall(**fields))

    async def _trace_calls(self, trace: Any) -> list[dict[str, Any]]:
        """The calls of the trace's tool spans (name and input), in the order they started."""
        if trace is None or not callable(getattr(trace, "get_spans", None)):
            raise ScorerInputError(
                self.scorer.name,
                "output",
                "is read from Braintrust's trace (calls_from_trace=True), but none was given",
            )
        spans = sorted(
            await trace.get_spans(span_type=["tool"]), key=lambda span: (span.metrics or {}).get("start") or 0
        )
        return [{"name": (span.span_attributes or {}).get("name"), "arguments": span.input} for span in spans]

    def __repr__(self) -> str:
        return f"braintrust scorer for {self.scorer!r}"


def scorer(s: Scorer | str, *, calls_from_trace: bool = False, **params: Any) -> BraintrustScorer:
    """Wrap a scorer instance, or the scorer registered as ``s`` built with ``params``, for ``braintrust.Eval``
    (``calls_from_trace``: a tool-call scorer's output is the calls of the trace's tool spans; see the module).

    Fields other than the four Braintrust passes (a judge's template variables)
    are bound first with :meth:`~scorers.base.Scorer.partial`:

    >>> from scorers import get
    >>> scorer(get("Levenshtein").partial(expected="abcd"))(output="abc", trace=None, id=None, tags=None)["score"]
    0.75
    """
    return BraintrustScorer(build_scorer(s, params), calls_from_trace=calls_from_trace)


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
