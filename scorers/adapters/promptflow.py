"""promptflow adapter: our scorers as a line-scoring flow whose aggregation logs each scorer's mean.

promptflow runs an evaluation flow once per line of a data file (``pf run
create --flow ... --data ... --run <the run it evaluates>``) and then once over
all the lines, the aggregation, whose metrics ``pf run show-metrics`` shows.
This module gives both halves, usable as a flex flow and as a DAG flow:

- :func:`score_line` scores one line with several scorers and returns
  ``{"scores": {name: float or None}, "metadata": {name: {...}}}`` (a judge's
  choice and rationale, the signature);
- :func:`aggregate` takes those line results, returns each scorer's mean and
  logs it with promptflow's ``log_metric``;
- :class:`ScorerFlow` is a flex-flow entry that does both: ``entry:
  scorers.adapters.promptflow:ScorerFlow`` in ``flow.flex.yaml``, the scorers
  given at ``--init scorers=ExactMatch,Levenshtein``.

A DAG flow calls :func:`score_line` from a ``@tool`` of a python node and
:func:`aggregate` from a ``@tool`` of an ``aggregation: true`` node (promptflow
only runs tools defined in the node's own file); ``examples/promptflow/dag``
holds such a flow, ``examples/promptflow/flex`` a flex one.

What promptflow shows:

- a skipped score (the scorer does not apply to the line) is ``None`` in the
  line's ``scores`` and is left out of the mean; a scorer that skipped every
  line has no metric;
- a :class:`~scorers.errors.ScorerError` for a line (a missing field, bad input,
  a judge that gave up) is raised: promptflow marks that line failed with our
  error's type and message (``pf run show-details``), the run still ends
  ``Completed`` with ``Failed to run 1/3 lines. First error message is: ...``
  in its error, and the aggregation sees only the lines that succeeded;
- a :class:`~scorers.errors.ConfigError` is raised as well. An unknown
  scorer name given to :class:`ScorerFlow` stops the flow before any line:
  promptflow shows ``FlowEntryInitializationError: Failed to initialize flow
  entry with '{'scorers': ...}', ex:'no scorer named ...'`` (our message,
  without its type; ``pf flow test`` exits 1, a ``pf run`` ends ``Failed``).
  In a DAG node, or for a judge without an API key, every line fails with it.

The metrics are per-line means; for corpus BLEU, chrF and TER use
:func:`scorers.evaluate` (``run.summary``).

Scoring needs nothing from promptflow:

>>> from scorers.adapters.promptflow import aggregate_scores, score_line
>>> line = score_line(["ExactMatch", "Levenshtein"], output="kitten", expected="sitting")
>>> line["scores"]
{'ExactMatch': 0.0, 'Levenshtein': 0.5714285714285714}
>>> aggregate_scores([line, score_line("ExactMatch", output="Paris", expected="Paris")])
{'ExactMatch': 0.5, 'Levenshtein': 0.5714285714285714}
"""

from typing import Any, Mapping, Sequence, TypedDict

from ..base import Scorer
from ..errors import ConfigError, MissingExtraError, ScorerInputError
from . import common

__all__ = ["LineScores", "ScorerFlow", "aggregate", "aggregate_scores", "build_scorers", "score_line"]


class LineScores(TypedDict):
    """One line's result (promptflow needs a TypedDict, not ``dict``, as a flex flow's return annotation)."""

    #: ``{scorer name: float in [0, 1], or None when the scorer skipped the line}``
    scores: dict  # type: ignore[type-arg]  # plain dict, like the flow interface's annotations below
    #: ``{scorer name: the score's metadata}`` (a judge's choice and rationale; the signature)
    metadata: dict  # type: ignore[type-arg]


def build_scorers(
    scorers: str | Scorer | Sequence[str | Scorer], params: Mapping[str, Mapping[str, Any]] | None = None
) -> list[Scorer]:
    """Scorer instances from names (a list, or one string of comma-separated names, as ``--init`` gives) or instances.

    ``params`` maps a scorer's name to its parameters:

    >>> [s.name for s in build_scorers("ExactMatch, Levenshtein")]
    ['ExactMatch', 'Levenshtein']
    >>> build_scorers(["ExactMatch"], {"ExactMatch": {"ignore_case": True}})[0].params()["ignore_case"]
    True
    >>> build_scorers("ExactMatch,NoSuchScorer")
    Traceback (most recent call last):
    ...
    scorers.errors.UnknownScorerError: no scorer named 'NoSuchScorer'. See `python -m scorers list`.
    """
    if isinstance(scorers, (str, Scorer)):
        scorers = [scorers]
    items: list[str | Scorer] = [
        part
        for item in scorers
        for part in ([name.strip() for name in item.split(",")] if isinstance(item, str) else [item])
    ]
    if not items or any(item == "" for item in items):
        raise ConfigError(
            f"promptflow adapter: name the scorers, a list or comma-separated names "
            f"(python -m scorers list), got {scorers!r}"
        )
    return common.build_scorers(items, params or {}, harness="promptflow adapter")


def score_line(
    scorers: str | Scorer | Sequence[str | Scorer],
    *,
    output: Any,
    expected: Any = None,
    input: Any = None,
    fields: Mapping[str, Any] | None = None,
) -> LineScores:
    """Score one line with each scorer; ``fields`` holds any other field they read (a judge's variables).

    A field that a scorer requires and the line lacks (None) raises
    :class:`~scorers.errors.ScorerInputError`, saying to map a column to it:

    >>> score_line("ExactMatch", output="Paris")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    scorers.errors.ScorerInputError: ExactMatch: field 'expected' is required but this line has no value for it (...)
    """
    built = build_scorers(scorers)
    given = {"output": output, "expected": expected, "input": input, **dict(fields or {})}
    unread = [name for name in fields or {} if not any(name in s.accepted_fields() for s in built)]
    if unread:
        raise ConfigError(
            f"promptflow adapter: no scorer among {', '.join(s.name for s in built)} reads a field {unread[0]!r}"
        )
    result = LineScores(scores={}, metadata={})
    for scorer in built:
        for f in scorer.fields:
            if f.required and not f.nullable and given.get(f.name) is None:
                raise ScorerInputError(
                    scorer.name,
                    f.name,
                    f"is required but this line has no value for it (map a "
                    f"data column to it, e.g. --column-mapping "
                    f"{f.name}='${{data.<column>}}')",
                )
        accepted = scorer.accepted_fields()
        score = scorer(**{name: value for name, value in given.items() if name in accepted})
        result["scores"][score.name] = score.score
        result["metadata"][score.name] = score.metadata
    return result


def aggregate_scores(lines: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """Each scorer's mean over the lines' ``scores`` (a line's ``None`` is left out); logs nothing."""
    totals: dict[str, list[float]] = {}
    for line in lines:
        if not isinstance(line, Mapping) or not isinstance(line.get("scores"), Mapping):
            raise ConfigError(
                f"promptflow adapter: the aggregation takes the line results of score_line, "
                f"dicts with 'scores', got {line!r}"
            )
        for name, value in line["scores"].items():
            totals.setdefault(name, [])
            if value is not None:
                totals[name].append(float(value))
    return {name: sum(values) / len(values) for name, values in totals.items() if values}


def aggregate(lines: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """Each scorer's mean (see :func:`aggregate_scores`), logged as the run's metric with ``log_metric``.

    Call it from a promptflow aggregation; it needs promptflow (``pip install 'scorers[promptflow]'``).
    """
    log_metric = _log_metric()
    metrics = aggregate_scores(lines)
    for name, value in metrics.items():
        log_metric(key=name, value=value)
    return metrics


class ScorerFlow:
    """A flex-flow entry: each line scored by the scorers, and their means as the run's metrics.

    ``flow.flex.yaml``: ``entry: scorers.adapters.promptflow:ScorerFlow``; give
    the scorers with ``--init scorers=ExactMatch,Levenshtein`` (``pf flow test``,
    ``pf run create``) or ``init={"scorers": [...]}`` (``PFClient.run``).
    The line inputs are ``output``, ``expected``, ``input`` and ``fields`` (a
    dict of other fields, such as a judge's ``criteria``).

    >>> flow = ScorerFlow("ExactMatch,Levenshtein")
    >>> flow(output="kitten", expected="sitting")["scores"]
    {'ExactMatch': 0.0, 'Levenshtein': 0.5714285714285714}
    """

    # promptflow reads these annotations to build the flow's interface: only plain str, dict, list, ... are allowed
    # (so a bare dict, type-arg) and a None default keeps the annotation plain (assignment)
    def __init__(self, scorers: str, params: dict = None) -> None:  # type: ignore[assignment, type-arg]
        self.scorers = build_scorers(scorers, params)

    def __call__(
        self,
        output: str,
        expected: str = None,  # type: ignore[assignment]
        input: str = None,  # type: ignore[assignment]
        fields: dict = None,  # type: ignore[assignment, type-arg]
    ) -> LineScores:
        return score_line(self.scorers, output=output, expected=expected, input=input, fields=fields)

    def __aggregate__(self, line_results: list) -> dict:  # type: ignore[type-arg]  # plain list and dict, as above
        return aggregate(line_results)


def _log_metric() -> Any:
    try:
        from promptflow.core import log_metric
    except ImportError as exc:
        raise MissingExtraError("the promptflow adapter's aggregate", "promptflow", "promptflow") from exc
    return log_metric
