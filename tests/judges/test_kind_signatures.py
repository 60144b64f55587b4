"""Every judge kind's constructor signature, as ``help()``, IDEs and the registry's parameter hints read it
(``inspect.signature``): each parameter's name, kind, default and annotation (as text). Recorded from the
kinds' hand-written constructors before they were declared once (issue 16), so that the refactor keeps them.
"""

from __future__ import annotations

import importlib
import inspect
import sys
from typing import Any, Iterator

import pytest

from scorers.judges import GEvalJudge, LLMClassifier, PairwiseJudge, RatingJudge, RubricJudge
from scorers.judges.spec import remove_kind

MODULE = f"{__package__}.yesno_kind" if __package__ else "yesno_kind"

Row = tuple[str, str, str, str]
REQUIRED = "<required>"
PK, KW = "POSITIONAL_OR_KEYWORD", "KEYWORD_ONLY"

HEAD: list[Row] = [("name", PK, REQUIRED, "str"), ("prompt_template", PK, "None", "str | None")]
TEMPLATE: list[Row] = [
    ("messages", KW, "None", "Sequence[Mapping[str, str]] | None"),
    ("template", KW, "None", "JudgeTemplate | None"),
    ("examples", KW, "None", "Sequence[Mapping[str, Any]] | None"),
    ("engine", KW, "None", "LLMEngine | None"),
    ("client", KW, "None", "Any"),
    ("max_reasks", KW, "None", "int | None"),
    ("description", KW, "None", "str | None"),
    ("settings", KW, "None", "RequestSettings | Mapping[str, Any] | None"),
    ("calibration", KW, "None", "Any"),  # issue 27: a calibration file's map applied to the scores
]
USE_COT: list[Row] = [("use_cot", KW, "True", "bool | None")]


def request(response_mode: str = "'tools'") -> list[Row]:
    return [
        ("model", KW, "None", "str | None"),
        ("temperature", KW, "0", "float | None"),
        ("max_tokens", KW, "None", "int | None"),
        ("response_mode", KW, response_mode, "Literal['tools', 'json', 'json_object', 'text'] | None"),
        ("reasoning_effort", KW, "None", "str | None"),
        ("api", KW, "None", "str | None"),
        ("extra_args", KW, "None", "dict[str, Any] | None"),
        ("strip_reasoning", KW, "None", "bool | None"),
    ]


EXPECTED: dict[str, list[Row]] = {
    "LLMClassifier": [
        *HEAD,
        ("choice_scores", PK, "None", "Mapping[str, float] | None"),
        ("samples", KW, "1", "int"),
        ("aggregate", KW, "'mean'", "str"),
        *TEMPLATE,
        *USE_COT,
        *request(),
    ],
    "RubricJudge": [
        *HEAD,
        ("criteria", KW, REQUIRED, "Sequence[Mapping[str, Any] | Criterion]"),
        ("scale", KW, "None", "Mapping[str, int] | Scale | None"),
        ("threshold", KW, "None", "float | None"),
        *TEMPLATE,
        *USE_COT,
        *request(),
    ],
    "RatingJudge": [*HEAD, ("scale", KW, REQUIRED, "Mapping[str, int] | Scale"), *TEMPLATE, *USE_COT, *request()],
    "GEvalJudge": [  # G-Eval fixes use_cot: not a parameter
        *HEAD,
        ("criteria", KW, REQUIRED, "str"),
        ("steps", KW, "None", "Sequence[str] | None"),
        ("scale", KW, "None", "Mapping[str, int] | Scale | None"),
        ("score_mode", KW, "'logprobs'", "str"),
        ("top_logprobs", KW, "20", "int"),
        ("min_prob", KW, "0.01", "float"),
        ("samples", KW, "1", "int"),  # score_mode sampling's (issue 27)
        *TEMPLATE,
        *request("'text'"),
    ],
    "PairwiseJudge": [
        *HEAD,
        ("other", KW, "'expected'", "str"),
        ("swap", KW, "False", "bool"),
        ("allow_tie", KW, "True", "bool"),
        *TEMPLATE,
        *USE_COT,
        *request(),
    ],
    # the toy kind's hand-written constructor annotated settings as "RequestSettings | None", though it took a
    # mapping too (LLMJudge.request_fields): declared once, it reads as every kind's
    "YesNoJudge": [
        *HEAD,
        ("yes_score", KW, "1.0", "float"),
        ("no_score", KW, "0.0", "float"),
        *TEMPLATE,
        *USE_COT,
        *request(),
    ],
}


def rows(signature: inspect.Signature) -> list[Row]:
    """Each parameter as (name, kind, default's repr or ``<required>``, annotation as text)."""
    return [
        (
            p.name,
            p.kind.name,
            REQUIRED if p.default is inspect.Parameter.empty else repr(p.default),
            p.annotation if isinstance(p.annotation, str) else inspect.formatannotation(p.annotation),
        )
        for p in signature.parameters.values()
    ]


@pytest.fixture
def yesno() -> Iterator[type[Any]]:
    sys.modules.pop(MODULE, None)
    module = importlib.import_module(MODULE)
    try:
        yield module.YesNoJudge
    finally:
        remove_kind("yesno")
        sys.modules.pop(MODULE, None)


@pytest.mark.parametrize("cls", [LLMClassifier, RubricJudge, RatingJudge, GEvalJudge, PairwiseJudge])
def test_every_builtin_kind_keeps_its_signature(cls: type[Any]) -> None:
    assert rows(inspect.signature(cls)) == EXPECTED[cls.__name__]
    init = inspect.signature(cls.__init__)  # what the registry's parameter hints read
    assert list(init.parameters)[0] == "self" and rows(init)[1:] == EXPECTED[cls.__name__]
    assert init.return_annotation in ("None", None)


def test_the_toy_kind_keeps_its_signature(yesno: type[Any]) -> None:
    assert rows(inspect.signature(yesno)) == EXPECTED["YesNoJudge"]
    assert rows(inspect.signature(yesno.__init__))[1:] == EXPECTED["YesNoJudge"]


@pytest.mark.parametrize("cls", [LLMClassifier, RubricJudge, RatingJudge, GEvalJudge, PairwiseJudge])
def test_every_kinds_options_are_its_settings_as_its_constructor_takes_them(cls: type[Any]) -> None:
    """``options()`` (what ``show`` lists) and the signature come from the same declarations: the kind's own
    fields and the request settings, with the constructor's defaults, each with help from the spec model."""
    template = {row[0] for row in HEAD + TEMPLATE}
    parameters = {name: default for name, _, default, _ in EXPECTED[cls.__name__] if name not in template}
    options = cls.options()
    assert list(options) == list(parameters)
    assert {name: REQUIRED if o.required else repr(o.default) for name, o in options.items()} == parameters
    assert all(o.help and not o.help.startswith("(") for o in options.values())


def test_the_toy_kinds_options_need_no_code(yesno: type[Any]) -> None:
    options = yesno.options()
    assert list(options)[:2] == ["yes_score", "no_score"] and options["no_score"].default == 0.0
    assert options["yes_score"].help == "(its spec model gives no description)"
