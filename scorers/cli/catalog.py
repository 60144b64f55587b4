"""``list`` and ``show``: the registered scorers."""

from __future__ import annotations

import argparse
import inspect
import json
from typing import Any, Mapping, Sequence

from .._util import missing_from_extra
from ..base import Scorer
from ..errors import ConfigError, ScorerError
from ..registry import entries, registry
from ._common import Command


def add_list(sub: argparse._SubParsersAction[argparse.ArgumentParser], templates: argparse.ArgumentParser) -> None:
    p_list = sub.add_parser("list", help="list the registered scorers", parents=[templates])
    p_list.add_argument(
        "--json",
        action="store_true",
        help="print a JSON array of {name, kind, description, required, extra, missing, ...}",
    )
    p_list.add_argument("--kind", help="only scorers of this kind (heuristic, text, embedding, llm, ...)")


def add_show(sub: argparse._SubParsersAction[argparse.ArgumentParser], templates: argparse.ArgumentParser) -> None:
    p_show = sub.add_parser("show", help="describe one scorer: parameters, fields and an example", parents=[templates])
    p_show.add_argument("name")


def cmd_list(args: argparse.Namespace) -> int:
    kinds = sorted({entry.kind for entry in entries()})
    if args.kind and args.kind not in kinds:
        raise ConfigError(f"--kind {args.kind}: no scorer is of that kind (kinds: {', '.join(kinds)})")
    rows: list[dict[str, Any]] = []
    missing: dict[str, list[str]] = {}  # per extra, its packages not installed (read once)
    for entry in entries():
        if args.kind and entry.kind != args.kind:
            continue
        entry_error: str | None
        try:
            required = entry.required_fields()
        except ScorerError as exc:
            required = []
            entry_error = str(exc)
        else:
            entry_error = None
        row: dict[str, Any] = {
            "name": entry.name,
            "kind": entry.kind,
            "description": entry.description,
            "required": required,
            "aliases": list(entry.aliases),
            "source": entry.source,
            "higher_is_better": entry.higher_is_better,
        }
        extra = entry.scorer_class.extra if entry.scorer_class is not None else None
        if extra is not None:
            if extra not in missing:
                missing[extra] = missing_from_extra(extra)
            row["extra"] = extra
            row["missing"] = missing[extra]
        if entry_error:
            row["error"] = entry_error
        rows.append(row)
    if args.json:
        print(json.dumps(rows, indent=2, ensure_ascii=False))
        return 0
    width = max((len(r["name"]) for r in rows), default=4)
    kind_width = max((len(r["kind"]) for r in rows), default=4)
    fields_width = max((len(", ".join(r["required"])) for r in rows), default=8)
    print(f"{'NAME':<{width}}  {'KIND':<{kind_width}}  {'REQUIRED':<{fields_width}}  DESCRIPTION")
    for r in rows:
        print(
            f"{r['name']:<{width}}  {r['kind']:<{kind_width}}  {', '.join(r['required']):<{fields_width}}  "
            f"{_not_installed(r)}{r.get('error') or r['description']}"
        )
    return 0


def _not_installed(row: Mapping[str, Any]) -> str:
    """The mark ``list`` puts before a scorer whose extra is not installed."""
    if not row.get("missing"):
        return ""
    return f"[not installed: pip install 'scorers[{row['extra']}]'] "


def describe(scorer: Scorer, aliases: Sequence[str] = ()) -> str:
    """The text ``show`` prints for a scorer."""
    lines = [f"{scorer.name}  ({scorer.kind})", ""]
    describe_judge = getattr(scorer, "describe", None)
    if callable(describe_judge):  # a template-defined judge: its own description, template and choices
        details = describe_judge()
        lines += [details.get("description") or scorer.description, ""]
        template = getattr(scorer, "template", None)
        if template is not None:
            lines.append(f"template ({details.get('template_file') or 'defined in code'}):")
            for role, content in template.messages:
                lines.append(f"  [{role}]")
                lines += [f"    {line}" for line in content.rstrip("\n").splitlines()]
            lines.append("")
        lines.append(f"kind: {details.get('kind', 'classifier')}")
        if details.get("requests_per_row"):  # a judge's requests per row, as a formula
            lines.append(f"requests per row: {details['requests_per_row']}")
        lines += [
            "",
            inspect.cleandoc(type(scorer).__doc__ or "").split("\n\n")[0],
            "",
        ]
        if "choice_scores" in details:
            lines.append("choice_scores:")
            lines += [f"  {choice}: {value}" for choice, value in details["choice_scores"].items()]
            lines.append("")

    else:
        lines += [inspect.cleandoc(type(scorer).__doc__ or scorer.description), ""]
    if aliases:
        lines += [f"aliases: {', '.join(aliases)}", ""]
    lines.append("fields:")
    for f in scorer.fields:
        need = "required" if f.required else "optional"
        lines.append(f"  {f.name:<12} {need:<9} {f.type_names()}" + (f"  {f.description}" if f.description else ""))
    lines.append("  (input, output, expected and metadata are always accepted)")
    lines += ["", "parameters (as configured by default; set with -p NAME.KEY=VALUE or scorers.get(NAME, KEY=...)):"]
    lines += _parameter_lines(scorer) or ["  (none)"]
    if scorer.example:
        lines += ["", "example:", f"  {scorer.example}"]
    return "\n".join(lines)


def _parameter_lines(scorer: Scorer) -> list[str]:
    """Each parameter as configured (``KEY = JSON``), with what it may be and its help when it is declared
    (:meth:`Scorer.options`), then what else enters the signature (a library's version)."""
    signed = scorer.params()
    lines = []
    for name, option in type(scorer).options().items():
        value = signed[name] if name in signed else getattr(scorer, name)
        unsigned = "" if option.signed else "; not in the signature"
        lines += [f"  {name} = {json.dumps(value, default=str)}  ({option.allowed}{unsigned})", f"      {option.help}"]
    declared = type(scorer).options()
    lines += [f"  {k} = {json.dumps(v, default=str)}" for k, v in signed.items() if k not in declared]
    return lines


def cmd_show(args: argparse.Namespace) -> int:
    entry = registry.entry(args.name)
    print(describe(entry.create(), entry.aliases))
    return 0


COMMANDS = {"list": Command(add_list, cmd_list), "show": Command(add_show, cmd_show)}
