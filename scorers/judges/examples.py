"""Labelled examples in a judge's prompt (the template key ``examples:``): their model, checks and rendering.

Each example is the template's variables, the verdict the judge should give (a choice of a classifier or a
pairwise judge, an integer on the scale of a rating or G-Eval judge, a mapping criterion → integer for a
rubric) and, optionally, a short rationale::

    examples:
      - variables: {output: "Go away."}
        verdict: N
        rationale: dismisses the reader

They are shown in the last user message, after the prompt and before the instruction that says how to answer,
in this fixed form (:func:`examples_block`): a heading line, then each example numbered, its variables in the
order the template first uses them (``name: value``, values that are not text as JSON), its verdict and its
rationale, then a line that returns to the case to judge. A pairwise verdict ``A`` means the first answer
shown (``output``) is better. Examples are part of the judge's identity: the template's content hash covers
them, so a judge with examples shares no cache entry or resumed file with one without. A template without
examples renders exactly as before.

>>> print(examples_block([{"variables": {"output": "Go away."}, "verdict": "N", "rationale": "rude"}], ("output",)))
Here are examples of cases already judged, each with the verdict it deserves:
<BLANKLINE>
Example 1
output: Go away.
Verdict: N
Rationale: rude
<BLANKLINE>
End of the examples. Judge the case given above.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from pydantic import BaseModel, ConfigDict, Field

from .template import render_value

__all__ = ["Example", "examples_block", "verdict_problem", "variables_problem", "HEADING", "CLOSING"]

#: The line before the examples, and the line after them.
HEADING = "Here are examples of cases already judged, each with the verdict it deserves:"
CLOSING = "End of the examples. Judge the case given above."


class Example(BaseModel):
    """One labelled example: the template's ``variables``, the ``verdict`` and an optional ``rationale``."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    variables: dict[str, Any] = Field(min_length=1, description="the template's variables, as a row gives them")
    verdict: str | int | dict[str, int] = Field(
        description="the verdict: a choice (classifier, pairwise: A, B or tie), an integer on the scale (rating, "
        "G-Eval) or each criterion's integer (rubric)"
    )
    rationale: str | None = Field(None, description="why, in a sentence (shown after the verdict)")


def verdict_problem(spec: Any, verdict: Any) -> str | None:
    """What is wrong with ``verdict`` for the kind of ``spec`` (a validated template spec), or ``None``.

    A spec with ``choice_scores`` takes one of its choices; a pairwise spec A, B (or tie when ties are allowed);
    one with ``criteria`` and a ``scale`` a mapping of every criterion to an integer on the scale; one with a
    ``scale`` an integer on it. Another kind takes any text or integer.

    >>> from scorers.judges.spec import RatingSpec
    >>> verdict_problem(RatingSpec(kind="rating", prompt="Rate {{output}}", scale={"min": 1, "max": 3}), 4)
    'must be an integer from 1 to 3, got 4'
    """
    scale = getattr(spec, "scale", None)
    if getattr(spec, "choice_scores", None) is not None or getattr(spec, "kind", None) == "pairwise":
        choices = (
            list(spec.choice_scores)
            if hasattr(spec, "choice_scores")
            else ["A", "B", "tie"][: 3 if spec.allow_tie else 2]
        )
        return None if verdict in choices else f"must be one of {', '.join(choices)}, got {verdict!r}"
    if isinstance(getattr(spec, "criteria", None), list) and scale is not None:
        names = [criterion.name for criterion in spec.criteria]
        on_scale = isinstance(verdict, dict) and all(_on(scale, verdict.get(name)) for name in names)
        if on_scale and set(verdict) == set(names):
            return None
        return f"must map each criterion ({', '.join(names)}) to an integer from {scale.min} to {scale.max}, got {verdict!r}"
    if scale is not None and not _on(scale, verdict):
        return f"must be an integer from {scale.min} to {scale.max}, got {verdict!r}"
    if isinstance(verdict, dict):
        return f"must be text or an integer, got {verdict!r}"
    return None


def _on(scale: Any, value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and scale.min <= value <= scale.max


def variables_problem(examples: Sequence[Mapping[str, Any]], variables: Sequence[str]) -> tuple[str, str] | None:
    """``(key, message)`` for the first example whose variables are not exactly the template's, or ``None``.

    >>> variables_problem([{"variables": {"output": "x"}, "verdict": "Y"}], ("output", "input"))
    ('examples[0].variables', 'must give every template variable (output, input); missing: input')
    """
    for index, example in enumerate(examples):
        given = example["variables"]
        missing = [name for name in variables if name not in given]
        extra = [name for name in given if name not in variables]
        if missing or extra:
            what = [f"missing: {', '.join(missing)}"] * bool(missing) + [
                f"not in the template: {', '.join(extra)}"
            ] * bool(extra)
            return (
                f"examples[{index}].variables",
                f"must give every template variable ({', '.join(variables)}); {'; '.join(what)}",
            )
    return None


def examples_block(examples: Sequence[Mapping[str, Any]], variables: Sequence[str]) -> str:
    """The text that shows ``examples`` in the prompt (see the module docstring); ``variables`` in template order."""
    lines = [HEADING]
    for number, example in enumerate(examples, 1):
        lines += ["", f"Example {number}"]
        lines += [
            f"{name}: {render_value(example['variables'][name])}" for name in variables if name in example["variables"]
        ]
        verdict = example["verdict"]
        shown = ", ".join(f"{k}: {v}" for k, v in verdict.items()) if isinstance(verdict, Mapping) else verdict
        lines.append(f"Verdict: {shown}")
        if example.get("rationale"):
            lines.append(f"Rationale: {example['rationale']}")
    return "\n".join([*lines, "", CLOSING])
