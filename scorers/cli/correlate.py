"""``correlate``: how well scorers agree with human scores (summary, system and global level; tests between metrics)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Callable

from ..options import CorrelateOptions
from ._common import Command, Flag, add_options, add_progress, command_parser, file_path, options_of, wants_progress

CORRELATE_DESCRIPTION = (
    "Correlate the scores of a results file of `run` with human scores held in its rows "
    "(see scorers.stats.correlation). Summary level: within each --group-by group (document), across its "
    "rows (systems), then the mean over groups; system level: between the per-system means (--system-key); "
    "global: over all rows. Pearson, Spearman, Kendall tau-b and tau-c (scipy), each with a percentile "
    "bootstrap interval over groups; every pair of scorers with a paired bootstrap test, and at system "
    "level the Williams test. --pairs (or --pairs-from) adds WMT's Kendall-like tau over preference pairs. "
    "A table goes to stderr."
)
CORRELATE_EXIT_CODES = """exit codes:
  0    correlated
  2    bad usage or data: not a results file, a non-numeric human score, a level without its field
"""


#: The options of scorers.options.CorrelateOptions and how the command spells them.
FLAGS = {
    "human": Flag(metavar="COLUMN"),
    "scorers": Flag(names=("-s", "--scorer"), metavar="SCORER"),
    "group_by": Flag(metavar="FIELD"),
    "system_key": Flag(metavar="FIELD"),
    "levels": Flag(names=("--level",)),
    "coefficients": Flag(names=("--coefficient",)),
    "pairs": Flag(type=file_path, metavar="PAIRS.jsonl"),
    "pairs_from": Flag(metavar="COLUMN"),
    "min_difference": Flag(metavar="D"),
    "compare": Flag(help="no tests between pairs of scorers"),
    "resamples": Flag(metavar="N"),
    "seed": Flag(),
    "confidence": Flag(),
}


def add_correlate(sub: argparse._SubParsersAction[argparse.ArgumentParser], templates: argparse.ArgumentParser) -> None:
    p_correlate = command_parser(
        sub,
        "correlate",
        help="correlation of scorers with human scores: summary, system and global level, with tests",
        epilog=CORRELATE_EXIT_CODES,
        description=CORRELATE_DESCRIPTION,
    )
    p_correlate.add_argument(
        "results", type=file_path, metavar="RESULTS.jsonl", help="results file of `run` with human score columns"
    )
    add_options(p_correlate, CorrelateOptions, FLAGS)
    p_correlate.add_argument("--json", action="store_true", help="also print the figures as JSON on stdout")
    p_correlate.add_argument(
        "-o",
        "--output",
        type=file_path,
        metavar="CORR.json",
        help="write the figures as JSON (scorers.report.write_report(correlations=...) shows it)",
    )
    p_correlate.add_argument(
        "--html",
        type=file_path,
        metavar="REPORT.html",
        help="write an HTML page of the figures with a chart per human column",
    )
    add_progress(p_correlate)


def cmd_correlate(args: argparse.Namespace) -> int:
    from ..stats.correlation import correlate

    bar, close = _progress_bar(args)
    result = correlate(args.results, **options_of(args, FLAGS), progress=bar)
    if close is not None:
        close()
    data = result.to_dict()
    text = json.dumps(data, indent=2, ensure_ascii=False)
    print(result.table(), file=sys.stderr)
    if args.output:
        Path(args.output).write_text(text + "\n", encoding="utf-8")
        print(f"wrote {args.output}", file=sys.stderr)
    if args.html:
        from ..report import write_report

        out = write_report([], args.html, correlations=[data])
        print(f"wrote {out}", file=sys.stderr)
    if args.json:
        print(text)
    return 0


def _progress_bar(args: argparse.Namespace) -> tuple[Callable[[int, int], None] | None, Callable[[], None] | None]:
    """A tqdm bar of the bootstrap's resamples on stderr (as `run` decides: --progress, or a terminal)."""
    if not wants_progress(args):
        return None, None
    from tqdm import tqdm

    bar: Any = None

    def update(done: int, total: int) -> None:
        nonlocal bar
        if bar is None:
            bar = tqdm(total=total, unit="resample", desc="bootstrap", file=sys.stderr, dynamic_ncols=True)
        bar.update(done - bar.n)

    def close() -> None:
        if bar is not None:
            bar.close()

    return update, close


COMMANDS = {"correlate": Command(add_correlate, cmd_correlate)}
