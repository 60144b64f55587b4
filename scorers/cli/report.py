"""``report``: one self-contained HTML report of results files."""

from __future__ import annotations

import argparse
import sys

from ._common import Command, file_path, parse_pairs, parse_prices

#: The other files a report shows, each a repeatable flag: (flag, write_report's keyword, metavar, what is shown).
_SHOWN_FILES = (
    ("--meta-eval", "meta_evals", "META.json", "a meta-eval file (agreement figures, confusion heat map)"),
    (
        "--correlation",
        "correlations",
        "CORR.json",
        "a correlation file of `correlate -o` (tables, a chart per human column)",
    ),
    ("--ranking", "rankings", "RANK.json", "a ranking file of `rank -o` (a leaderboard with intervals and its chart)"),
    (
        "--calibration",
        "calibrations",
        "MAP.json",
        "a calibration file of `calibrate --scores -o` (reliability diagram, held-out figures)",
    ),
)


def add_report(sub: argparse._SubParsersAction[argparse.ArgumentParser], templates: argparse.ArgumentParser) -> None:
    p_report = sub.add_parser(
        "report",
        help="write one self-contained HTML report of results files (the first is the baseline of the comparison)",
    )
    p_report.add_argument("results", nargs="*", type=file_path, metavar="RESULTS.jsonl", help="results files of `run`")
    for flag, dest, metavar, shows in _SHOWN_FILES:
        p_report.add_argument(
            flag,
            action="append",
            default=[],
            dest=dest,
            type=file_path,
            metavar=metavar,
            help=f"also show {shows}; repeatable",
        )
    p_report.add_argument(
        "-o", "--output", required=True, type=file_path, metavar="REPORT.html", help="HTML file to write"
    )
    p_report.add_argument(
        "--key", metavar="FIELD", help="compare rows matched by this field (default: by position), as `compare --key`"
    )
    p_report.add_argument(
        "--map",
        action="append",
        default=[],
        metavar="FIELD=COLUMN",
        help="column shown as input/output/expected (e.g. --map output=response)",
    )
    p_report.add_argument(
        "--price",
        action="append",
        default=[],
        metavar="MODEL=IN,OUT",
        help="USD per 1M input and output tokens of MODEL (IN,OUT,CACHED: cached input too), for the judges' cost "
        "estimate",
    )
    p_report.add_argument(
        "--lowest", type=int, default=10, metavar="N", help="lowest-scoring rows listed per scorer (default: 10)"
    )


def cmd_report(args: argparse.Namespace) -> int:
    from ..report import write_report

    out = write_report(
        args.results,
        args.output,
        **{dest: getattr(args, dest) for _, dest, _, _ in _SHOWN_FILES},
        key=args.key,
        mapping=dict(parse_pairs(args.map, "--map")),
        prices=parse_prices(args.price) if args.price else None,
        lowest=args.lowest,
    )
    print(f"wrote {out}", file=sys.stderr)
    return 0


COMMANDS = {"report": Command(add_report, cmd_report)}
