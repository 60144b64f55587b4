"""A judge kind is one module (issue 16): ``yesno_kind.py`` defines a spec model and a judge class, and
nothing else in the package is edited. Importing it registers the kind everywhere: a template with
``kind: yesno`` loads through the same YAML loader, the JSON Schema holds it, discovery builds its judge,
``check`` accepts its files, and the judge scores against a real openai client over HTTP (LoopbackLLM).
The kind is forgotten after each test, so the built-in kinds' schema and messages stay as they are.
"""

from __future__ import annotations

import importlib
import json
import pickle
import sys
from pathlib import Path
from types import ModuleType
from typing import Iterator

import jsonschema
import pytest

from scorers.errors import ConfigError, TemplateError
from scorers.judges import spec as spec_module
from scorers.judges.discovery import build_judge, check_templates, load_template_file, parse_template
from scorers.judges.spec import KIND_CLASSES, remove_kind
from scorers.llm import LLMEngine
from scorers.testing import LoopbackLLM, Reply

MODULE = f"{__package__}.yesno_kind" if __package__ else "yesno_kind"
BUILTIN = ("classifier", "rubric", "rating", "geval", "pairwise")
YAML = """\
kind: yesno
description: Is the answer polite?
prompt: |
  Is this answer polite?
  {{output}}
yes_score: 1
no_score: 0.25
use_cot: false
"""


@pytest.fixture
def yesno() -> Iterator[ModuleType]:
    """The toy kind's module, freshly imported (which registers the kind); forgotten afterwards."""
    sys.modules.pop(MODULE, None)
    module = importlib.import_module(MODULE)
    try:
        yield module
    finally:
        remove_kind("yesno")
        sys.modules.pop(MODULE, None)


@pytest.fixture
def template_file(tmp_path: Path) -> Path:
    path = tmp_path / "is_polite.yaml"
    path.write_text(YAML, encoding="utf-8")
    return path


def test_importing_the_module_registers_the_kind_and_forgetting_it_restores_the_builtins(yesno: ModuleType) -> None:
    assert spec_module.KINDS == (*BUILTIN, "yesno")
    assert KIND_CLASSES.get("yesno") is yesno.YesNoJudge and yesno.YesNoJudge.judge_kind == "yesno"
    assert spec_module.kind_model("yesno") is yesno.YesNoSpec
    remove_kind("yesno")
    assert spec_module.KINDS == BUILTIN and "yesno" not in KIND_CLASSES
    _, problems = spec_module.validate_spec({"kind": "yesno", "prompt": "Is {{output}} polite?"})
    assert problems == [("kind", "must be one of classifier | rubric | rating | geval | pairwise, got 'yesno'")]


def test_a_yesno_template_validates_through_the_same_loader(yesno: ModuleType, template_file: Path) -> None:
    (definition,) = load_template_file(template_file)
    assert definition.kind == "yesno" and definition.template.name == "IsPolite"
    assert dict(definition.settings) == {"yes_score": 1, "no_score": 0.25, "use_cot": False}
    parsed = parse_template({"kind": "yesno", "prompt": "Is {{output}} polite?"}, name="Polite")
    assert parsed.kind == "yesno" and parsed.template.name == "Polite"
    with pytest.raises(TemplateError) as caught:  # the kind's own keys are checked, located and worded as usual
        parse_template({"kind": "yesno", "prompt": "Is {{output}} polite?", "yes_score": 2, "maybe": 1})
    assert "yes_score: input should be less than or equal to 1, got 2" in str(caught.value)
    assert "maybe: unknown key (allowed: " in str(caught.value)


def test_the_json_schema_holds_the_kind_and_the_builtins_unchanged(
    yesno: ModuleType, template_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from scorers.cli import main

    assert main(["schema"]) == 0  # what `python -m scorers schema` prints in a process that imported the module
    schema = json.loads(capsys.readouterr().out)
    assert schema == json.loads(json.dumps(spec_module.json_schema()))
    assert "YesNoSpec" in schema["$defs"] and {"$ref": "#/$defs/YesNoSpec"} in schema["oneOf"]
    import yaml

    validator = jsonschema.Draft202012Validator(schema)
    assert not list(validator.iter_errors(yaml.safe_load(YAML)))
    assert list(validator.iter_errors({**yaml.safe_load(YAML), "no_score": 3}))
    remove_kind("yesno")  # the built-in kinds' schema is the one without the toy kind, as before
    without = spec_module.json_schema()
    assert "YesNoSpec" not in without["$defs"] and len(without["oneOf"]) == len(BUILTIN)
    assert {k: v for k, v in schema["$defs"].items() if k != "YesNoSpec"} == without["$defs"]


def test_discovery_builds_the_judge_and_it_scores_over_http(yesno: ModuleType, template_file: Path) -> None:
    (definition,) = load_template_file(template_file)
    reply = Reply.tool_call({"answer": "no"}, name="record_answer")
    with LoopbackLLM(default=reply) as server:
        engine = LLMEngine(base_url=server.base_url, api_key="placeholder", cache=False)
        judge = build_judge(definition, engine=engine)
        assert isinstance(judge, yesno.YesNoJudge)
        score = judge(output="Go away.")
        batch = judge.score_batch([{"output": "Thanks!"}, {"output": "Go away."}])
    assert score.score == 0.25 and score.metadata["answer"] == "no" and score.metadata["usage"]["requests"] == 1
    assert [s.score for s in batch] == [0.25, 0.25]
    body = server.chat_requests[0].body
    assert body["tool_choice"]["function"]["name"] == "record_answer" and "Go away." in str(body["messages"])
    params = judge.params()
    assert params["yes_score"] == 1 and params["no_score"] == 0.25 and params["use_cot"] is False
    assert judge.describe()["kind"] == "yesno" and judge.describe()["template_file"] == str(template_file)
    assert score.metadata["signature"] == judge.signature()
    copy = pickle.loads(pickle.dumps(judge))  # a judge goes to worker processes
    assert type(copy) is yesno.YesNoJudge and copy.signature() == judge.signature()


def test_the_judge_built_in_code_checks_its_settings_like_a_template(yesno: ModuleType) -> None:
    judge = yesno.YesNoJudge("Polite", "Is {{output}} polite?", response_mode="json", temperature=0.3)
    assert judge.response_mode == "json" and judge.temperature == 0.3 and judge.required_fields() == ["output"]
    with pytest.raises(ConfigError, match=r"Polite: invalid settings: no_score: input should be greater"):
        yesno.YesNoJudge("Polite", "Is {{output}} polite?", no_score=-1)
    with pytest.raises(ConfigError, match="response_mode 'text' is not available for a yesno judge"):
        yesno.YesNoJudge("Polite", "Is {{output}} polite?", response_mode="text")


def test_check_accepts_the_kind_and_reports_its_problems(
    yesno: ModuleType, template_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from scorers.cli import main

    assert check_templates([template_file]) == []
    assert main(["check", str(template_file)]) == 0
    bad = tmp_path / "bad.yaml"
    bad.write_text(YAML.replace("no_score: 0.25", "no_score: 1.5"), encoding="utf-8")
    (problem,) = check_templates([bad])
    assert problem.key == "no_score" and problem.line == 7
    assert main(["check", str(bad)]) == 1
    capsys.readouterr()


def test_a_second_class_cannot_take_a_registered_kind(yesno: ModuleType) -> None:
    from scorers.judges import TemplatedJudge

    with pytest.raises(ValueError, match="judge kind 'yesno' is already registered"):
        type("OtherYesNo", (TemplatedJudge,), {"spec_model": yesno.YesNoSpec, "__module__": __name__})
    assert KIND_CLASSES.get("yesno") is yesno.YesNoJudge
