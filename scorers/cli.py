"""Command line: ``python -m scorers list|show|run|check|promptfoo|report|meta-eval|compare|loopback``.

A thin layer over the library: ``run`` is :func:`scorers.evaluate` plus file
reading, durable JSONL output, resume, thresholds and a summary table.
Exit codes: 0 success; 1 a ``--threshold`` was not met (or a row failed, with
``--fail-on-error``); 2 bad usage, configuration or data (nothing scored after
the error); 3 the run could not score (an unexpected error on some row, or a
scorer that failed on every row); 130 interrupted (Ctrl-C), 143 terminated
(SIGTERM): rows already written stay valid and ``--resume`` continues.
"""
from __future__ import annotations

import argparse
import inspect
import json
import signal
import sys
from pathlib import Path
from typing import Any, Iterator, Sequence

import yaml

from . import __version__
from .base import Scorer
from .errors import ConfigError, DataError, ScorerError
from .engines import ParquetResultWriter, read_input
from .io import ResultWriter, count_rows, escaped_key, read_completed, read_rows, record_matches
from .registry import entries, registry
from .runner import RowResult, Summary, evaluate, resolve_scorers
from .testing import REPLIES_FORMAT

EXIT_CODES = """exit codes:
  0    success
  1    a --threshold was not met, or (with --fail-on-error) a row had a scorer error
  2    bad usage, configuration or data: the run stopped before scoring more rows
  3    the run could not score: an unexpected error on some row, or a scorer failed on every row
  130  interrupted (Ctrl-C); 143 terminated (SIGTERM): rows written stay valid, --resume continues
"""

COMPARE_EXIT_CODES = """exit codes:
  0    compared (nothing significantly worse, where --fail-if-worse asks)
  1    a file is significantly worse than the baseline on a --fail-if-worse scorer
  2    bad usage or files: different rows, a missing or duplicate --key, not results files
"""

LOOPBACK_EPILOG = REPLIES_FORMAT + """
a session:
  python -m scorers loopback                  # shell 1: serves until Ctrl-C; prints the three export lines
  export OPENAI_BASE_URL=http://127.0.0.1:8000/v1 OPENAI_API_KEY=loopback SCORERS_CACHE=off     # shell 2
  python -m scorers run examples/qa.jsonl -s Factuality --metadata -o qa.results.jsonl
  python -m scorers report qa.results.jsonl -o report.html
"""

EPILOG = EXIT_CODES + """
examples:
  python -m scorers list
  python -m scorers show Levenshtein
  python -m scorers run examples/qa.jsonl -s ExactMatch -s Levenshtein -s BLEU -s ROUGE-L
  python -m scorers run data.csv -s Levenshtein --map output=response --map expected=reference \\
      -o scored.jsonl --threshold Levenshtein=0.8 --resume
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="scorers", description="Score the outputs of LLM applications.", epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"scorers {__version__}")
    sub = parser.add_subparsers(dest="command", required=True,
                                metavar="{list,show,run,check,schema,promptfoo,report,meta-eval,compare,loopback}")
    templates = argparse.ArgumentParser(add_help=False)
    templates.add_argument("--templates", action="append", default=[], metavar="DIR",
                           help="also register the judge templates in DIR (repeatable; like SCORERS_TEMPLATES)")

    p_list = sub.add_parser("list", help="list the registered scorers", parents=[templates])
    p_list.add_argument("--json", action="store_true", help="print a JSON array of {name, kind, description, required, ...}")
    p_list.add_argument("--kind", help="only scorers of this kind (heuristic, text, embedding, llm, ...)")

    p_show = sub.add_parser("show", help="describe one scorer: parameters, fields and an example", parents=[templates])
    p_show.add_argument("name")

    p_check = sub.add_parser("check", help="validate judge templates (YAML); report every problem with file and key")
    p_check.add_argument("paths", nargs="*", metavar="PATH",
                         help="template files or directories (default: built-in, SCORERS_TEMPLATES)")

    sub.add_parser("schema", help="print the JSON Schema of judge template files (for editors: "
                                  "python -m scorers schema > templates.schema.json)")

    p_promptfoo = sub.add_parser("promptfoo", help="promptfoo: `init [PATH]` writes the assertion file for "
                                                   "`type: python`, `value: file://PATH`")
    p_promptfoo.add_argument("action", choices=["init"])
    p_promptfoo.add_argument("path", nargs="?", metavar="PATH",
                             help="file to write (default: scorers_assert.py); an existing different file is kept")

    p_run = sub.add_parser(
        "run", help="score a JSONL / JSON / CSV file", formatter_class=argparse.RawDescriptionHelpFormatter,
        parents=[templates], epilog=EXIT_CODES,
        description="Score every row of DATA with the given scorers. Each output line holds the row's fields, "
                    "\"scores\": {name: float|null}, where a scorer failed on that row \"errors\": "
                    "{name: {type, message}}, and where a scorer has a corpus figure its row statistics "
                    "(\"stats\"). A summary table goes to stderr.")
    p_run.add_argument("data", help="input file (.jsonl, .json array, .csv/.tsv), or - for JSONL on stdin")
    p_run.add_argument("-s", "--scorer", action="append", required=True, dest="scorers", metavar="NAME",
                       help="scorer to run (repeatable); see `list`")
    p_run.add_argument("-p", "--param", action="append", default=[], metavar="NAME.KEY=VALUE",
                       help="scorer parameter, VALUE parsed as YAML (e.g. -p BLEU.tokenize=intl)")
    p_run.add_argument("-o", "--output", metavar="OUT.jsonl",
                       help="results file (default: stdout); a .parquet name writes Parquet")
    p_run.add_argument("--map", action="append", default=[], metavar="FIELD=COLUMN",
                       help="take a scorer field from another column or dotted path (e.g. --map output=response)")
    p_run.add_argument("--threshold", action="append", default=[], metavar="NAME=LIMIT",
                       help="fail (exit 1) when NAME's mean score is below LIMIT (above it for a lower-is-better "
                            "scorer such as Hallucination; see list --json)")
    p_run.add_argument("--resume", action="store_true", help="continue an interrupted run: skip rows already in OUT")
    p_run.add_argument("--format", choices=["jsonl", "json", "csv", "parquet"],
                       help="input format (default: from the extension)")
    p_run.add_argument("--concurrency", type=int, default=16, help="in-flight async (LLM) calls (default: 16)")
    p_run.add_argument("--workers", type=int, default=1,
                       help="processes for the CPU-bound scorers (default: 1, in this process); judges stay async; "
                            "with --engine, the engine's workers")
    p_run.add_argument("--engine", choices=["local", "ray", "spark"], default="local",
                       help="where to score: this machine (default), Ray Data or Spark (pip install 'scorers[ray]' "
                            "/ 'scorers[spark]')")
    p_run.add_argument("--address", help="--engine ray: the cluster to join (e.g. auto; default: start a local one)")
    p_run.add_argument("--master", help="--engine spark: the master (default: local[WORKERS,3], retrying lost tasks)")
    p_run.add_argument("--ordered", action="store_true",
                       help="--engine ray/spark: write rows in input order (default: as they finish; local runs "
                            "are always in order)")
    p_run.add_argument("--model", help="model of the LLM judges (default: SCORERS_MODEL, else the library default)")
    p_run.add_argument("--no-cache", action="store_true", help="do not read or write the LLM judge cache")
    p_run.add_argument("--price", action="append", default=[], metavar="MODEL=IN,OUT",
                       help="USD per 1M input and output tokens of MODEL, for the summary's cost estimate")
    p_run.add_argument("--metadata", action="store_true", help="also write each score's metadata (metadata_scores)")
    p_run.add_argument("--summary-json", metavar="PATH", help="also write the summary as JSON")
    p_run.add_argument("--fail-on-error", action="store_true", help="exit 1 when any row has a scorer error")
    p_run.add_argument("--progress", dest="progress", action="store_true", default=None,
                       help="force the progress bar (default: only when stderr is a terminal)")
    p_run.add_argument("--no-progress", dest="progress", action="store_false", help="no progress bar")

    p_report = sub.add_parser("report", help="write one self-contained HTML report of results files (the first is "
                                             "the baseline of the comparison)")
    p_report.add_argument("results", nargs="*", metavar="RESULTS.jsonl", help="results files of `run`")
    p_report.add_argument("--meta-eval", action="append", default=[], dest="meta_evals", metavar="META.json",
                          help="also show a meta-eval file (agreement figures, confusion heat map); repeatable")
    p_report.add_argument("-o", "--output", required=True, metavar="REPORT.html", help="HTML file to write")
    p_report.add_argument("--key", metavar="FIELD",
                          help="compare rows matched by this field (default: by position), as `compare --key`")
    p_report.add_argument("--map", action="append", default=[], metavar="FIELD=COLUMN",
                          help="column shown as input/output/expected (e.g. --map output=response)")
    p_report.add_argument("--price", action="append", default=[], metavar="MODEL=IN,OUT",
                          help="USD per 1M input and output tokens of MODEL, for the judges' cost estimate")
    p_report.add_argument("--lowest", type=int, default=10, metavar="N",
                          help="lowest-scoring rows listed per scorer (default: 10)")

    p_meta = sub.add_parser(
        "meta-eval", help="does a judge agree with human labels? accuracy, kappa, correlations, confusion",
        parents=[templates], formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EXIT_CODES,
        description="Run one judge over DATA, whose rows carry a human label, and report agreement with "
                    "bootstrap confidence intervals (JSON to -o, a table on stderr; see scorers.stats.metaeval).")
    p_meta.add_argument("data", help="labelled rows (.jsonl, .json array, .csv/.tsv), or - for JSONL on stdin")
    p_meta.add_argument("-s", "--scorer", required=True, dest="judge", metavar="JUDGE", help="the judge to grade")
    p_meta.add_argument("--label", required=True, metavar="FIELD", help="field (or dotted path) of the human label")
    p_meta.add_argument("--label-scores", metavar="MAP",
                        help="label scores in [0, 1]: Y=1,N=0 or JSON (default: the judge's choice_scores or scale)")
    p_meta.add_argument("--samples", type=int, default=1, metavar="K",
                        help="judge each row K times (needs temperature > 0) and report stability")
    p_meta.add_argument("--swap", action="store_true",
                        help="pairwise judges: ask each pair in both orders; report position bias and consistency")
    p_meta.add_argument("-p", "--param", action="append", default=[], metavar="JUDGE.KEY=VALUE",
                        help="judge parameter, VALUE parsed as YAML (e.g. -p Factuality.temperature=0.7)")
    p_meta.add_argument("--map", action="append", default=[], metavar="FIELD=COLUMN",
                        help="take a judge field from another column or dotted path")
    p_meta.add_argument("--key", metavar="FIELD", help="field naming each row in the report (e.g. id)")
    p_meta.add_argument("-o", "--output", metavar="META.json", help="report file (default: stdout)")
    p_meta.add_argument("--format", choices=["jsonl", "json", "csv"], help="input format (default: from the extension)")
    p_meta.add_argument("--concurrency", type=int, default=16, help="in-flight judge calls (default: 16)")
    p_meta.add_argument("--model", help="model of the judge (default: SCORERS_MODEL, else the library default)")
    p_meta.add_argument("--no-cache", action="store_true", help="do not read or write the LLM judge cache")
    p_meta.add_argument("--resamples", type=int, default=2000, help="bootstrap resamples (default: 2000)")
    p_meta.add_argument("--confidence", type=float, default=0.95, help="confidence level (default: 0.95)")
    p_meta.add_argument("--seed", type=int, default=0, help="seed of the bootstrap (default: 0)")

    p_compare = sub.add_parser(
        "compare", help="compare results files of the same rows: intervals and paired significance tests",
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=COMPARE_EXIT_CODES,
        description="Compare results files of `run` on the same rows; the first is the baseline. For every scorer "
                    "in all files: each file's mean with a 95 % bootstrap interval (scipy.stats.bootstrap, BCa) "
                    "and, for BLEU, chrF and TER, the corpus figure with sacrebleu's bootstrap estimate (mean "
                    "± half-width); for each other file the difference from the baseline and the p-value of a "
                    "paired test (for corpus figures, sacrebleu's paired test, number for number except exact "
                    "ties). A row a scorer failed on (error or null) in any file is left out of that scorer's "
                    "figures in every file, and counted. A table goes to stderr.")
    p_compare.add_argument("files", nargs="+", metavar="RESULTS.jsonl",
                           help="results files of `run`; the first is the baseline")
    p_compare.add_argument("--key", metavar="FIELD",
                           help="match rows by this field (or dotted path) instead of by position")
    p_compare.add_argument("--test", choices=["bs", "ar"], default="bs",
                           help="paired bootstrap (bs, default) or approximate randomisation (ar)")
    p_compare.add_argument("--resamples", type=int, metavar="N",
                           help="bootstrap resamples (bs, default 1000) or randomisation trials (ar, default "
                                "10000); intervals take N resamples under bs, 1000 under ar")
    p_compare.add_argument("--seed", type=int, default=12345, help="seed of every draw (default: 12345, sacrebleu's)")
    p_compare.add_argument("--alpha", type=float, default=0.05,
                           help="significance level of better/worse and --fail-if-worse (default: 0.05)")
    p_compare.add_argument("-p", "--param", action="append", default=[], metavar="NAME.KEY=VALUE",
                           help="scorer parameter for the corpus figures, as for run (e.g. -p BLEU.tokenize=intl); "
                                "give the settings the run used")
    p_compare.add_argument("--json", action="store_true", help="also print the comparison as JSON on stdout")
    p_compare.add_argument("--fail-if-worse", action="append", default=[], metavar="SCORER",
                           help="exit 1 when a file is significantly worse than the baseline on SCORER (its "
                                "corpus figure if it has one, else its mean; lower is better for TER's corpus "
                                "figure and for scorers such as Hallucination); repeatable")

    p_loopback = sub.add_parser(
        "loopback", help="serve an offline judge on 127.0.0.1 (no API key): run, meta-eval and report without a key",
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=LOOPBACK_EPILOG,
        description="Serve an OpenAI-compatible endpoint on 127.0.0.1 in the foreground until Ctrl-C (or SIGTERM). "
                    "Every judge request (each built-in judge, every response mode, both APIs) gets a valid answer "
                    "drawn from the request: the same prompt, the same verdict. It prints the lines to paste "
                    "into the shell that runs the judges, the URL first.")
    p_loopback.add_argument("--port", type=int, default=8000, help="port on 127.0.0.1 (default: 8000; 0: any free one)")
    p_loopback.add_argument("--replies", metavar="FILE", help="JSONL rules answered before the automatic answer "
                                                              "(format below)")
    p_loopback.add_argument("--latency", type=float, default=0.0, metavar="S",
                            help="seconds to wait before each reply (default: 0)")
    return parser


def _parse_pairs(items: Sequence[str], option: str) -> list[tuple[str, str]]:
    pairs = []
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ConfigError(f"{option} expects KEY=VALUE, got {item!r}")
        pairs.append((key.strip(), value))
    return pairs


def _prices(items: Sequence[str]) -> dict[str, tuple[float, float]]:
    prices = {}
    for model, value in _parse_pairs(items, "--price"):
        try:
            prompt, completion = (float(x) for x in value.split(","))
        except ValueError:
            raise ConfigError(f"--price {model}={value}: expected MODEL=INPUT,OUTPUT (USD per 1M tokens)") from None
        prices[model] = (prompt, completion)
    return prices


def _scorer_params(names: Sequence[str], params: Sequence[str]) -> dict[str, dict[str, Any]]:
    by_name: dict[str, dict[str, Any]] = {name: {} for name in names}
    lowered = {name.lower(): name for name in names}
    for key, value in _parse_pairs(params, "--param"):
        scorer, dot, param = key.rpartition(".")
        if not dot or scorer.lower() not in lowered:
            raise ConfigError(f"--param {key}: expected NAME.KEY with NAME one of the -s scorers ({', '.join(names)})")
        by_name[lowered[scorer.lower()]][param] = yaml.safe_load(value) if value else ""
    return by_name


def cmd_list(args: argparse.Namespace) -> int:
    kinds = sorted({entry.kind for entry in entries()})
    if args.kind and args.kind not in kinds:
        raise ConfigError(f"--kind {args.kind}: no scorer is of that kind (kinds: {', '.join(kinds)})")
    rows = []
    for entry in entries():
        if args.kind and entry.kind != args.kind:
            continue
        try:
            required = entry.required_fields()
        except ScorerError as exc:
            required = []
            entry_error = str(exc)
        else:
            entry_error = None
        row = {"name": entry.name, "kind": entry.kind, "description": entry.description,
               "required": required, "aliases": list(entry.aliases), "source": entry.source,
               "higher_is_better": entry.higher_is_better}
        if entry_error:
            row["error"] = entry_error
        rows.append(row)
    if args.json:
        print(json.dumps(rows, indent=2, ensure_ascii=False))
        return 0
    width = max((len(r["name"]) for r in rows), default=4)
    kinds = max((len(r["kind"]) for r in rows), default=4)
    required = max((len(", ".join(r["required"])) for r in rows), default=8)
    print(f"{'NAME':<{width}}  {'KIND':<{kinds}}  {'REQUIRED':<{required}}  DESCRIPTION")
    for r in rows:
        print(f"{r['name']:<{width}}  {r['kind']:<{kinds}}  {', '.join(r['required']):<{required}}  "
              f"{r.get('error') or r['description']}")
    return 0


def describe(scorer: Scorer, aliases: Sequence[str] = ()) -> str:
    """The text ``show`` prints for a scorer."""
    lines = [f"{scorer.name}  ({scorer.kind})", ""]
    describe_judge = getattr(scorer, "describe", None)
    if callable(describe_judge):  # a template-defined judge: its own description, template and choices
        details = describe_judge()
        lines += [details.get("description") or scorer.description, ""]
        template = getattr(scorer, "template", None)
        if template is not None:
            lines.append(f"template ({details.get('template_file') or 'defined in code'}):")
            for role, content in template.messages:
                lines.append(f"  [{role}]")
                lines += [f"    {line}" for line in content.rstrip("\n").splitlines()]
            lines.append("")
        lines += [f"kind: {details.get('kind', 'classifier')}", "",
                  inspect.cleandoc(type(scorer).__doc__ or "").split("\n\n")[0], ""]
        if "choice_scores" in details:
            lines.append("choice_scores:")
            lines += [f"  {choice}: {value}" for choice, value in details["choice_scores"].items()]
            lines.append("")

    else:
        lines += [inspect.cleandoc(type(scorer).__doc__ or scorer.description), ""]
    if aliases:
        lines += [f"aliases: {', '.join(aliases)}", ""]
    lines.append("fields:")
    for f in scorer.fields:
        need = "required" if f.required else "optional"
        lines.append(f"  {f.name:<12} {need:<9} {f.type_names()}" + (f"  {f.description}" if f.description else ""))
    lines.append("  (input, output, expected and metadata are always accepted)")
    lines += ["", "parameters (as configured by default; set with -p NAME.KEY=VALUE or scorers.get(NAME, KEY=...)):"]
    params = scorer.params()
    lines += [f"  {k} = {json.dumps(v, default=str)}" for k, v in params.items()] or ["  (none)"]
    if scorer.example:
        lines += ["", "example:", f"  {scorer.example}"]
    return "\n".join(lines)


def cmd_show(args: argparse.Namespace) -> int:
    entry = registry.entry(args.name)
    print(describe(entry.create(), entry.aliases))
    return 0


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
            differences = "; ".join(part for part in (
                f"not in {out}: {', '.join(missing)}" if missing else "",
                f"only in {out}: {', '.join(extra)}" if extra else "",
                "the same scorers in another order" if not missing and not extra else "") if part)
            raise ConfigError(f"{out}:{i + 1}: was scored with -s {' -s '.join(written)}, this run asks for "
                              f"-s {' -s '.join(wanted)} ({differences}); resume with the same scorers, "
                              "or write to a new file")
        try:
            row = next(rows)
        except StopIteration:
            raise DataError(f"{out} holds {len(previous)} rows but the input has only {i}; refusing to resume") from None
        if not record_matches(record, row):
            raise DataError(f"{out}:{i + 1}: does not match input row {i + 1}; is it the results of another file?")
    return previous


def _print_summary(summary: Summary, stream: Any) -> None:
    def fmt(value: Any) -> str:
        if value is None:
            return "-"
        if isinstance(value, float):
            return f"{value:.4f}"
        return str(value)

    table = summary.scorers
    width = max([len(n) for n in table] + [6])
    print(f"\n{'scorer':<{width}}  {'n':>6}  {'mean':>7}  {'stdev':>7}  {'min':>7}  {'max':>7}  {'skipped':>7}  {'errors':>6}",
          file=stream)
    for name, fig in table.items():
        print(f"{name:<{width}}  {fmt(fig['n']):>6}  {fmt(fig['mean']):>7}  {fmt(fig['stdev']):>7}  {fmt(fig['min']):>7}  "
              f"{fmt(fig['max']):>7}  {fmt(fig['skipped']):>7}  {fmt(fig['errors']):>6}", file=stream)
    for name, fig in table.items():
        extras = {k: v for k, v in fig.items()
                  if k not in ("n", "mean", "stdev", "min", "max", "skipped", "errors")}
        if extras:
            print(f"{name}:", file=stream)
            for key, value in extras.items():
                shown = fmt(value) if isinstance(value, (int, float, str)) else json.dumps(value, default=str)
                print(f"  {key}: {shown}", file=stream)
                if key == "usage":  # the same figures in words, what failed attempts cost apart
                    from .llm.usage import describe_usage

                    print(f"  spent: {describe_usage(value)}", file=stream)
    print(f"{summary.rows} rows in {summary.elapsed_s:.2f}s", file=stream)


def _thresholds(items: Sequence[str], scorers: Sequence[Scorer]) -> dict[str, float]:
    thresholds = {}
    known = {s.name.lower(): s.name for s in scorers}
    for name, value in _parse_pairs(items, "--threshold"):
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
        llm_settings["prices"] = _prices(args.price)
    if llm_settings:
        from .llm import configure

        configure(**llm_settings)
    params = _scorer_params(args.scorers, args.param)
    scorers = resolve_scorers([registry.get(name, **params[name]) for name in args.scorers])
    mapping = dict(_parse_pairs(args.map, "--map"))
    thresholds = _thresholds(args.threshold, scorers)

    parquet_in = (args.format or Path(args.data).suffix.lower().lstrip(".")) == "parquet"
    parquet_out = bool(args.output) and args.output.lower().endswith(".parquet")
    rows = read_input(args.data, args.format)
    previous: list[dict[str, Any]] = []
    if args.resume:
        if not args.output or args.output == "-" or parquet_out:
            raise ConfigError("--resume needs -o OUT.jsonl")
        if args.engine != "local" and not args.ordered:
            raise ConfigError(f"--resume with --engine {args.engine} needs --ordered (OUT must hold DATA's first "
                              "rows in order, and the run continues it in order)")
        previous = _resume_from(args.output, rows, scorers)

    run = evaluate(rows, scorers, mapping=mapping, concurrency=args.concurrency, workers=args.workers,
                   start=len(previous), engine=args.engine, address=args.address, master=args.master,
                   ordered=args.ordered)
    for record in previous:
        run.summary.add(RowResult.from_record(record))
    total = count_rows(args.data, args.format) if args.data != "-" and not parquet_in else None
    progress = _progress(total, len(previous), args.progress)
    failed_rows = sum(1 for r in previous if r.get("errors"))
    columns: set[str] = set()  # the input columns seen so far
    received: list[int] = []

    def stop(signum: int, frame: Any) -> None:  # Ctrl-C or SIGTERM: stop at the next row, files intact
        if received:  # a second signal: stop now
            raise KeyboardInterrupt
        received.append(signum)
        run.interrupt()

    handlers = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        with ParquetResultWriter(args.output) if parquet_out else ResultWriter(args.output, append=bool(previous)) \
                as writer:
            for result in run:
                if not columns.issuperset(result.row):
                    _say_renamed([c for c in result.row if c not in columns], args.output)
                    columns.update(result.row)
                writer.write(result.to_record(with_metadata=args.metadata))
                if not run.waiting:  # the next row is still being scored: hand what is written to the OS
                    writer.flush()
                failed_rows += bool(result.errors)
                if progress is not None:
                    progress.update(1)
    except KeyboardInterrupt:
        name, code = ("terminated", 143) if received[:1] == [signal.SIGTERM] else ("interrupted", 130)
        print(f"{name}; the rows written so far are complete (continue with --resume)", file=sys.stderr)
        return code
    finally:
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
        if progress is not None:
            progress.close()
    _print_summary(run.summary, sys.stderr)
    if args.summary_json:
        with open(args.summary_json, "w") as fh:
            json.dump(run.summary.to_dict(), fh, indent=2, default=str)
    status = 0
    higher = {scorer.name: scorer.higher_is_better for scorer in scorers}
    for name, limit in thresholds.items():
        mean = run.summary.scorers[name]["mean"]
        bound = "at least" if higher[name] else "at most"
        if mean is None:
            print(f"threshold not met: {name} has no scores to average (every row failed or was skipped); "
                  f"needed a mean of {bound} {limit}", file=sys.stderr)
            status = 1
        elif (mean < limit) if higher[name] else (mean > limit):
            print(f"threshold not met: {name} mean {mean:.4f} {'<' if higher[name] else '>'} {limit} "
                  f"({'higher' if higher[name] else 'lower'} is better)", file=sys.stderr)
            status = 1
    if args.fail_on_error and failed_rows:
        print(f"{failed_rows} row(s) had scorer errors", file=sys.stderr)
        status = 1
    for problem in run.summary.problems:
        print(f"error: {problem}", file=sys.stderr)
    return 3 if run.summary.problems else status


def _say_renamed(columns: Sequence[str], output: str | None) -> None:
    """Say on stderr which of these input columns the results file holds under another name."""
    renamed = [f"{column!r} as {escaped_key(column)!r}" for column in columns if escaped_key(column) != column]
    if renamed:
        print(f"note: {output if output and output != '-' else 'the results'} holds the input column(s) "
              f"{', '.join(renamed)}: scores, errors, stats and metadata_scores are the run's own keys",
              file=sys.stderr)


def _progress(total: int | None, done: int, wanted: bool | None) -> Any:
    if wanted is False or (wanted is None and not sys.stderr.isatty()):
        return None
    from tqdm import tqdm

    return tqdm(total=total, initial=done, unit="row", file=sys.stderr, dynamic_ncols=True)


def cmd_check(args: argparse.Namespace) -> int:
    from .judges.discovery import check_templates, template_dirs, template_files

    paths = args.paths or [d for d in template_dirs() if d.is_dir()]
    problems = check_templates(paths)
    for problem in problems:
        print(problem, file=sys.stderr)
    files = len(template_files(paths))
    print(f"{files} template file{'s' if files != 1 else ''} checked, {len(problems)} problem{'s' if len(problems) != 1 else ''}",
          file=sys.stderr)
    return 1 if problems else 0


def cmd_promptfoo(args: argparse.Namespace) -> int:
    from .adapters.promptfoo import DEFAULT_FILE, assertion_file

    path = Path(args.path or DEFAULT_FILE)
    text = assertion_file()
    if path.is_dir():
        path = path / DEFAULT_FILE
    if path.exists() and path.read_text(encoding="utf-8") != text:
        raise ConfigError(f"{path} exists and is not the scorers assertion file: remove it or give another PATH")
    path.write_text(text, encoding="utf-8")
    print(f"wrote {path}; in promptfooconfig.yaml:\n"
          f"  assert:\n    - type: python\n      value: file://{path}\n"
          f"      config: {{scorers: [ExactMatch, Levenshtein], threshold: 0.8}}", file=sys.stderr)
    return 0


def cmd_schema(args: argparse.Namespace) -> int:
    from .judges.spec import json_schema

    print(json.dumps(json_schema(), indent=2, ensure_ascii=False))
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from .report import write_report

    out = write_report(args.results, args.output, meta_evals=args.meta_evals, key=args.key,
                       mapping=dict(_parse_pairs(args.map, "--map")),
                       prices=_prices(args.price) if args.price else None, lowest=args.lowest)
    print(f"wrote {out}", file=sys.stderr)
    return 0


def _label_scores(text: str) -> dict[str, float]:
    """``--label-scores``: ``Y=1,N=0`` or a JSON object."""
    if text.lstrip().startswith(("{", "[")):
        try:
            mapping = json.loads(text)
        except ValueError as exc:
            raise ConfigError(f"--label-scores: not valid JSON ({exc})") from None
        if not isinstance(mapping, dict):
            raise ConfigError(f"--label-scores: the JSON must be an object {{label: score}}, got {text!r}")
        return mapping
    scores = {}
    for name, value in _parse_pairs([p for p in text.split(",") if p.strip()], "--label-scores"):
        try:
            scores[name] = float(value)
        except ValueError:
            raise ConfigError(f"--label-scores {name}={value}: not a number") from None
    return scores


def cmd_meta_eval(args: argparse.Namespace) -> int:
    from .judges import PairwiseJudge
    from .stats.metaeval import meta_evaluate

    if args.model or args.no_cache:
        from .llm import configure

        configure(**({"model": args.model} if args.model else {}), **({"cache": False} if args.no_cache else {}))
    params = _scorer_params([args.judge], args.param)[args.judge]
    if args.swap:
        if not isinstance(registry.get(args.judge, **params), PairwiseJudge):
            raise ConfigError(f"--swap: {args.judge} is not a pairwise judge (kind: pairwise)")
        params["swap"] = True
    judge = registry.get(args.judge, **params)
    report = meta_evaluate(read_rows(args.data, args.format), judge, label=args.label,
                           label_scores=_label_scores(args.label_scores) if args.label_scores else None,
                           samples=args.samples, key=args.key, mapping=dict(_parse_pairs(args.map, "--map")),
                           concurrency=args.concurrency, resamples=args.resamples, confidence=args.confidence,
                           seed=args.seed)
    text = json.dumps(report.to_dict(), indent=2, ensure_ascii=False, default=str)
    if args.output and args.output != "-":
        Path(args.output).write_text(text + "\n", encoding="utf-8")
    else:
        print(text)
    print(report.table(), file=sys.stderr)
    for problem in report.problems:
        print(f"error: {problem}", file=sys.stderr)
    return 3 if report.problems else 0


def cmd_compare(args: argparse.Namespace) -> int:
    from .stats import compare

    names = [key.rpartition(".")[0] for key, _ in _parse_pairs(args.param, "--param")]
    comparison = compare(args.files, key=args.key, test=args.test, resamples=args.resamples, seed=args.seed,
                         alpha=args.alpha, params=_scorer_params(names, args.param))
    worse = {name: comparison.worse(name) for name in args.fail_if_worse}
    print(comparison.table(), file=sys.stderr)
    if args.json:
        print(json.dumps(comparison.to_dict(), indent=2, ensure_ascii=False))
    for name, files in worse.items():
        if files:
            print(f"worse than {args.files[0]} on {name} (p < {args.alpha}): {', '.join(files)}", file=sys.stderr)
    return 1 if any(worse.values()) else 0


def cmd_loopback(args: argparse.Namespace) -> int:
    from .testing import serve

    return serve(port=args.port, replies=args.replies, latency=args.latency)


COMMANDS = {"list": cmd_list, "show": cmd_show, "run": cmd_run, "check": cmd_check, "schema": cmd_schema,
            "promptfoo": cmd_promptfoo, "report": cmd_report,
            "meta-eval": cmd_meta_eval, "compare": cmd_compare, "loopback": cmd_loopback}


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        for directory in getattr(args, "templates", []):
            from .judges.discovery import add_template_dir

            add_template_dir(directory)
        return COMMANDS[args.command](args)
    except ScorerError as exc:  # DataError, ConfigError, ... all derive from it
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # before or after the run: nothing half-written
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
