"""``calibrate``: fit a judge to the user's labels on a training split, measure it on a held-out split.

Each mode is one entry of :data:`MODES`: the options model's field that turns it on
(:class:`~scorers.options.CalibrateOptions`), and the function that runs it and writes its files. The labels,
the split rule, the bootstrap and the judge's settings are every mode's.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any, Callable, NamedTuple

from ..errors import ConfigError
from ..io import read_rows
from ..options import CalibrateOptions
from ._common import Command, Flag, add_options, command_parser, file_path, options_of
from .meta_eval import FLAGS as META_EVAL_FLAGS
from .meta_eval import _judge, add_judge_param

CALIBRATE_EXIT_CODES = """exit codes:
  0    calibrated: the files written, the held-out figures on stderr
  2    bad usage, configuration or data: no mode, a label missing or unknown, a split too small, a plan over
       --max-requests, a judge that cannot be built; nothing is written
  130  interrupted (Ctrl-C): nothing is written; a rerun reuses the judge's cached replies
"""


class Mode(NamedTuple):
    """A mode of ``calibrate``: ``run(args, rows, judge, options)`` writes its files, prints its table on stderr and
    returns the exit code."""

    run: Callable[[argparse.Namespace, list[dict[str, Any]], Any, dict[str, Any]], int]
    help: str


def add_calibrate(sub: argparse._SubParsersAction[argparse.ArgumentParser], templates: argparse.ArgumentParser) -> None:
    parser = command_parser(
        sub,
        "calibrate",
        help="fit a judge to your labels (few-shot examples, a score map, a pass/fail threshold), measured on "
        "held-out rows",
        parents=[templates],
        description="Split the labelled rows of LABELS into train, dev and test (seeded; disjoint by rows or by "
        "--group), fit the judge on train and dev, and report agreement on the held-out test split with "
        "bootstrap intervals (a table on stderr, JSON to --report). Modes: "
        + "; ".join(f"--{name.replace('_', '-')}: {mode.help}" for name, mode in MODES.items())
        + " (see docs/trust/index.md).",
        epilog=CALIBRATE_EXIT_CODES,
    )
    parser.add_argument(
        "labels", type=file_path, help="labelled rows (.jsonl, .json array, .csv/.tsv), or - for JSONL on stdin"
    )
    parser.add_argument("-s", "--scorer", required=True, dest="judge", metavar="JUDGE", help="the judge to calibrate")
    add_options(parser, CalibrateOptions, _flags("label", "label_scores", "key", "group", "split", "seed"))
    add_options(parser, CalibrateOptions, _flags("examples", "pool", "measure", "max_requests"))
    add_options(parser, CalibrateOptions, _flags("scores", "threshold", "bins", "bin_strategy", "positive", "cut"))
    parser.add_argument(
        "-o",
        "--output",
        type=file_path,
        metavar="OUT",
        help="--examples: the new template file (YAML); --scores: the calibration file (JSON); --threshold: its JSON",
    )
    parser.add_argument("--name", help="--examples: the new judge's name (default: JUDGE followed by FewShot)")
    parser.add_argument("--report", type=file_path, metavar="FILE", help="the JSON report (default: none)")
    add_judge_param(parser)
    add_options(parser, CalibrateOptions, _flags("mapping", "samples", "concurrency"))
    parser.add_argument("--format", choices=["jsonl", "json", "csv"], help="input format (default: from the extension)")
    parser.add_argument("--model", help="model of the judge (default: SCORERS_MODEL, else the library default)")
    parser.add_argument(
        "--api", metavar="PROTOCOL", help="wire protocol of the judge (default: SCORERS_API, else chat)"
    )
    parser.add_argument("--no-cache", action="store_true", help="do not read or write the LLM judge cache")
    add_options(parser, CalibrateOptions, _flags("resamples", "confidence"))
    parser.set_defaults(swap=False)


def _flags(*names: str) -> dict[str, Flag]:
    return {name: FLAGS[name] for name in names}


#: The options of scorers.options.CalibrateOptions and how the command spells them (meta-eval's where shared).
FLAGS = {
    **META_EVAL_FLAGS,
    "group": Flag(metavar="FIELD"),
    "split": Flag(metavar="TRAIN,DEV,TEST", type=str, append=False),
    "examples": Flag(metavar="K"),
    "pool": Flag(metavar="N"),
    "measure": Flag(),
    "max_requests": Flag(metavar="N"),
    "scores": Flag(),
    "threshold": Flag(metavar="MEASURE"),
    "bins": Flag(metavar="N"),
    "bin_strategy": Flag(),
    "positive": Flag(metavar="LABEL"),
    "cut": Flag(metavar="X"),
}


def _write(path: str | None, text: str) -> None:
    if path and path != "-":
        Path(path).write_text(text, encoding="utf-8")
    elif path == "-":
        print(text, end="")


def run_examples(args: argparse.Namespace, rows: list[dict[str, Any]], judge: Any, options: dict[str, Any]) -> int:
    """``--examples K``: choose K examples on dev, write the new template (``-o``) and the report."""
    import yaml

    from ..calibration.fewshot import select_examples

    if not args.output:
        raise ConfigError("calibrate --examples: name the new template file with -o OUT.yaml")
    result = select_examples(rows, judge, announce=lambda plan: print(plan, file=sys.stderr), **options)
    document = result.template_document(args.name or f"{judge.name}FewShot", _labels(args))
    _write(args.output, yaml.safe_dump(document, sort_keys=False, allow_unicode=True, width=100))
    if args.report:
        report = {**result.to_dict(), "template": {"file": args.output, "name": document["name"]}}
        _write(args.report, json.dumps(report, indent=2, ensure_ascii=False, default=str) + "\n")
    print(result.table(), file=sys.stderr)
    print(f"wrote {args.output} (judge {document['name']})", file=sys.stderr)
    return 0


def run_scores(args: argparse.Namespace, rows: list[dict[str, Any]], judge: Any, options: dict[str, Any]) -> int:
    """``--scores METHOD``: fit the map on train, measure it on test, write the calibration file (``-o``)."""
    from ..calibration.fitting import calibrate_judge

    if not args.output:
        raise ConfigError("calibrate --scores: name the calibration file with -o MAP.json")
    result = calibrate_judge(rows, judge, **options)
    data = json.dumps(result.to_dict(labels=_labels(args)), indent=2, ensure_ascii=False) + "\n"
    _write(args.output, data)
    _write(args.report, data)
    print(result.table(), file=sys.stderr)
    print(f"wrote {args.output}: apply it with calibration: {os.path.basename(args.output)}", file=sys.stderr)
    return 0


def run_threshold(args: argparse.Namespace, rows: list[dict[str, Any]], judge: Any, options: dict[str, Any]) -> int:
    """``--threshold MEASURE``: the pass/fail threshold chosen on dev, measured on test (JSON to -o/--report)."""
    from ..calibration.fitting import threshold_for_judge

    choice = threshold_for_judge(rows, judge, **options)
    data = json.dumps({**choice.to_dict(), "labels": _labels(args)}, indent=2, ensure_ascii=False) + "\n"
    for path in {args.output, args.report} - {None}:
        _write(path, data)
    print(choice.table(), file=sys.stderr)
    return 0


def _labels(args: argparse.Namespace) -> dict[str, Any]:
    """The labels file as provenance records it: its name and SHA-256 (none for stdin)."""
    from ..calibration.fewshot import file_sha256

    labels = {"file": os.path.basename(args.labels)}
    return labels if args.labels == "-" else {**labels, "sha256": file_sha256(args.labels)}


#: The modes: the option that turns each on, and what it does.
MODES: dict[str, Mode] = {
    "examples": Mode(run_examples, "choose K few-shot examples (greedy on dev) and write a template with them"),
    "scores": Mode(run_scores, "fit an isotonic or Platt map of the scores on train; ECE, Brier on test"),
    "threshold": Mode(run_threshold, "the pass/fail threshold that maximises kappa, accuracy or F1 on dev"),
}


def cmd_calibrate(args: argparse.Namespace) -> int:
    options = options_of(args, FLAGS)
    chosen = [name for name in MODES if options.get(name) is not None]
    if len(chosen) != 1:
        modes = ", ".join(f"--{name.replace('_', '-')}" for name in MODES)
        raise ConfigError(f"calibrate: choose one mode ({modes}); given: {', '.join(chosen) or 'none'}")
    CalibrateOptions(**options)  # every option checked before the labels are read
    rows = list(read_rows(args.labels, args.format))
    return MODES[chosen[0]].run(args, rows, _judge(args), options)


COMMANDS = {"calibrate": Command(add_calibrate, cmd_calibrate)}
