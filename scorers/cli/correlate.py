"""``correlate``: how well scorers agree with human scores (summary, system and global level; tests between metrics)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Callable

from ._common import Command, add_progress, file_path, wants_progress

CORRELATE_EXIT_CODES = """exit codes:
  0    correlated
  2    bad usage or data: not a results file, a non-numeric human score, a level without its field
"""


# scorers.stats.correlation's LEVELS, COEFFICIENTS and defaults, written out so that building the parser imports
# neither numpy nor scipy (tests/test_cli_correlate.py checks that they agree).
LEVELS = ("summary", "system", "global")
COEFFICIENTS = ("pearson", "spearman", "kendall_b", "kendall_c")
DEFAULT_RESAMPLES, DEFAULT_SEED = 1000, 0


def add_correlate(sub: argparse._SubParsersAction[argparse.ArgumentParser], templates: argparse.ArgumentParser) -> None:
    p_correlate = sub.add_parser(
        "correlate",
        help="correlation of scorers with human scores: summary, system and global level, with tests",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=CORRELATE_EXIT_CODES,
        description="Correlate the scores of a results file of `run` with human scores held in its rows "
        "(see scorers.stats.correlation). Summary level: within each --group-by group (document), across its "
        "rows (systems), then the mean over groups; system level: between the per-system means (--system-key); "
        "global: over all rows. Pearson, Spearman, Kendall tau-b and tau-c (scipy), each with a percentile "
        "bootstrap interval over groups; every pair of scorers with a paired bootstrap test, and at system "
        "level the Williams test. --pairs (or --pairs-from) adds WMT's Kendall-like tau over preference pairs. "
        "A table goes to stderr.",
    )
    p_correlate.add_argument(
        "results", type=file_path, metavar="RESULTS.jsonl", help="results file of `run` with human score columns"
    )
    p_correlate.add_argument(
        "--human",
        action="append",
        default=[],
        metavar="COLUMN",
        help="row field (or dotted path) of a human score; repeatable",
    )
    p_correlate.add_argument(
        "-s",
        "--scorer",
        action="append",
        dest="scorers",
        metavar="SCORER",
        help="a scorer of the results file (repeatable; default: all of them)",
    )
    p_correlate.add_argument(
        "--group-by", metavar="FIELD", help="field naming each row's group (document): summary level, bootstrap unit"
    )
    p_correlate.add_argument("--system-key", metavar="FIELD", help="field naming each row's system: system level")
    p_correlate.add_argument(
        "--level",
        action="append",
        dest="levels",
        choices=LEVELS,
        help="only this level (repeatable; default: every level the fields allow)",
    )
    p_correlate.add_argument(
        "--coefficient",
        action="append",
        dest="coefficients",
        choices=COEFFICIENTS,
        help="only this coefficient (repeatable; default: all)",
    )
    p_correlate.add_argument(
        "--pairs",
        type=file_path,
        metavar="PAIRS.jsonl",
        help='preference pairs {"GROUP": g, "better": SYSTEM, "worse": SYSTEM}: WMT\'s Kendall-like tau',
    )
    p_correlate.add_argument(
        "--pairs-from",
        metavar="COLUMN",
        help="form preference pairs from a human score: every two rows of a group that differ by more than "
        "--min-difference (WMT's DARR)",
    )
    p_correlate.add_argument(
        "--min-difference",
        type=float,
        default=0.0,
        metavar="D",
        help="--pairs-from: a pair needs human scores more than D apart (default: 0, any difference)",
    )
    p_correlate.add_argument("--no-compare", action="store_true", help="no tests between pairs of scorers")
    p_correlate.add_argument(
        "--resamples",
        type=int,
        default=DEFAULT_RESAMPLES,
        metavar="N",
        help=f"bootstrap resamples (default: {DEFAULT_RESAMPLES})",
    )
    p_correlate.add_argument("--seed", type=int, default=DEFAULT_SEED, help=f"bootstrap seed (default: {DEFAULT_SEED})")
    p_correlate.add_argument("--confidence", type=float, default=0.95, help="interval level (default: 0.95)")
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
    result = correlate(
        args.results,
        human=args.human,
        scorers=args.scorers,
        group_by=args.group_by,
        system_key=args.system_key,
        coefficients=args.coefficients or COEFFICIENTS,
        levels=args.levels,
        pairs=args.pairs,
        pairs_from=args.pairs_from,
        min_difference=args.min_difference,
        compare=not args.no_compare,
        resamples=args.resamples,
        seed=args.seed,
        confidence=args.confidence,
        progress=bar,
    )
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
