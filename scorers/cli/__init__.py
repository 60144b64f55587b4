"""Command line: ``python -m scorers list|show|run|check|promptfoo|report|meta-eval|compare|correlate|loopback``.

A thin layer over the library: ``run`` is :func:`scorers.evaluate` plus file
reading, durable JSONL output, resume, thresholds and a summary table.
Exit codes: 0 success; 1 a ``--threshold`` was not met (or a row failed, with
``--fail-on-error``); 2 bad usage, configuration or data (nothing scored after
the error); 3 the run could not score (an unexpected error on some row, or a
scorer that failed on every row); 130 interrupted (Ctrl-C), 143 terminated
(SIGTERM): rows already written stay valid and ``--resume`` continues.

One module per command (``run``, ``catalog``: list and show, ``check``: check and
schema, ...), each with its ``COMMANDS``; :mod:`scorers.cli.parser` registers them. A plugin package adds a
command as an entry point of the ``scorers.commands`` group naming a :class:`Command` (or registers one in
:data:`COMMANDS`):

>>> def add_parser(sub, templates):
...     sub.add_parser("hello", help="say hello").add_argument("name")
>>> def say_hello(args):
...     print(f"hello {args.name}")
...     return 0
>>> hello = COMMANDS.register("hello", Command(add_parser, say_hello))
>>> main(["hello", "Ada"])
hello Ada
0
>>> COMMANDS.remove("hello")
"""

from __future__ import annotations

import sys
from typing import Sequence

from ..errors import ScorerError
from ._common import Command
from .catalog import describe
from .parser import COMMANDS, build_parser
from .run import _print_summary  # noqa: F401  (tests import it from here)

__all__ = ["main", "build_parser", "describe", "Command", "COMMANDS"]


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        for directory in getattr(args, "templates", []):
            from ..judges.discovery import add_template_dir

            add_template_dir(directory)
        return COMMANDS.get(args.command).run(args)
    except ScorerError as exc:  # DataError, ConfigError, ... all derive from it
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # before or after the run: nothing half-written
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
