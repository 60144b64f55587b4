"""The root conftest: a doctest whose scorer's extra is not installed is skipped, naming the extra; under CI=true
(every extra installed) such a skip is a failure. Run in a subprocess with sacrebleu made unimportable."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.slow  # each test runs pytest in a subprocess (about 4 s of CPU)

#: Makes ``sacrebleu`` unimportable, then runs pytest on BLEU's doctests (they need the ``text`` extra).
RUN = """
import importlib.abc, sys
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] == "sacrebleu":
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None
sys.meta_path.insert(0, Block())
import pytest
sys.exit(pytest.main(["scorers/text/bleu.py", "-q", "-rs", "-p", "no:cacheprovider"]))
"""


def _run(ci: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CI": ci}
    return subprocess.run([sys.executable, "-c", RUN], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


def test_doctests_of_a_missing_extra_are_skipped_naming_it() -> None:
    result = _run("")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 skipped" in result.stdout and "failed" not in result.stdout
    assert "pip install 'scorers[text]'" in result.stdout


def test_under_ci_such_a_skip_fails() -> None:
    result = _run("true")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "2 failed" in result.stdout and "skipped under CI=true" in result.stdout
