"""docs/development.md's "Extending scorers", as printed: each worked example is a module of a temporary package
(``my_package``), registered through the entry points of the page's ``pyproject.toml`` block as an installed
distribution is, and used through the command line and the library in a subprocess whose path starts with the
package's folder. Each example imports only public names: a module path without a part starting with ``_``, and a
name that module exports (its ``__all__``)."""

from __future__ import annotations

import ast
import importlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

tomllib = pytest.importorskip("tomllib" if sys.version_info >= (3, 11) else "tomli")
pytestmark = pytest.mark.slow  # a subprocess per command (an interpreter start and scorers' import each)

ROOT = Path(__file__).resolve().parents[1]
SECTION = (ROOT / "docs" / "development.md").read_text(encoding="utf-8").split("\n## Extending scorers\n", 1)[1]
SECTION = SECTION.split("\n## ", 1)[0]
#: module path ("my_package/shouting.py", the first words of its docstring) -> the block as printed
EXAMPLES = {
    re.match(r'"""(my_package/\w+\.py)', block)[1]: block  # type: ignore[index]
    for block in re.findall(r"^```python\n(.*?)^```$", SECTION, flags=re.M | re.S)
}
PYPROJECT = tomllib.loads(re.search(r"^```toml\n(.*?)^```$", SECTION, flags=re.M | re.S)[1])  # type: ignore[index]


def test_the_section_has_an_example_of_each_plugin_and_registers_the_ones_looked_up_by_name() -> None:
    assert set(EXAMPLES) >= {
        "my_package/shouting.py",
        "my_package/quickeval.py",
        "my_package/threads.py",
        "my_package/agreement.py",
    }
    groups = PYPROJECT["project"]["entry-points"]
    assert groups["scorers"] == {"Shouting": "my_package.shouting:Shouting"}
    assert groups["scorers.engines"] == {"threads": "my_package.threads:Threads"}
    assert groups["scorers.judge_kinds"] == {"agreement": "my_package.agreement"}


def _exports(module: ModuleType) -> set[str]:
    return set(getattr(module, "__all__", ()))


def _public_module(name: str) -> bool:
    if name.rpartition(".")[2].startswith("_"):
        return False
    try:
        importlib.import_module(name)
    except ImportError:
        return False
    return True


def _private_imports(source: str) -> list[str]:
    """What ``source`` imports from scorers that is not public."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and (node.module or "").partition(".")[0] == "scorers":
            module_name = node.module or ""
            if any(part.startswith("_") for part in module_name.split(".")):
                found.append(module_name)
                continue
            module = importlib.import_module(module_name)
            for alias in node.names:
                if alias.name not in _exports(module) and not _public_module(f"{module_name}.{alias.name}"):
                    found.append(f"{module_name}.{alias.name}")
        elif isinstance(node, ast.Import):
            found += [
                a.name for a in node.names if a.name.startswith("scorers.") and "._" in a.name.replace("scorers.", ".")
            ]
    return found


@pytest.mark.parametrize("path", sorted(EXAMPLES))
def test_an_example_imports_only_public_names(path: str) -> None:
    assert _private_imports(EXAMPLES[path]) == [], f"docs/development.md's {path} imports private names"


def test_the_public_check_catches_private_imports() -> None:
    assert _private_imports("from scorers._util import lazy\nfrom scorers.base import _MISSING\n") == [
        "scorers._util",
        "scorers.base._MISSING",
    ]
    assert _private_imports("from scorers import Scorer, judges\nimport scorers.engines\n") == []


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding ``my_package`` (the examples) and its distribution's metadata, with the entry points."""
    folder = tmp_path_factory.mktemp("site")
    package = folder / "my_package"
    package.mkdir()
    (package / "__init__.py").write_text("")
    for path, text in EXAMPLES.items():
        (folder / path).write_text(text, encoding="utf-8")
    info = folder / "my_package-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: my-package\nVersion: 1.0\n")
    lines = []
    for group, entries in PYPROJECT["project"]["entry-points"].items():
        lines += [f"[{group}]", *(f"{name} = {target}" for name, target in entries.items()), ""]
    (info / "entry_points.txt").write_text("\n".join(lines))
    return folder


def python(site: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, **(env or {}), "PYTHONPATH": os.pathsep.join([str(site), str(ROOT)])}
    run = subprocess.run(
        [sys.executable, *args], cwd=site, env=environment, capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, f"python {' '.join(args)} exited {run.returncode}\n{run.stdout}\n{run.stderr}"
    return run


def test_the_scorer_is_listed_shown_and_scores_with_its_parameter(site: Path) -> None:
    assert "Shouting" in python(site, "-m", "scorers", "list").stdout
    shown = python(site, "-m", "scorers", "show", "Shouting").stdout
    assert "share of upper-case letters that counts as shouting" in shown
    (site / "rows.jsonl").write_text('{"output": "HEY there"}\n{"output": "HEY THERE"}\n')
    python(
        site, "-m", "scorers", "run", "rows.jsonl", "-s", "Shouting", "-p", "Shouting.threshold=0.8", "-o", "s.jsonl"
    )
    rows = [json.loads(line) for line in (site / "s.jsonl").read_text().splitlines()]
    assert [row["scores"]["Shouting"] for row in rows] == [0.0, 1.0]


def test_the_adapter_scores_in_the_harness_convention(site: Path) -> None:
    script = (
        "from my_package.quickeval import metric\n"
        "m = metric('Levenshtein')\n"
        "print(m.__name__, m('kitten', 'sitting'))\n"
        "try:\n    metric('ExactMatch', ignore_cse=True)\n"
        "except Exception as error:\n    print(type(error).__name__, error)\n"
    )
    out = python(site, "-c", script).stdout.splitlines()
    assert out[0] == "Levenshtein 0.5714285714285714"
    assert out[1].startswith("ConfigError ExactMatch: unknown parameter 'ignore_cse'; did you mean 'ignore_case'?")


def test_the_engine_runs_with_its_option_and_writes_what_the_local_engine_writes(site: Path) -> None:
    helped = " ".join(python(site, "-m", "scorers", "run", "--help").stdout.split())
    assert "threads: threads (chunks scored at once); threads: chunk_size (rows per chunk)" in helped
    rows = "".join(json.dumps({"output": "Paris", "expected": e}) + "\n" for e in ["Paris", "Pars", "Lyon"] * 50)
    (site / "cities.jsonl").write_text(rows)
    base = ["-m", "scorers", "run", "cities.jsonl", "-s", "ExactMatch", "-s", "Levenshtein"]
    python(site, *base, "--engine", "threads", "--engine-option", "threads=2", "-o", "threads.jsonl")
    python(site, *base, "-o", "local.jsonl")
    assert (site / "threads.jsonl").read_bytes() == (site / "local.jsonl").read_bytes()
    refused = subprocess.run(
        [sys.executable, *base, "--engine", "threads", "--engine-option", "thread=2", "-o", "x.jsonl"],
        cwd=site,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(ROOT)])},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert refused.returncode == 2 and "the threads engine has no option 'thread'" in refused.stderr, refused.stderr


TEMPLATE = """\
kind: agreement
description: Does the output say what the expected answer says?
prompt: |
  Does this answer: {{output}}
  say the same as: {{expected}}?
disagree_score: 0.25
"""


def test_the_judge_kind_is_checked_shown_and_judges_over_http(site: Path) -> None:
    from scorers.testing import LoopbackLLM, RecordedRequest, Reply

    templates = site / "my_templates"
    templates.mkdir()
    (templates / "same_answer.yaml").write_text(TEMPLATE)
    python(site, "-m", "scorers", "check", "my_templates")
    shown = python(site, "-m", "scorers", "show", "SameAnswer", "--templates", "my_templates").stdout
    assert "the score of an output that disagrees" in shown
    (site / "answers.jsonl").write_text(
        '{"output": "Paris", "expected": "Paris"}\n{"output": "Lyon", "expected": "Paris"}\n'
    )

    def verdict(request: RecordedRequest) -> Reply:
        same = "this answer: Paris\n" in json.dumps(request.body["messages"]).replace("\\n", "\n")
        return Reply.tool_call({"verdict": "agree" if same else "disagree"}, name="record_verdict")

    with LoopbackLLM(default=verdict) as server:
        env = {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "sk-offline", "SCORERS_CACHE_DIR": str(site)}
        command = ["-m", "scorers", "run", "answers.jsonl", "--templates", "my_templates", "-s", "SameAnswer"]
        python(site, *command, "-o", "judged.jsonl", env=env)
        assert len(server.chat_requests) == 2
        assert server.chat_requests[0].body["tool_choice"]["function"]["name"] == "record_verdict"
    rows = [json.loads(line) for line in (site / "judged.jsonl").read_text().splitlines()]
    assert [row["scores"]["SameAnswer"] for row in rows] == [1.0, 0.25]
