"""A run as a library object: :class:`Run` scores rows into a durable results file, resumes it, applies thresholds
and gives back a :class:`RunResult` (the summary, the thresholds not met, how it stopped).

``python -m scorers run`` is argument parsing around a :class:`Run` and printing of its :class:`RunResult`; a
notebook or a service does the same in Python. :func:`scorers.evaluate` is the streaming core under it (rows in,
:class:`~scorers.RowResult` s out, nothing written).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Literal, Mapping, Sequence

from pydantic import BaseModel, ConfigDict, Field, SkipValidation, ValidationError, field_validator, model_validator

from . import identity
from ._aio import DEFAULT_CONCURRENCY
from ._util import did_you_mean
from .base import Scorer
from .batch import BatchScorer, OptionError, RowResult, Summary, at_least_one, resolve_scorers
from .engines import Engine, Local, engine_named
from .engines.local import score_jsonl
from .engines.worker_plan import WorkersUsed
from .errors import ConfigError, DataError, ScorerError
from .io import (
    JsonlLines,
    ParquetResultWriter,
    ResultWriter,
    count_rows,
    detect_format,
    escaped_key,
    read_completed,
    read_input,
    record_matches,
)
from .llm.config import configured_prices
from .llm.spend import SpendCap, capped, price_of
from .options import OtelOptions
from .runner import COLUMN_CHECK_ROWS, Evaluation, check_columns, evaluate
from .spend import SpendPlan, plan

__all__ = ["Run", "RunResult", "OptionError"]

#: The exit code of a run stopped by each signal (128 + its number, as a shell reports it).
_STOPPED_BY = {signal.SIGINT: ("interrupted", 130), signal.SIGTERM: ("terminated", 143)}


@dataclass
class RunResult:
    """What a :meth:`Run.execute` gives back: the run's summary (the resumed rows included), the rows on which some
    scorer failed, why it failed (thresholds not met; with ``fail_on_error``, the failed rows), and, if a signal
    stopped it, ``stopped`` (``"interrupted"`` or ``"terminated"``) and what it left (``stop_message``)."""

    summary: Summary
    output: str | None
    failed_rows: int = 0
    failures: list[str] = field(default_factory=list)
    stopped: str | None = None
    stop_message: str | None = None
    #: A dry run's plan (``dry_run``): what the run would send; nothing was sent or written.
    plan: SpendPlan | None = None
    #: With ``max_cost``: the cap, what was spent, whether it was reached (:meth:`SpendCap.to_dict`).
    spend: dict[str, Any] | None = None

    @property
    def problems(self) -> list[str]:
        """Why the run could not score (:attr:`Summary.problems`)."""
        return self.summary.problems

    @property
    def passed(self) -> bool:
        """Whether the run scored every row, met every threshold and (with ``fail_on_error``) had no failed row."""
        return self.stopped is None and not self.failures and not self.problems

    @property
    def exit_code(self) -> int:
        """The command's exit code: 130/143 stopped by a signal, 3 problems, 1 failures, else 0."""
        if self.stopped is not None:
            return dict(_STOPPED_BY.values())[self.stopped]
        return 3 if self.problems else 1 if self.failures else 0


class Run(BaseModel):
    """Score ``data`` with ``scorers`` into the results file ``output``, durably; :meth:`execute` does it.

    ``data`` is the path of a JSONL (``-``: standard input), JSON, CSV or Parquet file (``format`` when the name
    does not tell), or any iterable of mappings. ``output`` is a results file (JSONL, or Parquet for a ``.parquet``
    name; None or ``-``: standard output): each row's fields, its ``scores``, ``errors`` and ``stats`` (with
    ``metadata``, ``metadata_scores``), flushed as rows are scored, locked against a second run, with the run's
    identity beside it (:mod:`scorers.identity`). ``resume`` continues a results file: its rows must be the first
    rows of ``data`` scored by the same configuration (``force``: append under another one, recorded).
    ``thresholds`` are the lowest mean score (the highest, for a lower-is-better scorer) each scorer must reach.
    Every option is declared once, here; the command line's options are derived from these fields.

    >>> import os, tempfile, scorers
    >>> out = os.path.join(tempfile.mkdtemp(), "out.jsonl")
    >>> rows = [{"output": "a", "expected": "a"}, {"output": "b", "expected": "c"}]
    >>> result = scorers.Run(rows, ["ExactMatch"], output=out, thresholds={"ExactMatch": 0.8}).execute()
    >>> result.summary.scorers["ExactMatch"]["mean"], result.passed, result.failures
    (0.5, False, ['threshold not met: ExactMatch mean 0.5000 < 0.8 (higher is better)'])
    >>> with open(out, "rb") as fh:
    ...     first = fh.readline()
    >>> with open(out, "wb") as fh:  # as if the run had stopped after one row
    ...     _ = fh.write(first)
    >>> scorers.Run(rows, ["ExactMatch"], output=out, resume=True).execute().summary.rows
    2
    >>> scorers.Run(rows, [scorers.get("ExactMatch", ignore_case=True)], output=out, resume=True).execute()
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    scorers.errors.ConfigError: ... was scored with another configuration than this run's (ExactMatch.ignore_case: False -> True); ...
    """

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    data: SkipValidation[str | os.PathLike[str] | Iterable[Mapping[str, Any]]] = Field(
        description="the rows: a JSONL, JSON, CSV or Parquet file, or an iterable of mappings"
    )
    scorers: list[Scorer] = Field(description="the scorers (instances or registered names)")
    output: str | None = Field(
        default=None, description="results file (default: stdout); a .parquet name writes Parquet"
    )
    mapping: dict[str, str] = Field(
        default_factory=dict, description="scorer fields taken from other columns or dotted paths"
    )
    thresholds: dict[str, float] = Field(
        default_factory=dict, description="the mean score each scorer must reach (lower-is-better: not exceed)"
    )
    resume: bool = Field(default=False, description="continue an interrupted run: skip rows already in OUT")
    force: bool = Field(
        default=False,
        description="when resuming, append to OUT even though this run's configuration differs from the one that "
        "wrote it (recorded in OUT.run.json)",
    )
    format: Literal["jsonl", "json", "csv", "parquet", "otlp"] | None = Field(
        default=None,
        description="input format (default: from the extension; a .json file of JSON objects is otlp, an OTLP "
        "trace export)",
    )
    concurrency: int = Field(
        default=DEFAULT_CONCURRENCY, description="in-flight async (LLM) calls (default: %(default)s)"
    )
    workers: int = Field(
        default=1,
        description="processes for the CPU-bound scorers (1: in this process); judges stay async; with an engine "
        "other than local, the engine's workers (default: %(default)s)",
    )
    engine: SkipValidation[str | Engine] = Field(
        default="local", description="where to score: an engine's name or an Engine (scorers.engines)"
    )
    ordered: bool = Field(
        default=False,
        description="a cluster engine (ray, spark): write rows in input order (default: as they finish; local "
        "runs are always in order)",
    )
    batch: bool = Field(
        default=False,
        description="send the judges' requests through their provider's batch API (about half the price; the rows "
        "are written as each round of batches ends, within 24 h); OUT.batch.json lists the batches out, so that "
        "the same command run again after a stop resumes them",
    )
    batch_poll_s: float = Field(
        default=30.0,
        gt=0,
        description="with --batch, the longest wait between two polls of a batch, in seconds "
        "(default: %(default)s; the first poll comes after 1 s, each next one twice as late)",
    )
    metadata: bool = Field(default=False, description="also write each score's metadata (metadata_scores)")
    fail_on_error: bool = Field(default=False, description="fail (exit 1) when any row has a scorer error")
    dry_run: bool = Field(
        default=False,
        description="send and write nothing: print what the run would send per judge (requests, cache hits "
        "subtracted; estimated prompt tokens; the cost at the --price prices)",
    )
    max_cost: float | None = Field(
        default=None,
        ge=0,
        allow_inf_nan=False,
        description="the most the run may spend on judge requests, in USD: none is sent that could take it past "
        "(needs every judge model's --price); the rows not judged get BudgetExceeded errors, which --resume "
        "judges again",
    )
    progress: bool = Field(default=False, description="show a progress bar on stderr")
    otel: OtelOptions = Field(
        default_factory=lambda: OtelOptions(),
        description="OTLP trace input's rows and sampling, and evaluation events out",
    )

    def __init__(self, data: Any = None, scorers: Any = None, /, **options: Any) -> None:
        if data is not None:
            options["data"] = data
        if scorers is not None:
            options["scorers"] = scorers
        try:
            super().__init__(**options)
        except ValidationError as exc:
            raise ConfigError(_refusal(exc)) from None

    @field_validator("scorers", mode="before")
    @classmethod
    def _resolved(cls, scorers: Any) -> list[Scorer]:
        return resolve_scorers(scorers)

    @field_validator("output", mode="before")
    @classmethod
    def _text_path(cls, output: Any) -> Any:
        return os.fspath(output) if isinstance(output, os.PathLike) else output

    @field_validator("concurrency", "workers")
    @classmethod
    def _positive(cls, value: int, info: Any) -> int:
        return at_least_one(value, info.field_name)

    @model_validator(mode="after")
    def _checked(self) -> "Run":
        self.engine = engine_named(self.engine)
        self.thresholds = _checked_thresholds(self.thresholds, self.scorers)
        if self.batch and type(self.engine) is not Local:
            raise OptionError(
                "batch", f"needs the local engine (a batch is sent from this machine), not {self.engine.name}"
            )
        if self.batch:
            from .llm.batch.run import check_batchable

            check_batchable(self.scorers)
        if self.force and not self.resume:
            raise OptionError("force", "needs resume (it appends to OUT under another configuration)")
        if self.resume:
            self._check_resumable()
        self._check_otel()
        if self.max_cost is not None and self.batch:
            raise OptionError("max_cost", "does not apply to --batch: a batch's requests are sent together")
        if self.max_cost is not None and not isinstance(self.engine, Local):
            raise OptionError(
                "max_cost",
                f"works on the local engine only (--workers included), not --engine {self.engine.name}: the "
                "cluster's workers send their judges' requests apart and share no spending counter",
            )
        return self

    def _check_resumable(self) -> None:
        if not self.output or self.output == "-" or self._parquet_out:
            raise OptionError("resume", "needs -o OUT.jsonl")
        assert isinstance(self.engine, Engine)
        if not self.engine.keeps_order and not self.ordered:
            raise OptionError(
                "resume",
                f"with --engine {self.engine.name} needs --ordered (OUT must hold DATA's first rows in order, and "
                "the run continues it in order)",
            )

    def _check_otel(self) -> None:
        otel = self.otel
        for option, given in (("otel_rows", otel.otel_rows != "trace"), ("sample", otel.sample is not None)):
            if given and not self._otlp_in:
                raise OptionError(option, "needs an OTLP trace export as input (--format otlp, or a .json of objects)")
        if otel.otel_out is not None and self.output and os.path.abspath(otel.otel_out) == os.path.abspath(self.output):
            raise OptionError("otel_out", "names the results file: give the events a file of their own")

    # ---------------------------------------------------------------- where rows come from and go
    @property
    def _path(self) -> str | None:
        return str(self.data) if isinstance(self.data, (str, os.PathLike)) else None

    @property
    def _parquet_in(self) -> bool:
        path = self._path
        return path is not None and (self.format or os.path.splitext(path)[1].lower().lstrip(".")) == "parquet"

    @property
    def _otlp_in(self) -> bool:
        from .io.otel import is_otlp_traces

        path = self._path
        return path is not None and (
            self.format == "otlp" or (self.format is None and path.lower().endswith(".json") and is_otlp_traces(path))
        )

    @property
    def _parquet_out(self) -> bool:
        return bool(self.output) and str(self.output).lower().endswith(".parquet")

    def _streams_lines(self) -> bool:
        """JSONL to JSONL on this machine with no judge: the lines go to the scoring thread or processes as bytes."""
        path = self._path
        return (
            path is not None
            and not self._parquet_in
            and (self.format or detect_format(path)) == "jsonl"
            and not self._parquet_out
            and isinstance(self.engine, Local)
            and not any(scorer.is_async for scorer in self.scorers)
            and self.otel.otel_out is None
        )

    def _total(self) -> int | None:
        """The rows to score, for the progress bar, when that is cheap to know."""
        path = self._path
        if path is None:
            return len(self.data) if isinstance(self.data, Sequence) else None
        return count_rows(path, self.format) if path != "-" and not self._parquet_in and not self._otlp_in else None

    # ---------------------------------------------------------------- the run
    def execute(self, *, handle_signals: bool = True) -> RunResult:
        """Score the rows (after those already in ``output``, when resuming) and return the :class:`RunResult`.

        A :class:`~scorers.errors.ConfigError` or :class:`~scorers.errors.DataError` stops the run (the rows
        written before it stay valid). With ``handle_signals`` (in the main thread), SIGINT and SIGTERM stop it
        cleanly once the rows scored are written (a second one stops it at once): the result says so, and
        ``resume`` continues it.
        """
        if self.dry_run:
            return self._dry_run()
        with contextlib.ExitStack() as stack:
            cap = stack.enter_context(capped(self._spend_cap())) if self.max_cost is not None else None
            source = stack.enter_context(JsonlLines(str(self._path))) if self._streams_lines() else None
            rows: Iterator[Any] = source.rows() if source is not None else self._rows()
            # the output is opened (and locked: no other run may write it) before it is read to resume
            writer = self._writer()
            stack.enter_context(writer)
            previous = self._resume_from(rows) if self.resume else []
            self._record_identity(len(previous))
            scoring = _Scoring(self, writer, previous)
            if self.otel.otel_out is not None:
                from .io.otel import EvaluationEvents

                resumed = previous if self.resume else None
                scoring.events = stack.enter_context(EvaluationEvents(self.otel.otel_out, resume=resumed))
            if handle_signals:
                stack.enter_context(_signals(scoring))
            scoring.score(source, rows)
            result = scoring.result()
            if cap is not None:
                _note_cap(result, cap)
            return result

    def _spend_cap(self) -> SpendCap:
        """The cap of ``max_cost`` at the configured prices; a judge model without a price is a ConfigError now,
        before any request."""
        from .judges.base import LLMJudge

        prices = configured_prices()
        for scorer in self.scorers:
            for judge in getattr(scorer, "jurors", (scorer,)):  # a jury's jurors are its judges
                if isinstance(judge, LLMJudge):
                    price_of(prices, judge._model_name())
        assert self.max_cost is not None
        return SpendCap(self.max_cost, prices)

    def _dry_run(self) -> RunResult:
        """What the run would send (:func:`scorers.spend.plan`), after the rows a resumed run would keep."""
        rows = self._rows()
        if self.resume and self.output and os.path.exists(self.output):
            for _ in range(len(_kept(read_completed(self.output)))):
                if next(rows, None) is None:
                    break
        found = plan(rows, self.scorers, mapping=self.mapping, concurrency=self.concurrency)
        return RunResult(Summary(self.scorers), self.output, plan=found)

    def _batched(self) -> Engine:
        """The engine of a batch run: the local one, its judges' requests sent in batches (state beside ``output``)."""
        from .llm.batch.run import Batched

        return Batched.beside(self.output, poll_s=self.batch_poll_s)

    def _rows(self) -> Iterator[Any]:
        path = self._path
        if self._otlp_in:
            from .io.otel import otlp_rows

            return otlp_rows(str(path), self.otel.otel_rows, self.otel.sample)
        return read_input(path, self.format) if path is not None else iter(self.data)  # type: ignore[arg-type]

    def _writer(self) -> ResultWriter | ParquetResultWriter:
        if self._parquet_out:
            return ParquetResultWriter(str(self.output))
        return ResultWriter(self.output, append=self.resume)

    def _resume_from(self, rows: Iterator[dict[str, Any]]) -> list[dict[str, Any]]:
        """The records already in ``output``, after checking they hold the first rows, in order, scored by these
        scorers; consumes those rows from ``rows``."""
        out = str(self.output)
        on_file = read_completed(out)
        previous = _kept(on_file)
        if len(previous) < len(on_file):  # judged again: the cache answers what the rows' first judging paid for
            _cut_after(out, len(previous))
            print(
                f"note: {out}: the {len(on_file) - len(previous)} row(s) from row {len(previous) + 1} on are scored "
                f"again (row {len(previous) + 1} was not judged: "
                f"{_redone_error(on_file[len(previous)])})",
                file=sys.stderr,
            )
        wanted = [s.name for s in self.scorers]
        for i, record in enumerate(previous):
            written = list(record["scores"])
            if written != wanted:
                raise ConfigError(_other_scorers(out, i, written, wanted))
            try:
                row = next(rows)
            except StopIteration:
                raise DataError(
                    f"{out} holds {len(previous)} rows but the input has only {i}; refusing to resume"
                ) from None
            if not record_matches(record, row):
                raise DataError(f"{out}:{i + 1}: does not match input row {i + 1}; is it the results of another file?")
        return previous

    def _record_identity(self, start: int) -> None:
        """Write the run's identity beside ``output``; resumed, after checking it is the configuration that wrote
        the rows there."""
        out = self.output
        if out is None or not identity.has_sidecar(out):
            return
        config = identity.configuration(self.scorers, self.mapping)
        if not self.resume:
            identity.write_identity(out, [{"start": 0, **config}])
            return
        check = identity.check_resume(
            out, config, start, force=self.force, force_hint="force=True (--resume --force on the command line)"
        )
        for note in check.notes:
            print(f"warning: {note}", file=sys.stderr)
        if check.configurations is not None:
            identity.write_identity(out, check.configurations)


def _redone_types() -> set[str]:
    """The names of the errors a resumed run judges again (:attr:`ScorerError.redone_on_resume`)."""
    found, pending = set(), [ScorerError]
    while pending:
        kind = pending.pop()
        pending.extend(kind.__subclasses__())
        if kind.redone_on_resume:
            found.add(kind.__name__)
    return found


def _redone_error(record: Mapping[str, Any]) -> str | None:
    """The type of the first error of ``record`` that a resumed run judges again, if any."""
    redone = _redone_types()
    for error in (record.get("errors") or {}).values():
        if isinstance(error, Mapping) and error.get("type") in redone:
            return str(error["type"])
    return None


def _kept(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The records a resumed run keeps: those before the first that holds an error it judges again."""
    for index, record in enumerate(records):
        if _redone_error(record) is not None:
            return records[:index]
    return records


def _cut_after(path: str, lines: int) -> None:
    """Cut the results file ``path`` after its first ``lines`` lines."""
    with open(path, "r+b") as fh:
        for _ in range(lines):
            fh.readline()
        fh.truncate(fh.tell())


def _note_cap(result: RunResult, cap: SpendCap) -> None:
    """Record the spending cap in ``result``; a cap reached is a failure that says what to do."""
    result.spend = cap.to_dict()
    if cap.reached and result.stopped is None:
        result.failures.append(
            f"spending cap reached: ${cap.spent:.4f} spent of --max-cost ${cap.max_cost:.4f}; {cap.refused} judge "
            "request(s) not sent, their rows hold BudgetExceeded errors: --resume judges them (with a higher "
            "--max-cost)"
        )


def _refusal(exc: ValidationError) -> str:
    """Why pydantic refused a Run's options, naming each option."""
    reasons = []
    for error in exc.errors():
        option = ".".join(map(str, error["loc"]))
        if error["type"] == "extra_forbidden":
            reasons.append(f"Run has no option {option!r}{did_you_mean(option, Run.model_fields)}")
        elif error["type"] == "missing":
            reasons.append(f"Run needs {option}")
        else:
            reasons.append(f"Run option {option}={error['input']!r}: {error['msg']}")
    return "; ".join(reasons)


def _checked_thresholds(thresholds: Mapping[str, float], scorers: Sequence[Scorer]) -> dict[str, float]:
    """``thresholds`` keyed by the scorers' own names (given in any case); each in [0, 1]."""
    known = {s.name.lower(): s.name for s in scorers}
    checked = {}
    for name, minimum in thresholds.items():
        if name.lower() not in known:
            raise OptionError("thresholds", f"{name}: not one of the scorers being run ({', '.join(known.values())})")
        if not 0.0 <= minimum <= 1.0:  # also refuses nan
            raise OptionError("thresholds", f"{name}={minimum:g}: scores lie in [0, 1], so the limit must too")
        checked[known[name.lower()]] = minimum
    return checked


def _other_scorers(out: str, index: int, written: list[str], wanted: list[str]) -> str:
    """Why record ``index`` of ``out``, scored by ``written``, cannot be resumed by a run of ``wanted``."""
    missing = [n for n in wanted if n not in written]
    extra = [n for n in written if n not in wanted]
    differences = "; ".join(
        part
        for part in (
            f"not in {out}: {', '.join(missing)}" if missing else "",
            f"only in {out}: {', '.join(extra)}" if extra else "",
            "the same scorers in another order" if not missing and not extra else "",
        )
        if part
    )
    return (
        f"{out}:{index + 1}: was scored with -s {' -s '.join(written)}, this run asks for "
        f"-s {' -s '.join(wanted)} ({differences}); resume with the same scorers, or write to a new file"
    )


def failures(summary: Summary, scorers: Sequence[Scorer], thresholds: Mapping[str, float]) -> list[str]:
    """The thresholds ``summary`` does not meet, in words (``threshold not met: ...``)."""
    higher = {scorer.name: scorer.higher_is_better for scorer in scorers}
    found = []
    for name, limit in thresholds.items():
        mean = summary.scorers[name]["mean"]
        bound = "at least" if higher[name] else "at most"
        if mean is None:
            found.append(
                f"threshold not met: {name} has no scores to average (every row failed or was skipped); "
                f"needed a mean of {bound} {limit}"
            )
        elif (mean < limit) if higher[name] else (mean > limit):
            found.append(
                f"threshold not met: {name} mean {mean:.4f} {'<' if higher[name] else '>'} {limit} "
                f"({'higher' if higher[name] else 'lower'} is better)"
            )
    return found


class _Scoring:
    """One execution of a :class:`Run`: the summary, the rows on which a scorer failed, the progress bar, the
    input columns seen (to note those renamed), and the signal that stopped it."""

    def __init__(self, run: Run, writer: ResultWriter | ParquetResultWriter, previous: list[dict[str, Any]]) -> None:
        self.run = run
        self.writer = writer
        self.previous = previous
        self.summary = Summary(run.scorers)
        self.failed_rows = sum(1 for record in previous if record.get("errors"))
        self.columns: set[str] = set()
        self.received: list[int] = []
        self.evaluation: Evaluation | None = None
        self.stopped: str | None = None
        self.stop_message: str | None = None
        self.events: Any = None  # the evaluation events file (otel_out), written before the results

    def stop(self, signum: int) -> None:
        """Stop once the rows scored are written; a second stop stops at once. Safe in a signal handler."""
        if self.received:
            raise KeyboardInterrupt
        self.received.append(signum)
        if self.evaluation is not None:
            self.evaluation.interrupt()

    def score(self, source: JsonlLines | None, rows: Iterator[dict[str, Any]]) -> None:
        run = self.run
        if source is not None:
            check_columns(run.mapping, source.peek(COLUMN_CHECK_ROWS), run.scorers)
        else:
            self.evaluation = evaluate(
                rows,
                run.scorers,
                mapping=run.mapping,
                concurrency=run.concurrency,
                workers=run.workers,
                start=len(self.previous),
                engine=run._batched() if run.batch else run.engine,
                ordered=run.ordered,
            )
            self.summary = self.evaluation.summary
        for record in self.previous:
            self.summary.add(RowResult.from_record(record))
        progress = _progress_bar(run, len(self.previous))
        try:
            if source is not None:
                self._score_lines(source, progress)
            else:
                self._score_rows(progress)
            self.writer.close()  # written whole (Parquet) and synced before the summary says so
        except (KeyboardInterrupt, ScorerError) as exc:
            if isinstance(exc, ScorerError) and not self.received:
                raise
            # a stop signal sent to the process group also ends worker processes: the run stops on the signal
            self._stopped()
        finally:
            if progress is not None:
                progress.close()

    def _score_lines(self, source: JsonlLines, progress: Any) -> None:
        run, summary = self.run, self.summary
        unit = BatchScorer(run.scorers, mapping=run.mapping, concurrency=run.concurrency)
        assert isinstance(self.writer, ResultWriter)
        for scored in score_jsonl(
            unit, source, workers=run.workers, metadata=run.metadata, output=run.output, on_workers=self._workers
        ):
            if self.received:
                raise KeyboardInterrupt
            if scored is None:  # still scoring
                continue
            self._note(scored.renamed)
            self.writer.write_lines(scored.lines)
            self.writer.flush()
            summary.merge(scored.summary)
            summary.elapsed_s = time.perf_counter() - summary.started
            self.failed_rows += scored.failed
            if progress is not None:
                progress.update(scored.rows)
            if scored.error is not None:
                raise scored.error

    def _workers(self, used: WorkersUsed) -> None:
        """Where the run uses fewer workers than asked, say so and why, on stderr and in the summary."""
        if used.why:
            self.summary.workers = str(used)
            print(used.notice(), file=sys.stderr)

    def _score_rows(self, progress: Any) -> None:
        evaluation = self.evaluation
        assert evaluation is not None
        for result in evaluation:
            self._note(list(result.row))
            if self.events is not None:
                self.events.write(result)
            self.writer.write(result.to_record(with_metadata=self.run.metadata))
            if not evaluation.waiting:  # the next row is still being scored: hand what is written to the OS
                self.writer.flush()
            self.failed_rows += bool(result.errors)
            if progress is not None:
                progress.update(1)

    def _note(self, row_columns: Sequence[str]) -> None:
        """Say on stderr which input columns, first seen now, the results hold under another name."""
        if self.columns.issuperset(row_columns):
            return
        new = [c for c in row_columns if c not in self.columns]
        self.columns.update(row_columns)
        renamed = [f"{column!r} as {escaped_key(column)!r}" for column in new if escaped_key(column) != column]
        if renamed:
            output = self.run.output
            print(
                f"note: {output if output and output != '-' else 'the results'} holds the input column(s) "
                f"{', '.join(renamed)}: scores, errors, stats and metadata_scores are the run's own keys",
                file=sys.stderr,
            )

    def _stopped(self) -> None:
        name, _ = _STOPPED_BY[signal.Signals(self.received[0]) if self.received else signal.SIGINT]
        self.stopped = name
        if self.run._parquet_out:  # written whole when the writer closes; --resume reads JSONL only
            self.stop_message = (
                f"{name}; the rows scored so far are in {self.run.output} (write JSONL, -o OUT.jsonl, to be able "
                "to continue with --resume)"
            )
        else:
            self.stop_message = f"{name}; the rows written so far are complete (continue with --resume)"

    def result(self) -> RunResult:
        result = RunResult(self.summary, self.run.output, self.failed_rows, [], self.stopped, self.stop_message)
        if self.stopped is None:
            result.failures = failures(self.summary, self.run.scorers, self.run.thresholds)
            if self.run.fail_on_error and self.failed_rows:
                result.failures.append(f"{self.failed_rows} row(s) had scorer errors")
        return result


@contextlib.contextmanager
def _signals(scoring: _Scoring) -> Iterator[None]:
    """SIGINT and SIGTERM stop ``scoring`` cleanly while the block runs (only the main thread can handle them)."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    handlers = {sig: signal.signal(sig, lambda signum, frame: scoring.stop(signum)) for sig in _STOPPED_BY}
    try:
        yield
    finally:
        for sig, handler in handlers.items():
            signal.signal(sig, handler)


def _progress_bar(run: Run, done: int) -> Any:
    if not run.progress:
        return None
    from tqdm import tqdm

    return tqdm(total=run._total(), initial=done, unit="row", file=sys.stderr, dynamic_ncols=True)
