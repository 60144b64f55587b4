"""``compare``: intervals and paired significance tests between results files of the same rows."""

from __future__ import annotations

import argparse
import json
import sys

from ._common import Command, file_path, parse_pairs, scorer_params

COMPARE_EXIT_CODES = """exit codes:
  0    compared (nothing significantly worse, where --fail-if-worse asks)
  1    a file is significantly worse than the baseline on a --fail-if-worse scorer
  2    bad usage or files: different rows, a missing or duplicate --key, not results files
"""


def add_compare(sub: argparse._SubParsersAction[argparse.ArgumentParser], templates: argparse.ArgumentParser) -> None:
    p_compare = sub.add_parser(
        "compare",
        help="compare results files of the same rows: intervals and paired significance tests",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=COMPARE_EXIT_CODES,
        description="Compare results files of `run` on the same rows; the first is the baseline. For every scorer "
        "in all files: each file's mean with a 95 % bootstrap interval (scipy.stats.bootstrap, BCa) "
        "and, for BLEU, chrF and TER, the corpus figure with sacrebleu's bootstrap estimate (mean "
        "± half-width); for each other file the difference from the baseline and the p-value of a "
        "paired test (for corpus figures, sacrebleu's paired test, number for number except exact "
        "ties). A row a scorer failed on (error or null) in any file is left out of that scorer's "
        "figures in every file, and counted. A table goes to stderr.",
    )
    p_compare.add_argument(
        "files",
        nargs="+",
        type=file_path,
        metavar="RESULTS.jsonl",
        help="results files of `run`; the first is the baseline",
    )
    p_compare.add_argument(
        "--key", metavar="FIELD", help="match rows by this field (or dotted path) instead of by position"
    )
    p_compare.add_argument(
        "--test",
        choices=["bs", "ar"],
        default="bs",
        help="paired bootstrap (bs, default) or approximate randomisation (ar)",
    )
    p_compare.add_argument(
        "--resamples",
        type=int,
        metavar="N",
        help="bootstrap resamples (bs, default 1000) or randomisation trials (ar, default "
        "10000); intervals take N resamples under bs, 1000 under ar",
    )
    p_compare.add_argument("--seed", type=int, default=12345, help="seed of every draw (default: 12345, sacrebleu's)")
    p_compare.add_argument(
        "--alpha",
        type=float,
        default=0.05,
        help="significance level of better/worse and --fail-if-worse (default: 0.05)",
    )
    p_compare.add_argument(
        "-p",
        "--param",
        action="append",
        default=[],
        metavar="NAME.KEY=VALUE",
        help="scorer parameter for the corpus figures, as for run (e.g. -p BLEU.tokenize=intl); "
        "give the settings the run used",
    )
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

    names = [key.rpartition(".")[0] for key, _ in parse_pairs(args.param, "--param")]
    comparison = compare(
        args.files,
        key=args.key,
        test=args.test,
        resamples=args.resamples,
        seed=args.seed,
        alpha=args.alpha,
        params=scorer_params(names, args.param),
    )
    worse = {name: comparison.worse(name) for name in args.fail_if_worse}
    print(comparison.table(), file=sys.stderr)
    if args.json:
        print(json.dumps(comparison.to_dict(), indent=2, ensure_ascii=False))
    for name, files in worse.items():
        if files:
            print(f"worse than {args.files[0]} on {name} (p < {args.alpha}): {', '.join(files)}", file=sys.stderr)
    return 1 if any(worse.values()) else 0


COMMANDS = {"compare": Command(add_compare, cmd_compare)}
