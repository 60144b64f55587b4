"""ruff's lint rules, as configured in pyproject.toml ([tool.ruff]: no function above cyclomatic complexity 20
among them), hold over the whole repository, mypy ([tool.mypy]: --strict less warn_return_any) finds no error in
scorers/, and no module of scorers/ is longer than 800 lines."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_ruff_check_finds_nothing():
    result = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise", "."],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_format_leaves_every_file_as_it_is():
    result = subprocess.run(
        [sys.executable, "-m", "ruff", "format", "--no-cache", "--check", "."],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.slow  # about 16 s of CPU on a fresh clone
def test_mypy_finds_nothing():
    # The configuration (files, strictness, the third-party overrides) is pyproject.toml's; mypy's cache in
    # .mypy_cache makes a second run a few seconds (a fresh clone's first run checks everything).
    result = subprocess.run(
        [sys.executable, "-m", "mypy"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr


#: The longest a module of scorers/ may be: past it, a module holds more than one responsibility to split by.
MAX_MODULE_LINES = 800


def test_no_module_is_longer_than_800_lines():
    lengths = {path: len(path.read_text(encoding="utf-8").splitlines()) for path in (ROOT / "scorers").rglob("*.py")}
    assert lengths, "no module read"
    too_long = {str(path.relative_to(ROOT)): n for path, n in lengths.items() if n > MAX_MODULE_LINES}
    assert not too_long, f"modules above {MAX_MODULE_LINES} lines (split them by responsibility): {too_long}"
