"""Credential canaries for every wire protocol: each provider's key (and Bedrock's AWS secret) set in the
environment at once, a judge run on each protocol through the command line (results with metadata, the cache, a
summary, a report, every library's log at DEBUG) and its error paths (a 401 whose message echoes the key, which stops
the run; a 500 and a 400 that echo it, the 400 written as the row's error): no canary appears in any file written,
any log line, stdout or stderr; and each request carries its own provider's credential, never another's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_every_judge_protocol import aws_test_credentials, environment

from scorers.llm.protocols import PROTOCOLS, WireProtocol
from scorers.testing import LoopbackLLM, Reply
from scorers.testing.protocols import PROTOCOLS as SERVED

pytestmark = pytest.mark.slow  # command-line runs in fresh interpreters

APIS = PROTOCOLS.names()
#: Run the command line with every library's logging at DEBUG into a file (the first argument).
DEBUG_CLI = (
    "import logging, sys; logging.basicConfig(level=logging.DEBUG, filename=sys.argv.pop(1)); "
    "from scorers.cli import main; sys.exit(main())"
)
ROWS = [
    {"input": "Capital of France?", "output": "Paris", "expected": "Paris"},
    {"input": "Capital of France?", "output": "Lyon, say the rejected", "expected": "Paris"},
    {"input": "Capital of France?", "output": "Nice, once down", "expected": "Paris"},
]


#: The AWS secret access key the server is given for Bedrock's signatures.
AWS_SECRET = "aws/CANARY/secret+0123456789"
#: The other AWS credentials set: a session token (sent in a signed header, shown nowhere) and a Bedrock API key
#: (which the protocol does not use: it signs).
AWS_OTHERS = {
    "AWS_SESSION_TOKEN": "aws-CANARY-session-token-0123456789",
    "AWS_BEARER_TOKEN_BEDROCK": "ABSK-CANARY-0123",
}


def canaries() -> dict[str, str]:
    """Every protocol's key variables set to a canary of its own, and AWS credentials whose secret, session token
    and Bedrock API key are canaries (for a protocol signed with them)."""
    values = {
        name: f"sk-CANARY-{protocol.name}-{name}-0123456789"
        for protocol in map(PROTOCOLS.get, APIS)
        for name in protocol.endpoint.key_env
    }
    if any(not PROTOCOLS.get(api).endpoint.key_env for api in APIS):
        values.update({**aws_test_credentials(AWS_SECRET), **AWS_OTHERS})
    return values


def signed_with(values: dict[str, str]) -> tuple:
    """The server's protocols, those that check signatures (Bedrock's) given the canaries' AWS key pair."""
    pair = {values.get("AWS_ACCESS_KEY_ID", ""): values.get("AWS_SECRET_ACCESS_KEY", "")}
    return tuple(type(p)(credentials=pair) if hasattr(p, "credentials") else p for p in SERVED)


def credentials(environ: dict[str, str]) -> dict[str, str]:
    """The credentials among ``environ``'s canaries (a region is not one)."""
    return {name: value for name, value in environ.items() if "REGION" not in name}


def secrets(environ: dict[str, str]) -> set[str]:
    """The values no output may show: the keys and the AWS secret (an access key id is not a secret)."""
    return {value for name, value in credentials(environ).items() if name != "AWS_ACCESS_KEY_ID"}


def cli(tmp_path: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    log = tmp_path / f"debug-{len(list(tmp_path.glob('debug-*.log')))}.log"
    return subprocess.run(
        [sys.executable, "-c", DEBUG_CLI, str(log), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )


def written(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` (results, cache, summaries, report, logs), by its path."""
    return {str(path): path.read_bytes() for path in folder.rglob("*") if path.is_file()}


def assert_nowhere(leaks: set[str], texts: dict[str, bytes]) -> None:
    for where, content in texts.items():
        for secret in leaks:
            assert secret.encode() not in content, f"{secret!r} appears in {where}"


def own_credential(protocol: WireProtocol, headers: dict[str, str], values: dict[str, str]) -> bool:
    """Whether a request's headers carry its own provider's credentials (the first of its key variables, all set;
    AWS's access key id and session token) and no other's."""
    key_env = protocol.endpoint.key_env
    own = {values[key_env[0]]} if key_env else {values["AWS_ACCESS_KEY_ID"], values["AWS_SESSION_TOKEN"]}
    shown = " ".join(headers.values())
    others = {value for value in credentials(values).values() if value not in own}
    return all(value in shown for value in own) and not any(value in shown for value in others)


@pytest.mark.parametrize("api", APIS)
def test_no_canary_is_written_logged_or_shown_on_any_protocol(api, tmp_path):
    values = canaries()
    leaks = secrets(values)
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in ROWS))
    out, report, summary = tmp_path / "out.jsonl", tmp_path / "report.html", tmp_path / "summary.json"
    run = ("run", str(data), "-s", "Factuality", "-p", f"Factuality.api={api}")
    with LoopbackLLM(default=Reply.choice("C", reasons="same facts"), protocols=signed_with(values)) as server:
        protocol = PROTOCOLS.get(api)
        key_env = protocol.endpoint.key_env
        # a message echoing the secret the protocol sent or signed with: never repeated
        echoed = f"key {values[key_env[0]] if key_env else AWS_SECRET} refused"
        server.script(Reply.error(400, f"rejected: {echoed}"), match="rejected")
        server.script(Reply.error(500, f"down: {echoed}", retry_after=0), match="once down", times=1)
        env = {
            **os.environ,
            **values,
            **environment(protocol, server, values[key_env[0]] if key_env else "", AWS_SECRET),
            "SCORERS_CACHE_DIR": str(tmp_path / "cache"),
        }
        first = cli(tmp_path, env, *run, "-o", str(out), "--metadata", "--summary-json", str(summary))
        assert first.returncode == 0, first.stderr
        results = [json.loads(line) for line in out.read_text().splitlines()]
        assert [r["scores"]["Factuality"] is None for r in results] == [False, True, False]
        assert "HTTP 400" in results[1]["errors"]["Factuality"]["message"]
        shown = cli(tmp_path, env, "report", str(out), "-o", str(report))
        assert shown.returncode == 0, shown.stderr
        runs = [first, shown]
        if protocol.capabilities.batch:  # the batch API's files, batches and results carry the key too
            batched = tmp_path / "batched.jsonl"
            runs.append(cli(tmp_path, env, *run, "-o", str(batched), "--batch", "--batch-poll", "0.1", "--no-cache"))
            assert runs[-1].returncode == 0, runs[-1].stderr
            assert json.loads(batched.read_text().splitlines()[0])["scores"]["Factuality"] is not None

        server.script(Reply.error(401, f"Incorrect API key: {echoed}"))  # every request from now on
        stopped = cli(tmp_path, env, *run, "-o", str(tmp_path / "stopped.jsonl"), "--no-cache")
        assert stopped.returncode == 2 and "401" in stopped.stderr, stopped.stderr
        requests = list(server.requests)
    assert requests and {r.api for r in requests} - {None} == {api}  # None: a batch API's files and batches
    assert all(own_credential(protocol, r.headers, values) for r in requests)
    outputs = {"stdout/stderr": "".join(p.stdout + p.stderr for p in (*runs, stopped)).encode()}
    assert_nowhere(leaks, {**written(tmp_path), **outputs})
    assert any(path.endswith(".log") and b"DEBUG" in content for path, content in written(tmp_path).items())
