"""pytest plugin that runs autoevals' own test files against ``scorers.compat.autoevals``.

Loaded with ``-p autoevals_suite_plugin`` by ``test_autoevals_suite.py`` in a separate pytest
process (the autoevals venv); importing this module does nothing. At configure time it:

- makes ``import autoevals`` (and ``autoevals.llm``, ``autoevals.oai``, ...) give our compat modules;
- sends the OpenAI SDK's ``httpx2`` requests through ``httpx``, so that autoevals' ``respx`` mocks
  (its own test machinery) answer our engine's real HTTP requests;
- marks each test listed in ``AUTOEVALS_SUITE_LIST`` (``autoevals_suite.json``): ``skipped`` entries
  are skipped with their reason, ``differences`` are strict xfails (a listed test that passes fails);

and at the end writes every test's outcome to ``AUTOEVALS_SUITE_REPORT`` (JSON: node id → outcome).
"""

from __future__ import annotations

import importlib
import json
import os
import pkgutil
import sys
from typing import Any

import pytest

_outcomes: dict[str, str] = {}


def test_id(nodeid: str) -> str:
    """``test_llm.py::test_x[param]`` from a node id under the copied test folder."""
    return nodeid.rsplit("/", 1)[-1]


def listed(entries: dict[str, str], tid: str) -> str | None:
    """The reason listed for a test: by its id, its id without parameters, or its file."""
    for key in (tid, tid.split("[", 1)[0], tid.split("::", 1)[0]):
        if key in entries:
            return entries[key]
    return None


def _alias_autoevals() -> None:
    package = importlib.import_module("scorers.compat.autoevals")
    sys.modules["autoevals"] = package
    for info in pkgutil.iter_modules(package.__path__):
        sys.modules[f"autoevals.{info.name}"] = importlib.import_module(f"scorers.compat.autoevals.{info.name}")


def _route_httpx2_through_httpx() -> None:
    import httpx
    import httpx2

    async def handle_async_request(self: Any, request: Any) -> Any:
        body = await request.aread()
        sent = httpx.Request(request.method, str(request.url), headers=request.headers.raw, content=body)
        async with httpx.AsyncHTTPTransport() as transport:
            reply = await transport.handle_async_request(sent)
            content = await reply.aread()
        return httpx2.Response(reply.status_code, headers=reply.headers.raw, content=content, request=request)

    httpx2.AsyncHTTPTransport.handle_async_request = handle_async_request  # type: ignore[method-assign]


def pytest_configure(config: pytest.Config) -> None:
    _alias_autoevals()
    _route_httpx2_through_httpx()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    with open(os.environ["AUTOEVALS_SUITE_LIST"], encoding="utf-8") as handle:
        data = json.load(handle)
    for item in items:
        tid = test_id(item.nodeid)
        skip = listed(data["skipped"], tid)
        if skip is not None:
            item.add_marker(pytest.mark.skip(reason=skip))
            continue
        difference = data["differences"].get(tid)
        if difference is not None:
            item.add_marker(pytest.mark.xfail(reason=difference["reason"], strict=True))


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when != "call" and report.passed:
        return
    if report.failed and report.when != "call":
        outcome = "error"
    elif report.skipped and hasattr(report, "wasxfail"):
        outcome = "xfailed"
    else:
        outcome = report.outcome
    _outcomes[test_id(report.nodeid)] = outcome


def pytest_sessionfinish(session: pytest.Session) -> None:
    with open(os.environ["AUTOEVALS_SUITE_REPORT"], "w", encoding="utf-8") as handle:
        json.dump(_outcomes, handle, indent=1, sort_keys=True)
