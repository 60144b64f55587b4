"""The parser of ``python -m scorers``: one subparser per command, from the table of command modules."""

from __future__ import annotations

import argparse

from .. import __version__
from . import catalog, check, compare, correlate, loopback, meta_eval, promptfoo, report, run
from ._common import EXIT_CODES, Command

EPILOG = (
    EXIT_CODES
    + """
examples:
  python -m scorers list
  python -m scorers show Levenshtein
  python -m scorers run examples/qa.jsonl -s ExactMatch -s Levenshtein -s BLEU -s ROUGE-L
  python -m scorers run data.csv -s Levenshtein --map output=response --map expected=reference \\
      -o scored.jsonl --threshold Levenshtein=0.8 --resume
"""
)

# Every command, in the order `--help` lists them: adding a command is a module with its COMMANDS and a line here
# (and its name in USAGE).
COMMANDS: dict[str, Command] = {
    **catalog.COMMANDS,  # list, show
    **check.COMMANDS,  # check, schema
    **promptfoo.COMMANDS,
    **run.COMMANDS,
    **report.COMMANDS,
    **meta_eval.COMMANDS,
    **compare.COMMANDS,
    **correlate.COMMANDS,
    **loopback.COMMANDS,
}

# The commands as the usage line shows them: run third.
USAGE = (
    "list",
    "show",
    "run",
    "check",
    "schema",
    "promptfoo",
    "report",
    "meta-eval",
    "compare",
    "correlate",
    "loopback",
)


def build_parser() -> argparse.ArgumentParser:
    """The parser of every command; ``args.command`` names the one given.

    >>> sorted(USAGE) == sorted(COMMANDS)
    True
    >>> build_parser().parse_args(["show", "BLEU"]).command
    'show'
    """
    parser = argparse.ArgumentParser(
        prog="scorers",
        description="Score the outputs of LLM applications.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"scorers {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="{" + ",".join(USAGE) + "}")
    templates = argparse.ArgumentParser(add_help=False)
    templates.add_argument(
        "--templates",
        action="append",
        default=[],
        metavar="DIR",
        help="also register the judge templates in DIR (repeatable; like SCORERS_TEMPLATES)",
    )
    for command in COMMANDS.values():
        command.add_parser(sub, templates)
    return parser
