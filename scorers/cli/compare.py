"""``compare``: intervals and paired significance tests between results files of the same rows."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ..options import CompareOptions
from . import passk
from ._common import Command, Flag, add_options, command_parser, file_path, options_of, parse_pairs, scorer_params

COMPARE_DESCRIPTION = (
    "Compare results files of `run` on the same rows; the first is the baseline. For every scorer "
    "in all files: each file's mean with a 95 % bootstrap interval (scipy.stats.bootstrap, BCa) "
    "and, for BLEU, chrF and TER, the corpus figure with sacrebleu's bootstrap estimate (mean "
    "± half-width); for each other file the difference from the baseline and the p-value of a "
    "paired test (for corpus figures, sacrebleu's paired test, number for number except exact "
    "ties). A row a scorer failed on (error or null) in any file is left out of that scorer's "
    "figures in every file, and counted. A table goes to stderr."
)
COMPARE_EXIT_CODES = """exit codes:
  0    compared (nothing significantly worse, where --fail-if-worse asks)
  1    a file is significantly worse than the baseline on a --fail-if-worse scorer
  2    bad usage or files: different rows, a missing or duplicate --key, not results files
"""


def _scorer_params(items: list[str]) -> dict[str, dict[str, Any]]:
    """``-p NAME.KEY=VALUE`` items as ``{NAME: {KEY: VALUE}}``."""
    return scorer_params([key.rpartition(".")[0] for key, _ in parse_pairs(items, "--param")], items)


#: The options of scorers.options.CompareOptions and how the command spells them.
FLAGS = {
    "key": Flag(metavar="FIELD"),
    "test": Flag(),
    "resamples": Flag(metavar="N"),
    "seed": Flag(),
    "alpha": Flag(),
    "params": Flag(names=("-p", "--param"), metavar="NAME.KEY=VALUE", append=True, convert=_scorer_params),
}


def add_compare(sub: argparse._SubParsersAction[argparse.ArgumentParser], templates: argparse.ArgumentParser) -> None:
    p_compare = command_parser(
        sub,
        "compare",
        help="compare results files of the same rows: intervals and paired significance tests",
        epilog=COMPARE_EXIT_CODES,
        description=COMPARE_DESCRIPTION,
    )
    p_compare.add_argument(
        "files",
        nargs="+",
        type=file_path,
        metavar="RESULTS.jsonl",
        help="results files of `run`; the first is the baseline",
    )
    add_options(p_compare, CompareOptions, FLAGS)
    p_compare.add_argument("--json", action="store_true", help="also print the comparison as JSON on stdout")
    p_compare.add_argument(
        "--fail-if-worse",
        action="append",
        default=[],
        metavar="SCORER",
        help="exit 1 when a file is significantly worse than the baseline on SCORER (its "
        "corpus figure if it has one, else its mean; lower is better for TER's corpus "
        "figure and for scorers such as Hallucination); repeatable",
    )


def cmd_compare(args: argparse.Namespace) -> int:
    from ..stats import compare

    comparison = compare(args.files, **options_of(args, FLAGS))
    worse = {name: comparison.worse(name) for name in args.fail_if_worse}
    print(comparison.table(), file=sys.stderr)
    if args.json:
        print(json.dumps(comparison.to_dict(), indent=2, ensure_ascii=False))
    for name, files in worse.items():
        if files:
            print(f"worse than {args.files[0]} on {name} (p < {args.alpha}): {', '.join(files)}", file=sys.stderr)
    return 1 if any(worse.values()) else 0


COMMANDS = {"compare": Command(add_compare, cmd_compare), **passk.COMMANDS}  # passk: pass@k and its differences
