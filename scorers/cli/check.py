"""``check`` and ``schema``: judge template files."""

from __future__ import annotations

import argparse
import json
import sys

from ._common import Command


def add_check(sub: argparse._SubParsersAction[argparse.ArgumentParser], templates: argparse.ArgumentParser) -> None:
    p_check = sub.add_parser("check", help="validate judge templates (YAML); report every problem with file and key")
    p_check.add_argument(
        "paths", nargs="*", metavar="PATH", help="template files or directories (default: built-in, SCORERS_TEMPLATES)"
    )


def add_schema(sub: argparse._SubParsersAction[argparse.ArgumentParser], templates: argparse.ArgumentParser) -> None:
    sub.add_parser(
        "schema",
        help="print the JSON Schema of judge template files (for editors: "
        "python -m scorers schema > templates.schema.json)",
    )


def cmd_check(args: argparse.Namespace) -> int:
    from ..judges.discovery import check_templates, template_dirs, template_files, template_warnings

    paths = args.paths or [d for d in template_dirs() if d.is_dir()]
    problems = check_templates(paths)
    warnings = template_warnings(paths)
    for problem in problems:
        print(problem, file=sys.stderr)
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)
    files = len(template_files(paths))
    print(
        f"{_count(files, 'template file')} checked, {_count(len(problems), 'problem')}, "
        f"{_count(len(warnings), 'warning')}",
        file=sys.stderr,
    )
    return 1 if problems else 0


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'s' if number != 1 else ''}"


def cmd_schema(args: argparse.Namespace) -> int:
    from ..judges.spec import json_schema

    print(json.dumps(json_schema(), indent=2, ensure_ascii=False))
    return 0


COMMANDS = {"check": Command(add_check, cmd_check), "schema": Command(add_schema, cmd_schema)}
