"""The Ray engine on a real multi-process cluster on 127.0.0.1, started with ``ray start`` (a head and one more
node, each a raylet of its own): the CLI joins it by address, a stop signal mid-run exits 143 with every finished
row written and no request after, rows stream as blocks finish, and a killed node loses no row and leaves every
call the run paid for counted as paid. One cluster for the module; the node is killed last."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Iterator

import psutil
import pytest

import scorers
from scorers.testing import LoopbackLLM, Reply

pytestmark = pytest.mark.needs_cluster
pytest.importorskip("ray", reason="the Ray engine needs pip install 'scorers[ray]' (scripts/setup.sh)")

#: The tree under test, for the driver and for the cluster's workers (which import scorers).
ROOT = Path(scorers.__file__).resolve().parents[1]
WORKERS = 2
CONCURRENCY = 4
#: ``ray start``, told to keep 127.0.0.1: Ray rewrites a loopback node and head address to the machine's routed
#: one, and its only switch (RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0) makes ``ray start`` refuse a second node.
RAY_START = (
    "import sys; import ray._private.services as services; services.resolve_ip_for_localhost = lambda host: host; "
    "from ray.scripts.scripts import main; sys.argv[0] = 'ray'; main()"
)
HANG_GUARD_S = 180


class Cluster:
    """A head and one more node on 127.0.0.1, each a ``ray start --block`` process (stopped by its signal: ``ray
    stop`` cannot be told which cluster to stop, and would stop every Ray of this user on the machine)."""

    def __init__(self, folder: Path) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.address = f"127.0.0.1:{self.port}"
        self.folder = folder
        self.env = {
            **os.environ,
            "PYTHONPATH": str(ROOT),
            "RAY_USAGE_STATS_ENABLED": "0",
            "RAY_AUTH_MODE": "disabled",
            # a lost node is declared dead after about 1.5 s, not 15
            "RAY_health_check_period_ms": "500",
            "RAY_health_check_timeout_ms": "500",
            "RAY_health_check_failure_threshold": "3",
            "RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S": "0",  # a stopped node goes at once
        }
        common = ["--block", "--node-ip-address", "127.0.0.1", "--disable-usage-stats"]
        self.head = self._start(
            "head",
            "--head",
            "--port",
            str(self.port),
            "--num-cpus",
            "3",  # room for the whole pool once the other node is lost
            "--include-dashboard",
            "false",
            "--temp-dir",
            str(folder / "ray"),
            *common,
        )
        self.node = self._start("node", "--address", self.address, "--num-cpus", "2", *common)

    def _start(self, name: str, *args: str) -> subprocess.Popen[bytes]:
        log = self.folder / f"{name}.log"
        with open(log, "wb") as out:
            process = subprocess.Popen(
                [sys.executable, "-c", RAY_START, "start", *args], stdout=out, stderr=subprocess.STDOUT, env=self.env
            )
        deadline = time.monotonic() + HANG_GUARD_S
        while b"Ray runtime started" not in log.read_bytes():
            assert process.poll() is None and time.monotonic() < deadline, log.read_text(errors="replace")
            time.sleep(0.2)
        return process

    def processes(self, node: subprocess.Popen[bytes] | None = None) -> list[psutil.Process]:
        """The processes of one node (default: both), its ``ray start`` process first."""
        found = []
        for start in [node] if node is not None else [self.head, self.node]:
            try:
                process = psutil.Process(start.pid)
                found += [process, *process.children(recursive=True)]
            except psutil.NoSuchProcess:
                continue
        return found

    def stop(self) -> None:
        for start in (self.node, self.head):
            if start.poll() is None:
                start.send_signal(signal.SIGTERM)
                try:
                    start.wait(60)
                except subprocess.TimeoutExpired:
                    start.kill()
        for process in self.processes():  # anything left of a node stopped by signal
            process.kill()


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    folder = Path(tempfile.mkdtemp(prefix="rc-"))  # short: Ray's socket paths live under it
    started = Cluster(folder)
    try:
        yield started
    finally:
        started.stop()
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def judged(tmp_path: Path) -> Iterator[tuple[LoopbackLLM, dict[str, str]]]:
    """A loopback judge server that answers slowly enough to stop a run mid-way, and the driver's environment."""
    with LoopbackLLM(default=Reply.choice("C", reasons="same"), latency=0.05) as server:
        env = {
            **os.environ,
            "PYTHONPATH": str(ROOT),
            "OPENAI_API_KEY": "sk-test",
            "OPENAI_BASE_URL": server.base_url,
            "SCORERS_CACHE_DIR": str(tmp_path / "cache"),  # one SQLite file: every node is on this machine
        }
        yield server, env


def rows_file(folder: Path, count: int) -> Path:
    data = folder / "rows.jsonl"
    rows = [{"id": i, "input": "Same?", "output": f"answer {i}", "expected": f"answer {i}"} for i in range(count)]
    data.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return data


def start_run(cluster: Cluster, data: Path, out: Path, env: dict[str, str], *extra: str) -> subprocess.Popen[str]:
    command = [sys.executable, "-m", "scorers", "run", str(data), "-s", "Factuality", "-o", str(out), "--no-progress"]
    engine = ["--engine", "ray", "--engine-option", f"address={cluster.address}", "--workers", str(WORKERS)]
    return subprocess.Popen(
        [*command, *engine, "--concurrency", str(CONCURRENCY), *extra],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )


def written(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()] if out.exists() else []


def connected(processes: list[psutil.Process], port: int) -> list[psutil.Process]:
    """Those of ``processes`` with a connection open to ``port`` on 127.0.0.1."""
    found = []
    for process in processes:
        try:
            if any(c.raddr and c.raddr.port == port for c in process.net_connections(kind="tcp")):
                found.append(process)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return found


def test_the_cluster_listens_on_loopback_only(cluster: Cluster) -> None:
    listening = {
        (process.name(), c.laddr.ip)
        for process in cluster.processes()
        for c in process.net_connections(kind="inet")
        if c.status == psutil.CONN_LISTEN
    }
    assert listening and {ip for _, ip in listening} <= {"127.0.0.1", "::ffff:127.0.0.1"}, listening


def test_a_stop_signal_mid_run_exits_143_with_the_finished_rows_written_and_no_request_after(
    cluster: Cluster, judged: tuple[LoopbackLLM, dict[str, str]], tmp_path: Path
) -> None:
    server, env = judged
    count = 400
    out = tmp_path / "out.jsonl"
    run = start_run(cluster, rows_file(tmp_path, count), out, env)
    first_row_after = None  # requests the server had seen when the first row was in the file
    deadline = time.monotonic() + HANG_GUARD_S
    while server.request_count < count // 2:  # stop half-way
        if run.poll() is not None or time.monotonic() > deadline:
            run.kill()
            pytest.fail(f"the run ended or hung before the stop: {run.communicate()[1]}")
        if first_row_after is None and out.exists() and out.stat().st_size:
            first_row_after = server.request_count
        time.sleep(0.02)
    asked = server.request_count
    run.send_signal(signal.SIGTERM)
    _, stderr = run.communicate(timeout=60)
    sent = server.request_count
    rows = written(out)
    print(
        f"\nfirst row written after {first_row_after} of {count} requests; SIGTERM after {asked}, {sent} sent, "
        f"{len(rows)} rows written"
    )
    assert run.returncode == 143, stderr
    assert "terminated; the rows written so far are complete (continue with --resume)" in stderr
    assert "Traceback" not in stderr and "Stack" not in stderr
    # rows stream as their blocks finish: the first long before all blocks were asked for (at 1,189 of 2,000
    # calls before), and at the stop all but the blocks in flight (each actor holds two of CONCURRENCY rows)
    assert first_row_after is not None and first_row_after <= count // 4
    assert len(rows) >= asked - 4 * WORKERS * CONCURRENCY
    assert len({row["id"] for row in rows}) == len(rows) and all(row["scores"]["Factuality"] == 1.0 for row in rows)
    # no request after the driver's exit: its actors are gone once none holds a connection to the server
    while connected(cluster.processes(), server.port or 0):
        assert time.monotonic() < deadline
        time.sleep(0.1)
    assert server.request_count == sent


def test_a_killed_node_loses_no_row_and_leaves_every_paid_call_counted_as_paid(
    cluster: Cluster, judged: tuple[LoopbackLLM, dict[str, str]], tmp_path: Path
) -> None:
    """Runs last: it kills the cluster's second node (its raylet, its workers, its ``ray start``)."""
    server, env = judged
    count = 300
    out, summary = tmp_path / "out.jsonl", tmp_path / "summary.json"
    run = start_run(cluster, rows_file(tmp_path, count), out, env, "--summary-json", str(summary))
    killed = None
    deadline = time.monotonic() + HANG_GUARD_S
    while killed is None:  # once a third of the rows were asked, kill the node while one of its actors is judging
        if run.poll() is not None or time.monotonic() > deadline:
            run.kill()
            pytest.fail(f"the run ended or hung before the node was killed: {run.communicate()[1]}")
        if server.request_count >= count // 3 and connected(cluster.processes(cluster.node), server.port or 0):
            killed = server.request_count
            for process in cluster.processes(cluster.node):
                process.kill()
        time.sleep(0.02)
    _, stderr = run.communicate(timeout=HANG_GUARD_S)
    assert run.returncode == 0, stderr
    rows = written(out)
    assert sorted(row["id"] for row in rows) == list(range(count))  # every row exactly once
    prompts = [request.last_user_message for request in server.chat_requests]
    usage = json.loads(summary.read_text())["scorers"]["Factuality"]["usage"]
    print(f"\nnode killed after {killed} requests; server saw {len(prompts)} for {count} rows; usage {usage}")
    assert len(set(prompts)) == count
    # every call the run paid for and used is counted as paid, on whichever node it was paid: the rows of the
    # lost node's blocks, scored again, find those replies in the cache (they were counted as cached); a call the
    # lost node had in flight was paid twice (its reply never arrived), and only the second one is used
    assert usage["requests"] == count and usage["cached"] == 0
