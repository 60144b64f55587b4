"""``run``: score a file into a durable results file, with resume, thresholds and a summary."""

from __future__ import annotations

import argparse
import contextlib
import json
import signal
import sys
import time
from pathlib import Path
from typing import Any, Iterator, Sequence

from .. import engines, identity
from ..base import Scorer
from ..batch import BatchScorer
from ..engines.local import score_jsonl
from ..errors import ConfigError, DataError, ScorerError
from ..io import (
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
from ..registry import registry
from ..runner import COLUMN_CHECK_ROWS, RowResult, Summary, check_columns, evaluate, resolve_scorers
from ._common import (
    EXIT_CODES,
    Command,
    add_progress,
    file_path,
    parse_pairs,
    parse_prices,
    scorer_params,
    wants_progress,
)


def add_run(sub: argparse._SubParsersAction[argparse.ArgumentParser], templates: argparse.ArgumentParser) -> None:
    p_run = sub.add_parser(
        "run",
        help="score a JSONL / JSON / CSV file",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        parents=[templates],
        epilog=EXIT_CODES,
        description="Score every row of DATA with the given scorers. Each output line holds the row's fields, "
        '"scores": {name: float|null}, where a scorer failed on that row "errors": '
        "{name: {type, message}}, and where a scorer has a corpus figure its row statistics "
        '("stats"). A summary table goes to stderr.',
    )
    p_run.add_argument(
        "data", type=file_path, help="input file (.jsonl, .json array, .csv/.tsv), or - for JSONL on stdin"
    )
    p_run.add_argument(
        "-s",
        "--scorer",
        action="append",
        required=True,
        dest="scorers",
        metavar="NAME",
        help="scorer to run (repeatable); see `list`",
    )
    p_run.add_argument(
        "-p",
        "--param",
        action="append",
        default=[],
        metavar="NAME.KEY=VALUE",
        help="scorer parameter, VALUE parsed as YAML (e.g. -p BLEU.tokenize=intl)",
    )
    p_run.add_argument(
        "-o",
        "--output",
        type=file_path,
        metavar="OUT.jsonl",
        help="results file (default: stdout); a .parquet name writes Parquet",
    )
    p_run.add_argument(
        "--map",
        action="append",
        default=[],
        metavar="FIELD=COLUMN",
        help="take a scorer field from another column or dotted path (e.g. --map output=response)",
    )
    p_run.add_argument(
        "--threshold",
        action="append",
        default=[],
        metavar="NAME=LIMIT",
        help="fail (exit 1) when NAME's mean score is below LIMIT (above it for a lower-is-better "
        "scorer such as Hallucination; see list --json)",
    )
    p_run.add_argument("--resume", action="store_true", help="continue an interrupted run: skip rows already in OUT")
    p_run.add_argument(
        "--force",
        action="store_true",
        help="with --resume: append to OUT even though this run's configuration differs from the one that wrote it "
        "(recorded in OUT.run.json)",
    )
    p_run.add_argument(
        "--format", choices=["jsonl", "json", "csv", "parquet"], help="input format (default: from the extension)"
    )
    p_run.add_argument("--concurrency", type=int, default=16, help="in-flight async (LLM) calls (default: 16)")
    p_run.add_argument(
        "--workers",
        type=int,
        default=1,
        help="processes for the CPU-bound scorers (default: 1, in this process); judges stay async; "
        "with --engine, the engine's workers",
    )
    p_run.add_argument(
        "--engine",
        default="local",
        metavar="NAME",
        help="where to score: local (this machine, the default), ray (Ray Data) or spark (pip install "
        "'scorers[ray]' / 'scorers[spark]'), or an engine a plugin registers",
    )
    p_run.add_argument(
        "--engine-option",
        action="append",
        default=[],
        dest="engine_options",
        metavar="KEY=VALUE",
        help="an option of the --engine (repeatable): "
        + "; ".join(
            f"{engine.name}: {key} ({text})"
            for engine in (engines.Ray, engines.Spark)
            for key, text in engine.options().items()
        ),
    )
    p_run.add_argument(
        "--ordered",
        action="store_true",
        help="--engine ray/spark: write rows in input order (default: as they finish; local runs are always in order)",
    )
    p_run.add_argument("--model", help="model of the LLM judges (default: SCORERS_MODEL, else the library default)")
    p_run.add_argument("--no-cache", action="store_true", help="do not read or write the LLM judge cache")
    p_run.add_argument(
        "--price",
        action="append",
        default=[],
        metavar="MODEL=IN,OUT",
        help="USD per 1M input and output tokens of MODEL, for the summary's cost estimate",
    )
    p_run.add_argument("--metadata", action="store_true", help="also write each score's metadata (metadata_scores)")
    p_run.add_argument("--summary-json", type=file_path, metavar="PATH", help="also write the summary as JSON")
    p_run.add_argument("--fail-on-error", action="store_true", help="exit 1 when any row has a scorer error")
    add_progress(p_run)


def _resume_from(out: str, rows: Iterator[dict[str, Any]], scorers: Sequence[Scorer]) -> list[dict[str, Any]]:
    """The records already in OUT, after checking they hold DATA's first rows, in order, scored by these scorers.

    Consumes those rows from ``rows``.
    """
    previous = read_completed(out)
    wanted = [s.name for s in scorers]
    for i, record in enumerate(previous):
        written = list(record["scores"])
        if written != wanted:
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
            raise ConfigError(
                f"{out}:{i + 1}: was scored with -s {' -s '.join(written)}, this run asks for "
                f"-s {' -s '.join(wanted)} ({differences}); resume with the same scorers, "
                "or write to a new file"
            )
        try:
            row = next(rows)
        except StopIteration:
            raise DataError(
                f"{out} holds {len(previous)} rows but the input has only {i}; refusing to resume"
            ) from None
        if not record_matches(record, row):
            raise DataError(f"{out}:{i + 1}: does not match input row {i + 1}; is it the results of another file?")
    return previous


def _record_identity(args: argparse.Namespace, scorers: Sequence[Scorer], mapping: dict[str, str], start: int) -> None:
    """Write the run's identity beside OUT; resumed, after checking it is the configuration that wrote OUT's rows."""
    if not identity.has_sidecar(args.output):
        return
    config = identity.configuration(scorers, mapping)
    if not args.resume:
        identity.write_identity(args.output, [{"start": 0, **config}])
        return
    check = identity.check_resume(args.output, config, start, force=args.force, force_hint="--resume --force")
    for note in check.notes:
        print(f"warning: {note}", file=sys.stderr)
    if check.configurations is not None:
        identity.write_identity(args.output, check.configurations)


def _print_summary(summary: Summary, stream: Any) -> None:
    def fmt(value: Any) -> str:
        if value is None:
            return "-"
        if isinstance(value, float):
            return f"{value:.4f}"
        return str(value)

    table = summary.scorers
    width = max([len(n) for n in table] + [6])
    print(
        f"\n{'scorer':<{width}}  {'n':>6}  {'mean':>7}  {'stdev':>7}  {'min':>7}  {'max':>7}  {'skipped':>7}  {'errors':>6}",
        file=stream,
    )
    for name, fig in table.items():
        print(
            f"{name:<{width}}  {fmt(fig['n']):>6}  {fmt(fig['mean']):>7}  {fmt(fig['stdev']):>7}  {fmt(fig['min']):>7}  "
            f"{fmt(fig['max']):>7}  {fmt(fig['skipped']):>7}  {fmt(fig['errors']):>6}",
            file=stream,
        )
    for name, fig in table.items():
        extras = {k: v for k, v in fig.items() if k not in ("n", "mean", "stdev", "min", "max", "skipped", "errors")}
        if extras:
            print(f"{name}:", file=stream)
            for key, value in extras.items():
                if key == "usage":  # in words, a part a line, what failed attempts cost apart (--summary-json: all)
                    from ..llm.usage import describe_usage

                    shown = "\n         ".join(describe_usage(value).split("; "))
                else:
                    shown = fmt(value) if isinstance(value, (int, float, str)) else json.dumps(value, default=str)
                print(f"  {key}: {shown}", file=stream)
    print(f"{summary.rows} rows in {summary.elapsed_s:.2f}s", file=stream)


def _thresholds(items: Sequence[str], scorers: Sequence[Scorer]) -> dict[str, float]:
    thresholds = {}
    known = {s.name.lower(): s.name for s in scorers}
    for name, value in parse_pairs(items, "--threshold"):
        if name.lower() not in known:
            raise ConfigError(f"--threshold {name}: not one of the scorers being run ({', '.join(known.values())})")
        try:
            minimum = float(value)
        except ValueError:
            raise ConfigError(f"--threshold {name}={value}: not a number") from None
        if not 0.0 <= minimum <= 1.0:  # also refuses nan
            raise ConfigError(f"--threshold {name}={value}: scores lie in [0, 1], so the limit must too")
        thresholds[known[name.lower()]] = minimum
    return thresholds


def cmd_run(args: argparse.Namespace) -> int:
    if args.concurrency < 1:
        raise ConfigError(f"--concurrency must be at least 1, got {args.concurrency}")
    if args.workers < 1:
        raise ConfigError(f"--workers must be at least 1, got {args.workers}")
    llm_settings: dict[str, Any] = {}
    if args.model:
        llm_settings["model"] = args.model
    if args.no_cache:
        llm_settings["cache"] = False
    if args.price:
        llm_settings["prices"] = parse_prices(args.price)
    if llm_settings:
        from ..llm import configure

        configure(**llm_settings)
    params = scorer_params(args.scorers, args.param)
    scorers = resolve_scorers([registry.get(name, **params[name]) for name in args.scorers])
    mapping = dict(parse_pairs(args.map, "--map"))
    thresholds = _thresholds(args.threshold, scorers)

    parquet_in = _parquet_in(args)
    parquet_out = bool(args.output) and args.output.lower().endswith(".parquet")
    engine = engines.registry.get(args.engine, **dict(parse_pairs(args.engine_options, "--engine-option")))
    # JSONL to JSONL on this machine with no judge: the lines go to the scoring thread or processes as bytes
    streamed = (
        not parquet_in
        and (args.format or detect_format(args.data)) == "jsonl"
        and not parquet_out
        and isinstance(engine, engines.Local)
        and not any(scorer.is_async for scorer in scorers)
    )
    if args.force and not args.resume:
        raise ConfigError(
            "--force needs --resume (it appends to OUT under a configuration other than the one that wrote it)"
        )
    if args.resume:
        if not args.output or args.output == "-" or parquet_out:
            raise ConfigError("--resume needs -o OUT.jsonl")
        if not engine.keeps_order and not args.ordered:
            raise ConfigError(
                f"--resume with --engine {engine.name} needs --ordered (OUT must hold DATA's first "
                "rows in order, and the run continues it in order)"
            )
    with contextlib.ExitStack() as stack:
        source = stack.enter_context(JsonlLines(args.data)) if streamed else None
        rows = source.rows() if source is not None else read_input(args.data, args.format)
        # the output is opened (and locked: no other run may write it) before it is read to resume
        writer: ResultWriter | ParquetResultWriter = (
            ParquetResultWriter(args.output) if parquet_out else ResultWriter(args.output, append=args.resume)
        )
        stack.enter_context(writer)
        previous = _resume_from(args.output, rows, scorers) if args.resume else []
        _record_identity(args, scorers, mapping, len(previous))
        return _score(args, scorers, mapping, thresholds, engine, source, rows, previous, writer)


def _score(
    args: argparse.Namespace,
    scorers: list[Scorer],
    mapping: dict[str, str],
    thresholds: dict[str, float],
    engine: engines.Engine,
    source: JsonlLines | None,
    rows: Iterator[dict[str, Any]],
    previous: list[dict[str, Any]],
    writer: ResultWriter | ParquetResultWriter,
) -> int:
    """Score ``rows`` (``source``'s, when the run streams JSONL lines) into ``writer``, after the ``previous``
    records of a resumed run; print the summary, and return the exit code."""
    parquet_out = isinstance(writer, ParquetResultWriter)

    run = None
    if source is not None:
        check_columns(mapping, source.peek(COLUMN_CHECK_ROWS), scorers)
        summary = Summary(scorers)
    else:
        run = evaluate(
            rows,
            scorers,
            mapping=mapping,
            concurrency=args.concurrency,
            workers=args.workers,
            start=len(previous),
            engine=engine,
            ordered=args.ordered,
        )
        summary = run.summary
    for record in previous:
        summary.add(RowResult.from_record(record))
    progress = _progress(args, len(previous))
    failed_rows = sum(1 for r in previous if r.get("errors"))
    columns: set[str] = set()  # the input columns seen so far
    received: list[int] = []

    def stop(signum: int, frame: Any) -> None:  # Ctrl-C or SIGTERM: stop once the rows scored are written
        if received:  # a second signal: stop now
            raise KeyboardInterrupt
        received.append(signum)
        if run is not None:
            run.interrupt()

    def note(row_columns: Sequence[str]) -> None:
        if not columns.issuperset(row_columns):
            _say_renamed([c for c in row_columns if c not in columns], args.output)
            columns.update(row_columns)

    handlers = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        if source is not None:
            assert isinstance(writer, ResultWriter)
            unit = BatchScorer(scorers, mapping=mapping, concurrency=args.concurrency)
            for scored in score_jsonl(unit, source, workers=args.workers, metadata=args.metadata, output=args.output):
                if received:
                    raise KeyboardInterrupt
                if scored is None:  # still scoring
                    continue
                note(scored.renamed)
                writer.write_lines(scored.lines)
                writer.flush()
                summary.merge(scored.summary)
                summary.elapsed_s = time.perf_counter() - summary.started
                failed_rows += scored.failed
                if progress is not None:
                    progress.update(scored.rows)
                if scored.error is not None:
                    raise scored.error
        else:
            assert run is not None
            for result in run:
                note(list(result.row))
                writer.write(result.to_record(with_metadata=args.metadata))
                if not run.waiting:  # the next row is still being scored: hand what is written to the OS
                    writer.flush()
                failed_rows += bool(result.errors)
                if progress is not None:
                    progress.update(1)
        writer.close()  # written whole (Parquet) and synced before the summary says so
    except (KeyboardInterrupt, ScorerError) as exc:
        if isinstance(exc, ScorerError) and not received:
            raise
        # a stop signal sent to the process group also ends worker processes: the run stops on the signal
        name, code = ("terminated", 143) if received[:1] == [signal.SIGTERM] else ("interrupted", 130)
        if parquet_out:  # written whole when the writer closes; --resume reads JSONL only
            print(
                f"{name}; the rows scored so far are in {args.output} (write JSONL, -o OUT.jsonl, to be able to "
                "continue with --resume)",
                file=sys.stderr,
            )
        else:
            print(f"{name}; the rows written so far are complete (continue with --resume)", file=sys.stderr)
        return code
    finally:
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
        if progress is not None:
            progress.close()
    _print_summary(summary, sys.stderr)
    if args.summary_json:
        with open(args.summary_json, "w") as fh:
            json.dump(summary.to_dict(), fh, indent=2, default=str)
    status = 0
    higher = {scorer.name: scorer.higher_is_better for scorer in scorers}
    for name, limit in thresholds.items():
        mean = summary.scorers[name]["mean"]
        bound = "at least" if higher[name] else "at most"
        if mean is None:
            print(
                f"threshold not met: {name} has no scores to average (every row failed or was skipped); "
                f"needed a mean of {bound} {limit}",
                file=sys.stderr,
            )
            status = 1
        elif (mean < limit) if higher[name] else (mean > limit):
            print(
                f"threshold not met: {name} mean {mean:.4f} {'<' if higher[name] else '>'} {limit} "
                f"({'higher' if higher[name] else 'lower'} is better)",
                file=sys.stderr,
            )
            status = 1
    if args.fail_on_error and failed_rows:
        print(f"{failed_rows} row(s) had scorer errors", file=sys.stderr)
        status = 1
    for problem in summary.problems:
        print(f"error: {problem}", file=sys.stderr)
    return 3 if summary.problems else status


def _say_renamed(columns: Sequence[str], output: str | None) -> None:
    """Say on stderr which of these input columns the results file holds under another name."""
    renamed = [f"{column!r} as {escaped_key(column)!r}" for column in columns if escaped_key(column) != column]
    if renamed:
        print(
            f"note: {output if output and output != '-' else 'the results'} holds the input column(s) "
            f"{', '.join(renamed)}: scores, errors, stats and metadata_scores are the run's own keys",
            file=sys.stderr,
        )


def _parquet_in(args: argparse.Namespace) -> bool:
    return (args.format or Path(args.data).suffix.lower().lstrip(".")) == "parquet"


def _progress(args: argparse.Namespace, done: int) -> Any:
    if not wants_progress(args):
        return None
    total = count_rows(args.data, args.format) if args.data != "-" and not _parquet_in(args) else None
    from tqdm import tqdm

    return tqdm(total=total, initial=done, unit="row", file=sys.stderr, dynamic_ncols=True)


COMMANDS = {"run": Command(add_run, cmd_run)}
