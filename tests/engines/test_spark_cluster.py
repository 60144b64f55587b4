"""The Spark engine on a real standalone cluster on 127.0.0.1 (a master and one worker, started once for the
module from the pyspark package), driven by ``python -m scorers run``: a stop signal stops the run within
seconds with the rows finished so far written and no judge call after it, rows are written while the job runs,
and a killed executor loses no row and leaves every paid call counted as paid. Also: a session the engine starts listens on 127.0.0.1 only."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Iterator

import psutil
import pytest

from scorers.testing import LoopbackLLM, Reply

pytestmark = [pytest.mark.needs_cluster, pytest.mark.needs_java]

REPO = Path(__file__).resolve().parents[2]
LOOPBACK = {"127.0.0.1", "::ffff:127.0.0.1", "::1"}
#: A hang guard for each wait below, never a measure.
GUARD_S = 240
#: Rows of a run that is stopped: 50 tasks of one batch of 16 rows, in 8 jobs.
ROWS = 800


def wait_for(condition: Any, what: str) -> Any:
    deadline = time.monotonic() + GUARD_S
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"gave up waiting for {what}")


def log_line(path: Path, marker: str) -> str:
    """The first line of the log at ``path`` holding ``marker``, once it is written."""
    return wait_for(
        lambda: next((line for line in path.read_text(errors="replace").splitlines() if marker in line), None),
        f"{marker!r} in {path}",
    )


def start(spark_home: Path, log: Path, *args: str, env: dict[str, str]) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(
            [str(spark_home / "bin" / "spark-class"), *args],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )


def stop(process: subprocess.Popen[bytes]) -> None:
    for child in psutil.Process(process.pid).children(recursive=True):
        child.kill()
    process.kill()
    process.wait(timeout=GUARD_S)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A Spark standalone master and one worker (2 cores) on 127.0.0.1: its URL and the worker's process."""
    pyspark = pytest.importorskip("pyspark", reason="the Spark engine needs pip install 'scorers[spark]'")
    spark_home = Path(pyspark.__file__).parent
    folder = tmp_path_factory.mktemp("spark-cluster")
    env = {
        **os.environ,
        "SPARK_HOME": str(spark_home),
        "SPARK_LOCAL_IP": "127.0.0.1",  # every server of the cluster, web UIs included, on loopback
        "SPARK_LOG_DIR": str(folder),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),  # for the executors
    }
    master = start(
        spark_home,
        folder / "master.log",
        "org.apache.spark.deploy.master.Master",
        *("--host", "127.0.0.1", "--port", "0", "--webui-port", "0"),
        env=env,
    )
    try:
        url = "spark://" + log_line(folder / "master.log", "Starting Spark master at spark://").rsplit("spark://", 1)[1]
        worker = start(
            spark_home,
            folder / "worker.log",
            "org.apache.spark.deploy.worker.Worker",
            *("--host", "127.0.0.1", "--port", "0", "--webui-port", "0", "--cores", "2", "--memory", "2g"),
            *("--work-dir", str(folder / "work"), url.strip()),
            env=env,
        )
        try:
            log_line(folder / "worker.log", "Successfully registered with master")
            yield {"url": url.strip(), "worker": worker, "env": env, "log": folder / "worker.log"}
        finally:
            stop(worker)
    finally:
        stop(master)


def rows_file(folder: Path, count: int) -> Path:
    path = folder / "rows.jsonl"
    with path.open("w", encoding="utf-8") as out:
        for i in range(count):
            row = {"id": i, "input": f"question {i}?", "output": f"answer {i}", "expected": f"answer {i}"}
            out.write(json.dumps(row) + "\n")
    return path


def scorers_run(
    cluster: dict[str, Any], server: LoopbackLLM, rows: Path, out: Path, *extra: str
) -> subprocess.Popen[str]:
    """``python -m scorers run`` of the Factuality judge on the cluster (2 workers of 16 calls each, executors of
    512 MiB and the driver on 127.0.0.1: Spark settings from the command line)."""
    env = {
        **cluster["env"],
        "OPENAI_API_KEY": "sk-test",
        "OPENAI_BASE_URL": server.base_url,
        "SCORERS_CACHE": str(out.parent / "judges.sqlite"),
    }
    command = [sys.executable, "-m", "scorers", "run", str(rows), "-s", "Factuality", "-o", str(out)]
    options = ["--engine", "spark", "--engine-option", f"master={cluster['url']}", "--workers", "2"]
    options += ["--engine-option", "spark.executor.memory=512m", "--engine-option", "spark.driver.host=127.0.0.1"]
    options += ["--concurrency", "16", "--no-progress"]
    return subprocess.Popen(
        [*command, *options, *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=REPO,
    )


def written(out: Path) -> list[dict[str, Any]]:
    """The complete lines of ``out``, parsed (a line still being written is left out)."""
    if not out.exists():
        return []
    return [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines(keepends=True) if line[-1:] == "\n"]


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)], ids=["INT", "TERM"])
def test_a_stop_signal_stops_the_run_within_seconds_with_its_rows_written(
    cluster: dict[str, Any], llm_server: LoopbackLLM, tmp_path: Path, signum: int, code: int
) -> None:
    llm_server.default = Reply.choice("C")
    llm_server.latency = 0.1
    rows, out = rows_file(tmp_path, ROWS), tmp_path / "out.jsonl"
    started = time.monotonic()
    run = scorers_run(cluster, llm_server, rows, out)
    try:
        first = wait_for(lambda: written(out), "the first rows in the output")
        print(f"\nfirst rows after {time.monotonic() - started:.1f} s")
        asked = llm_server.request_count
        assert asked < ROWS  # rows are written while the job runs
        run.send_signal(signum)
        signalled = time.monotonic()
        _, stderr = run.communicate(timeout=60)  # a hang guard: the stop takes a few seconds
        print(f"exit {time.monotonic() - signalled:.1f} s after the signal")
    finally:
        run.kill()
    assert run.returncode == code, stderr
    assert "the rows written so far are complete" in stderr
    at_exit = llm_server.request_count
    rows_written = written(out)
    print(
        f"\nfirst rows: {len(first)} after {asked} requests; at the exit: {len(rows_written)} rows, {at_exit} requests"
    )
    assert len(first) <= len(rows_written) < ROWS and at_exit < ROWS
    ids = [row["id"] for row in rows_written]
    assert len(set(ids)) == len(ids) and all(row["scores"] == {"Factuality": 1.0} for row in rows_written)
    time.sleep(3)  # long enough for a worker left running to send its next batch
    assert llm_server.request_count == at_exit and llm_server.in_flight == 0


def test_a_killed_executor_loses_no_row(cluster: dict[str, Any], llm_server: LoopbackLLM, tmp_path: Path) -> None:
    llm_server.default = Reply.choice("C")
    llm_server.latency = 0.05
    rows, out, summary = rows_file(tmp_path, 320), tmp_path / "out.jsonl", tmp_path / "summary.json"
    run = scorers_run(cluster, llm_server, rows, out, "--ordered", "--summary-json", str(summary))
    try:
        wait_for(lambda: written(out), "the first rows in the output")

        def executor() -> psutil.Process | None:
            for process in psutil.Process(cluster["worker"].pid).children():
                with contextlib.suppress(psutil.Error):  # an executor of an earlier run may be ending
                    command = " ".join(process.cmdline())
                    if "CoarseGrainedExecutorBackend" in command and process.status() != psutil.STATUS_ZOMBIE:
                        return process
            return None

        victim = wait_for(executor, "the executor")
        killed_at = llm_server.request_count
        for process in [victim, *victim.children(recursive=True)]:
            process.kill()
        _, stderr = run.communicate(timeout=GUARD_S)
    finally:
        run.kill()
    assert run.returncode == 0, stderr
    usage = json.loads(summary.read_text())["scorers"]["Factuality"]["usage"]
    print(f"\nexecutor killed after {killed_at} requests; {llm_server.request_count} requests for 320 rows; {usage}")
    assert killed_at < 320
    assert usage["requests"] == 320 and usage["cached"] == 0  # a call paid before the kill counts as paid
    records = written(out)
    assert [row["id"] for row in records] == list(range(320))  # every row once, in order
    assert all(row["scores"] == {"Factuality": 1.0} for row in records)
    launched = [line for line in cluster["log"].read_text().splitlines() if "Launch command:" in line]
    assert len(launched) >= 2 and all('"-Xmx512M"' in line for line in launched)  # the new executor too


def test_a_session_the_engine_starts_listens_on_loopback_only(spark_session: Any) -> None:
    spark_session.sparkContext.parallelize(range(4), 2).map(abs).collect()  # the Python workers started too
    processes = [psutil.Process()]  # py4j's callback server
    for process in psutil.Process().children(recursive=True):
        with contextlib.suppress(psutil.Error):
            if "spark" in " ".join(process.cmdline()).lower():  # the JVM and its Python workers, not Ray's
                processes.append(process)
    assert any(p.name() == "java" for p in processes)
    listening = [
        (process.name(), connection.laddr)
        for process in processes
        for connection in process.net_connections(kind="inet")
        if connection.status == psutil.CONN_LISTEN
    ]
    assert len(listening) >= 3, listening  # the driver's RPC and block manager, and py4j
    assert {address.ip for _, address in listening} <= LOOPBACK, listening
