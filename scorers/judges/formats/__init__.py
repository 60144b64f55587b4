"""Judge template files → definitions (kind, template, settings), with every problem located.

Formats: ours (:mod:`.ours`: the template DSL with ``kind:``; autoevals' files, a
``prompt`` and ``choice_scores``, are its classifier case and load unchanged) and
OpenAI evals' model-graded spec files (:mod:`.openai_evals`). Each returns
definitions plus problems (file, key, line); nothing here imports a judge.

>>> (definition,), problems = parse_document({"prompt": "Is {{output}} polite?", "choice_scores": {"Y": 1, "N": 0},
...                                          "use_cot": False}, None)
>>> definition.kind, definition.template.variables, dict(definition.settings), problems
('classifier', ('output',), {'use_cot': False}, [])
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Mapping

from .base import Definition, Problem, Problems

__all__ = ["Definition", "Problem", "Problems", "read_file", "parse_document", "camel_case"]


def camel_case(stem: str) -> str:
    """File name → scorer name: ``closed_q_a`` → ``ClosedQA``, ``my-judge`` → ``MyJudge``.

    >>> camel_case("closed_q_a"), camel_case("factuality")
    ('ClosedQA', 'Factuality')
    """
    return "".join(part[:1].upper() + part[1:] for part in re.split(r"[_\-\s.]+", stem) if part)


def parse_document(
    data: Any, path: Path | None, lines: Mapping[str, int] | None = None
) -> tuple[list[Definition], list[Problem]]:
    """The definitions in one parsed YAML document, and every problem found."""
    from . import openai_evals, ours

    problems = Problems(str(path) if path else "<template>", lines or {})
    file = str(path) if path else None
    if not isinstance(data, Mapping):
        problems.add("", "a template file must be a YAML mapping")
        return [], list(problems)
    if "choice_strings" not in data and ({"prompt", "messages", "kind"} & set(data) or "choice_scores" in data):
        definition = ours.parse(data, camel_case(path.stem) if path else "Judge", file, problems)
        return ([definition] if definition else []), list(problems)
    if "choice_strings" in data:  # one OpenAI evals spec at the top level
        definition = openai_evals.parse(path.stem if path else "spec", data, file, problems)
        return ([definition] if definition else []), list(problems)
    if data and all(isinstance(v, Mapping) for v in data.values()):
        out = []
        for spec_name, spec in data.items():
            spec_problems = Problems(problems.file, lines or {})
            definition = openai_evals.parse(str(spec_name), spec, file, spec_problems)
            problems.extend(spec_problems)
            if definition:
                out.append(definition)
        return out, list(problems)
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
