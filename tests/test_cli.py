"""``python -m scorers`` run as a subprocess on temporary files."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "qa.jsonl"


def cli(*args: str, timeout: float = 120, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "scorers", *args], capture_output=True, text=True, timeout=timeout, cwd=REPO, **kwargs
    )


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_list_json_lists_the_core_scorers():
    result = cli("list", "--json")
    assert result.returncode == 0, result.stderr
    listed = {row["name"]: row for row in json.loads(result.stdout)}
    for name in ("ExactMatch", "Levenshtein", "NumericDiff", "JSONDiff", "ValidJSON", "ListContains"):
        assert {"name", "kind", "description", "required"} <= set(listed[name])
    assert listed["Levenshtein"]["required"] == ["output", "expected"]
    assert listed["ValidJSON"]["required"] == ["output"]


def test_list_table_and_show():
    table = cli("list")
    assert table.returncode == 0 and "Levenshtein" in table.stdout and "REQUIRED" in table.stdout
    shown = cli("show", "levenshtein")
    assert shown.returncode == 0
    assert "fields:" in shown.stdout and "example:" in shown.stdout and "normalize = null" in shown.stdout


@pytest.mark.slow
def test_list_marks_the_scorers_whose_extra_is_not_installed(tmp_path):
    # an installed scorers whose "text" extra names a package that is not installed (the real metadata machinery
    # reads it: the folder is first on the path), while its "bert" extra's packages are all present
    dist_info = tmp_path / "scorers-0.0.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: scorers\nVersion: 0.0\nProvides-Extra: text\nProvides-Extra: bert\n"
        'Requires-Dist: no-such-package-xyz>=1; extra == "text"\nRequires-Dist: numpy; extra == "bert"\n'
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(REPO)])}

    def cli(*args: str) -> subprocess.CompletedProcess:  # from tmp_path: the checkout's own egg-info is not found first
        command = [sys.executable, "-m", "scorers", *args]
        return subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env)

    listed = {row["name"]: row for row in json.loads(cli("list", "--json").stdout)}
    assert listed["BLEU"]["extra"] == "text" and listed["BLEU"]["missing"] == ["no-such-package-xyz"]
    assert listed["BERTScore"]["extra"] == "bert" and listed["BERTScore"]["missing"] == []
    assert "extra" not in listed["Levenshtein"]  # a core scorer needs no extra
    table = {line.split()[0]: line for line in cli("list").stdout.splitlines()[1:]}
    assert "[not installed: pip install 'scorers[text]']" in table["METEOR"]
    assert "not installed" not in table["BERTScore"] and "not installed" not in table["Levenshtein"]


def test_run_example_writes_one_line_per_row_in_order(tmp_path):
    out = tmp_path / "out.jsonl"
    result = cli("run", str(EXAMPLE), "-s", "ExactMatch", "-s", "Levenshtein", "-o", str(out))
    assert result.returncode == 0, result.stderr
    rows = [json.loads(line) for line in EXAMPLE.read_text().splitlines()]
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert [line["id"] for line in lines] == [row["id"] for row in rows]
    assert all(set(line["scores"]) == {"ExactMatch", "Levenshtein"} for line in lines)
    assert lines[0]["scores"] == {"ExactMatch": 1.0, "Levenshtein": 1.0}
    assert "ExactMatch" in result.stderr and "mean" in result.stderr  # summary table on stderr


@pytest.mark.slow
def test_map_param_threshold_and_errors(tmp_path):
    data = write_jsonl(
        tmp_path / "d.jsonl",
        [
            {"response": "café", "ref": "cafe\u0301"},
            {"response": "abc"},
        ],
    )
    out = tmp_path / "out.jsonl"
    result = cli(
        "run",
        str(data),
        "-s",
        "Levenshtein",
        "-p",
        "Levenshtein.normalize=NFC",
        "--map",
        "output=response",
        "--map",
        "expected=ref",
        "-o",
        str(out),
        "--threshold",
        "Levenshtein=0.5",
    )
    assert result.returncode == 0, result.stderr
    first, second = [json.loads(line) for line in out.read_text().splitlines()]
    assert first["scores"] == {"Levenshtein": 1.0}
    assert second["scores"] == {"Levenshtein": None}
    assert second["errors"]["Levenshtein"]["type"] == "ScorerInputError"
    failing = cli(
        "run",
        str(data),
        "-s",
        "Levenshtein",
        "--map",
        "output=response",
        "--map",
        "expected=ref",
        "-o",
        str(out),
        "--threshold",
        "levenshtein=0.9",
    )
    assert failing.returncode == 1 and "threshold not met" in failing.stderr
    assert (
        cli(
            "run",
            str(data),
            "-s",
            "Levenshtein",
            "--map",
            "output=response",
            "--map",
            "expected=ref",
            "-o",
            str(out),
            "--fail-on-error",
        ).returncode
        == 1
    )


@pytest.mark.parametrize(
    "args,message",
    [
        (["run", "missing.jsonl", "-s", "ExactMatch"], "no such file"),
        (["run", str(EXAMPLE), "-s", "NoSuchScorer"], "no scorer named 'NoSuchScorer'"),
        (["run", str(EXAMPLE), "-s", "Levenshtein", "-p", "Levenshtein.normalize=XX"], "normalize must be"),
        (["run", str(EXAMPLE), "-s", "Levenshtein", "--threshold", "BLEU=0.3"], "not one of the scorers"),
        (["run", str(EXAMPLE), "-s", "Levenshtein", "--resume"], "--resume needs -o"),
        (["run", str(EXAMPLE), "-s", "ExactMatch", "--threshold", "ExactMatch=1.5"], "the limit must too"),
        (["run", str(EXAMPLE), "-s", "ExactMatch", "--map", "output=answr"], "no column or path 'answr'"),
        (["run", str(EXAMPLE), "-s", "ExactMatch", "--workers", "0"], "--workers must be at least 1"),
        (["list", "--kind", "nope"], "no scorer is of that kind"),
    ],
)
def test_usage_errors_exit_2_with_a_clear_message(args, message):
    result = cli(*args)
    assert result.returncode == 2
    assert message in result.stderr and "Traceback" not in result.stderr


def test_bad_data_line_is_named(tmp_path):
    data = tmp_path / "bad.jsonl"
    data.write_text('{"output": "a", "expected": "a"}\n{"output": oops}\n')
    result = cli("run", str(data), "-s", "ExactMatch", "-o", str(tmp_path / "o.jsonl"))
    assert result.returncode == 2 and "bad.jsonl:2: invalid JSON" in result.stderr


def test_resume_after_torn_write_rewrites_nothing_twice(tmp_path):
    data = write_jsonl(
        tmp_path / "d.jsonl", [{"id": i, "output": f"a{i}", "expected": f"a{i - i % 3}"} for i in range(50)]
    )
    full = tmp_path / "full.jsonl"
    assert cli("run", str(data), "-s", "Levenshtein", "-o", str(full)).returncode == 0
    partial = tmp_path / "partial.jsonl"
    lines = full.read_text().splitlines(keepends=True)
    partial.write_text("".join(lines[:20]) + lines[20][:15])  # 20 complete rows and a torn one
    result = cli("run", str(data), "-s", "Levenshtein", "-o", str(partial), "--resume")
    assert result.returncode == 0, result.stderr
    assert partial.read_text() == full.read_text()
    assert "50 rows" in result.stderr  # the summary covers resumed rows too


def test_resume_refuses_results_of_another_file(tmp_path):
    data = write_jsonl(tmp_path / "d.jsonl", [{"id": i, "output": "x", "expected": "y"} for i in range(3)])
    out = write_jsonl(tmp_path / "o.jsonl", [{"id": 99, "output": "x", "expected": "y", "scores": {"ExactMatch": 0.0}}])
    result = cli("run", str(data), "-s", "ExactMatch", "-o", str(out), "--resume")
    assert result.returncode == 2 and "does not match input row 1" in result.stderr


@pytest.mark.slow
def test_resume_after_kill_loses_and_duplicates_no_row(tmp_path):
    n = 60_000
    data = write_jsonl(
        tmp_path / "big.jsonl", [{"id": i, "output": f"x{i}", "expected": f"x{i - i % 2}"} for i in range(n)]
    )
    out = tmp_path / "out.jsonl"
    proc = subprocess.Popen(
        [sys.executable, "-m", "scorers", "run", str(data), "-s", "ExactMatch", "-o", str(out)],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.time() + 60
    while time.time() < deadline and (not out.exists() or out.stat().st_size < 200_000):
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    written_before = len(out.read_bytes().splitlines())
    assert 0 < written_before < n, "the run was not interrupted mid-way"
    result = cli("run", str(data), "-s", "ExactMatch", "-o", str(out), "--resume")
    assert result.returncode == 0, result.stderr
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["id"] for r in records] == list(range(n))
    assert all(r["scores"]["ExactMatch"] == (1.0 if r["id"] % 2 == 0 else 0.0) for r in records)


def test_json_and_csv_inputs(tmp_path):
    (tmp_path / "d.json").write_text(json.dumps([{"output": "a", "expected": "a"}]))
    (tmp_path / "d.csv").write_text("output,expected\na,b\n")
    for name, score in (("d.json", 1.0), ("d.csv", 0.0)):
        result = cli("run", str(tmp_path / name), "-s", "ExactMatch")
        assert result.returncode == 0, result.stderr
        assert json.loads(result.stdout)["scores"] == {"ExactMatch": score}


@pytest.mark.slow
def test_run_with_a_judge_against_the_loopback_server(tmp_path, llm_server, fake_api_key):
    from scorers.testing import Reply

    # rules are tried in order; every prompt holds the expected "Paris", so it comes last
    llm_server.script(Reply.choice("D", reasons="contradiction"), match="Lyon")
    llm_server.script(Reply.error(400, "model refuses"), match="Nice")  # not retryable: fails at once
    llm_server.script(Reply.choice("C", reasons="same facts"), match="Paris")
    data = write_jsonl(
        tmp_path / "d.jsonl",
        [
            {"input": "Capital of France?", "output": "Paris", "expected": "Paris"},
            {"input": "Capital of France?", "output": "Lyon", "expected": "Paris"},
            {"input": "Capital of France?", "output": "Nice", "expected": "Paris"},
            {"input": "Capital of France?", "output": "Paris"},
        ],
    )
    env = {
        **os.environ,
        "OPENAI_API_KEY": fake_api_key,
        "OPENAI_BASE_URL": llm_server.base_url,
        "SCORERS_CACHE_DIR": str(tmp_path / "cache"),
    }
    out = tmp_path / "out.jsonl"
    args = (
        "run",
        str(data),
        "-s",
        "Factuality",
        "-s",
        "ExactMatch",
        "-o",
        str(out),
        "--concurrency",
        "4",
        "--model",
        "judge-model",
        "--metadata",
    )
    first = cli(*args, env=env)
    assert first.returncode == 0, first.stderr
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert [line["scores"]["Factuality"] for line in lines] == [1.0, 0.0, None, None]
    assert lines[2]["errors"]["Factuality"]["type"] == "RequestRejected"  # a JudgeError: this row, not the run
    assert lines[3]["errors"]["Factuality"]["type"] == "ScorerInputError"  # this row's data, not the template
    assert "template variable" in lines[3]["errors"]["Factuality"]["message"]
    assert lines[0]["metadata_scores"]["Factuality"]["rationale"] == "same facts"
    assert "usage" in first.stderr  # token usage in the summary
    assert {r.body["model"] for r in llm_server.chat_requests} == {"judge-model"}
    assert fake_api_key not in first.stderr + out.read_text()

    sent = len(llm_server.chat_requests)
    cached = cli(*args, env=env)
    assert cached.returncode == 0, cached.stderr
    assert len(llm_server.chat_requests) - sent == 1  # only the failed row is asked again
    summary_json = tmp_path / "summary.json"
    priced = ("--price", "judge-model=1000000,2000000", "--summary-json", str(summary_json))
    uncached = cli(*args, "--no-cache", *priced, env=env)
    assert uncached.returncode == 0
    usage = json.loads(summary_json.read_text())["scorers"]["Factuality"]["usage"]
    assert usage["cost_usd"] == pytest.approx(usage["prompt_tokens"] + 2 * usage["completion_tokens"])
    assert f"cost ${usage['cost_usd']:.4f}" in uncached.stderr  # the summary says it in words
    assert len(llm_server.chat_requests) - sent == 1 + 3


@pytest.mark.slow
@pytest.mark.parametrize("scorer,figure", [("BLEU", "corpus_bleu"), ("chrF", "corpus_chrf"), ("TER", "corpus_ter")])
def test_a_resumed_run_reproduces_the_corpus_figure_without_metadata(tmp_path, scorer, figure):
    import sacrebleu

    full, summary_full = tmp_path / "full.jsonl", tmp_path / "full.json"
    assert cli("run", str(EXAMPLE), "-s", scorer, "-o", str(full), "--summary-json", str(summary_full)).returncode == 0
    part, summary_part = tmp_path / "part.jsonl", tmp_path / "part.json"
    part.write_text("".join(full.read_text().splitlines(keepends=True)[:10]))
    result = cli("run", str(EXAMPLE), "-s", scorer, "-o", str(part), "--resume", "--summary-json", str(summary_part))
    assert result.returncode == 0, result.stderr
    assert part.read_text() == full.read_text()
    whole, resumed = (json.loads(p.read_text())["scorers"][scorer] for p in (summary_full, summary_part))
    assert resumed == whole and whole["corpus_rows"] == 24
    rows = [json.loads(line) for line in EXAMPLE.read_text().splitlines()]
    metric = {"BLEU": sacrebleu.corpus_bleu, "chrF": sacrebleu.corpus_chrf, "TER": sacrebleu.corpus_ter}[scorer]
    assert whole[figure] == metric([r["output"] for r in rows], [[r["expected"] for r in rows]]).score


@pytest.mark.slow
def test_results_written_without_statistics_give_no_corpus_figure_and_say_why(tmp_path):
    full = tmp_path / "full.jsonl"
    assert cli("run", str(EXAMPLE), "-s", "BLEU", "-o", str(full)).returncode == 0
    old = [json.loads(line) for line in full.read_text().splitlines()[:10]]
    for record in old:  # as an older version wrote them
        record.pop("stats")
    part, summary = tmp_path / "part.jsonl", tmp_path / "part.json"
    write_jsonl(part, old)
    result = cli("run", str(EXAMPLE), "-s", "BLEU", "-o", str(part), "--resume", "--summary-json", str(summary))
    assert result.returncode == 0, result.stderr
    figures = json.loads(summary.read_text())["scorers"]["BLEU"]
    assert (
        figures["corpus_bleu"] is None
        and "10 scored rows carry no sufficient statistics" in figures["corpus_unavailable"]
    )
    assert figures["n"] == 24


def test_a_missing_api_key_stops_the_run_before_any_row_is_written(tmp_path):
    out = tmp_path / "out.jsonl"
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL")}
    result = cli("run", str(EXAMPLE), "-s", "ExactMatch", "-s", "Factuality", "-o", str(out), env=env)
    assert result.returncode == 2, result.stderr
    assert "OPENAI_API_KEY" in result.stderr and "Traceback" not in result.stderr
    assert out.read_text() == ""


def test_a_template_variable_the_data_lacks_stops_the_run(tmp_path, fake_api_key):
    env = {**os.environ, "OPENAI_API_KEY": fake_api_key, "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}
    result = cli("run", str(EXAMPLE), "-s", "ClosedQA", "-o", str(tmp_path / "out.jsonl"), env=env)
    assert result.returncode == 2
    assert "ClosedQA needs the field 'criteria'" in result.stderr and "--map criteria=COLUMN" in result.stderr


def test_a_broken_dependency_is_an_unexpected_error_and_a_non_zero_exit(tmp_path):
    fake = tmp_path / "site" / "rapidfuzz"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('rapidfuzz is broken: libstdc++ mismatch')\n")
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "site")}
    out = tmp_path / "out.jsonl"
    result = cli("run", str(EXAMPLE), "-s", "ExactMatch", "-s", "Levenshtein", "-o", str(out), env=env)
    assert result.returncode == 3, result.stderr
    assert "Levenshtein: 24 row(s) failed with an unexpected error" in result.stderr
    assert "Levenshtein: failed on every row (ImportError ×24)" in result.stderr
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(records) == 24 and records[0]["errors"]["Levenshtein"]["unexpected"] is True
    assert records[0]["scores"]["ExactMatch"] == 1.0


@pytest.mark.slow
def test_resume_with_other_scorers_says_what_differs(tmp_path):
    out = tmp_path / "out.jsonl"
    assert cli("run", str(EXAMPLE), "-s", "ExactMatch", "-s", "Levenshtein", "-o", str(out)).returncode == 0
    out.write_text("".join(out.read_text().splitlines(keepends=True)[:5]))
    before = out.read_text()
    for scorers, differs in (
        (["ExactMatch"], "only in"),
        (["ExactMatch", "Levenshtein", "BLEU"], "not in"),
        (["Levenshtein", "ExactMatch"], "another order"),
    ):
        result = cli("run", str(EXAMPLE), *[a for s in scorers for a in ("-s", s)], "-o", str(out), "--resume")
        assert result.returncode == 2 and differs in result.stderr and "was scored with" in result.stderr
        assert out.read_text() == before  # nothing written is lost


def test_output_to_a_device_or_a_pipe(tmp_path):
    assert cli("run", str(EXAMPLE), "-s", "ExactMatch", "-o", "/dev/null").returncode == 0
    piped = cli("run", str(EXAMPLE), "-s", "ExactMatch", "-o", "-")
    assert piped.returncode == 0 and len(piped.stdout.splitlines()) == 24


def test_a_torn_json_line_is_reported_where_it_breaks(tmp_path):
    data = tmp_path / "bad.jsonl"
    data.write_text('{"output": "a", "expected": "a"}\n{"output": "a", "expected": "a"\n')
    result = cli("run", str(data), "-s", "ExactMatch")
    assert result.returncode == 2 and "bad.jsonl:2: invalid JSON" in result.stderr
    assert "at the end of the line" in result.stderr


def test_show_prints_a_judges_template_and_the_registry_hint():
    result = cli("show", "Factuality")
    assert result.returncode == 0
    assert "template (" in result.stderr + result.stdout and "{{output}}" in result.stdout
    assert "choice_scores:" in result.stdout


@contextlib.contextmanager
def _interrupted_judge_run(
    tmp_path: Path, out: Path, sig: int, api_key: str, ready: Callable[[Any], bool]
) -> Iterator[tuple[int, str, list[str], dict[str, str]]]:
    """``run -s Factuality`` over 40 rows into ``out`` against a LoopbackLLM, sent ``sig`` once ``ready(server)``
    (or after 60 s); yields its exit code, its stderr, its arguments and environment while the server still serves."""
    from scorers.testing import LoopbackLLM, Reply

    rows = [{"id": i, "input": "q", "output": f"a{i}", "expected": "a"} for i in range(40)]
    data = write_jsonl(tmp_path / "d.jsonl", rows)
    with LoopbackLLM(default=Reply.choice("C"), latency=0.05) as server:
        env = {
            **os.environ,
            "OPENAI_API_KEY": api_key,
            "OPENAI_BASE_URL": server.base_url,
            "SCORERS_CACHE_DIR": str(tmp_path / "cache"),
        }
        args = ["run", str(data), "-s", "Factuality", "-o", str(out), "--concurrency", "2"]
        proc = subprocess.Popen(
            [sys.executable, "-m", "scorers", *args],
            cwd=REPO,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.time() + 60
        while time.time() < deadline and not ready(server):
            time.sleep(0.01)
        proc.send_signal(sig)
        _, stderr = proc.communicate(timeout=60)
        yield proc.returncode, stderr, args, env


@pytest.mark.slow
@pytest.mark.parametrize("sig,code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_an_interrupted_run_exits_cleanly_and_resumes(tmp_path, sig, code, fake_api_key):
    out = tmp_path / "out.jsonl"

    def two_rows_written(server):
        return out.exists() and out.read_text().count("\n") >= 2

    with _interrupted_judge_run(tmp_path, out, sig, fake_api_key, two_rows_written) as (returncode, stderr, args, env):
        assert returncode == code, stderr
        assert "Traceback" not in stderr and "--resume" in stderr
        written = out.read_text()
        assert written.endswith("\n") and 2 <= written.count("\n") < 40
        assert all(json.loads(line)["scores"]["Factuality"] == 1.0 for line in written.splitlines())
        resumed = cli(*args, "--resume", env=env)
        assert resumed.returncode == 0, resumed.stderr
    assert [json.loads(line)["id"] for line in out.read_text().splitlines()] == list(range(40))


@pytest.mark.slow
def test_an_interrupted_parquet_run_keeps_its_rows_and_does_not_offer_resume(tmp_path, fake_api_key):
    import pyarrow.parquet as pq

    out = tmp_path / "out.parquet"

    def six_requests(server):
        return server.request_count >= 6

    with _interrupted_judge_run(tmp_path, out, signal.SIGINT, fake_api_key, six_requests) as (returncode, stderr, _, _):
        pass
    assert returncode == 130, stderr
    assert "Traceback" not in stderr and f"the rows scored so far are in {out}" in stderr
    assert "continue with --resume)" in stderr and "write JSONL" in stderr
    ids = pq.read_table(out).column("id").to_pylist()
    assert ids == list(range(len(ids))) and 0 < len(ids) < 40


def test_a_folder_named_scorers_in_the_working_directory_does_not_shadow_the_package(tmp_path):
    (tmp_path / "scorers").mkdir()  # e.g. the parent folder of a clone named scorers/
    (tmp_path / "scorers" / "README.md").write_text("a clone\n")
    result = subprocess.run(
        [sys.executable, "-m", "scorers", "--version"], capture_output=True, text=True, cwd=tmp_path, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("scorers ")


# ------------------------------------------------------------------ rows that must neither wedge a run nor be lost
def _torn_copy(full: Path, out: Path, rows: int) -> None:
    """``out``: the first ``rows`` lines of ``full`` and half of the next one, as a crash mid-write leaves it."""
    lines = full.read_bytes().splitlines(keepends=True)
    out.write_bytes(b"".join(lines[:rows]) + lines[rows][: len(lines[rows]) // 2])


@pytest.mark.slow
def test_input_columns_named_like_the_results_keys_are_kept_and_report_compare_resume_work(tmp_path):
    rows = [
        {
            "id": i,
            "output": f"a{i}",
            "expected": f"a{i - i % 2}",
            "scores": f"grade {i}",
            "errors": "none",
            "stats": [i],
            "metadata_scores": {"x": i},
            "input:scores": i,
        }
        for i in range(6)
    ]
    data = write_jsonl(tmp_path / "d.jsonl", rows)
    full = tmp_path / "full.jsonl"
    result = cli("run", str(data), "-s", "ExactMatch", "-s", "BLEU", "--metadata", "-o", str(full))
    assert result.returncode == 0, result.stderr
    assert result.stderr.count("note:") == 1 and "'scores' as 'input:scores'" in result.stderr
    assert "'input:scores' as 'input:input:scores'" in result.stderr
    records = [json.loads(line) for line in full.read_text().splitlines()]
    for row, record in zip(rows, records):
        assert {k: record["input:" + k] for k in ("scores", "errors", "stats", "metadata_scores", "input:scores")} == {
            k: row[k] for k in ("scores", "errors", "stats", "metadata_scores", "input:scores")
        }
        assert record["scores"]["ExactMatch"] == (1.0 if row["id"] % 2 == 0 else 0.0)
        assert len(record["stats"]["BLEU"]) == 12 and "errors" not in record
    # the input's columns by their input names: --key and --map read the input's "scores", not the run's
    report = cli(
        "report", str(full), str(full), "--key", "scores", "--map", "expected=scores", "-o", str(tmp_path / "r.html")
    )
    assert report.returncode == 0, report.stderr
    assert "grade 1" in (tmp_path / "r.html").read_text()
    compare = cli("compare", str(full), str(full), "--key", "scores", "--json")
    assert compare.returncode == 0, compare.stderr
    assert {f["scorer"] for f in json.loads(compare.stdout)["figures"]} == {"ExactMatch", "BLEU"}
    partial = tmp_path / "partial.jsonl"
    _torn_copy(full, partial, 3)
    resumed = cli("run", str(data), "-s", "ExactMatch", "-s", "BLEU", "--metadata", "-o", str(partial), "--resume")
    assert resumed.returncode == 0, resumed.stderr
    assert [json.loads(line) | {"metadata_scores": None} for line in partial.read_text().splitlines()] == [
        record | {"metadata_scores": None} for record in records
    ]


@pytest.mark.slow
def test_lone_surrogates_control_characters_and_nan_are_written_and_resumed(tmp_path):
    rows = [
        {"id": 0, "output": "a", "expected": "a"},
        {"id": 1, "output": "\ud800", "expected": "\udfff x", "\udc80key": "\x00\x1f\x7f"},
        {"id": 2, "output": "b", "expected": "b", "note": "日本語 ✓"},
        {"id": 3, "output": "c", "expected": "d", "value": float("nan"), "big": 1e308, "tiny": 5e-324},
        {"id": 4, "output": "e", "expected": "e"},
    ]
    data = write_jsonl(tmp_path / "d.jsonl", rows)  # json.dumps writes \ud800 escapes and NaN
    full = tmp_path / "full.jsonl"
    result = cli("run", str(data), "-s", "ExactMatch", "-s", "Levenshtein", "-o", str(full))
    assert result.returncode == 0, result.stderr
    text = full.read_bytes().decode("utf-8")
    records = [json.loads(line) for line in text.splitlines()]
    assert [r["id"] for r in records] == [0, 1, 2, 3, 4]
    assert records[1]["output"] == "\ud800" and records[1]["\udc80key"] == "\x00\x1f\x7f"
    assert "日本語 ✓" in text  # only a record that needs escapes is written with them
    assert [r["scores"]["ExactMatch"] for r in records] == [1.0, 0.0, 1.0, 0.0, 1.0]
    for rows_kept in (1, 2, 3, 4):
        partial = tmp_path / f"partial{rows_kept}.jsonl"
        _torn_copy(full, partial, rows_kept)
        resumed = cli("run", str(data), "-s", "ExactMatch", "-s", "Levenshtein", "-o", str(partial), "--resume")
        assert resumed.returncode == 0, resumed.stderr
        assert partial.read_bytes() == full.read_bytes()
    report = cli("report", str(full), "-o", str(tmp_path / "r.html"))
    assert report.returncode == 0, report.stderr


@pytest.mark.parametrize(
    "name,content,line",
    [
        ("d.jsonl", b'{"output": "a", "expected": "a"}\n{"output": "caf\xe9", "expected": "a"}\n', 2),
        ("d.csv", b"output,expected\na,a\ncaf\xe9,a\n", 3),
    ],
)
def test_input_that_is_not_utf8_exits_2_naming_line_and_byte_offset(tmp_path, name, content, line):
    data = tmp_path / name
    data.write_bytes(content)
    result = cli("run", str(data), "-s", "ExactMatch", "-o", str(tmp_path / "o.jsonl"))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    offset = content.index(b"\xe9")
    assert f"{data}:{line}: not UTF-8 text (byte 0xe9 at byte offset {offset})" in result.stderr


@pytest.mark.parametrize(
    "name,content",
    [("d.csv", "id,output,expected\n7,a,a\n"), ("d.jsonl", '{"id": "7", "output": "a", "expected": "a"}\n')],
)
def test_a_utf8_byte_order_mark_is_not_part_of_the_first_column(tmp_path, name, content):
    data = tmp_path / name
    data.write_text(content, encoding="utf-8-sig")
    result = cli("run", str(data), "-s", "ExactMatch")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"id": "7", "output": "a", "expected": "a", "scores": {"ExactMatch": 1.0}}


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (Linux)")
def test_a_full_disk_exits_2_and_says_the_rows_written_are_complete(tmp_path):
    result = cli("run", str(EXAMPLE), "-s", "ExactMatch", "-o", "/dev/full")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert (
        "error: cannot write /dev/full: No space left on device; the rows written so far are complete, "
        "continue with --resume once there is space"
    ) in result.stderr


def test_an_output_in_a_missing_folder_exits_2(tmp_path):
    result = cli("run", str(EXAMPLE), "-s", "ExactMatch", "-o", str(tmp_path / "missing" / "o.jsonl"))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert f"error: cannot write {tmp_path / 'missing' / 'o.jsonl'}: No such file or directory" in result.stderr


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs a POSIX file size limit")
def test_a_write_cut_short_leaves_a_file_that_resumes(tmp_path):
    import resource

    data = write_jsonl(
        tmp_path / "d.jsonl", [{"id": i, "output": f"x{i}", "expected": f"x{i - i % 3}"} for i in range(2000)]
    )
    full = tmp_path / "full.jsonl"
    assert cli("run", str(data), "-s", "Levenshtein", "-o", str(full)).returncode == 0
    lines = full.read_bytes().splitlines(keepends=True)
    limit = sum(map(len, lines[:1000])) + 10  # the file may not grow past the middle of line 1001

    def limit_file_size() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    out = tmp_path / "out.jsonl"
    cut = cli(
        "run",
        str(data),
        "-s",
        "Levenshtein",
        "-o",
        str(out),
        preexec_fn=limit_file_size,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
    )
    assert cut.returncode == 2 and "Traceback" not in cut.stderr
    assert f"error: cannot write {out}: File too large; the rows written so far are complete" in cut.stderr
    assert out.stat().st_size == limit and not out.read_bytes().endswith(b"\n")  # a torn last line
    resumed = cli("run", str(data), "-s", "Levenshtein", "-o", str(out), "--resume")
    assert resumed.returncode == 0, resumed.stderr
    assert out.read_bytes() == full.read_bytes()


def test_report_names_a_results_line_whose_errors_are_not_an_object(tmp_path):
    old = write_jsonl(
        tmp_path / "old.jsonl",
        [  # written before input columns were kept apart from the run's keys
            {"id": 1, "output": "a", "scores": {"ExactMatch": 1.0}, "errors": "an input column"}
        ],
    )
    result = cli("report", str(old), "-o", str(tmp_path / "r.html"))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert f'{old}: record 1: "errors" is a str, not an object' in result.stderr


# ------------------------------------------------------------------ a folder where a file is expected
FILE_ARGUMENTS = [  # every argument that names a file to read or write, with FOLDER where it goes
    ("run", ["FOLDER", "-s", "ExactMatch"], "data"),
    ("run", [str(EXAMPLE), "-s", "ExactMatch", "-o", "FOLDER"], "-o/--output"),
    ("run", [str(EXAMPLE), "-s", "ExactMatch", "--summary-json", "FOLDER"], "--summary-json"),
    ("compare", [str(EXAMPLE), "FOLDER"], "RESULTS.jsonl"),
    ("meta-eval", ["FOLDER", "-s", "ExactMatch", "--label", "x"], "data"),
    ("meta-eval", [str(EXAMPLE), "-s", "ExactMatch", "--label", "x", "-o", "FOLDER"], "-o/--output"),
    ("correlate", ["FOLDER", "--human", "x"], "RESULTS.jsonl"),
    ("correlate", [str(EXAMPLE), "--human", "x", "--pairs", "FOLDER"], "--pairs"),
    ("correlate", [str(EXAMPLE), "--human", "x", "-o", "FOLDER"], "-o/--output"),
    ("correlate", [str(EXAMPLE), "--human", "x", "--html", "FOLDER"], "--html"),
    ("report", ["FOLDER", "-o", "report.html"], "RESULTS.jsonl"),
    ("report", [str(EXAMPLE), "--meta-eval", "FOLDER", "-o", "report.html"], "--meta-eval"),
    ("report", [str(EXAMPLE), "--correlation", "FOLDER", "-o", "report.html"], "--correlation"),
    ("report", [str(EXAMPLE), "-o", "FOLDER"], "-o/--output"),
    ("promptfoo", ["init", "FOLDER"], "PATH"),
    ("loopback", ["--replies", "FOLDER"], "--replies"),
]


@pytest.mark.parametrize("command,args,argument", FILE_ARGUMENTS, ids=[f"{c} {a}" for c, _, a in FILE_ARGUMENTS])
def test_a_folder_where_a_file_is_expected_is_exit_2_naming_it(tmp_path, capsys, command, args, argument):
    from scorers.cli import main

    with pytest.raises(SystemExit) as exited:
        main([command, *[str(tmp_path) if a == "FOLDER" else a for a in args]])
    assert exited.value.code == 2
    assert f"error: argument {argument}: {tmp_path} is a directory, not a file" in capsys.readouterr().err


def test_compare_given_a_folder_says_so_with_exit_2():
    result = cli("compare", "examples", str(EXAMPLE))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "argument RESULTS.jsonl: examples is a directory, not a file" in result.stderr
