"""Our template DSL: one judge per file, ``kind:`` (default ``classifier``) and its settings.

Validated by the spec model (:mod:`scorers.judges.spec`); a file written for
autoevals (``prompt`` + ``choice_scores``) is a classifier and loads unchanged.
"""
from __future__ import annotations

import re
from typing import Any, Mapping

from ...errors import TemplateError
from ..spec import validate_spec
from ..template import JudgeTemplate, mustache_to_jinja
from . import Definition, Problems

__all__ = ["parse"]


def parse(data: Mapping[str, Any], default_name: str, file: str | None, problems: Problems) -> Definition | None:
    """The definition in ``data``, or ``None`` with every problem added to ``problems``."""
    spec, found = validate_spec(data)
    for key, message in found:
        problems.add(key, message)
    if spec is None:
        return None
    name = spec.name or default_name
    try:
        template = JudgeTemplate(name=name, messages=tuple((role, mustache_to_jinja(content))
                                                           for role, content in spec.message_pairs()),
                                 choice_scores=getattr(spec, "choice_scores", None), description=spec.description,
                                 file=file)
    except TemplateError as exc:
        message = str(exc)
        key = re.search(r"key '([^']+)'", message)
        problems.add(key.group(1) if key else "prompt", message.split(": ", 1)[-1])
        return None
    settings = {k: v for k, v in spec.settings().items() if k != "choice_scores"}
    return Definition(spec.kind, template, settings)
