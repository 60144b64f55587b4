"""Shared fixtures for tests/ and the doctests in scorers/: a hermetic environment for LLM settings and a loopback server."""
from __future__ import annotations

import os
from typing import Any, Iterator

import pytest

from scorers.testing import LoopbackLLM

#: The API key tests give the client; distinctive so tests can assert it never leaks.
FAKE_API_KEY = "sk-test-LEAKCANARY-0123456789abcdef"

_LLM_ENV = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "SCORERS_MODEL", "SCORERS_CACHE", "SCORERS_CACHE_DIR",
            "SCORERS_HTTP_TRANSPORT")


@pytest.fixture(autouse=True)
def _hermetic_llm_env(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """No test sees the developer's OpenAI settings or writes to their judge cache."""
    from scorers.llm import configure

    for name in _LLM_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SCORERS_CACHE_DIR", str(tmp_path_factory.mktemp("llm-cache")))
    configure(reset=True)
    yield
    configure(reset=True)


@pytest.fixture
def fake_api_key() -> str:
    """A distinctive fake API key; assert it appears nowhere in outputs, errors or caches."""
    return FAKE_API_KEY


@pytest.fixture
def llm_server() -> Iterator[LoopbackLLM]:
    """A running :class:`~scorers.testing.LoopbackLLM` (no latency, default reply ``"OK"``)."""
    with LoopbackLLM() as server:
        yield server


@pytest.fixture
def llm_env(llm_server: LoopbackLLM, monkeypatch: pytest.MonkeyPatch) -> LoopbackLLM:
    """``llm_server`` plus ``OPENAI_API_KEY``/``OPENAI_BASE_URL`` pointing at it; returns the server."""
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_API_KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", llm_server.base_url)
    return llm_server


def _fail_skips_in_ci(report: Any) -> None:
    """In CI every extra is installed, so a skip means a test silently stopped checking: make it a failure."""
    if os.environ.get("CI") == "true" and report.skipped and not hasattr(report, "wasxfail"):
        report.outcome = "failed"
        report.longrepr = f"skipped under CI=true (every extra is installed there): {report.longrepr}"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    _fail_skips_in_ci(outcome.get_result())  # type: ignore[attr-defined]


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Iterator[None]:
    outcome = yield
    _fail_skips_in_ci(outcome.get_result())  # type: ignore[attr-defined]
