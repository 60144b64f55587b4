"""autoevals 0.4.1's own test files, run against ``scorers.compat.autoevals``: the exact outcome is asserted.

The shipped test files are copied from the autoevals wheel in ``.cache/autoevals-venv`` (made by
``bash scripts/setup_autoevals.sh``) and run there in a separate pytest process with
``autoevals_suite_plugin`` (``import autoevals`` gives our compat modules; autoevals' respx mocks
answer our engine's real HTTP requests). Every test passes, or is a listed difference (a strict
xfail, its docs/autoevals.md row named), or is skipped with its listed reason (network, or a feature we do
not claim): ``autoevals_suite.json``.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import scorers

HERE = Path(__file__).resolve().parent
REPO = Path(scorers.__file__).resolve().parent.parent
VENV_PYTHON = REPO / ".cache" / "autoevals-venv" / "bin" / "python"
LISTS = HERE / "autoevals_suite.json"
sys.path.insert(0, str(HERE))
from autoevals_suite_plugin import listed  # noqa: E402


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Run the suite once; every test id → passed, xfailed, skipped, failed or error."""
    if not VENV_PYTHON.exists():
        pytest.fail(f"{VENV_PYTHON} is missing: run `bash scripts/setup_autoevals.sh` (scripts/setup.sh runs it)")
    found = subprocess.run(
        [
            str(VENV_PYTHON),
            "-c",
            "import autoevals, os; print(autoevals.__version__ if hasattr("
            "autoevals, '__version__') else '', os.path.dirname(autoevals.__file__))",
        ],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path_factory.getbasetemp(),
    )
    source = Path(found.stdout.split()[-1])
    version = subprocess.run(
        [str(VENV_PYTHON), "-c", "import importlib.metadata as m; print(m.version('autoevals'))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert version == json.loads(LISTS.read_text())["autoevals"], f"autoevals {version} in the venv; rerun setup"
    suite = tmp_path_factory.mktemp("autoevals-suite")
    tests = suite / "autoevals_tests"
    tests.mkdir()
    for path in [*sorted(source.glob("test_*.py")), source / "conftest.py"]:
        text = path.read_text(encoding="utf-8")
        # the one relative import: the module lives in autoevals' package, which is ours here
        text = re.sub(r"^from \.(\w+) import", r"from autoevals.\1 import", text, flags=re.M)
        (tests / path.name).write_text(text, encoding="utf-8")
    (suite / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    report = suite / "report.json"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO), str(HERE)]),
        "AUTOEVALS_SUITE_LIST": str(LISTS),
        "AUTOEVALS_SUITE_REPORT": str(report),
        "OPENAI_API_KEY": "sk-placeholder-autoevals-suite",
        "SCORERS_CACHE": "off",
        "SCORERS_HTTP_TRANSPORT": "httpx",
    }
    for name in ("OPENAI_BASE_URL", "SCORERS_MODEL", "PYTEST_ADDOPTS"):
        env.pop(name, None)
    run = subprocess.run(
        [
            str(VENV_PYTHON),
            "-m",
            "pytest",
            "-p",
            "autoevals_suite_plugin",
            "-p",
            "no:cacheprovider",
            "-q",
            "-rfE",
            "autoevals_tests",
        ],
        cwd=suite,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert report.exists(), run.stdout[-4000:] + run.stderr[-4000:]
    result = json.loads(report.read_text())
    print(
        f"autoevals {version} suite: "
        + ", ".join(
            f"{sum(v == o for v in result.values())} {o}" for o in ("passed", "xfailed", "skipped", "failed", "error")
        )
        + f" of {len(result)}"
    )
    result["<pytest exit>"] = f"{run.returncode}\n{run.stdout[-4000:]}"
    return result


def _tests(outcomes: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in outcomes.items() if not k.startswith("<")}


@pytest.mark.needs_harness
def test_every_test_passes_or_is_a_listed_difference_or_a_listed_skip(outcomes: dict[str, str]) -> None:
    lists = json.loads(LISTS.read_text())
    tests = _tests(outcomes)
    bad = {k: v for k, v in tests.items() if v not in ("passed", "xfailed", "skipped")}
    assert not bad, f"{bad}\n{outcomes['<pytest exit>']}"
    assert {k for k, v in tests.items() if v == "xfailed"} == set(lists["differences"])
    skipped = {k for k, v in tests.items() if v == "skipped"}
    assert skipped == {k for k in tests if listed(lists["skipped"], k) is not None}
    assert outcomes["<pytest exit>"].startswith("0\n"), outcomes["<pytest exit>"]


@pytest.mark.needs_harness
def test_the_lists_name_only_existing_tests(outcomes: dict[str, str]) -> None:
    lists = json.loads(LISTS.read_text())
    tests = _tests(outcomes)
    keys = set(tests) | {k.split("[", 1)[0] for k in tests} | {k.split("::", 1)[0] for k in tests}
    assert set(lists["skipped"]) <= keys, set(lists["skipped"]) - keys
    assert set(lists["differences"]) <= set(tests), set(lists["differences"]) - set(tests)


@pytest.mark.needs_harness
def test_the_claimed_features_are_tested(outcomes: dict[str, str]) -> None:
    """The suite's tests of what we claim run and pass: call forms, heuristics, init, judges over HTTP."""
    passed = {k for k, v in _tests(outcomes).items() if v == "passed"}
    assert {
        "test_values.py::test_levenshtein",
        "test_values.py::test_numeric",
        "test_json.py::test_json",
        "test_json.py::test_valid_json",
        "test_llm.py::test_factuality",
        "test_llm.py::test_init_client",
        "test_llm.py::test_llm_classifier_uses_configured_default_model",
        "test_init_models.py::test_object_form_can_set_both_models",
        "test_reasoning_effort.py::test_all_reasoning_parameters",
        "test_serializable_data_class.py::TestSerializableDataClass::test_from_dict_deep_with_none_values",
    } <= passed
    assert len(passed) >= 31


def _readme_section() -> str:
    """docs/autoevals.md, the page "Coming from autoevals"."""
    return (REPO / "docs" / "autoevals.md").read_text(encoding="utf-8")


def test_every_difference_has_its_row_in_the_readme() -> None:
    rows = {line.split("|")[1].strip() for line in _readme_section().splitlines() if line.startswith("| ")}
    for test, entry in json.loads(LISTS.read_text())["differences"].items():
        assert entry["readme_row"] in rows, f"{test}: docs/autoevals.md has no row {entry['readme_row']!r}"


@pytest.mark.needs_harness
def test_the_readme_states_the_figures(outcomes: dict[str, str]) -> None:
    tests = _tests(outcomes)
    skips = json.loads(LISTS.read_text())["skipped"]
    network = sum(1 for k, v in tests.items() if v == "skipped" and listed(skips, k).startswith("network"))
    count = {o: sum(v == o for v in tests.values()) for o in ("passed", "xfailed", "skipped")}
    text = " ".join(_readme_section().split())
    assert (
        f"of its {len(tests)} tests, {count['passed']} pass, {count['xfailed']} fail on the differences below" in text
    ), "update the figures in docs/autoevals.md"
    assert (
        f"{count['skipped']} are skipped: {network} need a live OpenAI endpoint, "
        f"{count['skipped'] - network} test what we do not provide"
    ) in text
