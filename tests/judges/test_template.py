"""Judge templates: the YAML DSL, OpenAI evals specs, sandboxed rendering, `check` and registration."""

from __future__ import annotations

import os
import pickle
import textwrap
import warnings
from pathlib import Path
from typing import Any

import autoevals
import cloudpickle
import pytest

from scorers.errors import TemplateError
from scorers.judges.discovery import (
    _load_default_dirs,
    _register_files,
    builtin_template_dir,
    check_templates,
    load_template_file,
    parse_template,
    template_files,
)
from scorers.judges.formats import camel_case
from scorers.judges.template import JudgeTemplate, format_to_jinja
from scorers.registry import Registry

AUTOEVALS_TEMPLATES = Path(autoevals.__file__).parent / "templates"

BUILTINS = {
    "Factuality": ({"A": 0.4, "B": 0.6, "C": 1.0, "D": 0.0, "E": 1.0}, {"input", "expected", "output"}),
    "Battle": ({"Yes": 1.0, "No": 0.0}, {"instructions", "expected", "output"}),
    "ClosedQA": ({"Y": 1.0, "N": 0.0}, {"input", "output", "criteria"}),
    "Humor": ({"Yes": 1.0, "No": 0.0, "Unsure": 0.5}, {"output"}),
    "Possible": ({"A": 0.0, "B": 1.0}, {"input", "output"}),
    "Security": ({"Yes": 0.0, "No": 1.0, "Unsure": 0.5}, {"output"}),
    "Sql": ({"Correct": 1.0, "Incorrect": 0.0}, {"input", "expected", "output"}),
    "Summary": ({"A": 0.0, "B": 1.0}, {"input", "expected", "output"}),
    "Translation": ({"Y": 1.0, "N": 0.0}, {"language", "input", "expected", "output"}),
}

EVALS_SPEC_FILE = """\
grade-letter:
  prompt: |-
    Question: {input}
    Reference: {ideal}
    Candidate: {completion}
    Literal braces stay: {{not a variable}} and {{{{ jinja }}}}.
    Pick one letter.
  choice_strings: ABCDE
  choice_scores:
    A: 0.4
    B: 0.6
    C: 1.0
    D: 0.0
    E: 1.0
  input_outputs:
    input: completion
likert:
  prompt:
    - role: system
      content: You rate jokes.
    - role: user
      content: "Rate this joke from 1 to 5: {completion}"
  choice_strings: "12345"
  choice_scores: from_strings
  input_outputs:
    input: completion
unscored:
  prompt: "Is {completion} possible? A or B"
  choice_strings: AB
  input_outputs:
    input: completion
  eval_type: cot_classify
"""


def templates_in(path: Path) -> list[JudgeTemplate]:
    return [definition.template for definition in load_template_file(path)]


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def simple(prompt: str, **extra: object) -> JudgeTemplate:
    return parse_template({"prompt": prompt, "choice_scores": {"Y": 1, "N": 0}, **extra}, name="T").template


# ---------------------------------------------------------------- rendering
@pytest.mark.parametrize(
    "prompt, variables, expected",
    [
        ("{{output}}", {"output": "plain"}, "plain"),
        ("{{{output}}}", {"output": '<b>&"x"</b>'}, '<b>&"x"</b>'),  # no HTML escaping, triple-stache
        ("{{ output }}", {"output": "<i>"}, "<i>"),
        ("{{& output}}", {"output": "a&b"}, "a&b"),
        ("{{row.answer.text}}", {"row": {"answer": {"text": "deep"}}}, "deep"),  # dotted
        ("{{d.items}}", {"d": {"items": "the key, not the method"}}, "the key, not the method"),
        ("{{output}}", {"output": {"b": [1, 2], "a": None}}, '{"b": [1, 2], "a": null}'),  # JSON, not repr
        ("{{output}}", {"output": [True, 1.5, "x"]}, '[true, 1.5, "x"]'),
        ("{{output}}", {"output": 3}, "3"),
        ("{{output}}", {"output": ("t", 1)}, '["t", 1]'),
        ("{{output}}{{! a comment }}", {"output": "c"}, "c"),
        ("{% if output %}yes{% endif %}", {"output": "x"}, "yes"),
        ("{{__choices}}", {}, '["Y", "N"]'),
        ("{{output}}", {"output": "{{ not rendered again }}"}, "{{ not rendered again }}"),
    ],
)
def test_render(prompt: str, variables: dict, expected: str) -> None:
    template = simple(prompt)
    assert template.render(variables) == [{"role": "user", "content": expected}]
    # the plain-substitution fast path gives exactly what Jinja gives
    assert template._compiled[0].render({**variables, "__choices": ["Y", "N"]}) == expected


@pytest.mark.parametrize("dumps", [pickle.dumps, cloudpickle.dumps], ids=["pickle", "cloudpickle"])
def test_templates_pickle_without_compiled_code_and_render_the_same(dumps: Any) -> None:
    from scorers.judges.template import _environment

    variables = {"output": {"a": 1}, "items": ["x", "y"], "user": {"name": "Ann"}}
    template = parse_template(
        {
            "messages": [
                {"role": "system", "content": "Plain {{output}}"},
                {
                    "role": "user",
                    "content": "{% for i in items %}{{ i|upper }}{% endfor %} {{user.name}} {{__choices}}",
                },
            ],
            "choice_scores": {"Y": 1, "N": 0},
        },
        name="Both",
        file="/somewhere/both.yaml",
    ).template
    expected = template.render(variables)
    copy = pickle.loads(dumps(template))
    assert "_compiled" not in vars(copy) and copy == template
    assert copy.render(variables) == expected and "_compiled" in vars(copy)  # compiled again on first use
    assert copy._compiled[1].environment is _environment() and copy.content_hash() == template.content_hash()


def test_one_jinja_environment_per_process() -> None:
    from scorers.judges.template import _environment

    assert simple("{{ x|upper }}")._compiled[0].environment is _environment() is _environment()


@pytest.mark.parametrize(
    "prompt, plain",
    [
        ("a {{x}} b {{ y }}", True),
        ("{{{x}}}", True),
        ("{{x.y}}", False),
        ("{{ x|upper }}", False),
        ("{% if x %}{% endif %}", False),
        ("{{- x }}", False),
        ("{{ none }}", False),
        ("{{x}}\r\nmore", False),
    ],
)
def test_fast_path_only_for_plain_substitution(prompt: str, plain: bool) -> None:
    assert (simple(prompt)._plain[0] is not None) == plain


@pytest.mark.parametrize(
    "prompt, variables",
    [
        ("{{output}} {{ x }} {{{language}}} {{a.b.c}} {{ output }}", ("output", "x", "language", "a")),
        ("{% for item in items %}{{ item }}{% endfor %}{{ expected }}", ("items", "expected")),
        ("no variables at all", ()),
    ],
)
def test_variables_in_order_of_first_use(prompt: str, variables: tuple) -> None:
    assert simple(prompt).variables == variables


def test_missing_variable_names_variable_template_and_file(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "grade_answer.yaml",
        """\
        prompt: "Q {{input}} A {{output}} C {{criteria}}"
        choice_scores: {"Y": 1, "N": 0}
    """,
    )
    (template,) = templates_in(path)
    with pytest.raises(TemplateError) as info:
        template.render({"input": "q", "output": "a", "criteria": None})
    message = str(info.value)
    assert "'criteria'" in message and "GradeAnswer" in message and str(path) in message


def test_missing_nested_key_is_a_template_error() -> None:
    with pytest.raises(TemplateError, match="has no attribute 'b'"):
        simple("{{a.b}}").render({"a": {"c": 1}})


@pytest.mark.parametrize(
    "attack",
    [
        "{{ ''.__class__.__mro__ }}",
        "{{ ''.__class__.__mro__[1].__subclasses__() }}",
        "{{ output.__class__.__init__.__globals__ }}",
        "{{ cycler.__init__.__globals__.os }}",
        "{{ lipsum.__globals__['os'].popen('echo pwned').read() }}",
        "{{ output.format.__self__ }}",
        "{{ ''|attr('__class__') }}",
    ],
)
def test_sandbox_blocks_python_internals(attack: str) -> None:
    with pytest.raises(TemplateError, match="Python internals|undefined|rendering failed"):
        simple(attack).render({"output": "x"})


def test_unrenderable_object_is_a_template_error() -> None:
    with pytest.raises(TemplateError, match="cannot render a object"):
        simple("{{output}}").render({"output": object()})


def test_format_to_jinja_escapes_jinja_syntax_in_literal_text() -> None:
    source = format_to_jinja("{x} {{% raw %}} {{{{y}}}}", {"x": "output"})
    assert simple(source).render({"output": "o"})[0]["content"] == "o {% raw %} {{y}}"


@pytest.mark.parametrize(
    "stem, name",
    [("closed_q_a", "ClosedQA"), ("factuality", "Factuality"), ("my-judge", "MyJudge"), ("tone.v2", "ToneV2")],
)
def test_camel_case_names(stem: str, name: str) -> None:
    assert camel_case(stem) == name


# ---------------------------------------------------------------- validation
BAD_FILES = [
    ("bare_yes_no.yaml", 'prompt: "{{output}}"\nchoice_scores:\n  Yes: 1\n  No: 0\n', "choice_scores", "boolean"),
    ("int_key.yaml", 'prompt: "{{output}}"\nchoice_scores:\n  1: 1\n  "2": 0\n', "choice_scores", "not a string"),
    ("unknown_key.yaml", 'prompt: "{{output}}"\nchoice_scores: {"Y": 1}\nchoices: [Y]\n', "choices", "unknown key"),
    (  # a nested key names the keys of its own level
        "unknown_nested_key.yaml",
        'prompt: "{{c}}"\nchoice_scores: {"Y": 1}\nfields: {c: {type: conversation, budget: 9}}\n',
        "fields.c.budget",
        "unknown key (allowed: max_tokens, type)",
    ),
    ("duplicate.yaml", 'prompt: "{{output}}"\nchoice_scores:\n  "Y": 1\n  "Y": 0\n', "", "duplicate key"),
    ("out_of_range.yaml", 'prompt: "{{output}}"\nchoice_scores: {"Y": 5, "N": 0}\n', "choice_scores.Y", "[0, 1]"),
    ("bool_score.yaml", 'prompt: "{{output}}"\nchoice_scores: {"Y": true, "N": 0}\n', "choice_scores.Y", "[0, 1]"),
    ("no_scores.yaml", 'prompt: "{{output}}"\n', "choice_scores", "required"),
    (
        "both.yaml",
        'prompt: "a"\nmessages: [{role: user, content: b}]\nchoice_scores: {"Y": 1}\n',
        "prompt",
        "exactly one",
    ),
    (
        "bad_role.yaml",
        'messages: [{role: robot, content: b}]\nchoice_scores: {"Y": 1}\n',
        "messages[0].role",
        "must be one of",
    ),
    (
        "last_not_user.yaml",
        'messages: [{role: user, content: a}, {role: system, content: b}]\nchoice_scores: {"Y": 1}\n',
        "messages",
        "last message",
    ),
    ("bad_mode.yaml", 'prompt: a\nchoice_scores: {"Y": 1}\nresponse_mode: grammar\n', "response_mode", "tools"),
    ("bad_temp.yaml", 'prompt: a\nchoice_scores: {"Y": 1}\ntemperature: hot\n', "temperature", "number"),
    ("bad_cot.yaml", 'prompt: a\nchoice_scores: {"Y": 1}\nuse_cot: "yes"\n', "use_cot", "true or false"),
    ("section.yaml", 'prompt: "{{#items}}{{.}}{{/item}}"\nchoice_scores: {"Y": 1}\n', "prompt", "no matching"),
    ("syntax.yaml", 'prompt: "{% if %}"\nchoice_scores: {"Y": 1}\n', "prompt", "syntax error"),
    ("not_yaml.yaml", "prompt: [unclosed\n", "", "invalid YAML"),
    (
        "python_tag.yaml",
        'prompt: !!python/object/apply:os.system ["echo pwned"]\nchoice_scores: {"Y": 1}\n',
        "",
        "invalid YAML",
    ),
    ("list.yaml", "- a\n- b\n", "", "mapping"),
    (
        "evals_punct.yaml",
        'x:\n  prompt: "{completion}"\n  choice_strings: ["Y.", "N"]\n',
        "x.choice_strings",
        "punctuation",
    ),
    (
        "evals_from_n.yaml",
        'x:\n  prompt: "{completion}"\n  choice_strings: from_n\n',
        "x.choice_strings",
        "not supported",
    ),
    (
        "evals_bad_key.yaml",
        'x:\n  prompt: "{completion}"\n  choice_strings: AB\n  grader: gpt\n',
        "x.grader",
        "unknown key",
    ),
    ("evals_placeholder.yaml", 'x:\n  prompt: "{a.b}"\n  choice_strings: AB\n', "x.prompt", "plain variable"),
]


@pytest.mark.parametrize("name, text, key, message", BAD_FILES, ids=[f[0] for f in BAD_FILES])
def test_check_reports_file_and_key(tmp_path: Path, name: str, text: str, key: str, message: str) -> None:
    path = write(tmp_path, name, text)
    problems = check_templates([path])
    assert any(p.file == str(path) and p.key == key and message in p.message for p in problems), problems
    with pytest.raises(TemplateError, match=name.replace(".", r"\.")):
        load_template_file(path)


def test_check_reports_every_problem_of_a_directory(tmp_path: Path) -> None:
    for name, text, _key, _message in BAD_FILES[:4]:
        write(tmp_path, name, text)
    write(tmp_path, "good.yaml", 'prompt: "{{output}}"\nchoice_scores: {"Y": 1, "N": 0}\n')
    problems = check_templates([tmp_path])
    assert {Path(p.file).name for p in problems} == {f[0] for f in BAD_FILES[:4]}
    assert all(str(p).startswith(p.file) for p in problems)


def test_check_reports_a_name_defined_twice(tmp_path: Path) -> None:
    write(tmp_path, "a.yaml", 'name: Same\nprompt: x\nchoice_scores: {"Y": 1}\n')
    write(tmp_path, "b.yaml", 'name: same\nprompt: y\nchoice_scores: {"Y": 1}\n')
    (problem,) = check_templates([tmp_path])
    assert problem.key == "name" and problem.file.endswith("b.yaml") and "a.yaml" in problem.message


def test_check_missing_path(tmp_path: Path) -> None:
    (problem,) = check_templates([tmp_path / "nope.yaml"])
    assert "no such file" in problem.message


# ---------------------------------------------------------------- built-ins
def test_builtin_templates_are_valid() -> None:
    assert check_templates([builtin_template_dir()]) == []


@pytest.mark.parametrize("name", sorted(BUILTINS))
def test_builtin_choices_and_variables(name: str) -> None:
    templates = {t.name: t for f in template_files([builtin_template_dir()]) for t in templates_in(f)}
    scores, variables = BUILTINS[name]
    template = templates[name]
    assert dict(template.choice_scores) == scores and list(template.choice_scores) == list(scores)
    assert set(template.variables) == variables
    assert template.description


@pytest.mark.parametrize("path", sorted(AUTOEVALS_TEMPLATES.glob("*.yaml")), ids=lambda p: p.name)
def test_autoevals_template_files_load_unchanged(path: Path) -> None:
    (template,) = templates_in(path)
    ours = BUILTINS[template.name]
    assert dict(template.choice_scores) == ours[0]
    assert set(template.variables) == ours[1]


def test_autoevals_prompts_are_not_ours() -> None:
    """Our built-ins have their own wording: no line of an autoevals prompt appears in ours."""
    ours = "\n".join(p.read_text() for p in template_files([builtin_template_dir()]))
    for path in AUTOEVALS_TEMPLATES.glob("*.yaml"):
        for line in path.read_text().splitlines():
            if len(line.strip()) > 40:
                assert line.strip() not in ours, (path.name, line)


# ------------------------------------------------------------- OpenAI evals
def test_openai_evals_spec_file(tmp_path: Path) -> None:
    path = write(tmp_path, "modelgraded.yaml", EVALS_SPEC_FILE)
    letter, likert, unscored = templates_in(path)
    assert [t.name for t in (letter, likert, unscored)] == ["grade-letter", "likert", "unscored"]
    assert letter.format == "openai-evals" and letter.file == str(path)
    assert letter.choices == ("A", "B", "C", "D", "E")
    assert dict(letter.choice_scores) == {"A": 0.4, "B": 0.6, "C": 1.0, "D": 0.0, "E": 1.0}
    assert letter.variables == ("input", "expected", "output")  # completion → output, ideal → expected
    content = letter.render({"input": "q", "expected": "e", "output": "o"})[0]["content"]
    assert content.startswith("Question: q\nReference: e\nCandidate: o\n")
    assert "{not a variable} and {{ jinja }}" in content
    assert likert.choices == tuple("12345")
    assert dict(likert.choice_scores) == {"1": 0.0, "2": 0.25, "3": 0.5, "4": 0.75, "5": 1.0}
    assert "rescaled" in likert.description
    assert [m["role"] for m in likert.render({"output": "joke"})] == ["system", "user"]
    assert (
        unscored.choice_scores is None
        and unscored.choices == ("A", "B")
        and load_template_file(path)[2].settings == {"use_cot": True}
    )


def test_single_top_level_evals_spec(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "yes_no.yaml",
        'prompt: "Is {completion} ok?"\nchoice_strings: [Yes, "No"]\n'
        'choice_scores: {"Yes": 1, "No": 0}\ninput_outputs: {input: completion}\n',
    )
    problems = check_templates([path])
    assert [p.key for p in problems] == ["yes_no.choice_strings"] and "bool" in problems[0].message


# ------------------------------------------------------------- registration
def test_files_register_as_scorers(tmp_path: Path) -> None:
    write(tmp_path, "polite_reply.yaml", 'prompt: "Polite? {{output}}"\nchoice_scores: {"Y": 1, "N": 0}\n')
    write(
        tmp_path,
        "named.yaml",
        'name: ToneCheck\ndescription: Checks tone.\nprompt: "{{output}}"\nchoice_scores: {"Y": 1, "N": 0}\n',
    )
    write(tmp_path, "modelgraded.yaml", EVALS_SPEC_FILE)
    write(tmp_path, "broken.yaml", 'prompt: "{{output}}"\nchoice_scores:\n  Yes: 1\n')
    registry = Registry()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _register_files(registry, template_files([tmp_path]), "user")
    assert {"PoliteReply", "ToneCheck", "grade-letter", "likert", "unscored", "Broken"} <= set(registry.names())
    assert registry.entry("tonecheck").description == "Checks tone."
    judge = registry.get("PoliteReply")
    assert judge.name == "PoliteReply" and judge.kind == "llm"
    with pytest.raises(TemplateError, match="boolean"):
        registry.get("Broken")


def test_builtin_and_env_directories_register(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first, second = tmp_path / "one", tmp_path / "two"
    first.mkdir(), second.mkdir()
    write(first, "alpha.yaml", 'prompt: "{{output}}"\nchoice_scores: {"Y": 1, "N": 0}\n')
    write(second, "beta.yaml", 'prompt: "{{output}}"\nchoice_scores: {"Y": 1, "N": 0}\n')
    monkeypatch.setenv("SCORERS_TEMPLATES", os.pathsep.join([str(first), str(second)]))
    registry = Registry()
    _load_default_dirs(registry)
    assert set(BUILTINS) | {"Alpha", "Beta"} <= set(registry.names())
    assert registry.entry("Factuality").source == "builtin" and registry.entry("Alpha").source.endswith("alpha.yaml")


def test_name_taken_is_warned_not_silently_replaced(tmp_path: Path) -> None:
    write(tmp_path, "factuality.yaml", 'prompt: "mine {{output}}"\nchoice_scores: {"Y": 1, "N": 0}\n')
    registry = Registry()
    _register_files(registry, template_files([builtin_template_dir()]), "builtin")
    with pytest.warns(UserWarning, match="Factuality.*not registered"):
        _register_files(registry, template_files([tmp_path]), "user")
    assert registry.entry("Factuality").source == "builtin"


def test_global_registry_has_builtin_judges() -> None:
    import scorers
    import scorers.judges.discovery  # noqa: F401  (installs the loader)

    for name in BUILTINS:
        assert name in scorers.registry
        assert scorers.registry.entry(name).kind == "llm"


@pytest.mark.parametrize(
    "files, code", [((), 0), (("bare_yes_no.yaml",), 1), (("good.yaml", "unknown_key.yaml"), 1), (("good.yaml",), 0)]
)
def test_cli_check_exit_code_and_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, files: tuple, code: int
) -> None:
    from scorers.cli import main

    monkeypatch.delenv("SCORERS_TEMPLATES", raising=False)
    texts = {name: text for name, text, _key, _message in BAD_FILES}
    texts["good.yaml"] = 'prompt: "{{output}}"\nchoice_scores: {"Y": 1, "N": 0}\n'
    paths = [str(write(tmp_path, name, texts[name])) for name in files]
    assert main(["check", *paths]) == code
    err = capsys.readouterr().err
    assert f"{len(paths) or len(template_files([builtin_template_dir()]))} template file" in err
    for path in paths:
        assert (path in err) == (not path.endswith("good.yaml"))


@pytest.mark.parametrize(
    "variable, hint",
    [
        ("ouptut", "; did you mean 'output'?"),
        ("contxt", "; did you mean 'context'?"),
        ("thred", "; did you mean 'thread'?"),
        ("house_rules", ""),
    ],
)
def test_cli_check_warns_on_a_variable_that_is_no_known_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, variable: str, hint: str
) -> None:
    """A typo passed check with 0 problems, then a run asked for ``--map ouptut=COLUMN``: check now warns, saying
    the field meant; the file is still valid (exit 0), as a variable may name any column."""
    from scorers.cli import main

    monkeypatch.delenv("SCORERS_TEMPLATES", raising=False)
    path = write(tmp_path, "typo.yaml", f'prompt: "{{{{input}}}} {{{{{variable}}}}}"\nchoice_scores: {{"Y": 1}}\n')
    assert main(["check", str(path)]) == 0
    err = capsys.readouterr().err
    assert (
        f"warning: {path}: prompt: template 'Typo' reads {variable!r}, which is no known field{hint} "
        f"(a run needs a column {variable!r}, or --map {variable}=COLUMN)\n"
    ) in err
    assert err.endswith("1 template file checked, 0 problems, 1 warning\n")
    assert main(["check"]) == 0 and capsys.readouterr().err.endswith(", 0 problems, 0 warnings\n")  # the built-ins
