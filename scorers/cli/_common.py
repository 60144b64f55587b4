"""What the commands share: the exit codes epilog, file arguments, KEY=VALUE options, --price and -p NAME.KEY=VALUE."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any, Callable, NamedTuple, Sequence

import yaml

from ..errors import ConfigError

EXIT_CODES = """exit codes:
  0    success
  1    a --threshold was not met, or (with --fail-on-error) a row had a scorer error
  2    bad usage, configuration or data: the run stopped before scoring more rows
  3    the run could not score: an unexpected error on some row, or a scorer failed on every row
  130  interrupted (Ctrl-C); 143 terminated (SIGTERM): rows written stay valid, --resume continues
"""


class Command(NamedTuple):
    """A command: ``add_parser(sub, templates)`` adds its subparser, ``run(args)`` runs it and returns the exit code."""

    add_parser: Callable[[argparse._SubParsersAction[argparse.ArgumentParser], argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


def file_path(text: str) -> str:
    """The argparse ``type`` of every argument that names a file to read or write (``-``: standard input or
    output): a directory there is a usage error (exit 2) naming it.

    >>> file_path("-"), file_path("results.jsonl")
    ('-', 'results.jsonl')
    >>> file_path(".")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: . is a directory, not a file
    """
    if text != "-" and os.path.isdir(text):
        raise argparse.ArgumentTypeError(f"{text} is a directory, not a file")
    return text


def parse_pairs(items: Sequence[str], option: str) -> list[tuple[str, str]]:
    pairs = []
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ConfigError(f"{option} expects KEY=VALUE, got {item!r}")
        pairs.append((key.strip(), value))
    return pairs


def parse_prices(items: Sequence[str]) -> dict[str, tuple[float, float]]:
    prices = {}
    for model, value in parse_pairs(items, "--price"):
        try:
            prompt, completion = (float(x) for x in value.split(","))
        except ValueError:
            raise ConfigError(f"--price {model}={value}: expected MODEL=INPUT,OUTPUT (USD per 1M tokens)") from None
        prices[model] = (prompt, completion)
    return prices


def scorer_params(names: Sequence[str], params: Sequence[str]) -> dict[str, dict[str, Any]]:
    by_name: dict[str, dict[str, Any]] = {name: {} for name in names}
    lowered = {name.lower(): name for name in names}
    for key, value in parse_pairs(params, "--param"):
        scorer, dot, param = key.rpartition(".")
        if not dot or scorer.lower() not in lowered:
            raise ConfigError(f"--param {key}: expected NAME.KEY with NAME one of the -s scorers ({', '.join(names)})")
        by_name[lowered[scorer.lower()]][param] = yaml.safe_load(value) if value else ""
    return by_name


def add_progress(parser: argparse.ArgumentParser) -> None:
    """``--progress`` / ``--no-progress`` (``args.progress``: True, False, or None to follow stderr)."""
    parser.add_argument(
        "--progress",
        dest="progress",
        action="store_true",
        default=None,
        help="force the progress bar (default: only when stderr is a terminal)",
    )
    parser.add_argument("--no-progress", dest="progress", action="store_false", help="no progress bar")


def wants_progress(args: argparse.Namespace) -> bool:
    """Whether to show a progress bar: as asked, else when stderr is a terminal."""
    return bool(args.progress) if args.progress is not None else sys.stderr.isatty()
