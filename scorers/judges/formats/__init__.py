"""Judge template files → definitions (kind, template, settings), with every problem located.

Formats are a registry (:data:`FORMATS`), tried in order on each parsed YAML document: ours
(:mod:`.ours`: the template DSL with ``kind:``; autoevals' files, a ``prompt`` and ``choice_scores``, are its
classifier case and load unchanged) and OpenAI evals' model-graded spec files (:mod:`.openai_evals`). A plugin
package adds a format through the ``scorers.template_formats`` entry-point group (each entry point names a
:class:`TemplateFormat`); a plugin that fails to load warns and claims nothing. Each returns definitions plus
problems (file, key, line); nothing here imports a judge.

>>> (definition,), problems = parse_document({"prompt": "Is {{output}} polite?", "choice_scores": {"Y": 1, "N": 0},
...                                          "use_cot": False}, None)
>>> definition.kind, definition.template.variables, dict(definition.settings), problems
('classifier', ('output',), {'use_cot': False}, [])
>>> FORMATS.names()[:2]
['scorers', 'openai-evals']
"""

from __future__ import annotations

import os
import re
from importlib.metadata import EntryPoint
from pathlib import Path
from typing import Any, Callable, Mapping, NamedTuple

from ...plugins import Registry
from .base import Definition, Problem, Problems

__all__ = [
    "Definition",
    "Problem",
    "Problems",
    "TemplateFormat",
    "FORMATS",
    "ENTRY_POINT_GROUP",
    "read_file",
    "parse_document",
    "camel_case",
]

ENTRY_POINT_GROUP = "scorers.template_formats"


class TemplateFormat(NamedTuple):
    """A template file format: ``claims(data)``, whether a YAML document (a mapping) is one of its files;
    ``parse(data, path, problems)``, the definitions in it (``path`` is ``None`` for a document read from no
    file), each problem added to ``problems`` (:meth:`Problems.add`: a key and a message)."""

    claims: Callable[[Mapping[str, Any]], bool]
    parse: Callable[[Mapping[str, Any], "Path | None", Problems], list[Definition]]


def camel_case(stem: str) -> str:
    """File name → scorer name: ``closed_q_a`` → ``ClosedQA``, ``my-judge`` → ``MyJudge``.

    >>> camel_case("closed_q_a"), camel_case("factuality")
    ('ClosedQA', 'Factuality')
    """
    return "".join(part[:1].upper() + part[1:] for part in re.split(r"[_\-\s.]+", stem) if part)


def _is_ours(data: Mapping[str, Any]) -> bool:
    return "choice_strings" not in data and bool({"prompt", "messages", "kind", "choice_scores"} & set(data))


def _parse_ours(data: Mapping[str, Any], path: Path | None, problems: Problems) -> list[Definition]:
    from . import ours

    definition = ours.parse(data, camel_case(path.stem) if path else "Judge", str(path) if path else None, problems)
    return [definition] if definition else []


def _is_openai_evals(data: Mapping[str, Any]) -> bool:
    """One spec at the top level, or specs by name."""
    return "choice_strings" in data or bool(data) and all(isinstance(v, Mapping) for v in data.values())


def _parse_openai_evals(data: Mapping[str, Any], path: Path | None, problems: Problems) -> list[Definition]:
    from . import openai_evals

    specs = {path.stem if path else "spec": data} if "choice_strings" in data else data
    definitions = []
    for spec_name, spec in specs.items():
        spec_problems = Problems(problems.file, problems.lines)
        definition = openai_evals.parse(str(spec_name), spec, str(path) if path else None, spec_problems)
        problems.extend(spec_problems)
        if definition:
            definitions.append(definition)
    return definitions


def _template_format(entry_point: EntryPoint, loaded: Any) -> TemplateFormat:
    if not isinstance(loaded, TemplateFormat):
        raise TypeError(f"{loaded!r} is not a scorers.judges.formats.TemplateFormat")
    return loaded


#: The template formats, in the order they are tried: the built-in ones, then the plugins'.
FORMATS: Registry[TemplateFormat] = Registry("template format", group=ENTRY_POINT_GROUP, accept=_template_format)
FORMATS.register("scorers", TemplateFormat(_is_ours, _parse_ours))
FORMATS.register("openai-evals", TemplateFormat(_is_openai_evals, _parse_openai_evals))


def parse_document(
    data: Any, path: Path | None, lines: Mapping[str, int] | None = None
) -> tuple[list[Definition], list[Problem]]:
    """The definitions in one parsed YAML document (by the first format that claims it), and every problem found."""
    problems = Problems(str(path) if path else "<template>", lines or {})
    if not isinstance(data, Mapping):
        problems.add("", "a template file must be a YAML mapping")
        return [], list(problems)
    for _, template_format in FORMATS.items():
        if template_format.claims(data):
            return template_format.parse(data, path, problems), list(problems)
    problems.add(
        "",
        "not a judge template: expected prompt (or messages) and the kind's settings, "
        "or OpenAI evals model-graded specs",
    )
    return [], list(problems)


def read_file(path: str | os.PathLike[str]) -> tuple[list[Definition], list[Problem]]:
    """Every definition in one YAML file (one for our DSL, several for an OpenAI evals spec file) and its problems.

    Never raises for what the file holds: a file past a limit of :mod:`scorers.judges.limits`
    (size, nesting, aliases) or that is not valid YAML is a problem of the file.
    """
    from .yaml_source import SourceError, load, read_text

    path = Path(path)
    try:
        node, data = load(read_text(path))
    except SourceError as exc:
        return [], [Problem(str(path), "", exc.message, exc.line)]
    return parse_document(data, path, _key_lines(node) if node is not None else {})


def _key_lines(node: Any, prefix: str = "", out: dict[str, int] | None = None) -> dict[str, int]:
    """The line of every key of a YAML node tree, by the dotted path problems use (``messages[0].role``)."""
    import yaml

    out = {} if out is None else out
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            path = f"{prefix}.{key_node.value}" if prefix else str(key_node.value)
            out.setdefault(path, key_node.start_mark.line + 1)
            _key_lines(value_node, path, out)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            path = f"{prefix}[{index}]"
            out.setdefault(path, item.start_mark.line + 1)
            _key_lines(item, path, out)
    return out
