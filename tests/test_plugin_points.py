"""Every plugin point through a real installed distribution: a scorer, an engine, a judge kind, a judge template
format and a command, each declared in its entry-point group, with a broken plugin beside each that fails alone (a warning
naming it and the error; the rest of the command line works). ``python -m scorers`` runs in a subprocess whose
path starts with the distribution's folder, as an installed plugin package is found."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]

PLUGIN = '''
import argparse
from typing import ClassVar

from pydantic import Field

from scorers import Scorer, param, text_field
from scorers.cli import Command
from scorers.engines import Local
from scorers.judges.formats import FORMATS, TemplateFormat


class Shouting(Scorer):
    """1 if the output is upper case."""

    fields = (text_field("output"),)
    strict: bool = param("only upper case counts (else a final '!' does too)", default=True)

    def _score(self, *, output):
        return self.make_score(float(output.isupper() or (not self.strict and output.endswith("!"))))


class Careful(Local):
    """The local engine, under another name, with an option."""

    name: ClassVar[str] = "careful"
    patience: int = Field(1, description="how many times to look")


def _claims(data):
    return "question" in data


def _parse(data, path, problems):  # a question is a yes/no classifier of our own format
    ours = {"prompt": data["question"] + " {{output}}", "choice_scores": {"yes": 1, "no": 0}}
    return FORMATS.get("scorers").parse(ours, path, problems)


QUESTIONS = TemplateFormat(_claims, _parse)


def _add_hello(sub, templates):
    sub.add_parser("hello", help="say hello").add_argument("who")


def _hello(args: argparse.Namespace) -> int:
    print(f"hello {args.who}")
    return 0


HELLO = Command(_add_hello, _hello)
NOT_A_THING = 42
'''

ENTRY_POINTS = """\
[scorers]
Shouting = toyplugin:Shouting
BrokenScorer = no_such_module_xyz:Scorer

[scorers.engines]
careful = toyplugin:Careful
odd = toyplugin:NOT_A_THING

[scorers.judge_kinds]
yesno = toyplugin_yesno
maybe = no_such_module_xyz

[scorers.template_formats]
questions = toyplugin:QUESTIONS
broken-format = no_such_module_xyz:FORMAT

[scorers.commands]
hello = toyplugin:HELLO
broken-command = toyplugin:NOT_A_THING
"""


@pytest.fixture(scope="module")
def cli(tmp_path_factory: pytest.TempPathFactory):
    """``python -m scorers ARGS`` with the toy plugin distribution installed, from a folder of its own."""
    site = tmp_path_factory.mktemp("site")
    (site / "toyplugin.py").write_text(textwrap.dedent(PLUGIN))
    (site / "toyplugin_yesno.py").write_text((REPO / "tests" / "judges" / "yesno_kind.py").read_text())
    dist = site / "toyplugin-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: toyplugin\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(ENTRY_POINTS)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(REPO)])}

    def run(*args: str) -> subprocess.CompletedProcess:
        command = [sys.executable, "-m", "scorers", *args]
        return subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=site, env=env)

    return run


def test_a_plugin_command_runs_and_a_broken_one_says_why(cli) -> None:
    listed = cli("--help")
    assert listed.returncode == 0 and "{list,show,run," in listed.stdout and ",hello,broken-command}" in listed.stdout
    assert "say hello" in listed.stdout
    warning = (
        "command entry point 'broken-command' (toyplugin:NOT_A_THING) failed to load: "
        "TypeError: 42 is not a scorers.cli.Command"
    )
    assert warning in listed.stderr
    hello = cli("hello", "Ada")
    assert (hello.returncode, hello.stdout) == (0, "hello Ada\n")
    broken = cli("broken-command")
    assert broken.returncode == 2 and f"error: {warning}" in broken.stderr


def test_a_plugin_scorer_is_listed_shown_and_scores_and_a_broken_one_fails_alone(cli, tmp_path) -> None:
    listed = {row["name"]: row for row in json.loads(cli("list", "--json").stdout)}
    assert listed["Shouting"]["source"] == "toyplugin:Shouting"
    assert listed["Shouting"]["description"] == "1 if the output is upper case."
    assert "No module named 'no_such_module_xyz'" in listed["BrokenScorer"]["error"]
    shown = cli("show", "shouting")
    assert shown.returncode == 0 and "strict = true" in shown.stdout
    assert "only upper case counts (else a final '!' does too)" in shown.stdout
    data = tmp_path / "rows.jsonl"
    data.write_text('{"output": "HEY"}\n{"output": "hey!"}\n')
    scored = cli("run", str(data), "-s", "Shouting", "-p", "Shouting.strict=false", "-o", "-")
    assert [json.loads(line)["scores"]["Shouting"] for line in scored.stdout.splitlines()] == [1.0, 1.0]
    broken = cli("run", str(data), "-s", "BrokenScorer")
    assert broken.returncode == 2 and "scorer entry point 'BrokenScorer'" in broken.stderr


def test_a_plugin_engine_runs_with_its_option_and_a_broken_one_fails_alone(cli, tmp_path) -> None:
    helped = cli("run", "--help")
    assert "careful: patience (how many times to look)" in " ".join(helped.stdout.split())
    data = tmp_path / "rows.jsonl"
    data.write_text('{"output": "a", "expected": "a"}\n')
    scored = cli("run", str(data), "-s", "ExactMatch", "--engine", "careful", "--engine-option", "patience=3")
    assert scored.returncode == 0, scored.stderr
    refused = cli("run", str(data), "-s", "ExactMatch", "--engine", "careful", "--engine-option", "patince=3")
    assert refused.returncode == 2 and "the careful engine has no option 'patince'; did you mean 'patience'?" in (
        refused.stderr
    )
    odd = cli("run", str(data), "-s", "ExactMatch", "--engine", "odd")
    assert odd.returncode == 2
    assert "engine entry point 'odd' (toyplugin:NOT_A_THING) failed to load" in odd.stderr
    assert "not a subclass of scorers.engines.Engine" in odd.stderr


def test_a_plugin_template_format_loads_and_a_broken_one_fails_alone(cli, tmp_path) -> None:
    (tmp_path / "polite.yaml").write_text("question: Is this reply polite?\n")
    shown = cli("show", "--templates", str(tmp_path), "Polite")
    assert shown.returncode == 0, shown.stderr
    assert "Is this reply polite? {{output}}" in shown.stdout and "choice_scores:" in shown.stdout
    assert "template format entry point 'broken-format' (no_such_module_xyz:FORMAT) failed to load" in shown.stderr
    checked = cli("check", str(tmp_path / "polite.yaml"))
    assert checked.returncode == 0 and "1 template file checked, 0 problems" in checked.stderr


def test_a_plugin_judge_kind_loads_templates_and_a_broken_one_fails_alone(cli, tmp_path) -> None:
    (tmp_path / "kind_polite.yaml").write_text("kind: yesno\nprompt: Is this polite? {{output}}\nno_score: 0.25\n")
    shown = cli("show", "--templates", str(tmp_path), "KindPolite")
    assert shown.returncode == 0, shown.stderr
    assert "kind: yesno" in shown.stdout and "no_score = 0.25" in shown.stdout
    assert "judge kind entry point 'maybe' (no_such_module_xyz) failed to load" in shown.stderr
    checked = cli("check", str(tmp_path / "kind_polite.yaml"))
    assert checked.returncode == 0 and "1 template file checked, 0 problems" in checked.stderr
    unknown = tmp_path / "unknown.yaml"
    unknown.write_text("kind: maybe\nprompt: Is this polite? {{output}}\n")
    refused = cli("check", str(unknown))
    assert refused.returncode == 1 and "kind: must be one of classifier | rubric" in refused.stderr
