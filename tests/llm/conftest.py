"""Fixtures of tests/llm: a real ``redis-server`` (Debian's package, installed by ``scripts/setup.sh``)."""

from __future__ import annotations

import dataclasses
import shutil
import socket
import subprocess
import time
from pathlib import Path
from typing import Any, Iterator

import pytest


@dataclasses.dataclass
class RedisServer:
    """A ``redis-server`` started by a test: its ``url`` (database 0) and process."""

    url: str
    process: subprocess.Popen[bytes]
    log_path: Path

    def client(self) -> Any:
        """A plain ``redis`` client of the server, to look at what the cache stored."""
        import redis

        return redis.Redis.from_url(self.url)

    def stop(self) -> None:
        """Stop the server (SIGTERM, then SIGKILL after 10 s) and wait for it."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on (at the time of asking)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start_redis(folder: Path) -> RedisServer:
    """Start ``redis-server`` on a free port of 127.0.0.1 in ``folder``, without persistence; wait until it
    answers PING. Skips, naming the setup command, when ``redis-server`` is not installed."""
    import redis

    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip("redis-server is not installed: run bash scripts/setup.sh (it installs Debian's redis-server)")
    port = free_port()
    log_path = folder / "redis.log"
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [
                binary,
                "--port",
                str(port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(folder),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=folder,
        )
    server = RedisServer(url=f"redis://127.0.0.1:{port}/0", process=process, log_path=log_path)
    for _ in range(300):  # up to 30 s on a loaded machine; it answers within milliseconds
        if process.poll() is not None:
            pytest.fail(f"redis-server exited with {process.returncode}: {log_path.read_text()[-2000:]}")
        try:
            if server.client().ping():
                return server
        except redis.ConnectionError:
            time.sleep(0.1)
    server.stop()
    pytest.fail(f"redis-server did not answer PING within 30 s: {log_path.read_text()[-2000:]}")


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    """One ``redis-server`` for the session; stopped at the end."""
    server = start_redis(tmp_path_factory.mktemp("redis"))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def redis_url(redis_server: RedisServer) -> str:
    """The session server's URL, emptied (FLUSHALL) and with its command statistics reset for this test."""
    client = redis_server.client()
    client.flushall()
    client.config_resetstat()
    return redis_server.url
