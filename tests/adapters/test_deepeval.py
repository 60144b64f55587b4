"""Our scorers and judges as metrics of a real DeepEval (``evaluate`` and ``assert_test``), run offline.

DeepEval lives in its own virtual environment, ``.cache/harness/deepeval``
(``bash scripts/setup_harnesses.sh``), with this checkout installed editable:
its pytest plugins (asyncio, xdist, rerunfailures, repeat) must not load into
our suite. Each test runs that venv's python on ``deepeval_run.py`` (a scenario
of ``deepeval.evaluate``), or its pytest on ``deepeval_assert_cases.py``, in a
temporary folder with ``DEEPEVAL_TELEMETRY_OPT_OUT=YES`` and
``DEEPEVAL_CACHE_FOLDER`` and ``HOME`` in that folder, and reads back what
DeepEval produced: each test result's metrics data, the junit report of the
pytest run.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import xml.etree.ElementTree as ElementTree
from pathlib import Path
from typing import Any

import pytest

import scorers
from scorers.errors import MissingExtraError, UnknownScorerError
from scorers.testing import LoopbackLLM, Reply

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
VENV = ROOT / ".cache" / "harness" / "deepeval"
PYTHON = VENV / "bin" / "python"
QUESTIONS = [
    ("Capital of France?", "Paris", "Paris"),
    ("Capital of Italy?", "Roma", "Rome"),
    ("Largest planet?", "Saturn", "Jupiter"),
]


def python() -> Path:
    if not PYTHON.exists():
        pytest.skip(f"DeepEval is not installed at {VENV}: run `bash scripts/setup_harnesses.sh`")
    return PYTHON


def harness_env(tmp_path: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    return {
        **os.environ,
        "DEEPEVAL_TELEMETRY_OPT_OUT": "YES",
        "DEEPEVAL_CACHE_FOLDER": str(tmp_path / "deepeval"),
        "HOME": str(tmp_path),
        **(extra or {}),
    }


def scenario(tmp_path: Path, name: str, env: dict[str, str] | None = None) -> Any:
    """What ``deepeval_run.py NAME`` got from ``deepeval.evaluate``: the test results, or what it raised."""
    out = tmp_path / f"{name}.json"
    done = subprocess.run(
        [str(python()), str(HERE / "deepeval_run.py"), name, str(out)],
        cwd=tmp_path,
        env=harness_env(tmp_path, env),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0 and out.exists(), f"{done.stdout}\n{done.stderr}"
    return json.loads(out.read_text())


def metrics_by_case(results: list[dict[str, Any]]) -> list[dict[str, dict[str, Any]]]:
    """Each test case's metrics by name, in the order of the cases (DeepEval may finish them in any order)."""
    order = {question: i for i, (question, _, _) in enumerate(QUESTIONS)}
    ordered = sorted(results, key=lambda r: order.get(r["input"], 0))
    return [{m["name"]: m for m in r["metrics"]} for r in ordered]


# ------------------------------------------------------------------ evaluate
@pytest.mark.parametrize("name", ["scores", "scores_sync"])  # a_measure (DeepEval's default), then measure
@pytest.mark.needs_harness
def test_evaluate_scores_equal_ours(tmp_path: Path, name: str) -> None:
    results = scenario(tmp_path, name)["results"]
    cases = metrics_by_case(results)
    rows = [{"input": q, "output": o, "expected": e} for q, o, e in QUESTIONS]
    ours = scorers.evaluate(rows, ["ExactMatch", "Levenshtein"]).collect()
    for case, our in zip(cases, ours):
        assert {n: case[n]["score"] for n in our.scores} == our.scores
    assert [{n: m["success"] for n, m in case.items()} for case in cases] == [
        {"ExactMatch": True, "Levenshtein": True, "OnlyCapitals": True},
        {"ExactMatch": False, "Levenshtein": True, "OnlyCapitals": True},  # 0.75 >= 0.7
        {"ExactMatch": False, "Levenshtein": False, "OnlyCapitals": False},
    ]
    assert sorted(r["success"] for r in results) == [False, False, True]
    assert cases[1]["Levenshtein"]["reason"] == "Levenshtein 0.750 >= 0.7"
    assert cases[1]["Levenshtein"]["threshold"] == 0.7 and cases[1]["ExactMatch"]["threshold"] == 0.5
    skipped = cases[2]["OnlyCapitals"]  # not a made-up number, and not a pass
    assert (skipped["score"], skipped["success"], skipped["error"]) == (None, False, None)
    assert skipped["reason"] == "skipped: OnlyCapitals does not apply to this test case (not a capital question)"


@pytest.mark.needs_harness
def test_strict_mode_and_parameters(tmp_path: Path) -> None:
    cases = metrics_by_case(scenario(tmp_path, "strict")["results"])
    assert [
        (c["Levenshtein"]["score"], c["Levenshtein"]["threshold"], c["Levenshtein"]["strict_mode"]) for c in cases
    ] == [(1.0, 1.0, True), (0.0, 1.0, True), (0.0, 1.0, True)]
    assert cases[1]["Levenshtein"]["reason"] == "Levenshtein 0.750 < 1"  # the reason keeps our score


@pytest.mark.needs_harness
def test_fields_map_a_dotted_path(tmp_path: Path) -> None:
    [result] = scenario(tmp_path, "fields")["results"]
    assert [(m["name"], m["score"]) for m in result["metrics"]] == [("ExactMatch", 1.0)]


@pytest.mark.needs_harness
def test_context_is_the_retrieval_context(tmp_path: Path) -> None:
    [result] = scenario(tmp_path, "context")["results"]
    assert [(m["name"], m["score"]) for m in result["metrics"]] == [("Grounded", 1.0), ("GroundedInContext", 0.0)]


@pytest.mark.needs_harness
def test_the_missing_field_error_pickles(tmp_path: Path) -> None:
    name, message, field, attribute, scorer, mro = scenario(tmp_path, "pickle")["results"]
    assert (name, field, attribute, scorer) == (
        "MissingTestCaseFieldError",
        "expected",
        "expected_output",
        "ExactMatch",
    )
    assert message.startswith("ExactMatch: field 'expected' is required") and "MissingTestCaseParamsError" in mro


@pytest.mark.needs_harness
def test_a_judge_gives_its_rationale_as_the_reason(tmp_path: Path, llm_server: LoopbackLLM, fake_api_key: str) -> None:
    llm_server.script(Reply.choice("D", reasons="Roma is not the English name asked for."), match="Roma")
    llm_server.default = Reply.choice("C", reasons="Same facts.")
    env = {
        "OPENAI_BASE_URL": llm_server.base_url,
        "OPENAI_API_KEY": fake_api_key,
        "SCORERS_CACHE_DIR": str(tmp_path / "judge-cache"),
    }
    results = scenario(tmp_path, "judge", env)["results"]
    cases = metrics_by_case(results)
    assert [c["Factuality"]["score"] for c in cases] == [1.0, 0.0]
    assert cases[0]["Factuality"]["reason"] == "Factuality 1.000 >= 0.5: Same facts."
    assert cases[1]["Factuality"]["reason"] == "Factuality 0.000 < 0.5: Roma is not the English name asked for."
    assert cases[1]["Factuality"]["evaluation_model"] == "gpt-4o-mini"
    assert len(llm_server.chat_requests) == 2
    assert fake_api_key not in json.dumps(results)


# ------------------------------------------------------ agents and conversations
@pytest.mark.needs_harness
def test_tools_called_and_expected_tools_reach_the_tool_call_scorers(tmp_path: Path) -> None:
    weather = [{"name": "get_weather", "arguments": {"city": city}} for city in ("Paris", "Rome")]
    actual = [weather[0], {"name": "search", "arguments": {"q": "Rome"}}, weather[1]]
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]
    ours = {
        "ToolCallMatch": scorers.get("ToolCallMatch")(output=actual, expected=weather[::-1]),
        "ToolCallRecall": scorers.get("ToolCallMatch", extra_calls="ignore")(output=actual, expected=weather[::-1]),
        "ToolCallF1": scorers.get("ToolCallF1")(output=actual, expected=weather[::-1]),
        "TrajectoryMatch": scorers.get("TrajectoryMatch", mode="superset")(output=actual, expected=weather[::-1]),
        "ToolCallValid": scorers.get("ToolCallValid")(output=actual, tools=tools),
    }
    results = scenario(tmp_path, "tool_calls")["results"]
    by_input = {r["input"]: {m["name"]: m for m in r["metrics"]} for r in results}
    case, no_calls = by_input["Weather in Paris and Rome?"], by_input["Hi"]
    assert {name: m["score"] for name, m in case.items()} == {name: s.score for name, s in ours.items()}
    assert [case[name]["score"] for name in ours] == [0.8, 1.0, 0.8, 1.0, 2 / 3]  # search: extra, and undeclared
    breakdown = json.loads(case["ToolCallMatch"]["verbose_logs"])  # our metadata: the pairing, the extra call
    assert [(p["expected"], p["actual"]) for p in breakdown["pairs"]] == [(0, 2), (1, 0)]
    assert breakdown["unmatched_actual"] == [{"index": 1, "name": "search", "arguments": {"q": "Rome"}}]
    assert {name: m["score"] for name, m in no_calls.items()} == dict.fromkeys(ours, 1.0)  # [] and []: both empty


@pytest.mark.needs_harness
def test_no_tools_called_is_deepevals_missing_parameter(tmp_path: Path) -> None:
    [result] = scenario(tmp_path, "tool_calls_missing")["results"]
    [data] = result["metrics"]
    assert (data["score"], data["success"]) == (None, False)
    assert data["error"] == (
        "ToolCallMatch: field 'output' is required but the test case has no tools_called "
        "(set LLMTestCase(tools_called=...))"
    )


@pytest.mark.needs_harness
def test_conversational_turns_reach_a_conversation_field(tmp_path: Path) -> None:
    [result] = scenario(tmp_path, "conversation")["results"]
    metrics = {m["name"]: m for m in result["metrics"]}
    assert {name: m["score"] for name, m in metrics.items()} == {
        "ToolCallMatch": 1.0,  # the calls of every turn, against metadata's expected_tools
        "ToolCallF1": 1.0,
        "Transcript": 1.0,
    }
    given = json.loads(metrics["Transcript"]["verbose_logs"])
    assert given["role"] == "a travel assistant"  # chatbot_role
    call = {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}
    assert given["conversation"] == [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "turn1.0", **call}]},
        {"role": "tool", "tool_call_id": "turn1.0", "content": '{"temp": 18}'},
        {"role": "assistant", "content": "18C and cloudy."},
        {"role": "user", "content": "Thanks!"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "turn3.0", "type": "function", "function": {"name": "log_thanks", "arguments": {}}}],
        },
    ]
    assert (
        scorers.get("ToolCallMatch")(output=given["conversation"], expected=[call, {"name": "log_thanks"}]).score == 1
    )


@pytest.mark.needs_harness
def test_a_conversational_field_no_attribute_holds_is_a_missing_parameter(tmp_path: Path) -> None:
    [result] = scenario(tmp_path, "conversation_missing")["results"]
    [data] = result["metrics"]
    assert data["error"] == (
        "ToolCallMatch: field 'expected' is required but no ConversationalTestCase attribute is mapped to it "
        "(map it with fields=)"
    )


@pytest.mark.needs_harness
def test_a_conversation_judge_reads_the_turns(tmp_path: Path, llm_server: LoopbackLLM, fake_api_key: str) -> None:
    llm_server.default = Reply.choice("Y")
    env = {
        "OPENAI_BASE_URL": llm_server.base_url,
        "OPENAI_API_KEY": fake_api_key,
        "SCORERS_CACHE_DIR": str(tmp_path / "judge-cache"),
    }
    [result] = scenario(tmp_path, "conversation_judge", env)["results"]
    assert [(m["name"], m["score"]) for m in result["metrics"]] == [("ConversationHelpful", 1.0)]
    [request] = llm_server.chat_requests
    assert request.last_user_message.startswith(
        "user: Weather in Paris?\n"
        "assistant:\n"
        '  call get_weather({"city": "Paris"})\n'
        'tool get_weather: {"temp": 18}\n'
        "assistant: 18C and cloudy.\n"
        "user: Thanks!\n"
    )


# ----------------------------------------------------------------- bad input
@pytest.mark.needs_harness
def test_a_missing_field_stops_evaluate_by_default(tmp_path: Path) -> None:
    raised = scenario(tmp_path, "missing_raised")
    assert {"scorers.errors.ScorerInputError", "deepeval.errors.MissingTestCaseParamsError"} <= set(raised["raised"])
    assert raised["message"] == (
        "ExactMatch: field 'expected' is required but the test case has no expected_output "
        "(set LLMTestCase(expected_output=...))"
    )


@pytest.mark.needs_harness
def test_a_missing_field_is_the_metrics_error_when_errors_are_ignored(tmp_path: Path) -> None:
    [result] = scenario(tmp_path, "missing_ignored")["results"]
    [data] = result["metrics"]
    assert (result["success"], data["score"], data["success"]) == (False, None, False)
    assert data["error"].startswith("ExactMatch: field 'expected' is required but the test case has no expected_output")


@pytest.mark.needs_harness
def test_a_missing_field_skips_the_metric_with_skip_on_missing_params(tmp_path: Path) -> None:
    [result] = scenario(tmp_path, "missing_skipped")["results"]
    assert [(m["name"], m["score"]) for m in result["metrics"]] == [("OnlyCapitals", 1.0)]


@pytest.mark.needs_harness
def test_mistakes_in_the_arguments_are_config_errors(tmp_path: Path) -> None:
    found = scenario(tmp_path, "config_errors")["results"]
    assert [kind for kind, _ in found] == ["ConfigError"] * 3
    assert found[0][1] == "ExactMatch does not read a field 'criteria' (it reads: output, expected, input, metadata)"
    assert found[1][1].startswith("ExactMatch: fields['expected'] = 'answer' must name an LLMTestCase attribute")
    assert found[2][1] == "ExactMatch: threshold must be a number in [0, 1], got 2"


# ---------------------------------------------------------- assert_test, pytest
@pytest.mark.needs_harness
def test_assert_test_under_pytest(tmp_path: Path) -> None:
    cases = tmp_path / "test_cases.py"
    cases.write_text((HERE / "deepeval_assert_cases.py").read_text())
    report = tmp_path / "junit.xml"
    done = subprocess.run(
        [str(python()), "-m", "pytest", "-p", "no:cacheprovider", "-q", str(cases), f"--junitxml={report}"],
        cwd=tmp_path,
        env=harness_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 1, f"{done.stdout}\n{done.stderr}"
    outcomes = {}
    for case in ElementTree.parse(report).getroot().iter("testcase"):
        failure = case.find("failure")
        outcomes[case.get("name")] = None if failure is None else failure.get("message")
    assert outcomes["test_close_enough"] is None
    assert outcomes["test_too_far"] == (
        "AssertionError: Metrics: Levenshtein (score: 0.1428571428571429, threshold: 0.7, strict: False, error: None, "
        "reason: Levenshtein 0.143 < 0.7), ExactMatch (score: 0.0, threshold: 0.5, strict: False, error: None, "
        "reason: ExactMatch 0.000 < 0.5) failed."
    )
    assert outcomes["test_no_expected_output"] == (
        "scorers.adapters.deepeval.MissingTestCaseFieldError: ExactMatch: field 'expected' is required but the test "
        "case has no expected_output (set LLMTestCase(expected_output=...))"
    )


# ------------------------------------------------------------ docs/adapters.md
def readme_examples() -> list[str]:
    """docs/adapters.md's DeepEval blocks (fenced ``py``: tests/test_readme.py runs ``python`` blocks in our venv)."""
    section = Path(ROOT / "docs" / "adapters.md").read_text().split("## DeepEval", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```py\n(.*?)```", section, flags=re.S)


@pytest.mark.needs_harness
def test_the_readme_example_runs(tmp_path: Path, llm_server: LoopbackLLM, fake_api_key: str) -> None:
    llm_server.default = Reply.choice("A", reasons="Roma is Rome in Italian.")
    example = tmp_path / "example.py"
    example.write_text(readme_examples()[0])
    env = {
        "OPENAI_BASE_URL": llm_server.base_url,
        "OPENAI_API_KEY": fake_api_key,
        "SCORERS_CACHE_DIR": str(tmp_path / "judge-cache"),
    }
    done = subprocess.run(
        [str(python()), str(example)],
        cwd=tmp_path,
        env=harness_env(tmp_path, env),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"  # assert_test passed
    printed = [line for line in done.stdout.splitlines() if line.startswith("{")]
    assert printed[-1] == "{'ExactMatch': False, 'Levenshtein': True, 'Factuality': False}"  # A scores 0.4
    assert len(llm_server.chat_requests) == 1


@pytest.mark.needs_harness
def test_the_readme_tool_call_example_runs(tmp_path: Path) -> None:
    example = tmp_path / "example.py"
    example.write_text(readme_examples()[1])
    done = subprocess.run(
        [str(python()), str(example)],
        cwd=tmp_path,
        env=harness_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    printed = [line for line in done.stdout.splitlines() if line.startswith("{")]
    assert printed[-2:] == ["{'ToolCallMatch': 0.667, 'ToolCallF1': 0.667}", "{'ToolCallMatch': 1.0}"]


# ------------------------------------------------------------ the main venv
def test_deepeval_is_not_in_the_main_environment() -> None:
    assert importlib.util.find_spec("deepeval") is None, "deepeval (and its pytest plugins) leaked into this venv"


def test_without_deepeval_a_metric_names_the_install() -> None:
    from scorers.adapters.deepeval import metric  # importing the adapter needs no DeepEval

    if importlib.util.find_spec("deepeval") is not None:
        pytest.fail("deepeval is installed here: see test_deepeval_is_not_in_the_main_environment")
    with pytest.raises(MissingExtraError, match=r"pip install 'scorers\[deepeval\]'"):
        metric("ExactMatch")
    with pytest.raises(UnknownScorerError, match="no scorer named 'Levenstein'. Did you mean Levenshtein?"):
        metric("Levenstein")  # the name is resolved before DeepEval is needed
