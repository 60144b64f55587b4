"""Our template DSL: one judge per file, ``kind:`` (default ``classifier``) and its settings.

Validated by the spec model (:mod:`scorers.judges.spec`); a file written for
autoevals (``prompt`` + ``choice_scores``) is a classifier and loads unchanged.
"""

from __future__ import annotations

from typing import Any, Mapping

from ..spec import validate_spec
from ..template import JudgeTemplate, mustache_to_jinja, template_problems
from .base import Definition, Problems

__all__ = ["parse"]


def parse(data: Mapping[str, Any], default_name: str, file: str | None, problems: Problems) -> Definition | None:
    """The definition in ``data``, or ``None`` with every problem added to ``problems``.

    Each template text is checked on its own, whatever else is wrong with the file, so a
    syntax error in one message hides neither the others' problems nor the schema's.
    """
    for key, message in template_problems(_template_texts(data)):
        problems.add(key, message)
    spec, found = validate_spec(data)
    for key, message in found:
        problems.add(key, message)
    if spec is None or problems:
        return None
    name = spec.name or default_name
    template = JudgeTemplate(
        name=name,
        messages=tuple((role, mustache_to_jinja(content)) for role, content in spec.message_pairs()),
        choice_scores=getattr(spec, "choice_scores", None),
        description=spec.description,
        file=file,
        conversations=spec.conversation_fields(),
        attachments=spec.attachment_fields(),
        examples=tuple(e.model_dump(exclude_none=True) for e in spec.examples or ()),
    )
    settings = {k: v for k, v in spec.settings().items() if k != "choice_scores"}
    return Definition(spec.kind, template, settings)


def _template_texts(data: Mapping[str, Any]) -> list[tuple[str, str]]:
    """``(key, Jinja text)`` of every prompt text in ``data`` that is text, as the judge will compile it."""
    texts = [("prompt", data.get("prompt"))]
    messages = data.get("messages")
    if isinstance(messages, list):
        texts += [
            (f"messages[{i}].content", m.get("content")) for i, m in enumerate(messages) if isinstance(m, Mapping)
        ]
    return [(key, mustache_to_jinja(text.strip())) for key, text in texts if isinstance(text, str) and text.strip()]
