"""Templates that would cost without bound: each is a located problem or a TemplateError, never a hang.

Every case that hung, took the machine's memory or crashed before the limits existed runs
in a child process with a 2 GiB address-space limit and a timeout, so a regression fails
the test instead of wedging the machine.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from scorers.errors import TemplateError
from scorers.judges.discovery import check_templates, load_template_file
from scorers.judges.formats import Problems
from scorers.judges.limits import (
    MAX_NUMBER_DIGITS,
    MAX_RENDER_BUILT,
    MAX_RENDER_STEPS,
    MAX_RENDERED_CHARS,
    MAX_TEMPLATE_FILE_BYTES,
    MAX_TEMPLATE_NODES,
    MAX_YAML_DEPTH,
    MAX_YAML_NODES,
)
from scorers.judges.template import JudgeTemplate

pytestmark = pytest.mark.slow  # each case runs in a child process (about 0.6 s of CPU; 34 s for the module)

REPO = Path(__file__).resolve().parents[2]
MEMORY_LIMIT = 2 << 30
#: Far above what any case takes once bounded (well under a few seconds); only a hang reaches it.
HANG_TIMEOUT = 120


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def bounded(args: list[str], **kwargs: object) -> subprocess.CompletedProcess:
    """Run ``python ARGS`` in a child limited to 2 GiB of address space and :data:`HANG_TIMEOUT` seconds."""
    try:
        return subprocess.run(
            [sys.executable, *args],
            capture_output=True,
            text=True,
            timeout=HANG_TIMEOUT,
            preexec_fn=_limit_memory,
            cwd=REPO,
            **kwargs,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"still running after {HANG_TIMEOUT} s: {args}")


def in_child(code: str) -> str:
    """Run ``code`` in a bounded child; its stdout (the test fails on any other exit than 0)."""
    result = bounded(["-c", textwrap.dedent(code)])
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


def prompt_file(prompt: str) -> str:
    return f'prompt: {json.dumps(prompt)}\nchoice_scores: {{"Y": 1, "N": 0}}\n'


def laughs(levels: int = 9) -> str:
    """A YAML "billion laughs": nine levels of nine aliases each."""
    lines = ["l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    lines += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]" for i in range(1, levels)]
    return "\n".join(lines) + "\n" + prompt_file("{{output}}")


# Each: a file that hung, ate memory or crashed `check`, and what its problem says.
BOMB_FILES = {
    "power.yaml": (prompt_file("{{ 9 ** (9 ** 9) }}"), 1, f"the limit is {MAX_NUMBER_DIGITS:,}"),
    "repeat.yaml": (prompt_file("{{ 'x' * 10000000000 }}"), 1, f"the limit is {MAX_RENDERED_CHARS:,}"),
    "nested_range.yaml": (
        prompt_file("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"),
        1,
        "10,000,000,000 times",
    ),
    "center.yaml": (prompt_file("{{ 'x'|center(10000000000) }}"), 1, "'center' filter"),
    "laughs.yaml": (laughs(), 6, f"more than {MAX_YAML_NODES:,} values"),
    "deep.yaml": ("prompt: " + "[" * 20000 + "]" * 20000 + "\n", 1, f"nested more than {MAX_YAML_DEPTH} deep"),
    "self_alias.yaml": ("a: &a [x, *a]\n" + prompt_file("{{output}}"), 1, "refers to the node that contains it"),
    "list_key.yaml": ("? [a, b]\n: 1\n" + prompt_file("{{output}}"), 1, "a list cannot be a key"),
    "bad_date.yaml": ("created: 2024-13-45\n" + prompt_file("{{output}}"), None, "month must be in 1..12"),
    "long_number.yaml": ("n: " + "9" * 5000 + "\n" + prompt_file("{{output}}"), None, "4300 digits"),
    "open_comments.yaml": (prompt_file("{{! " * 100000), 1, "template syntax error"),
    "open_triples.yaml": (prompt_file("{{{ " * 100000), 1, "too deeply"),
    "open_ampersands.yaml": (prompt_file("{{& " * 100000), 1, "template syntax error"),
    "many_ifs.yaml": (
        prompt_file(" ".join(f"{{{{ v{i} }}}}{{% if v{i} %}}x{{% endif %}}" for i in range(20000))),
        1,
        f"more than {MAX_TEMPLATE_NODES:,} parts",
    ),
    "attribute_chain.yaml": (prompt_file("{{ x" + ".a" * 300 + " }}"), 1, "too deeply"),
    "parentheses.yaml": (prompt_file("{{ " + "(" * 5000 + "x" + ")" * 5000 + " }}"), 1, "too deeply"),
}


@pytest.mark.parametrize("name", sorted(BOMB_FILES))
def test_check_reports_each_bomb_file_with_its_line(tmp_path: Path, name: str) -> None:
    text, line, message = BOMB_FILES[name]
    path = tmp_path / name
    path.write_text(text)
    out = in_child(f"""
        from scorers.judges.discovery import check_templates
        for problem in check_templates([{str(path)!r}]):
            print(repr((problem.file, problem.line, problem.message)))
    """)
    problems = [eval(row) for row in out.splitlines()]  # noqa: S307  (reprs printed above)
    assert any(file == str(path) and found == line and message in text for file, found, text in problems), problems


def test_check_on_a_directory_of_bombs_reports_every_file_and_exits_1(tmp_path: Path) -> None:
    for name, (text, _line, _message) in BOMB_FILES.items():
        (tmp_path / name).write_text(text)
    (tmp_path / "good.yaml").write_text(prompt_file("Is {{output}} polite?"))
    result = bounded(
        ["-m", "scorers", "check", str(tmp_path)], env={k: v for k, v in os.environ.items() if k != "SCORERS_TEMPLATES"}
    )
    assert result.returncode == 1, result.stderr[-3000:]
    assert "Traceback" not in result.stderr
    for name, (_text, line, message) in BOMB_FILES.items():
        where = f"{tmp_path / name}:{line}: " if line else f"{tmp_path / name}: "
        assert any(row.startswith(where) and message in row for row in result.stderr.splitlines()), (
            name,
            result.stderr,
        )
    assert "good.yaml" not in result.stderr
    assert f"{len(BOMB_FILES) + 1} template files checked, {len(BOMB_FILES)} problems" in result.stderr


def test_a_file_past_the_size_limit_is_not_read(tmp_path: Path) -> None:
    path = tmp_path / "huge.yaml"
    path.write_text(prompt_file("x" * MAX_TEMPLATE_FILE_BYTES))
    (problem,) = check_templates([path])
    assert problem.file == str(path) and f"larger than {MAX_TEMPLATE_FILE_BYTES:,} bytes" in problem.message
    with pytest.raises(TemplateError, match="larger than"):
        load_template_file(path)


# Each: a prompt whose cost depends on the row, so only the render can stop it, and what the error says.
RENDER_BOMBS = {
    "power": ("{{ n ** (n ** n) }}", {"n": 9}, "digits"),
    "repeat": ("{{ text * n }}", {"text": "x", "n": 10**10}, "'*'"),
    "nested_range": (
        "{% for i in range(n) %}{% for j in range(n) %}{% endfor %}{% endfor %}",
        {"n": 100000},
        f"more than {MAX_RENDER_STEPS:,} steps",
    ),
    "doubling_set": (
        "{% set a = text %}" + "{% set a = a ~ a %}" * 40 + "{{ a }}",
        {"text": "xxxxxxxxxx"},
        "the template would build",
    ),
    "doubling_namespace": (
        "{% set ns = namespace(s=text) %}{% for i in range(100) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s }}",
        {"text": "xxxxxxxxxx"},
        "the template would build",
    ),
    "nested_lists": (
        "".join(f"{{% set l{i + 1} = [{', '.join([f'l{i}'] * 10)}] %}}" for i in range(9)) + "{{ l9|string }}",
        {"l0": "x" * 100},
        "the template would build",
    ),
    "macro_recursion": (
        "{% macro f(n) %}{% if n %}{{ f(n - 1) }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(60) }}",
        {},
        "steps",
    ),
    "captured_output": (
        "{% set x %}{% for i in range(100000) %}{{ big }}{% endfor %}{% endset %}{{ x|length }}",
        {"big": "y" * 1_000_000},
        f"more than {MAX_RENDER_BUILT:,} characters in all",
    ),
    "output": (
        "{% for i in range(100000) %}{{ big }}{% endfor %}",
        {"big": "y" * 1000},
        f"more than {MAX_RENDERED_CHARS:,} characters",
    ),
    "center_filter": ("{{ text|center(n) }}", {"text": "x", "n": 10**10}, "'center' filter"),
    "indent_filter": ("{{ text|indent(n) }}", {"text": "\n" * 1000, "n": 10**6}, "'indent' filter"),
    "format_method": ("{{ '{:>{w}}'.format('x', w=n) }}", {"n": 10**10}, "format()"),
    "printf": ("{{ '%*s' % (n, 'x') }}", {"n": 10**10}, "'%' formatting"),
    "replace_method": ("{{ text.replace('', other) }}", {"text": "x" * 100000, "other": "y" * 100000}, "replace()"),
    "join_method": ("{{ sep.join(range(100000)|map('string')) }}", {"sep": "y" * 100000}, "join()"),
    "slice_filter": ("{{ items|slice(n)|list|length }}", {"items": [1], "n": 10**10}, "steps"),
    "tojson_indent": ("{{ data|tojson(indent=n) }}", {"data": [[[1] * 1000] * 100], "n": 100000}, "JSON text"),
    "recursive_loop": (
        "{% for x in range(100000) recursive %}{% if x < 3 %}{{ loop(range(100000)) }}{% endif %}{% endfor %}",
        {},
        "rendering stopped",
    ),
}


@pytest.mark.parametrize("name", sorted(RENDER_BOMBS))
def test_a_render_that_would_cost_without_bound_is_a_template_error(tmp_path: Path, name: str) -> None:
    prompt, variables, message = RENDER_BOMBS[name]
    row = tmp_path / "row.json"
    row.write_text(json.dumps(variables))
    out = in_child(f"""
        import json
        from scorers.errors import TemplateError
        from scorers.judges.template import JudgeTemplate
        template = JudgeTemplate(name="Bomb", messages=(("user", {prompt!r}),), choice_scores={{"Y": 1}},
                                 file="bomb.yaml")
        try:
            template.render(json.loads(open({str(row)!r}).read()))
        except TemplateError as exc:
            print(exc)
        else:
            print("rendered")
    """)
    assert message in out and "Bomb" in out and "bomb.yaml" in out, out


def test_striptags_is_linear_and_keeps_jinjas_meaning() -> None:
    from markupsafe import Markup

    html = "<p>Hello <b>world</b> &amp; <!-- note --> all</p>   <br/>x"
    assert render("{{ html|striptags }}", html=html) == Markup(html).striptags()
    out = in_child("""
        from scorers.judges.template import JudgeTemplate
        template = JudgeTemplate(name="T", messages=(("user", "{{ html|striptags|length }}"),), choice_scores={"Y": 1})
        print(template.render({"html": "<a>x" * 300000})[0]["content"])
    """)
    assert out.strip() == "300000"


def test_run_with_a_templates_dir_holding_a_bomb_scores_the_good_judge_and_refuses_the_bad_one(
    tmp_path: Path, fake_api_key: str
) -> None:
    from scorers.testing import LoopbackLLM, Reply

    templates = tmp_path / "judges"
    templates.mkdir()
    (templates / "polite.yaml").write_text(prompt_file("Is {{output}} polite?"))
    (templates / "laughs.yaml").write_text(laughs())
    (templates / "power.yaml").write_text(BOMB_FILES["power.yaml"][0])
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps({"output": f"reply {i}"}) + "\n" for i in range(3)))
    with LoopbackLLM(default=Reply.choice("Y")) as server:
        env = {
            **os.environ,
            "OPENAI_API_KEY": fake_api_key,
            "OPENAI_BASE_URL": server.base_url,
            "SCORERS_CACHE_DIR": str(tmp_path / "cache"),
        }
        env.pop("SCORERS_TEMPLATES", None)
        good = bounded(["-m", "scorers", "run", str(data), "-s", "Polite", "--templates", str(templates)], env=env)
        assert good.returncode == 0, good.stderr[-3000:]
        assert [json.loads(line)["scores"]["Polite"] for line in good.stdout.splitlines()] == [1.0, 1.0, 1.0]
        bad = bounded(["-m", "scorers", "run", str(data), "-s", "Power", "--templates", str(templates)], env=env)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert str(templates / "power.yaml") in bad.stderr and f"the limit is {MAX_NUMBER_DIGITS:,}" in bad.stderr


# ------------------------------------------------------------ what check reports
def render(prompt: str, **variables: object) -> str:
    return JudgeTemplate(name="T", messages=(("user", prompt),), choice_scores={"Y": 1}).render(variables)[0]["content"]


@pytest.mark.parametrize(
    "prompt, message",
    [
        ("{% include 'other.txt' %}", "{% include %} is not supported"),
        ("{% import 'macros.txt' as m %}", "{% import %} is not supported"),
        ("{% from 'macros.txt' import m %}", "{% from ... import %} is not supported"),
        ("{% extends 'base.txt' %}", "{% extends %} is not supported"),
        ("{{ output.__class__ }}", "attribute '__class__' is refused by the sandbox"),
        ("{{ output._private }}", "write x['_private']"),
        ("{{ output.mro }}", "attribute 'mro' is refused"),
        ("{{ output|attr('__globals__') }}", "attribute '__globals__' is refused"),
        ("{{ range(1000000)|list }}", "range() of 1,000,000 numbers"),
        ("{{ '%99999999999s' % 'x' }}", "'%' formatting"),
        ("{{ output|unknown_filter }}", "No filter named 'unknown_filter'"),
    ],
)
def test_check_reports_what_the_sandbox_would_refuse(tmp_path: Path, prompt: str, message: str) -> None:
    path = tmp_path / "judge.yaml"
    path.write_text(prompt_file(prompt))
    problems = check_templates([path])
    assert any(p.key == "prompt" and p.line == 1 and message in p.message for p in problems), problems
    with pytest.raises(TemplateError, match="judge.yaml"):
        load_template_file(path)


def test_check_reports_every_problem_of_a_file_not_only_the_first(tmp_path: Path) -> None:
    path = tmp_path / "many.yaml"
    path.write_text(
        textwrap.dedent("""\
        messages:
          - role: system
            content: "{% if %}"
          - role: user
            content: |
              Fine {{ output }}
              {{ output.__class__ }}
              {% include 'x' %}
        choice_scores: {"Y": 2}
        temperature: hot
    """)
    )
    problems = {(p.key, p.line, p.message) for p in check_templates([path])}
    keys = sorted(key for key, _line, _message in problems)
    assert keys == [
        "choice_scores.Y",
        "messages[0].content",
        "messages[1].content",
        "messages[1].content",
        "temperature",
    ], problems
    assert (
        "messages[1].content",
        5,
        "line 2: attribute '__class__' is refused by the sandbox (it can reach "
        "Python internals); to read a key of that name, write x['__class__']",
    ) in problems
    assert any(key == "messages[0].content" and "syntax error" in message for key, _line, message in problems)


def test_a_template_built_in_code_lists_every_problem() -> None:
    with pytest.raises(TemplateError) as info:
        JudgeTemplate(
            name="Code", messages=(("system", "{{ x.__class__ }}"), ("user", "{% if %}")), choice_scores={"Y": 1}
        )
    message = str(info.value)
    assert "2 problems in template 'Code'" in message
    assert "messages[0].content" in message and "messages[1].content" in message


# ------------------------------------------------------- what still works as before
@pytest.mark.parametrize(
    "prompt, variables, expected",
    [
        (
            "{% for e in items %}{{ loop.index }}. {{ e.q ~ '?' }} {% endfor %}",
            {"items": [{"q": "a"}, {"q": "b"}]},
            "1. a? 2. b? ",
        ),
        ("{{ items|join(', ') }}|{{ items|map('upper')|join }}", {"items": ["a", "b"]}, "a, b|AB"),
        ("{{ '%-3s|' % x }}{{ '{:>3}'.format(x) }}|{{ x * 3 }}|{{ 2 ** 10 }}", {"x": "a"}, "a  |  a|aaa|1024"),
        ("{{ text|replace(' ', '_')|center(9)|indent(2) }}", {"text": "a b"}, "   a_b   "),
        ("{{ data|tojson }}", {"data": {"b": "<", "a": [1]}}, '{"a": [1], "b": "\\u003c"}'),
        ("{{ [1, 2] + [3] }} {{ {'k': x} }} {{ (x, x) }}", {"x": "v"}, '[1, 2, 3] {"k": "v"} ["v", "v"]'),
        (
            "{% set ns = namespace(n=0) %}{% for i in range(5) %}{% set ns.n = ns.n + i %}{% endfor %}{{ ns.n }}",
            {},
            "10",
        ),
        ("{{ row['_id'] }} {{ row.items }}", {"row": {"_id": 7, "items": "key"}}, "7 key"),
    ],
)
def test_ordinary_templates_render_as_before(prompt: str, variables: dict, expected: str) -> None:
    assert render(prompt, **variables) == expected


def test_a_long_data_driven_loop_is_within_the_limits() -> None:
    items = [{"q": f"question {i}", "a": i} for i in range(50_000)]
    content = render("{% for e in items %}{{ e.q }}={{ e.a }};{% endfor %}", items=items)
    assert content.count(";") == 50_000


def test_a_template_cannot_change_the_row_it_renders() -> None:
    rows = {"seen": ["a"]}
    with pytest.raises(TemplateError, match="Python internals"):
        render("{{ seen.append('b') }}", **rows)
    assert rows == {"seen": ["a"]}


@pytest.mark.parametrize("prompt", ["{{ output }}", "{% if output %}{{ output }}{% endif %}"], ids=["plain", "jinja"])
def test_a_value_nested_too_deeply_for_json_is_a_template_error(prompt: str) -> None:
    deep: list = []
    for _ in range(100_000):
        deep = [deep]
    with pytest.raises(TemplateError, match="nested too deeply"):
        render(prompt, output=deep)


def test_template_problems_checks_each_text_on_its_own() -> None:
    from scorers.judges.template import template_problems

    problems = template_problems([("a", "{% if %}"), ("b", "{{ 'x' * 10000000000 }}"), ("c", "fine {{ x }}")])
    assert [key for key, _message in problems] == ["a", "b"]


@pytest.mark.parametrize(
    "key, line",
    [
        ("fields.conversation.literal['conversation']", 3),  # a pydantic union member's name: was an endless loop
        ("criteria[2].anchors.5", 7),
        ("prompt", 1),
        ("unknown.deeper[x", None),
        ("[", None),
    ],
)
def test_a_problem_finds_its_closest_line_whatever_its_key(key: str, line: int | None) -> None:
    problems = Problems("t.yaml", {"prompt": 1, "fields.conversation": 3, "criteria[2]": 7})
    problems.add(key, "wrong")
    assert problems[0].line == line
