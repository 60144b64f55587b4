"""Our scorers in real promptflow flows (the shipped examples/promptflow/flex and dag), run offline with the `pf` CLI
(and once through ``PFClient().run``, ``promptflow_client.py``).

promptflow lives in its own virtual environment, ``.cache/harness/promptflow``
(``bash scripts/setup_harnesses.sh``), with this checkout installed editable.
Each test copies the example flows into its temporary folder (``pf flow test``
writes into the flow's folder) and runs ``pf`` with a throw-away promptflow home
(``PF_HOME_DIRECTORY``) holding a ``pf.yaml`` that turns telemetry off and the
tracing service off (``trace.destination: none``: no ``waitress-serve`` left
behind), a pre-seeded version check (no PyPI lookup) and
``APPLICATIONINSIGHTS_CONTROLPLANE_DISABLED=true``, so nothing leaves the machine.
What the runs produced is read back from ``pf run show-metrics`` and the run's
``flow_outputs/output.jsonl``, and compared with :func:`scorers.evaluate` on the
same rows.
"""

from __future__ import annotations

import datetime
import importlib.util
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Iterator

import pytest

import scorers
from scorers.adapters.promptflow import ScorerFlow, aggregate, aggregate_scores, build_scorers, score_line
from scorers.errors import ConfigError, MissingExtraError, ScorerInputError, UnknownScorerError
from scorers.testing import LoopbackLLM, Reply

ROOT = Path(__file__).resolve().parents[2]
VENV = ROOT / ".cache" / "harness" / "promptflow"
PF = VENV / "bin" / "pf"
EXAMPLES = ROOT / "examples" / "promptflow"
PF_VERSION = "1.18.5"
COLUMNS = {"output": "${data.answer}", "expected": "${data.reference}", "input": "${data.question}"}
DAG_COLUMNS = {"answer": "${data.answer}", "reference": "${data.reference}", "question": "${data.question}"}


def rows_of(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


class Pf:
    """The ``pf`` CLI of the harness venv, with an offline promptflow home and the example flows in ``work``."""

    def __init__(self, work: Path, tmp: Path) -> None:
        self.work = work
        self.home = work / "pfhome"
        self.home.mkdir()
        (self.home / "pf.yaml").write_text("telemetry:\n  enabled: false\ntrace:\n  destination: none\n")
        now = str(datetime.datetime.now())
        (self.home / "pf_version_check.json").write_text(
            json.dumps(
                {
                    "last_check_time": now,
                    "last_hint_time": now,
                    "latest_version": PF_VERSION,
                    "current_version": PF_VERSION,
                }
            )
        )
        shutil.copytree(EXAMPLES, work / "flows")
        self.flows = work / "flows"
        self.env = {
            **os.environ,
            "PF_HOME_DIRECTORY": str(self.home),
            "APPLICATIONINSIGHTS_CONTROLPLANE_DISABLED": "true",
            "TMPDIR": str(tmp),
            "PATH": f"{VENV / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
        }

    def __call__(self, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(PF), *args],
            cwd=self.work,
            env={**self.env, **(env or {})},
            capture_output=True,
            text=True,
            timeout=300,
        )

    def run(
        self, name: str, flow: str, data: Path, columns: dict[str, str], *extra: str, env: dict[str, str] | None = None
    ) -> dict[str, Any]:
        """``pf run create``; the run as ``pf run show`` gives it."""
        done = self(
            "run",
            "create",
            "--flow",
            str(self.flows / flow),
            "--data",
            str(data),
            "--name",
            name,
            "--column-mapping",
            *(f"{k}={v}" for k, v in columns.items()),
            *extra,
            env=env,
        )
        assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
        shown = self("run", "show", "--name", name)
        assert shown.returncode == 0, shown.stderr
        return json.loads(shown.stdout)

    def metrics(self, name: str) -> dict[str, float]:
        done = self("run", "show-metrics", "--name", name)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    def outputs(self, name: str) -> dict[int, dict[str, Any]]:
        """The line outputs of a run by line number (failed lines have none)."""
        lines = rows_of(self.home / ".runs" / name / "flow_outputs" / "output.jsonl")
        return {row.pop("line_number"): row for row in lines}


@pytest.fixture
def pf(tmp_path: Path) -> Iterator[Pf]:
    if not PF.exists():
        pytest.skip(f"promptflow is not installed at {VENV}: run `bash scripts/setup_harnesses.sh`")
    # batch runs put worker sockets under TMPDIR: a short path keeps them under the 108-byte limit of AF_UNIX
    tmp = Path(tempfile.mkdtemp(prefix="pf"))
    try:
        yield Pf(tmp_path, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def ours(data: Path, names: list[str]) -> tuple[list[dict[str, Any]], dict[str, float]]:
    """Each line's scores and each scorer's mean, from scorers.evaluate on the same rows."""
    run = scorers.evaluate(
        rows_of(data), names, mapping={"output": "answer", "expected": "reference", "input": "question"}
    )
    results = run.collect()
    return [r.scores for r in results], {n: s["mean"] for n, s in run.summary.to_dict()["scorers"].items()}


# ------------------------------------------------------------------ flex flow
@pytest.mark.needs_harness
def test_flex_flow_test_scores_one_line(pf: Pf) -> None:
    done = pf(
        "flow",
        "test",
        "--flow",
        str(pf.flows / "flex"),
        "--init",
        "scorers=ExactMatch,Levenshtein",
        "--inputs",
        "output=Roma",
        "expected=Rome",
        "input=Capital of Italy?",
    )
    assert done.returncode == 0, done.stderr
    result = json.loads((pf.flows / "flex" / ".promptflow" / "flow.output.json").read_text())
    assert result["scores"] == {"ExactMatch": 0.0, "Levenshtein": 0.75}
    assert result["metadata"]["Levenshtein"]["signature"]["scorer"] == "Levenshtein"


@pytest.mark.needs_harness
def test_flex_flow_batch_run(pf: Pf) -> None:
    data = pf.flows / "data.jsonl"
    run = pf.run("flex_run", "flex", data, COLUMNS, "--init", "scorers=ExactMatch,Levenshtein")
    assert run["status"] == "Completed" and "error" not in run
    lines, means = ours(data, ["ExactMatch", "Levenshtein"])
    outputs = pf.outputs("flex_run")
    assert [outputs[i]["scores"] for i in range(len(lines))] == lines
    assert pf.metrics("flex_run") == means == {"ExactMatch": 2 / 3, "Levenshtein": pytest.approx(11 / 12)}


@pytest.mark.needs_harness
def test_flex_flow_through_the_python_api(pf: Pf) -> None:
    out = pf.work / "client.json"
    done = subprocess.run(
        [
            str(VENV / "bin" / "python"),
            str(ROOT / "tests" / "adapters" / "promptflow_client.py"),
            str(pf.flows / "flex"),
            str(pf.flows / "data.jsonl"),
            str(out),
        ],
        cwd=pf.work,
        env=pf.env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    _, means = ours(pf.flows / "data.jsonl", ["ExactMatch", "Levenshtein"])
    assert json.loads(out.read_text()) == {"status": "Completed", "metrics": means}


# ------------------------------------------------------------------- DAG flow
@pytest.mark.needs_harness
def test_dag_flow_test_runs_the_line_and_the_aggregation(pf: Pf) -> None:
    done = pf("flow", "test", "--flow", str(pf.flows / "dag"), "--inputs", "answer=Roma", "reference=Rome")
    assert done.returncode == 0, done.stderr
    folder = pf.flows / "dag" / ".promptflow"
    assert json.loads((folder / "flow.output.json").read_text()) == {"scores": {"ExactMatch": 0.0, "Levenshtein": 0.75}}
    assert "Node aggregate completes" in done.stdout + done.stderr


@pytest.mark.needs_harness
def test_dag_flow_batch_run_logs_the_means(pf: Pf) -> None:
    data = pf.flows / "data.jsonl"
    run = pf.run("dag_run", "dag", data, DAG_COLUMNS)
    assert run["status"] == "Completed" and "error" not in run
    lines, means = ours(data, ["ExactMatch", "Levenshtein"])
    outputs = pf.outputs("dag_run")
    assert [outputs[i]["scores"] for i in range(len(lines))] == lines
    assert pf.metrics("dag_run") == means  # logged by log_metric in the aggregation node


# ------------------------------------------------------------------ bad input
@pytest.mark.needs_harness
def test_a_line_without_a_required_field_fails_alone(pf: Pf) -> None:
    data = pf.work / "gaps.jsonl"
    data.write_text(
        "".join(
            json.dumps(row) + "\n"
            for row in [
                {"question": "Capital of France?", "answer": "Paris", "reference": "Paris"},
                {"question": "Capital of Italy?", "answer": "Roma", "reference": None},
                {"question": "Largest planet?", "answer": "Saturn", "reference": "Jupiter"},
            ]
        )
    )
    run = pf.run("gaps_run", "flex", data, COLUMNS, "--init", "scorers=ExactMatch")
    # promptflow ends the run Completed and names the first failed line's error: ours, with its type
    assert run["status"] == "Completed"
    message = run["error"]["message"]
    assert message.startswith("Failed to run 1/3 lines. First error message is: ")
    assert "(ScorerInputError) ExactMatch: field 'expected' is required but this line has no value for it" in message
    assert sorted(pf.outputs("gaps_run")) == [0, 2]
    assert pf.metrics("gaps_run") == {"ExactMatch": 0.5}  # the aggregation sees the lines that succeeded


@pytest.mark.needs_harness
def test_an_unknown_scorer_fails_the_flow(pf: Pf) -> None:
    done = pf(
        "flow",
        "test",
        "--flow",
        str(pf.flows / "flex"),
        "--init",
        "scorers=ExactMatch,Levenstein",
        "--inputs",
        "output=Roma",
        "expected=Rome",
    )
    assert done.returncode == 1  # the flex flow's __init__ raised: promptflow shows our message, not its type
    assert (
        "pf.flow.test failed with FlowEntryInitializationError: Failed to initialize flow entry with "
        "'{'scorers': 'ExactMatch,Levenstein'}', ex:'no scorer named 'Levenstein'. Did you mean Levenshtein?"
        in done.stdout
        + done.stderr
    )
    run = pf.run("unknown_run", "flex", pf.flows / "data.jsonl", COLUMNS, "--init", "scorers=Levenstein")
    assert run["status"] == "Failed" and "no scorer named 'Levenstein'" in run["error"]["message"]


SKIPPING_NODE = """from promptflow.core import tool

from scorers import Scorer, text_field
from scorers.adapters.promptflow import LineScores, score_line


class OnlyCapitals(Scorer):
    fields = (text_field("output"), text_field("input"))

    def _score(self, *, output, input):
        return self.make_score(1.0 if input.startswith("Capital") else None, reason="not a capital question")


@tool
def score(scorers: str, output: str, expected: str, input: str = "") -> LineScores:
    return score_line([*scorers.split(","), OnlyCapitals()], output=output, expected=expected, input=input)
"""


@pytest.mark.needs_harness
def test_a_skipped_score_is_none_and_left_out_of_the_mean(pf: Pf) -> None:
    (pf.flows / "dag" / "score.py").write_text(SKIPPING_NODE)  # a scorer of the user's own, next to ours
    run = pf.run("skip_run", "dag", pf.flows / "data.jsonl", DAG_COLUMNS)
    assert run["status"] == "Completed" and "error" not in run
    outputs = pf.outputs("skip_run")
    assert [outputs[i]["scores"]["OnlyCapitals"] for i in range(3)] == [1.0, 1.0, None]
    assert pf.metrics("skip_run")["OnlyCapitals"] == 1.0


# ---------------------------------------------------------------------- judge
@pytest.mark.needs_harness
def test_a_judge_in_a_batch_run(pf: Pf, llm_server: LoopbackLLM, fake_api_key: str) -> None:
    llm_server.script(Reply.choice("D", reasons="Roma is not the English name asked for."), match="Roma")
    llm_server.default = Reply.choice("C", reasons="Same facts.")
    data = pf.flows / "data.jsonl"
    env = {
        "OPENAI_BASE_URL": llm_server.base_url,
        "OPENAI_API_KEY": fake_api_key,
        "SCORERS_CACHE_DIR": str(pf.work / "judge-cache"),
    }
    run = pf.run("judge_run", "flex", data, COLUMNS, "--init", "scorers=Factuality", env=env)
    assert run["status"] == "Completed" and "error" not in run
    outputs = pf.outputs("judge_run")
    assert [outputs[i]["scores"]["Factuality"] for i in range(3)] == [1.0, 0.0, 1.0]
    assert outputs[1]["metadata"]["Factuality"]["rationale"] == "Roma is not the English name asked for."
    assert pf.metrics("judge_run") == {"Factuality": 2 / 3}
    assert len(llm_server.chat_requests) == 3
    assert fake_api_key not in (pf.home / ".runs" / "judge_run" / "flow_outputs" / "output.jsonl").read_text()


# ------------------------------------------------------- the adapter, in process
def test_without_promptflow_the_aggregation_names_the_install() -> None:
    assert importlib.util.find_spec("promptflow") is None, "promptflow leaked into the main environment"
    line = score_line("ExactMatch", output="a", expected="a")  # scoring needs no promptflow
    with pytest.raises(MissingExtraError, match=r"pip install 'scorers\[promptflow\]'"):
        aggregate([line])


def test_skipped_scores_are_left_out_of_the_means() -> None:
    lines = [{"scores": {"A": 1.0, "B": None}}, {"scores": {"A": 0.0, "B": None}}]
    assert aggregate_scores(lines) == {"A": 0.5}  # B skipped every line: no metric, never a made-up number


def test_fields_feed_a_judges_variables(llm_env: LoopbackLLM) -> None:
    llm_env.default = Reply.choice("Y", reasons="It meets the criteria.")
    line = score_line("ClosedQA", output="Paris", input="Capital of France?", fields={"criteria": "names a city"})
    assert line["scores"] == {"ClosedQA": 1.0}
    assert line["metadata"]["ClosedQA"]["rationale"] == "It meets the criteria."
    assert "names a city" in json.dumps(llm_env.chat_requests[0].body)


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda: build_scorers(""), ConfigError, "name the scorers"),
        (lambda: build_scorers("ExactMatch,exactmatch"), ConfigError, "listed twice"),
        (lambda: build_scorers("ExactMatch", {"BLEU": {"tokenize": "intl"}}), ConfigError, "params for 'BLEU'"),
        (
            lambda: build_scorers([scorers.get("ExactMatch")], {"ExactMatch": {"ignore_case": True}}),
            ConfigError,
            "parameters ['ignore_case'] go with a scorer's name, not with an instance",
        ),
        (lambda: build_scorers([len]), ConfigError, "not a scorer: <built-in function len>"),
        (lambda: ScorerFlow("Nope"), UnknownScorerError, "no scorer named 'Nope'"),
        (
            lambda: score_line("ExactMatch", output="a", expected="a", fields={"criteria": "x"}),
            ConfigError,
            "no scorer among ExactMatch reads a field 'criteria'",
        ),
        (
            lambda: score_line("Levenshtein", output=None, expected="a"),
            ScorerInputError,
            "Levenshtein: field 'output' is required but this line has no value for it",
        ),
        (lambda: aggregate_scores([{"ExactMatch": 1.0}]), ConfigError, "dicts with 'scores'"),
    ],
)
def test_errors_are_typed(call: Any, error: type[Exception], message: str) -> None:
    with pytest.raises(error) as info:
        call()
    assert message in str(info.value)
