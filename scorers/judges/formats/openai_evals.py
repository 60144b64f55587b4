"""OpenAI evals' model-graded spec files: ``prompt`` with ``{var}`` placeholders, ``choice_strings``,
``choice_scores`` (or ``from_strings``), ``input_outputs``; several specs per file, or one at the top level.

``completion`` becomes ``output`` and ``ideal`` becomes ``expected``; scores outside [0, 1] are rescaled.
"""

from __future__ import annotations

import math
import string
from typing import Any, Mapping

from ..._util import is_number
from ...errors import TemplateError
from ..template import JudgeTemplate, format_to_jinja
from .base import Definition, Problems

__all__ = ["parse"]

_KEYS = {
    "prompt",
    "choice_strings",
    "choice_scores",
    "input_outputs",
    "eval_type",
    "output_template",
    "key",
    "group",
    "format_type",
}
_ROLES = ("system", "user", "assistant")


def _is_number(value: Any) -> bool:
    return is_number(value) and math.isfinite(value)


def _check_choice_key(key: Any, where: str, problems: Problems) -> bool:
    if not isinstance(key, str):
        problems.add(where, f"choice {key!r} is a {type(key).__name__}, not a string; quote it")
        return False
    if not key.strip() or key != key.strip():
        problems.add(where, f"choice {key!r} must be non-empty without surrounding spaces")
        return False
    return True


def _evals_choice_strings(raw: Any, problems: Problems, key: str) -> list[str] | None:
    if isinstance(raw, str):
        if raw.startswith("from_n"):
            problems.add(
                key,
                f"{raw!r} needs the number of completions (multi-completion specs are not supported); "
                "list the choices instead",
            )
            return None
        choices = list(raw)
    elif isinstance(raw, list) and raw:
        choices = raw
    else:
        problems.add(key, 'must be a list of choices or a string of one-character choices like "ABCDE"')
        return None
    good = []
    for choice in choices:
        if _check_choice_key(choice, key, problems):
            if any(c in string.punctuation for c in choice):
                problems.add(key, f"choice {choice!r} contains punctuation, which the reply parser strips")
            else:
                good.append(choice)
    if len(set(good)) != len(good):
        problems.add(key, "choices must be distinct")
        return None
    return good if len(good) == len(choices) else None


def _renames(data: Mapping[str, Any], prefix: str, problems: Problems) -> dict[str, str]:
    """The spec's variables renamed to ours: ``ideal`` → ``expected`` and, with one ``input_outputs`` pair, the
    completion → ``output`` and the sample key → ``input``."""
    io = data.get("input_outputs", {})
    if not isinstance(io, Mapping) or not all(isinstance(k, str) and isinstance(v, str) for k, v in io.items()):
        problems.add(prefix + "input_outputs", "must map sample keys to completion variable names")
        io = {}
    rename = {"ideal": "expected"}
    if len(io) == 1:
        ((sample_key, completion),) = io.items()
        rename.update({completion: "output", sample_key: "input"})
    return rename


def _score_values(choices: list[str], raw_scores: Any, key: str, problems: Problems) -> dict[str, float] | None:
    """Each choice's score as the spec gives it (``from_strings``: the choice read as a number)."""
    if raw_scores == "from_strings":
        try:
            return {c: float(c) for c in choices}
        except ValueError:
            problems.add(key, "from_strings needs numeric choice strings")
            return None
    if (
        isinstance(raw_scores, Mapping)
        and set(map(str, raw_scores)) == set(choices)
        and all(_is_number(v) for v in raw_scores.values())
    ):
        return {c: float(raw_scores[c]) for c in choices}
    problems.add(key, 'must be "from_strings" or map every choice string to a number')
    return None


def _choice_scores(
    choices: list[str], raw_scores: Any, key: str, problems: Problems
) -> tuple[dict[str, float] | None, str]:
    """The choices' scores on [0, 1] (rescaled when the spec's are not) and what the description adds."""
    if raw_scores is None:
        return None, "; the spec has no choice_scores: pass choice_scores={...} when building it"
    values = _score_values(choices, raw_scores, key, problems)
    if values is None:
        return None, ""
    low, high = min(values.values()), max(values.values())
    if not (low < 0 or high > 1):  # as written: a NaN from from_strings is kept, not rescaled
        return values, ""
    if high == low:
        problems.add(key, "all choices have the same score")
        return None, ""
    rescaled = {c: (v - low) / (high - low) for c, v in values.items()}
    return rescaled, f"; scores rescaled from [{low:g}, {high:g}] to [0, 1]"


def _is_chat(raw_prompt: Any) -> bool:
    return (
        isinstance(raw_prompt, list)
        and bool(raw_prompt)
        and all(
            isinstance(m, Mapping) and m.get("role") in _ROLES and isinstance(m.get("content"), str) for m in raw_prompt
        )
    )


def _messages(
    raw_prompt: Any, rename: Mapping[str, str], key: str, problems: Problems
) -> tuple[tuple[str, str], ...] | None:
    """The prompt (text or chat messages) as Jinja messages, the last one a user's."""
    messages: tuple[tuple[str, str], ...] | None
    try:
        if isinstance(raw_prompt, str) and raw_prompt.strip():
            messages = (("user", format_to_jinja(raw_prompt.strip(), rename)),)
        elif _is_chat(raw_prompt):
            messages = tuple((m["role"], format_to_jinja(m["content"].strip(), rename)) for m in raw_prompt)
        else:
            problems.add(key, "must be text or a list of {role, content} chat messages")
            return None
    except ValueError as exc:
        problems.add(key, str(exc))
        return None
    if messages and messages[-1][0] != "user":
        messages = messages + (("user", "Answer now."),)
    return messages


def parse(spec_name: str, data: Any, file: str | None, problems: Problems) -> Definition | None:
    """One OpenAI evals model-graded spec → template (``completion`` → ``output``, ``ideal`` → ``expected``)."""
    prefix = f"{spec_name}."
    if not isinstance(data, Mapping):
        problems.add(spec_name, "must be a mapping (an OpenAI evals model-graded spec)")
        return None
    for key in data:
        if key not in _KEYS:
            problems.add(prefix + str(key), f"unknown key (allowed: {', '.join(sorted(_KEYS))})")
    for key in ("prompt", "choice_strings"):
        if key not in data:
            problems.add(prefix + key, "is required")
    rename = _renames(data, prefix, problems)
    choices = (
        _evals_choice_strings(data["choice_strings"], problems, prefix + "choice_strings")
        if "choice_strings" in data
        else None
    )
    scores: dict[str, float] | None = None
    description = f"OpenAI evals model-graded spec {spec_name!r}"
    if choices is not None:
        scores, note = _choice_scores(choices, data.get("choice_scores"), prefix + "choice_scores", problems)
        description += note
    messages = _messages(data.get("prompt"), rename, prefix + "prompt", problems)
    if problems or messages is None or choices is None:
        return None
    try:
        template = JudgeTemplate(
            name=spec_name,
            choice_scores=scores,
            choices=tuple(choices),
            messages=messages,
            description=description,
            file=file,
            format="openai-evals",
        )
    except TemplateError as exc:
        problems.add(prefix + "prompt", str(exc).split(": ", 1)[-1])
        return None
    cot = (data.get("eval_type") or "").startswith("cot_classify")
    return Definition("classifier", template, {"use_cot": True} if cot else {})
