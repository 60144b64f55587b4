"""The ``examples:`` key of every template kind: validated by the spec model against the kind, rendered in one
fixed block before the instruction, part of the judge's identity; ``provenance:`` is kept out of it. A judge
without examples is unchanged (its pinned signature: tests/judges/test_pinned_signatures.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

import scorers
from scorers.errors import ConfigError, TemplateError
from scorers.judges import GEvalJudge, LLMClassifier, PairwiseJudge, RatingJudge, RubricJudge, TemplatedJudge
from scorers.judges.discovery import build_judge, check_templates, load_template_file, parse_template
from scorers.judges.examples import CLOSING, HEADING, examples_block
from scorers.judges.spec import json_schema, validate_spec
from scorers.llm import LLMEngine
from scorers.registry import registry
from scorers.testing import LoopbackLLM, Reply

TEMPLATE_JUDGES = sorted(
    name
    for name in registry.names()
    if registry.entry(name).kind == "llm" and isinstance(registry.get(name), TemplatedJudge)
)


def verdict_for(judge: Any) -> Any:
    """A valid verdict of the judge's kind: its last choice, its scale's top, or every criterion's top."""
    if hasattr(judge, "criteria") and isinstance(judge.criteria, (list, tuple)):
        return {c.name: judge.scale.max for c in judge.criteria}
    if getattr(judge, "choices", None):
        return judge.choices[-1]
    return judge.scale.max


def example_for(judge: Any) -> dict[str, Any]:
    return {"variables": {v: f"example {v}" for v in judge.template.variables}, "verdict": verdict_for(judge)}


@pytest.mark.parametrize("name", TEMPLATE_JUDGES)
def test_every_template_judge_takes_examples_and_they_change_its_identity(name: str) -> None:
    plain = scorers.get(name)
    shown = scorers.get(name, examples=[example_for(plain)])
    assert shown.signature() != plain.signature()
    assert shown.signature()["template"]["hash"] != plain.signature()["template"]["hash"]
    assert scorers.get(name, examples=[]).signature() == plain.signature()


@pytest.mark.parametrize("name", TEMPLATE_JUDGES)
def test_the_examples_come_before_the_instruction_in_the_last_message(name: str) -> None:
    plain = scorers.get(name)
    example = example_for(plain)
    shown = scorers.get(name, examples=[example])
    image = scorers.Attachment.from_base64(scorers.attachments.TINY_PNG)
    conversation = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    row = {v: f"row {v}" for v in plain.variables()}
    row.update({v: image for v in plain.template.attachments})
    row.update({v: conversation for v in plain.template.budgets()})
    before = plain.render(row, "INSTRUCTION")[-1]["content"]
    after = shown.render(row, "INSTRUCTION")[-1]["content"]
    if isinstance(before, list):  # content parts (attachments): the text part that ends the message
        before, after = before[-1]["text"], after[-1]["text"]
    block = examples_block([example], plain.template.variables)
    assert after == before.replace("\n\nINSTRUCTION", f"\n\n{block}\n\nINSTRUCTION")


def test_the_block_is_numbered_and_shows_variables_in_template_order() -> None:
    examples = [
        {"variables": {"output": "4", "input": "2+2?"}, "verdict": "Y", "rationale": "right"},
        {"variables": {"output": {"n": 5}, "input": "2+3?"}, "verdict": "N"},
    ]
    assert examples_block(examples, ("input", "output")) == "\n".join(
        [
            HEADING,
            "",
            "Example 1",
            "input: 2+2?",
            "output: 4",
            "Verdict: Y",
            "Rationale: right",
            "",
            "Example 2",
            "input: 2+3?",
            'output: {"n": 5}',
            "Verdict: N",
            "",
            CLOSING,
        ]
    )


KINDS = [
    (LLMClassifier, {"choice_scores": {"Y": 1, "N": 0}}, "Y", "Maybe", "must be one of Y, N, got 'Maybe'"),
    (PairwiseJudge, {}, "tie", "C", "must be one of A, B, tie, got 'C'"),
    (PairwiseJudge, {"allow_tie": False}, "A", "tie", "must be one of A, B, got 'tie'"),
    (RatingJudge, {"scale": {"min": 1, "max": 5}}, 5, 6, "must be an integer from 1 to 5, got 6"),
    (RatingJudge, {"scale": {"min": 1, "max": 5}}, 1, "3", "must be an integer from 1 to 5, got '3'"),
    (GEvalJudge, {"criteria": "Brief.", "steps": ["Read it."]}, 1, 0, "must be an integer from 1 to 5, got 0"),
    (
        RubricJudge,
        {"criteria": [{"name": "brief", "description": "Brief."}, {"name": "clear", "description": "Clear."}]},
        {"brief": 2, "clear": 5},
        {"brief": 2},
        "must map each criterion (brief, clear) to an integer from 1 to 5",
    ),
]


@pytest.mark.parametrize(("cls", "settings", "good", "bad", "problem"), KINDS)
def test_a_verdict_is_checked_against_the_kind(cls: type, settings: dict, good: Any, bad: Any, problem: str) -> None:
    prompt = "Compare {{output}} with {{expected}}" if cls is PairwiseJudge else "Judge {{output}}"
    variables = {"output": "x", "expected": "y"} if cls is PairwiseJudge else {"output": "x"}
    judge = cls("J", prompt, examples=[{"variables": variables, "verdict": good}], **settings)
    assert judge.template.examples == ({"variables": variables, "verdict": good},)
    with pytest.raises(
        ConfigError, match=r"examples\[0\]\.verdict: " + problem.replace("(", r"\(").replace(")", r"\)")
    ):
        cls("J", prompt, examples=[{"variables": variables, "verdict": bad}], **settings)


def test_an_example_must_give_exactly_the_template_variables() -> None:
    with pytest.raises(ConfigError, match=r"'examples\[0\]\.variables'.*missing: input; not in the template: inptu"):
        LLMClassifier(
            "J",
            "{{input}} {{output}}",
            {"Y": 1, "N": 0},
            examples=[{"variables": {"output": "x", "inptu": "y"}, "verdict": "Y"}],
        )


def test_the_schema_has_examples_and_provenance_on_every_kind() -> None:
    schema = json_schema()
    for kind in schema["$defs"].values():
        if "kind" in kind.get("properties", {}):
            assert {"examples", "provenance"} <= set(kind["properties"])
    _, problems = validate_spec({"prompt": "{{output}}", "choice_scores": {"Y": 1}, "examples": [{"verdict": "Y"}]})
    assert problems == [("examples[0].variables", "is required")]


def test_provenance_is_no_part_of_the_identity() -> None:
    data = {"prompt": "Polite? {{output}}", "choice_scores": {"Y": 1, "N": 0}}
    plain = build_judge(parse_template(data, name="P"))
    noted = build_judge(parse_template({**data, "provenance": {"made_by": "hand", "n": 3}}, name="P"))
    assert noted.signature() == plain.signature()


def test_a_file_with_examples_loads_with_check_and_runs(tmp_path: Path) -> None:
    path = tmp_path / "polite.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "name": "PoliteShown",
                "prompt": "Is this polite?\n{{output}}",
                "choice_scores": {"Y": 1, "N": 0},
                "examples": [{"variables": {"output": "Go away."}, "verdict": "N", "rationale": "dismissive"}],
                "provenance": {"made_by": "a test"},
            }
        )
    )
    assert check_templates([path]) == []
    (definition,) = load_template_file(path)
    with LoopbackLLM(default=Reply.choice("Y")) as server:
        server.script(Reply.choice("N"), match="Example 1\noutput: Go away.")
        engine = LLMEngine(base_url=server.base_url, api_key="placeholder", cache=False)
        score = build_judge(definition, engine=engine)(output="Thank you!")
    assert score.metadata["choice"] == "N"  # the reply that answers prompts showing the example


def test_a_bad_example_in_a_file_is_a_problem_of_its_key(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(
        "kind: rating\nprompt: Rate {{output}}\nscale: {min: 1, max: 3}\n"
        "examples:\n  - variables: {output: x}\n    verdict: 9\n"
    )
    (problem,) = check_templates([path])
    assert problem.key == "examples[0].verdict" and "from 1 to 3, got 9" in problem.message
    with pytest.raises(TemplateError):
        load_template_file(path)
