"""``evaluate(..., workers=2)`` from each way of running Python without a script file: it works, or it is refused
at once with the reason (never a hang, never the "killed or unguarded script" error of a worker that died)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
#: Far above the second or two a run takes: only a hang reaches it, and then the test fails instead of wedging.
HANG_S = 120

BUILT_IN = """\
import scorers
run = scorers.evaluate([{"output": "a", "expected": "a"}, {"output": "a", "expected": "b"}] * 300,
                       ["ExactMatch", "Levenshtein"], workers=2)
print("SCORES", sum(r.scores["ExactMatch"] for r in run))
"""

DEFINED_HERE = """\
import scorers
from scorers import Scorer, text_field

class Shout(Scorer):  # no blank line inside: an interactive session ends the class body at one
    fields = (text_field("output"),)
    def _score(self, *, output):
        return self.make_score(float(output.isupper()))

run = scorers.evaluate([{"output": "A"}] * 10, [Shout()], workers=2)
print("SCORES", sum(r.scores["Shout"] for r in run))
"""


def python(form: str, script: str, tmp_path: Path) -> subprocess.CompletedProcess:
    """Run ``script`` as ``python -`` (stdin), ``python -c`` or an interactive ``python -i`` session fed a pipe."""
    arguments = {"stdin": ["-"], "-c": ["-c", script], "interactive": ["-i"]}[form]
    return subprocess.run(
        [sys.executable, *arguments],
        input=None if form == "-c" else script,
        capture_output=True,
        text=True,
        timeout=HANG_S,
        cwd=tmp_path,
    )


@pytest.mark.parametrize("form", ["-c", "interactive"])
def test_built_in_scorers_score_in_workers_without_a_script_file(form, tmp_path):
    result = python(form, BUILT_IN, tmp_path)
    assert "SCORES 300.0" in result.stdout, result.stderr
    assert "Error" not in result.stderr


@pytest.mark.parametrize("form", ["-c", "interactive"])
def test_a_scorer_class_of_an_interactive_main_is_refused_at_once_by_name(form, tmp_path):
    result = python(form, DEFINED_HERE, tmp_path)
    assert "SCORES" not in result.stdout
    assert "ConfigError: workers=2: worker processes cannot import Shout" in result.stderr
    assert "define it in a module" in result.stderr
    assert "ended abruptly" not in result.stderr and "Exception in initializer" not in result.stderr


@pytest.mark.parametrize("script", [BUILT_IN, DEFINED_HERE], ids=["built-in", "defined-here"])
def test_a_script_read_from_standard_input_is_refused_at_once(script, tmp_path):
    result = python("stdin", script, tmp_path)
    assert result.returncode == 1 and "SCORES" not in result.stdout
    assert "ConfigError: workers=2: worker processes start by re-running the main script" in result.stderr
    assert "read from standard input" in result.stderr and "save the script to a file" in result.stderr
    assert "ended abruptly" not in result.stderr and "FileNotFoundError" not in result.stderr


@pytest.mark.slow
def test_a_guarded_script_file_and_python_m_score_a_class_of_their_own_in_workers(tmp_path):
    guarded = DEFINED_HERE.replace("run = scorers", "if __name__ == '__main__':\n    run = scorers").replace(
        'print("SCORES"', '    print("SCORES"'
    )
    (tmp_path / "shout_script.py").write_text(guarded)
    for command in (["shout_script.py"], ["-m", "shout_script"]):
        result = subprocess.run(
            [sys.executable, *command], capture_output=True, text=True, timeout=HANG_S, cwd=tmp_path
        )
        assert "SCORES 10.0" in result.stdout, result.stderr
