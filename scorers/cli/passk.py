"""``passk``: pass@k of results files grouped by task, with bootstrap intervals over tasks and paired differences."""

from __future__ import annotations

import argparse
import json
import sys

from ..options import PassKOptions
from ._common import Command, Flag, add_options, command_parser, file_path, options_of

PASSK_DESCRIPTION = (
    "pass@k of results files of `run` with n samples per task (rows grouped by --task-field): Chen et al. "
    "(2021)'s unbiased estimator 1 - C(n-c, k)/C(n, k), exact, averaged over tasks, with a seeded percentile "
    "bootstrap interval over tasks. A row passes when its score is at least --threshold; a task with fewer than "
    "k scored rows is unscored (left out and counted), never 1. For each file after the first: its paired "
    "difference from the first over the tasks both score, with an interval and a p-value. A table goes to stderr."
)

PASSK_EXIT_CODES = """exit codes:
  0    computed
  2    bad usage or files: not results files, a row without the task field, no such scorer, a bad option
"""

#: The options of scorers.options.PassKOptions and how the command spells them.
FLAGS = {
    "k": Flag(names=("-k", "--k"), metavar="K", append=True),
    "task_field": Flag(metavar="FIELD"),
    "scorer": Flag(metavar="NAME"),
    "threshold": Flag(),
    "resamples": Flag(metavar="N"),
    "seed": Flag(),
    "confidence": Flag(),
}


def add_passk(sub: argparse._SubParsersAction[argparse.ArgumentParser], templates: argparse.ArgumentParser) -> None:
    parser = command_parser(
        sub,
        "passk",
        help="pass@k over tasks from n samples each, with intervals",
        description=PASSK_DESCRIPTION,
        epilog=PASSK_EXIT_CODES,
    )
    parser.add_argument(
        "files",
        nargs="+",
        type=file_path,
        metavar="RESULTS.jsonl",
        help="results files of `run`; the first is the baseline",
    )
    add_options(parser, PassKOptions, FLAGS)
    parser.add_argument("--json", action="store_true", help="also print the figures as JSON on stdout")


def cmd_passk(args: argparse.Namespace) -> int:
    from ..stats.passk import pass_at_k_files, table

    report = pass_at_k_files(args.files, **options_of(args, FLAGS))
    print(table(report), file=sys.stderr)
    if args.json:
        print(json.dumps(report, indent=2, ensure_ascii=False))
    return 0


COMMANDS = {"passk": Command(add_passk, cmd_passk)}
