"""Batch runs end to end against the loopback batch API: the results, cache entries and scores of an online run;
a kill while the batch is out and a resume that sends nothing again; expired, cancelled and failed batches and
failed lines as typed errors that the next run completes; cached rows never sent; re-asks online."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Iterator

import pytest

import scorers
from scorers.errors import ConfigError
from scorers.llm import configure
from scorers.llm.batch.providers import BATCH_APIS, batch_api
from scorers.llm.protocols import PROTOCOLS
from scorers.testing import LoopbackLLM, Reply, auto_reply
from scorers.testing.batches import BatchClock

pytest.importorskip("openai")

REPO = Path(__file__).resolve().parents[3]
#: A judge of one request a row and one of two dependent requests (claims, then verdicts): two rounds of batches.
JUDGES = ("Factuality", "Faithfulness")


def rows(count: int) -> list[dict[str, Any]]:
    """Rows whose judge requests all differ (no two rows share a prompt)."""
    return [
        {
            "input": f"question {i}?",
            "output": f"answer {i}. It is blue.",
            "expected": f"answer {i}.",
            "context": [f"The sky {i} is blue.", f"Ice {i} is cold."],
        }
        for i in range(count)
    ]


def without_latency(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: without_latency(v) for k, v in value.items() if k != "latency_s"}
    if isinstance(value, list):
        return [without_latency(v) for v in value]
    return value


def records(path: Path) -> list[dict[str, Any]]:
    return [without_latency(json.loads(line)) for line in path.read_text().splitlines()]


def cache_entries(path: Path) -> dict[str, Any]:
    """The cache's entries, without what differs between two calls of the same request (the latency and the ids
    the server makes up)."""
    with sqlite3.connect(path) as db:
        stored = {key: json.loads(reply) for key, reply in db.execute("SELECT key, reply FROM replies")}
    for reply in stored.values():
        for call in reply.get("tool_calls") or []:
            call.pop("id", None)
    return without_latency(stored)


@pytest.fixture
def server() -> Iterator[LoopbackLLM]:
    with LoopbackLLM(default=auto_reply, record_limit=10_000) as running:
        yield running


def run(
    server: LoopbackLLM, data: Any, out: Path, *, batch: bool, cache: Path, judges: Any = JUDGES, **options: Any
) -> Any:
    configure(base_url=server.base_url, api_key="test-key", cache=str(cache))
    judges = [scorers.get(name) for name in judges] + [scorers.get("ExactMatch")]
    run = scorers.Run(data, judges, output=str(out), batch=batch, batch_poll_s=0.05, metadata=True, **options)
    return run.execute(handle_signals=False)


def online_and_batch(server: LoopbackLLM, tmp_path: Path, count: int) -> None:
    data = rows(count)
    online = run(server, data, tmp_path / "online.jsonl", batch=False, cache=tmp_path / "online.sqlite")
    sent_online = len(server.chat_requests)
    batched = run(server, data, tmp_path / "batch.jsonl", batch=True, cache=tmp_path / "batch.sqlite")
    assert records(tmp_path / "batch.jsonl") == records(tmp_path / "online.jsonl")
    assert cache_entries(tmp_path / "batch.sqlite") == cache_entries(tmp_path / "online.sqlite")
    assert batched.summary.scorers == online.summary.scorers and batched.failed_rows == 0
    assert len(server.chat_requests) == sent_online  # the batch run sent nothing online
    assert server.batches.lines_received == sent_online == 3 * count
    assert server.batches.created == 2  # Faithfulness's verdicts need its claims: a second round
    assert not (tmp_path / "batch.jsonl.batch.json").exists()  # nothing left to resume


def test_a_batch_run_writes_the_results_cache_entries_and_scores_of_an_online_run(server, tmp_path):
    online_and_batch(server, tmp_path, 24)


@pytest.mark.slow
def test_a_batch_run_of_1000_rows_is_byte_identical_to_the_online_run(server, tmp_path):
    online_and_batch(server, tmp_path, 1000)


#: The registered wire protocols that a batch API serves.
BATCHED = [api for api in PROTOCOLS.names() if api in {name for p in BATCH_APIS for name in p.apis}]


@pytest.mark.parametrize("api", BATCHED)
def test_every_protocol_with_a_batch_api_gives_the_online_results(server, tmp_path, api):
    data = rows(6)
    for mode in ("online", "batch"):
        configure(base_url=server.base_url, api_key="test-key", cache=str(tmp_path / f"{mode}.sqlite"))
        judges = [scorers.get("Factuality", api=api), scorers.get("Faithfulness", api=api)]
        out = tmp_path / f"{mode}.jsonl"
        scorers.Run(data, judges, output=str(out), batch=mode == "batch", batch_poll_s=0.05, metadata=True).execute()
    assert records(tmp_path / "batch.jsonl") == records(tmp_path / "online.jsonl")
    online = [r for r in server.requests if r.api == api]
    assert len(online) == 3 * 6 and server.batches.lines_received == 3 * 6  # nothing online in the batch run
    assert {batch.provider for batch in server.batches.batches.values()} == {batch_api(api).name}


def test_rows_in_the_cache_are_never_sent(server, tmp_path):
    data = rows(10)
    run(server, data[:6], tmp_path / "first.jsonl", batch=False, cache=tmp_path / "cache.sqlite")
    lines_online = len(server.chat_requests)
    run(server, data, tmp_path / "out.jsonl", batch=True, cache=tmp_path / "cache.sqlite")
    assert server.batches.lines_received == 3 * 4 and len(server.chat_requests) == lines_online
    run(server, data, tmp_path / "again.jsonl", batch=True, cache=tmp_path / "cache.sqlite")
    assert server.batches.created == 2  # every request of the third run was in the cache


@pytest.mark.parametrize("fate", ["expired", "cancelled", "failed"])
def test_a_batch_that_ends_early_leaves_typed_errors_that_the_next_run_completes(server, tmp_path, fate):
    data, one = rows(8), ("Factuality",)
    server.batches.script(fate, answered=0.5, times=1)
    first = run(server, data, tmp_path / "out.jsonl", batch=True, cache=tmp_path / "cache.sqlite", judges=one)
    failed = [r for r in records(tmp_path / "out.jsonl") if r.get("errors")]
    answered = 0 if fate == "failed" else 4
    assert first.failed_rows == len(failed) == 8 - answered
    errors = [error for r in failed for error in r["errors"].values()]
    assert {error["type"] for error in errors} == {"BatchRequestError"}
    assert {error["reason"] for error in errors} == {fate}
    assert all(error["message"].startswith("Factuality: ") for error in errors)
    assert all(fate in error["message"] and "the next run sends it again" in error["message"] for error in errors)
    lines_before = server.batches.lines_received

    second = run(server, data, tmp_path / "out.jsonl", batch=True, cache=tmp_path / "cache.sqlite", judges=one)
    assert second.failed_rows == 0 and second.summary.scorers["Factuality"]["n"] == 8
    assert server.batches.lines_received - lines_before == 8 - answered  # only the failed rows' requests
    online = run(server, data, tmp_path / "online.jsonl", batch=False, cache=tmp_path / "online.sqlite", judges=one)
    assert [r["scores"] for r in records(tmp_path / "out.jsonl")] == [
        r["scores"] for r in records(tmp_path / "online.jsonl")
    ]
    assert online.failed_rows == 0


def test_resume_judges_again_the_rows_a_batch_left_unanswered(server, tmp_path):
    data, one, out = rows(8), ("Factuality",), tmp_path / "out.jsonl"
    server.batches.script("expired", answered=0.5, times=1)
    first = run(server, data, out, batch=True, cache=tmp_path / "cache.sqlite", judges=one)
    assert first.failed_rows == 4
    resumed = run(server, data, out, batch=True, cache=tmp_path / "cache.sqlite", judges=one, resume=True)
    assert resumed.failed_rows == 0 and server.batches.lines_received == 8 + 4
    written = records(out)
    assert len(written) == 8 and not any(r.get("errors") for r in written)


def test_a_failed_line_is_a_typed_error_and_an_invalid_reply_is_asked_again_online(server, tmp_path):
    data = rows(6)
    server.script(Reply.error(500, "overloaded"), match="question 2?", times=1)
    server.script(Reply.text("not a tool call"), match="question 4?", times=1)
    first = run(server, data, tmp_path / "out.jsonl", batch=True, cache=tmp_path / "cache.sqlite")
    written = records(tmp_path / "out.jsonl")
    assert first.failed_rows == 1 and list(written[2]["errors"]) == ["Factuality"]
    error = written[2]["errors"]["Factuality"]
    assert error["type"] == "BatchRequestError" and "HTTP 500: overloaded" in error["message"]
    assert [r.last_user_message.count("question 4?") for r in server.chat_requests] == [1]  # the re-ask, online
    assert written[4]["metadata_scores"]["Factuality"]["reasks"] == 1
    assert written[4]["metadata_scores"]["Factuality"]["attempts"] == 2

    second = run(server, data, tmp_path / "out.jsonl", batch=True, cache=tmp_path / "cache.sqlite")
    assert second.failed_rows == 0 and server.batches.lines_received == 3 * 6 + 1


def test_without_a_cache_the_rounds_read_the_batch_replies_they_hold(server, tmp_path):
    data = rows(6)
    configure(base_url=server.base_url, api_key="test-key", cache=False)
    judges = [scorers.get(name) for name in JUDGES]
    for mode in ("online", "batch"):
        scorers.Run(
            data,
            judges,
            output=str(tmp_path / f"{mode}.jsonl"),
            batch=mode == "batch",
            batch_poll_s=0.05,
            metadata=True,
        ).execute(handle_signals=False)
    assert records(tmp_path / "batch.jsonl") == records(tmp_path / "online.jsonl")
    assert server.batches.lines_received == 3 * 6


def test_the_command_line_shows_each_batch_and_leaves_no_state(server, tmp_path, capsys, monkeypatch):
    from scorers.cli import main

    data, out = tmp_path / "data.jsonl", tmp_path / "out.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in rows(5)))
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    code = main(["run", str(data), "-s", "Factuality", "-o", str(out), "--batch", "--batch-poll", "0.05"])
    stderr = capsys.readouterr().err
    assert code == 0, stderr
    assert (
        "5 requests submitted to openai (chat, gpt-4o-mini)" in stderr
        and ": completed (5 done, 0 failed of 5)" in stderr
    )
    assert len(out.read_text().splitlines()) == 5 and not (tmp_path / "out.jsonl.batch.json").exists()


@pytest.mark.parametrize(
    ("judge", "refusal"),
    [
        (lambda: scorers.get("GPTScore"), "GPTScore: run --batch cannot send it: it asks the legacy completions API"),
        (lambda: scorers.get("Factuality", api="bedrock"), "Factuality: run --batch: the bedrock API has no batch API"),
    ],
    ids=["gptscore", "bedrock"],
)
def test_a_judge_no_batch_api_takes_is_refused_before_any_request(judge, refusal):
    with pytest.raises(ConfigError, match=refusal):
        scorers.Run([{"input": "a", "output": "b"}], [judge()], batch=True)


def test_batch_needs_the_local_engine():
    with pytest.raises(ConfigError, match="batch needs the local engine"):
        scorers.Run([{"output": "a"}], ["Factuality"], batch=True, engine="ray")


def test_a_failing_batch_api_stops_the_run_without_showing_the_key(tmp_path, fake_api_key):
    with LoopbackLLM(default=auto_reply, api_key="the-right-key") as server:
        configure(base_url=server.base_url, api_key=fake_api_key, cache=str(tmp_path / "cache.sqlite"))
        with pytest.raises(ConfigError) as raised:
            scorers.Run(rows(2), ["Factuality"], output=str(tmp_path / "out.jsonl"), batch=True).execute()
    message = str(raised.value)
    assert "OpenAI's batch API failed while submitting a batch" in message and "401" in message
    assert fake_api_key not in message and "run the same command again" in message


def cli(*args: str, env: dict[str, str]) -> subprocess.Popen[str]:
    command = [sys.executable, "-m", "scorers", "run", *args]
    return subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.mark.slow
@pytest.mark.parametrize("stop", [signal.SIGKILL, signal.SIGINT], ids=["killed", "interrupted"])
def test_a_run_killed_while_its_batch_is_out_resumes_the_poll_without_sending_it_again(server, tmp_path, stop):
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in rows(1000)))
    out, state = tmp_path / "out.jsonl", tmp_path / "out.jsonl.batch.json"
    server.batches.clock = BatchClock(validating_s=0.05, in_progress_s=3600, finalizing_s=0.05)
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "OPENAI_BASE_URL": server.base_url,
        "OPENAI_API_KEY": "test-key",
        "SCORERS_CACHE_DIR": str(tmp_path / "cache"),
    }
    args = (str(data), "-s", "Factuality", "-o", str(out), "--batch", "--batch-poll", "0.1")
    process = cli(*args, env=env)
    try:
        for _ in range(600):  # until the batch is out and listed beside the results
            if server.batches.created and state.exists() or process.poll() is not None:
                break
            time.sleep(0.1)
        assert process.poll() is None, process.communicate()
        process.send_signal(stop)
        assert process.wait(timeout=30) == (130 if stop == signal.SIGINT else -signal.SIGKILL)
    finally:
        if process.poll() is None:
            process.kill()
    listed = json.loads(state.read_text())["batches"]
    assert [entry["id"] for entry in listed] == list(server.batches.batches) and len(listed[0]["custom_ids"]) == 1000
    assert "test-key" not in state.read_text() and out.read_text() == ""

    server.batches.advance()  # the provider finishes the batch while no run is polling it
    resumed = cli(*args, env=env)
    stdout, stderr = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, stderr
    assert f"batch {listed[0]['id']}: out since an earlier run" in stderr and "submitted" not in stderr
    assert server.batches.created == 1 and server.batches.lines_received == 1000  # nothing submitted again
    assert server.chat_requests == [] and not state.exists()
    written = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(written) == 1000 and not any(r.get("errors") for r in written)
