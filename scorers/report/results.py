"""Results files (as ``python -m scorers run`` writes them) read for a report: per-scorer values, errors, judge details.

>>> import json, os, tempfile
>>> path = os.path.join(tempfile.mkdtemp(), "run.jsonl")
>>> _ = open(path, "w").write(json.dumps({"output": "a", "scores": {"ExactMatch": 1.0}}) + "\\n")
>>> results = ResultsFile.read(path)
>>> results.scorers, results.values("ExactMatch"), results.summary()["ExactMatch"]["n"]
(['ExactMatch'], [1.0], 1)
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from ..aggregate import MeanAggregator
from ..errors import DataError
from ..io import input_row, read_rows
from ..llm.usage import Prices
from ..runner import RowResult

__all__ = ["ResultsFile"]


@dataclass
class ResultsFile:
    """The records of one results file, in file order."""

    path: str
    records: list[dict[str, Any]]
    scorers: list[str]

    @classmethod
    def read(cls, path: str | Path) -> "ResultsFile":
        """Read a JSONL results file; a line without a ``scores`` object (or whose ``errors``, ``stats`` or
        ``metadata_scores`` is not an object) raises :class:`DataError` naming it."""
        path = str(path)
        records: list[dict[str, Any]] = []
        names: dict[str, None] = {}
        for line, record in enumerate(read_rows(path, "jsonl"), 1):
            scores = record.get("scores")
            if not isinstance(scores, dict):
                raise DataError(
                    f'{path}: record {line} has no "scores" object: is it a results file of '
                    "`python -m scorers run`? (the input data file has no scores)"
                )
            for name, value in scores.items():
                if value is not None and not isinstance(value, (int, float)):
                    raise DataError(f"{path}: record {line}: scores.{name} is {value!r}, not a number or null")
                names.setdefault(name)
            for key in ("errors", "stats", "metadata_scores"):
                if not isinstance(record.get(key, {}), dict):
                    raise DataError(
                        f'{path}: record {line}: "{key}" is a {type(record[key]).__name__}, not an '
                        "object (a results file of a version of scorers that let an input column of "
                        "that name overwrite it? run it again)"
                    )
            records.append(record)
        if not records:
            raise DataError(f"{path}: no results (the file is empty)")
        return cls(path, records, list(names))

    def row(self, index: int) -> dict[str, Any]:
        """The input row of record ``index``: its fields without the run's, named as in the input file."""
        return input_row(self.records[index])

    def values(self, scorer: str) -> list[float]:
        """The scorer's numeric scores, in row order (skipped and failed rows left out)."""
        return [float(v) for r in self.records if (v := r["scores"].get(scorer)) is not None]

    def column(self, scorer: str) -> list[float | None]:
        """One value per row: the score, or ``None`` (skipped, failed, or not scored in this file)."""
        return [None if (v := r["scores"].get(scorer)) is None else float(v) for r in self.records]

    def metadata(self, record: Mapping[str, Any], scorer: str) -> dict[str, Any]:
        """The score's metadata (``--metadata`` runs), else ``{}``."""
        return dict((record.get("metadata_scores") or {}).get(scorer) or {})

    @property
    def has_metadata(self) -> bool:
        return any("metadata_scores" in r for r in self.records)

    def is_judge(self, scorer: str) -> bool:
        """Whether the scorer's metadata shows LLM calls (a model and token usage)."""
        return any(
            isinstance(m.get("usage"), Mapping) and isinstance(m.get("model"), str)
            for m in (self.metadata(r, scorer) for r in self.records)
        )

    def summary(self, prices: Prices | None = None) -> dict[str, dict[str, Any]]:
        """Per scorer: the run summary's figures (n, mean, stdev, min, max, skipped, errors; judges: usage).

        The same aggregators as the run's summary (:class:`~scorers.aggregate.MeanAggregator`, and
        :class:`~scorers.judges.base.JudgeAggregator` for judges, whose usage needs ``--metadata``);
        ``prices`` (USD per 1M input and output tokens, per model) give the judges' cost estimate.
        """
        from ..judges.base import JudgeAggregator

        aggregators = {name: JudgeAggregator() if self.is_judge(name) else MeanAggregator() for name in self.scorers}
        errors: dict[str, Counter[str]] = {name: Counter() for name in self.scorers}
        for record in self.records:
            result = RowResult.from_record(record)
            for name, score in result.results.items():
                aggregators[name].add(score)
            for name, error in result.errors.items():
                errors[name][str(error.get("type", "error"))] += 1
                aggregators[name].add_error(error)
        out = {}
        for name, aggregator in aggregators.items():
            figures = aggregator.result()
            if prices is not None and isinstance(aggregator, JudgeAggregator):
                figures["usage"] = aggregator.usage.to_dict(prices)
            figures["errors"] = sum(errors[name].values())
            figures["error_types"] = dict(errors[name])
            out[name] = figures
        return out

    def choices(self, scorer: str) -> Counter[str]:
        """How often a judge chose each choice (classifier judges, ``--metadata`` runs)."""
        found: Counter[str] = Counter()
        for record in self.records:
            choice = self.metadata(record, scorer).get("choice")
            if isinstance(choice, str):
                found[choice] += 1
        return found
