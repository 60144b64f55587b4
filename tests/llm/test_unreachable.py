"""An endpoint nothing answers at, and a missing API key, stop a run (exit 2) saying what to fix.

Nothing listens at the URLs here (a free port of 127.0.0.1), so every connection is refused; the run goes
through the real CLI and client. An endpoint that answered once is retried as before when it goes away.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from scorers.errors import ConfigError, JudgeError
from scorers.llm import ChatRequest, EndpointConfigError, LLMEngine
from scorers.llm.transport import UNREACHABLE_AFTER
from scorers.testing import LoopbackLLM, Reply

from .conftest import free_port

REPO = Path(__file__).resolve().parents[2]
QUICK = dict(cache=False, backoff_base=0.001, backoff_max=0.01)
HI = ChatRequest(messages=[{"role": "user", "content": "hi"}])


def run_judge(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``python -m scorers run examples/qa.jsonl -s Factuality`` (24 rows) with ``env`` as the judge's settings."""
    plain = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    return subprocess.run(
        [sys.executable, "-m", "scorers", "run", "examples/qa.jsonl", "-s", "Factuality"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO,
        env={**plain, "SCORERS_CACHE": "off", **env},
    )


@pytest.mark.slow
def test_a_run_against_an_endpoint_nothing_answers_at_stops_with_exit_2_naming_it() -> None:
    """It retried every row (120 attempts, 16 s) and exited 0 with every row failed."""
    url = f"http://127.0.0.1:{free_port()}/v1"
    result = run_judge({"OPENAI_BASE_URL": url, "OPENAI_API_KEY": "placeholder"})
    assert result.returncode == 2, result.stderr
    assert (
        f"error: Factuality: nothing answers at {url}: {UNREACHABLE_AFTER} connections in a row failed and none "
        "has succeeded since the start (last: ConnectionRefusedError"
    ) in result.stderr
    assert "check the base URL (OPENAI_BASE_URL or base_url=)" in result.stderr
    assert "python -m scorers loopback" in result.stderr and "Traceback" not in result.stderr


def test_a_run_without_an_api_key_names_the_judge_and_the_offline_server() -> None:
    result = run_judge({})
    assert result.returncode == 2, result.stderr
    assert "error: no API key for the LLM judge Factuality: set OPENAI_API_KEY" in result.stderr
    assert "run `python -m scorers loopback` in another shell" in result.stderr


def test_the_engine_stops_at_the_third_refusal_in_a_row_and_every_call_after_it() -> None:
    engine = LLMEngine(base_url=f"http://127.0.0.1:{free_port()}/v1", api_key="placeholder", max_retries=9, **QUICK)
    with pytest.raises(EndpointConfigError) as first:
        engine.complete_sync(HI)
    assert isinstance(first.value, ConfigError) and first.value.attempts == UNREACHABLE_AFTER
    with pytest.raises(EndpointConfigError) as again:
        engine.complete_sync(HI)
    assert again.value.attempts == 1


def test_an_endpoint_that_answered_once_is_retried_when_it_goes_away() -> None:
    """Once a reply came, refused connections are the row's failure after its retries, not the run's."""
    with LoopbackLLM(default=Reply.text("OK")) as server:
        engine = LLMEngine(base_url=server.base_url, api_key="placeholder", max_retries=4, **QUICK)
        assert engine.complete_sync(HI).content == "OK"
    with pytest.raises(JudgeError) as info:
        engine.complete_sync(HI)
    assert not isinstance(info.value, ConfigError) and info.value.attempts == 5
    assert "connection failed: ConnectionRefusedError" in str(info.value)
