"""``python -m scorers loopback``: a judge offline from the command line, driven by run, meta-eval and report
as subprocesses, the way docs/judges.md shows it."""

from __future__ import annotations

import json
import os
import re
import selectors
import signal
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pytest

pytestmark = pytest.mark.slow  # each test runs the CLI and the loopback server in subprocesses (1.5-7.5 s)

REPO = Path(__file__).resolve().parents[1]
QA = REPO / "examples" / "qa.jsonl"
LABELS = REPO / "examples" / "factuality_labels.jsonl"
REPLIES = REPO / "examples" / "factuality_replies.jsonl"
#: A guard against a server that never prints, not a measured time.
STARTUP_LIMIT_S = 120


class Server:
    """A ``python -m scorers loopback`` process and the environment its first lines give."""

    def __init__(self, *args: str, cwd: Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "scorers", "loopback", *args],
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            bufsize=0,
        )
        self.cache = cwd / "cache"

    def ready(self) -> "Server":
        """Wait for the export lines; ``exports`` holds them, ``env`` this environment with them."""
        self.exports = self._exports()
        self.env = {**os.environ, "SCORERS_CACHE_DIR": str(self.cache), **self.exports}
        return self

    def _exports(self) -> dict[str, str]:
        """The ``export NAME=VALUE`` lines printed on stdout, the URL first, ``SCORERS_CACHE=off`` last."""
        printed = b""
        with selectors.DefaultSelector() as selector:
            selector.register(self.process.stdout, selectors.EVENT_READ)
            while b"SCORERS_CACHE=off\n" not in printed and selector.select(STARTUP_LIMIT_S):
                chunk = os.read(self.process.stdout.fileno(), 4096)
                if not chunk:  # the server ended
                    break
                printed += chunk
        return dict(line.removeprefix("export ").partition("=")[::2] for line in printed.decode().splitlines())

    def stop(self, sig: int) -> tuple[int, str]:
        self.process.send_signal(sig)
        _, err = self.process.communicate(timeout=STARTUP_LIMIT_S)
        return self.process.returncode, err.decode()


@pytest.fixture
def start(tmp_path: Path) -> Iterator:
    servers: list[Server] = []

    def started(*args: str) -> Server:
        servers.append(Server("--port", "0", *args, cwd=tmp_path))
        return servers[-1].ready()

    yield started
    for server in servers:
        if server.process.poll() is None:
            server.process.kill()
            server.process.communicate()


def scorers_cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "scorers", *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=600
    )


def test_run_meta_eval_and_report_without_a_key(start, tmp_path):
    server = start()
    assert list(server.exports) == ["OPENAI_BASE_URL", "OPENAI_API_KEY", "SCORERS_CACHE"]
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+/v1", server.exports["OPENAI_BASE_URL"])
    assert (server.exports["OPENAI_API_KEY"], server.exports["SCORERS_CACHE"]) == ("loopback", "off")
    results, meta, report = tmp_path / "qa.results.jsonl", tmp_path / "meta.json", tmp_path / "report.html"

    run = scorers_cli("run", str(QA), "-s", "Factuality", "--metadata", "-o", str(results), env=server.env)
    assert run.returncode == 0, run.stderr
    rows = [json.loads(line) for line in results.read_text().splitlines()]
    assert len(rows) == 24 and not any("errors" in row for row in rows)
    assert {row["metadata_scores"]["Factuality"]["choice"] for row in rows} <= set("ABCDE")
    assert len({row["scores"]["Factuality"] for row in rows}) > 1  # verdicts vary by row

    judged = scorers_cli(
        "meta-eval", str(LABELS), "-s", "Factuality", "--label", "label", "--key", "id", "-o", str(meta), env=server.env
    )
    assert judged.returncode == 0, judged.stderr
    figures = json.loads(meta.read_text())
    assert (figures["rows"], figures["n"], figures["failed"]) == (20, 20, 0)

    page = scorers_cli("report", str(results), "--meta-eval", str(meta), "-o", str(report), env=server.env)
    assert page.returncode == 0, page.stderr
    assert "Factuality" in report.read_text(encoding="utf-8")

    code, err = server.stop(signal.SIGINT)  # Ctrl-C is how it is meant to stop
    assert code == 0 and "stopped after 44 requests" in err  # 24 rows run, 20 judged


def test_the_replies_file_reproduces_the_readmes_meta_eval_output(start, tmp_path):
    server = start("--replies", str(REPLIES))
    judged = scorers_cli(
        "meta-eval",
        str(LABELS),
        "-s",
        "Factuality",
        "--label",
        "label",
        "--key",
        "id",
        "-o",
        str(tmp_path / "meta.json"),
        env=server.env,
    )
    assert judged.returncode == 0, judged.stderr
    readme = (REPO / "docs" / "compare.md").read_text(encoding="utf-8")
    table = readme.split("the example prints:\n\n```text\n", 1)[1].split("```", 1)[0]
    assert table.strip() and table in judged.stderr
    code, err = server.stop(signal.SIGTERM)
    assert code == 0 and "stopped after 20 requests" in err


def test_a_port_in_use_and_a_bad_replies_file_exit_2(start, tmp_path):
    port = start().exports["OPENAI_BASE_URL"].split(":")[-1].split("/")[0]
    taken = scorers_cli("loopback", "--port", port, env=dict(os.environ))
    assert taken.returncode == 2 and f"cannot listen on 127.0.0.1:{port}" in taken.stderr
    replies = tmp_path / "replies.jsonl"
    replies.write_text('{"match": "x", "reply": {"choice": "A"}}\n{"match": "y", "reply": {"choise": "A"}}\n')
    bad = scorers_cli("loopback", "--port", "0", "--replies", str(replies), env=dict(os.environ))
    assert bad.returncode == 2 and f"{replies}:2: a reply is one of" in bad.stderr


def test_the_lines_for_another_protocol_point_its_judges_at_the_server(start, tmp_path):
    """``--api responses`` prints the lines that make ``run`` judge through the Responses API (SCORERS_API), and
    the verdicts are those of chat: the server answers the same prompt the same way whatever the protocol."""
    chat, responses = start(), start("--api", "responses")
    assert list(responses.exports) == ["OPENAI_BASE_URL", "SCORERS_API", "OPENAI_API_KEY", "SCORERS_CACHE"]
    assert responses.exports["SCORERS_API"] == "responses"
    scores = {}
    for name, server in (("chat", chat), ("responses", responses)):
        out = tmp_path / f"{name}.jsonl"
        run = scorers_cli("run", str(QA), "-s", "Factuality", "-o", str(out), env=server.env)
        assert run.returncode == 0, run.stderr
        scores[name] = [json.loads(line)["scores"] for line in out.read_text().splitlines()]
    assert scores["responses"] == scores["chat"] and len(scores["chat"]) == 24
    identities = {name: (tmp_path / f"{name}.jsonl.run.json").read_text() for name in scores}
    assert '"api": "responses"' in identities["responses"] and '"api": null' in identities["chat"]
    _, err = responses.stop(signal.SIGTERM)
    assert "stopped after 24 requests" in err
