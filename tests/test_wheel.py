"""The package as users get it: a wheel built from this checkout, installed in a fresh venv as
``pip install 'scorers[aiohttp]'`` (core, plus the extra ``python -m scorers loopback`` serves with), run from a
folder outside the checkout: ``list``, a text run, a judge run against the loopback server.

The venv is a real fresh one (no ``--system-site-packages``: that would lend it this environment's packages, and
a dependency missing from ``pyproject.toml`` would go unseen); pip resolves the dependencies from the configured
index like a user's install, from pip's cache after the first time (~60 s). The wheel is built from a
copy of the build inputs (pyproject.toml, README.md, scorers/, templates/): an in-tree build would reuse a stale
build/lib, which keeps modules deleted since.
"""

from __future__ import annotations

import json
import os
import selectors
import shutil
import signal
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any, Iterator

import pytest

import scorers

pytestmark = pytest.mark.slow  # builds the wheel and installs it in a fresh venv (30 s of CPU)

REPO = Path(__file__).resolve().parents[1]
#: The files a wheel build reads; anything else in the checkout must not matter to it.
BUILD_INPUTS = ("pyproject.toml", "README.md", "scorers", "templates")
#: Generous guards against a hung pip or server, not measured times.
PIP_LIMIT_S, STARTUP_LIMIT_S, RUN_LIMIT_S = 900, 120, 300

TEXT_ROWS = [
    {"id": "a", "output": "Paris", "expected": "Paris"},
    {"id": "b", "output": "kitten", "expected": "sitting"},
    {"id": "c", "output": "", "expected": "non-empty"},
]
JUDGE_ROWS = [
    {"id": "q1", "input": "What is the capital of France?", "output": "Paris", "expected": "Paris"},
    {"id": "q2", "input": "What is 2 + 2?", "output": "5", "expected": "4"},
]


def _run(*args: str | Path, limit: float = RUN_LIMIT_S, **kwargs: Any) -> subprocess.CompletedProcess:
    result = subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=limit, **kwargs)
    assert result.returncode == 0, f"{args} exited {result.returncode}:\n{result.stdout}\n{result.stderr}"
    return result


class Installed:
    """The venv the wheel went into, and the folder outside the checkout every command runs in."""

    def __init__(self, root: Path) -> None:
        self.wheel = next((root / "dist").glob("scorers-*.whl"))
        self.venv = root / "venv"
        self.python = self.venv / "bin" / "python"
        self.work = root / "work"
        self.work.mkdir()
        # nothing of this session's environment that could point Python or the judges elsewhere
        self.env = {
            name: value
            for name, value in os.environ.items()
            if not name.startswith(("PYTHON", "OPENAI_", "SCORERS_", "VIRTUAL_ENV"))
        }
        self.env["SCORERS_CACHE_DIR"] = str(root / "judge-cache")

    def scorers(self, *args: str | Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
        return _run(self.python, "-m", "scorers", *args, cwd=self.work, env=env or self.env)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    root = tmp_path_factory.mktemp("wheel")
    source = root / "source"
    source.mkdir()
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    for name in BUILD_INPUTS:
        if (REPO / name).is_dir():
            shutil.copytree(REPO / name, source / name, ignore=ignore)
        else:
            shutil.copy2(REPO / name, source / name)
    _run(
        sys.executable,
        "-m",
        "pip",
        "wheel",
        "-q",
        "--no-deps",
        "-w",
        root / "dist",
        source,
        limit=PIP_LIMIT_S,
        cwd=root,
    )
    _run(sys.executable, "-m", "venv", root / "venv", limit=PIP_LIMIT_S)
    installed = Installed(root)
    _run(
        installed.python,
        "-m",
        "pip",
        "install",
        "-q",
        f"{installed.wheel}[aiohttp]",
        limit=PIP_LIMIT_S,
        cwd=root,
        env=installed.env,
    )
    return installed


def _in_wheel(installed: Installed) -> set[str]:
    with zipfile.ZipFile(installed.wheel) as wheel:
        return set(wheel.namelist())


def test_the_wheel_holds_every_module_template_and_py_typed(installed: Installed) -> None:
    names = _in_wheel(installed)
    modules = {
        path.relative_to(REPO).as_posix()
        for path in (REPO / "scorers").rglob("*.py")
        if "__pycache__" not in path.parts
    }
    assert modules - names == set(), "modules missing from the wheel: is their package in pyproject.toml's list?"
    templates = {f"scorers/judge_templates/{path.name}" for path in (REPO / "templates").glob("*.yaml")}
    prompts = {path.relative_to(REPO).as_posix() for path in (REPO / "scorers/judges/prompts").rglob("*.md")}
    assert templates and prompts and (templates | prompts) - names == set()
    assert {"scorers/py.typed", "scorers/report/templates/report.html.j2"} <= names


def test_the_venv_imports_the_installed_package_without_other_extras(installed: Installed) -> None:
    code = (
        "import importlib.resources, importlib.util, json, scorers; print(json.dumps({"
        "'file': scorers.__file__, 'version': scorers.__version__, "
        "'typed': importlib.resources.files('scorers').joinpath('py.typed').is_file(), "
        "'missing': [m for m in ('sklearn', 'torch', 'sacrebleu', 'ray', 'pyspark') "
        "if importlib.util.find_spec(m) is None]}))"
    )
    seen = json.loads(_run(installed.python, "-c", code, cwd=installed.work, env=installed.env).stdout)
    assert Path(seen["file"]).is_relative_to(installed.venv), seen["file"]  # not this checkout
    assert seen["version"] == scorers.__version__ and seen["typed"]
    # scikit-learn is not a dependency any more; the extras' packages only come with their extras
    assert seen["missing"] == ["sklearn", "torch", "sacrebleu", "ray", "pyspark"]


def test_list(installed: Installed) -> None:
    names = installed.scorers("list").stdout
    assert all(name in names for name in ("ExactMatch", "Levenshtein", "Factuality", "BLEU"))
    # the console script runs the same CLI
    assert _run(installed.venv / "bin" / "scorers", "list", cwd=installed.work, env=installed.env).stdout == names


def test_a_text_run_gives_this_checkouts_numbers(installed: Installed) -> None:
    rows = installed.work / "rows.jsonl"
    rows.write_text("".join(json.dumps(row) + "\n" for row in TEXT_ROWS), encoding="utf-8")
    run = installed.scorers("run", rows.name, "-s", "ExactMatch", "-s", "Levenshtein")
    results = [json.loads(line) for line in run.stdout.splitlines()]
    assert [row["id"] for row in results] == ["a", "b", "c"] and "Levenshtein" in run.stderr  # the summary
    expected = [
        {
            name: scorers.get(name)(output=row["output"], expected=row["expected"]).score
            for name in ("ExactMatch", "Levenshtein")
        }
        for row in TEXT_ROWS
    ]
    assert [row["scores"] for row in results] == expected
    assert expected[1] == {"ExactMatch": 0.0, "Levenshtein": pytest.approx(4 / 7)}


@pytest.fixture
def loopback(installed: Installed) -> Iterator[dict[str, str]]:
    """``python -m scorers loopback --port 0`` from the venv; yields the environment its export lines give."""
    process = subprocess.Popen(
        [installed.python, "-m", "scorers", "loopback", "--port", "0"],
        cwd=installed.work,
        env=installed.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        bufsize=0,
    )
    try:
        printed = b""
        with selectors.DefaultSelector() as selector:
            selector.register(process.stdout, selectors.EVENT_READ)  # type: ignore[arg-type]
            while printed.count(b"\n") < 3 and selector.select(STARTUP_LIMIT_S):
                chunk = os.read(process.stdout.fileno(), 4096)  # type: ignore[union-attr]
                if not chunk:
                    break
                printed += chunk
        exports = dict(line.removeprefix("export ").partition("=")[::2] for line in printed.decode().splitlines())
        if list(exports) != ["OPENAI_BASE_URL", "OPENAI_API_KEY", "SCORERS_CACHE"]:
            process.kill()
            out, err = process.communicate()
            pytest.fail(f"no export lines from the loopback server: {(printed + out).decode()!r}\n{err.decode()}")
        yield {**installed.env, **exports}
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=STARTUP_LIMIT_S)
        assert process.returncode == 0 and f"stopped after {len(JUDGE_ROWS)} requests" in err.decode(), err
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()


def test_a_judge_run_against_loopback(installed: Installed, loopback: dict[str, str]) -> None:
    rows = installed.work / "qa.jsonl"
    rows.write_text("".join(json.dumps(row) + "\n" for row in JUDGE_ROWS), encoding="utf-8")
    run = installed.scorers("run", rows.name, "-s", "Factuality", "--metadata", env=loopback)
    results = [json.loads(line) for line in run.stdout.splitlines()]
    assert [row["id"] for row in results] == ["q1", "q2"]
    assert not any("errors" in row for row in results), run.stdout
    assert all(0.0 <= row["scores"]["Factuality"] <= 1.0 for row in results)
    assert {row["metadata_scores"]["Factuality"]["choice"] for row in results} <= set("ABCDE")
