"""The parser of ``python -m scorers``: one subparser per command, from the registry of commands.

The built-in commands are the ``COMMANDS`` of the command modules; a plugin package adds a command through the
``scorers.commands`` entry-point group (each entry point names a :class:`~scorers.cli.Command`, the command's
name is the entry point's). A plugin that fails to load warns; its command is listed and says why when run.
"""

from __future__ import annotations

import argparse
from importlib.metadata import EntryPoint
from typing import Any

from .. import __version__
from ..errors import ConfigError
from ..plugins import Registry
from . import calibrate, catalog, check, compare, correlate, loopback, meta_eval, promptfoo, rank, report, run
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

ENTRY_POINT_GROUP = "scorers.commands"


def _command(entry_point: EntryPoint, loaded: Any) -> Command:
    """What a ``scorers.commands`` entry point names: a :class:`~scorers.cli.Command`."""
    if not isinstance(loaded, Command):
        raise TypeError(f"{loaded!r} is not a scorers.cli.Command")
    return loaded


def _failed_command(entry_point: EntryPoint, message: str) -> Command:
    """What a command whose plugin failed to load stands as: listed, and its run is the error (exit 2)."""

    def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser], _: argparse.ArgumentParser) -> None:
        sub.add_parser(entry_point.name, help=f"(failed to load) {message}")

    def fail(_: argparse.Namespace) -> int:
        raise ConfigError(message)

    return Command(add_parser, fail)


#: Every command, in the order `--help` lists them (the built-in ones, then the plugins'): adding a command is a
#: module with its COMMANDS and a line here (and its name in USAGE), or an entry point of a plugin package.
COMMANDS: Registry[Command] = Registry(
    "command", group=ENTRY_POINT_GROUP, case_sensitive=True, accept=_command, placeholder=_failed_command
)
for _module in (catalog, check, promptfoo, run, report, meta_eval, calibrate, compare, correlate, rank, loopback):
    for _name, _builtin in _module.COMMANDS.items():
        COMMANDS.register(_name, _builtin)

# The built-in commands as the usage line shows them (run third), before the plugins'.
USAGE = (
    "list",
    "show",
    "run",
    "check",
    "schema",
    "promptfoo",
    "report",
    "meta-eval",
    "calibrate",
    "compare",
    "passk",
    "correlate",
    "rank",
    "loopback",
)


def build_parser() -> argparse.ArgumentParser:
    """The parser of every command; ``args.command`` names the one given.

    >>> sorted(USAGE) == sorted(COMMANDS)  # (with no plugin installed)
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
    names = [*USAGE, *(name for name in COMMANDS.names() if name not in USAGE)]
    sub = parser.add_subparsers(dest="command", required=True, metavar="{" + ",".join(names) + "}")
    templates = argparse.ArgumentParser(add_help=False)
    templates.add_argument(
        "--templates",
        action="append",
        default=[],
        metavar="DIR",
        help="also register the judge templates in DIR (repeatable; like SCORERS_TEMPLATES)",
    )
    for _, command in COMMANDS.items():
        command.add_parser(sub, templates)
    return parser
