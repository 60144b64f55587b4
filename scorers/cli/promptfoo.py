"""``promptfoo init``: write the assertion file of promptfoo's ``type: python``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..errors import ConfigError
from ._common import Command, file_path


def add_promptfoo(sub: argparse._SubParsersAction[argparse.ArgumentParser], templates: argparse.ArgumentParser) -> None:
    p_promptfoo = sub.add_parser(
        "promptfoo", help="promptfoo: `init [PATH]` writes the assertion file for `type: python`, `value: file://PATH`"
    )
    p_promptfoo.add_argument("action", choices=["init"])
    p_promptfoo.add_argument(
        "path",
        nargs="?",
        type=file_path,
        metavar="PATH",
        help="file to write (default: scorers_assert.py); an existing different file is kept",
    )


def cmd_promptfoo(args: argparse.Namespace) -> int:
    from ..adapters.promptfoo import DEFAULT_FILE, assertion_file

    path = Path(args.path or DEFAULT_FILE)
    text = assertion_file()
    if path.is_dir():
        path = path / DEFAULT_FILE
    if path.exists() and path.read_text(encoding="utf-8") != text:
        raise ConfigError(f"{path} exists and is not the scorers assertion file: remove it or give another PATH")
    path.write_text(text, encoding="utf-8")
    print(
        f"wrote {path}; in promptfooconfig.yaml:\n"
        f"  assert:\n    - type: python\n      value: file://{path}\n"
        f"      config: {{scorers: [ExactMatch, Levenshtein], threshold: 0.8}}",
        file=sys.stderr,
    )
    return 0


COMMANDS = {"promptfoo": Command(add_promptfoo, cmd_promptfoo)}
