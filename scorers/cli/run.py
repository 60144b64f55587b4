"""``run``: score a file into a durable results file, with resume, thresholds and a summary."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from typing import Any, Sequence

from .. import engines
from ..batch import Summary
from ..errors import ConfigError
from ..options import OtelOptions
from ..registry import registry
from ..run import OptionError, Run
from ._common import (
    EXIT_CODES,
    Command,
    Flag,
    add_options,
    add_progress,
    file_path,
    options_of,
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
    add_options(p_run, Run, _OPTIONS)
    p_run.add_argument(
        "--engine",
        default=Run.model_fields["engine"].default,
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
        help="an option of the --engine (repeatable): " + engines.registry.options_help(),
    )
    add_options(p_run, Run, _ORDER_OPTIONS)
    p_run.add_argument("--model", help="model of the LLM judges (default: SCORERS_MODEL, else the library default)")
    p_run.add_argument(
        "--api",
        metavar="PROTOCOL",
        help="wire protocol of the LLM judges: chat, responses, anthropic, gemini, bedrock (default: SCORERS_API, "
        "else chat; docs/providers/)",
    )
    p_run.add_argument("--no-cache", action="store_true", help="do not read or write the LLM judge cache")
    p_run.add_argument(
        "--price",
        action="append",
        default=[],
        metavar="MODEL=IN,OUT",
        help="USD per 1M input and output tokens of MODEL (IN,OUT,CACHED: cached input too), for the summary's "
        "cost estimate, --dry-run and --max-cost",
    )
    add_options(p_run, Run, _SPEND_OPTIONS)
    add_options(p_run, Run, _OUTPUT_OPTIONS)
    add_options(p_run, OtelOptions, _OTEL_OPTIONS)
    p_run.add_argument("--summary-json", type=file_path, metavar="PATH", help="also write the summary as JSON")
    add_options(p_run, Run, _EXIT_OPTIONS)
    add_progress(p_run)


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
                elif key == "agreement" and isinstance(value, dict):  # a jury's jurors (scorers.judges.jury)
                    from ..judges.jury import describe_agreement

                    shown = "\n    " + "\n    ".join(describe_agreement(value).splitlines())
                else:
                    shown = fmt(value) if isinstance(value, (int, float, str)) else json.dumps(value, default=str)
                print(f"  {key}: {shown}", file=stream)
    print(f"{summary.rows} rows in {summary.elapsed_s:.2f}s", file=stream)


def _thresholds(items: Sequence[str]) -> dict[str, float]:
    """``--threshold NAME=LIMIT`` options as :class:`~scorers.Run`'s thresholds (which it checks)."""
    thresholds = {}
    for name, value in parse_pairs(items, "--threshold"):
        try:
            thresholds[name] = float(value)
        except ValueError:
            raise ConfigError(f"--threshold {name}={value}: not a number") from None
    return thresholds


#: The Run options the command line takes, in the order --help lists them, each spelt as Flag says (the rest, its
#: default, choices, type and help, come from Run's field).
_OPTIONS = {
    "output": Flag(names=("-o", "--output"), metavar="OUT.jsonl", type=file_path),
    "mapping": Flag(
        names=("--map",),
        metavar="FIELD=COLUMN",
        append=True,
        help="take a scorer field from another column or dotted path (e.g. --map output=response)",
        convert=lambda items: dict(parse_pairs(items, "--map")),
    ),
    "thresholds": Flag(
        names=("--threshold",),
        metavar="NAME=LIMIT",
        append=True,
        help="fail (exit 1) when NAME's mean score is below LIMIT (above it for a lower-is-better "
        "scorer such as Hallucination; see list --json)",
        convert=_thresholds,
    ),
    "resume": Flag(),
    "force": Flag(),
    "format": Flag(),
    "concurrency": Flag(),
    "workers": Flag(),
}
_ORDER_OPTIONS = {"ordered": Flag()}
_OUTPUT_OPTIONS = {
    "batch": Flag(),
    "batch_poll_s": Flag(names=("--batch-poll",), metavar="SECONDS"),
    "metadata": Flag(),
}
_EXIT_OPTIONS = {"fail_on_error": Flag()}
_OTEL_OPTIONS = {
    "otel_rows": Flag(metavar="trace|span:OP"),
    "sample": Flag(metavar="FRACTION"),
    "otel_out": Flag(metavar="EVENTS.jsonl", type=file_path),
}
_SPEND_OPTIONS = {"dry_run": Flag(), "max_cost": Flag(metavar="USD")}


def _configure_llm(args: argparse.Namespace) -> None:
    """``--model``, ``--api``, ``--no-cache`` and ``--price`` as the judges' settings (:func:`scorers.configure`)."""
    llm_settings: dict[str, Any] = {}
    if args.model:
        llm_settings["model"] = args.model
    if args.api:
        llm_settings["api"] = args.api
    if args.no_cache:
        llm_settings["cache"] = False
    if args.price:
        llm_settings["prices"] = parse_prices(args.price)
    if llm_settings:
        from ..llm import configure

        configure(**llm_settings)


def _run_of(args: argparse.Namespace) -> Run:
    """The :class:`~scorers.Run` the arguments ask for; a refused option is named by its flag."""
    params = scorer_params(args.scorers, args.param)
    scorers = [registry.get(name, **params[name]) for name in args.scorers]
    engine = engines.registry.get(args.engine, **dict(parse_pairs(args.engine_options, "--engine-option")))
    flags = {**_OPTIONS, **_ORDER_OPTIONS, **_OUTPUT_OPTIONS, **_EXIT_OPTIONS, **_SPEND_OPTIONS, **_OTEL_OPTIONS}
    otel = OtelOptions(**options_of(args, _OTEL_OPTIONS))
    options = options_of(args, {name: flag for name, flag in flags.items() if name not in _OTEL_OPTIONS})
    try:
        return Run(args.data, scorers, engine=engine, progress=wants_progress(args), otel=otel, **options)
    except OptionError as exc:
        names = flags.get(exc.option, Flag()).names or (f"--{exc.option.replace('_', '-')}",)
        raise ConfigError(f"{names[-1]} {exc.problem}") from None


def cmd_run(args: argparse.Namespace) -> int:
    _configure_llm(args)
    batches = logging.getLogger("scorers.llm.batch")
    if args.batch and not batches.handlers:  # each batch's submission and end on stderr: a batch may take hours
        batches.setLevel(logging.INFO)
        batches.addHandler(logging.StreamHandler())
    result = _run_of(args).execute()
    if result.plan is not None:  # --dry-run: nothing sent, nothing written
        print(result.plan.describe())
        if args.summary_json:
            with open(args.summary_json, "w") as fh:
                json.dump(result.plan.to_dict(), fh, indent=2)
        return 0
    if result.stopped is not None:
        print(result.stop_message, file=sys.stderr)
        return result.exit_code
    _print_summary(result.summary, sys.stderr)
    if result.spend is not None and not result.spend["reached"]:
        print(
            f"spent ${result.spend['spent_usd']:.4f} of --max-cost ${result.spend['max_cost_usd']:.4f}", file=sys.stderr
        )
    if args.summary_json:
        with open(args.summary_json, "w") as fh:
            figures = result.summary.to_dict()
            if result.spend is not None:
                figures["spend"] = result.spend
            json.dump(figures, fh, indent=2, default=str)
    for failure in result.failures:
        print(failure, file=sys.stderr)
    for problem in result.problems:
        print(f"error: {problem}", file=sys.stderr)
    return result.exit_code


COMMANDS = {"run": Command(add_run, cmd_run)}
