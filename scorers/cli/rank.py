"""``rank``: a Bradley-Terry leaderboard from pairwise verdicts, with bootstrap intervals over prompts."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..options import RankOptions
from ._common import Command, Flag, add_options, command_parser, file_path, options_of

RANK_DESCRIPTION = (
    "Rank systems from pairwise verdicts (see scorers.stats.ranking): the verdicts of a pairwise judge in "
    "results files of `run` (answer A, output, by the system in --system-a; answer B by --system-b), or a "
    "winner column of any JSONL/CSV (--winner: a, b or tie, as in arena data). Fits a Bradley-Terry model by "
    "maximum likelihood, ties by Davidson's model or as half-wins, and prints ratings on an Elo-like scale "
    "(400·log10 odds: a 400-point gap is 10:1 odds) with percentile bootstrap intervals over prompts, the win "
    "matrix and the comparisons behind each entry. --style fits answer-length and markdown covariates jointly "
    "and shows the leaderboard without them beside it. A table goes to stderr."
)
RANK_EXIT_CODES = """exit codes:
  0    ranked
  2    bad usage or data: no pairwise judge (or several: name one with --scorer), an unknown winner value,
       a row without a system name
"""

#: The options of scorers.options.RankOptions and how the command spells them.
FLAGS = {
    "scorer": Flag(names=("-s", "--scorer"), metavar="JUDGE"),
    "winner": Flag(metavar="FIELD"),
    "system_a": Flag(metavar="FIELD"),
    "system_b": Flag(metavar="FIELD"),
    "prompt": Flag(metavar="FIELD"),
    "ties": Flag(),
    "swap": Flag(),
    "style": Flag(),
    "answer_a": Flag(metavar="FIELD"),
    "answer_b": Flag(metavar="FIELD"),
    "anchor": Flag(metavar="SYSTEM"),
    "anchor_rating": Flag(metavar="RATING"),
    "prior": Flag(),
    "resamples": Flag(metavar="N"),
    "seed": Flag(),
    "confidence": Flag(),
}


def add_rank(sub: argparse._SubParsersAction[argparse.ArgumentParser], templates: argparse.ArgumentParser) -> None:
    p_rank = command_parser(
        sub,
        "rank",
        help="a leaderboard from pairwise verdicts: Bradley-Terry ratings with bootstrap intervals",
        epilog=RANK_EXIT_CODES,
        description=RANK_DESCRIPTION,
    )
    p_rank.add_argument(
        "files",
        nargs="+",
        type=file_path,
        metavar="FILE",
        help="results files of `run` with a pairwise judge, or preference data (JSONL, CSV) with --winner",
    )
    add_options(p_rank, RankOptions, FLAGS)
    p_rank.add_argument(
        "-o",
        "--output",
        type=file_path,
        metavar="RANK.json",
        help="write the ranking as JSON (format scorers-ranking, version 1; the report's leaderboard reads it)",
    )
    p_rank.add_argument("--json", action="store_true", help="also print the ranking as JSON on stdout")


def cmd_rank(args: argparse.Namespace) -> int:
    from ..stats.ranking import rank

    ranking = rank(args.files, **options_of(args, FLAGS))
    text = json.dumps(ranking.to_dict(), indent=2, ensure_ascii=False, allow_nan=False)
    print(ranking.table(), file=sys.stderr)
    if args.output:
        Path(args.output).write_text(text + "\n", encoding="utf-8")
        print(f"wrote {args.output}", file=sys.stderr)
    if args.json:
        print(text)
    return 0


COMMANDS = {"rank": Command(add_rank, cmd_rank)}
