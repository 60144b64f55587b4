"""Shared fixtures for tests/ and the doctests in scorers/: a hermetic environment for LLM settings and a loopback server."""

from __future__ import annotations

import doctest
import importlib.util
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

import pytest

from scorers.errors import MissingExtraError

if TYPE_CHECKING:  # imported by the fixtures that serve it: doctests that need no server do not load it
    from scorers.testing import LoopbackLLM

#: Scripts under tests/ that another interpreter runs (a harness venv) and that import an extra at the top: not
#: modules of this one, so --doctest-modules never imports them.
collect_ignore = ["tests/embedding/moverscore_reference.py"]

#: The API key tests give the client; distinctive so tests can assert it never leaks.
FAKE_API_KEY = "sk-test-LEAKCANARY-0123456789abcdef"


@pytest.fixture(autouse=True)
def _hermetic_llm_env(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """No test sees the developer's OpenAI settings or writes to their judge cache."""
    from scorers.llm import configure
    from scorers.llm.config import FORWARDED_ENV

    for name in FORWARDED_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SCORERS_CACHE_DIR", str(tmp_path_factory.mktemp("llm-cache")))
    configure(reset=True)
    yield
    configure(reset=True)


@pytest.fixture(autouse=True)
def _own_template_dirs(monkeypatch: pytest.MonkeyPatch) -> None:
    """The ``--templates DIR`` a test's in-process ``main()`` adds stays that test's: ``check`` without paths and
    ``template_dirs()`` in a later test see the package's templates (and SCORERS_TEMPLATES) only."""
    from scorers.judges import discovery

    own: list[Any] = []
    monkeypatch.setattr(discovery, "_extra_dirs", lambda: own)


@pytest.fixture
def fake_api_key() -> str:
    """A distinctive fake API key; assert it appears nowhere in outputs, errors or caches."""
    return FAKE_API_KEY


@pytest.fixture
def llm_server() -> Iterator[LoopbackLLM]:
    """A running :class:`~scorers.testing.LoopbackLLM` (no latency, default reply ``"OK"``)."""
    from scorers.testing import LoopbackLLM

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


def _missing_extra(excinfo: pytest.ExceptionInfo[BaseException] | None) -> MissingExtraError | None:
    """The MissingExtraError that failed a test, or a doctest at its first failing example (an extra not
    installed)."""
    if excinfo is None:
        return None
    if isinstance(excinfo.value, MissingExtraError):
        return excinfo.value
    failures = getattr(excinfo.value, "failures", None) or [excinfo.value]  # MultipleDoctestFailures, or one
    first = failures[0]
    if isinstance(first, doctest.UnexpectedException) and isinstance(first.exc_info[1], MissingExtraError):
        return first.exc_info[1]
    return None


def _skip_tests_of_missing_extras(item: pytest.Item, call: pytest.CallInfo[None], report: Any) -> None:
    """A test, fixture or doctest that fails with a MissingExtraError (its extra is not installed) is skipped,
    naming the extra, not failed (a CI with every extra installed never gets here, and would fail such a skip
    below anyway)."""
    if report.when not in ("setup", "call") or not report.failed:
        return
    missing = _missing_extra(call.excinfo)
    if missing is not None:
        path, line, _ = item.reportinfo()
        report.outcome = "skipped"
        report.longrepr = (str(path), (line or 0) + 1, f"Skipped: {missing}")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    _skip_tests_of_missing_extras(item, call, report)
    _fail_skips_in_ci(report)


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Iterator[None]:
    outcome = yield
    _fail_skips_in_ci(outcome.get_result())  # type: ignore[attr-defined]


# ----------------------------------------------------------------------------- test tiers
#: The marks a test gets from the shared fixtures it uses (a test module's own ``pytestmark`` says the rest).
FIXTURE_MARKS = {
    "real_llm_server": ("needs_server",),
    "redis_server": ("needs_redis",),
    "ray_cluster": ("needs_cluster",),
    "spark_session": ("needs_cluster", "needs_java"),
}
#: The marks of the doctests in a folder or module of scorers/ (they carry no marks of their own).
DOCTEST_MARKS = {
    "scorers/embedding/": ("needs_torch",),  # the embedding scorers load torch and a model
    "scorers/text/meteor.py": ("slow",),  # builds the WordNet synonym index (about 7 s)
    "scorers/testing/nli.py": ("needs_torch",),  # builds a tiny torch model
}
#: The package the doctests of a module of scorers/ need beyond the dev extra, and its extra: without the package
#: they are skipped, naming the extra.
DOCTEST_PACKAGES = {"scorers/engines/cluster.py": ("pyarrow", "ray")}


def _scorer_marks(item: pytest.Item) -> set[str]:
    """``needs_torch`` for a test parametrized with the name of a scorer of the ``bert`` extra (``name``, as in
    tests/test_every_scorer.py): it loads that scorer's model."""
    from scorers.errors import UnknownScorerError
    from scorers.registry import registry

    callspec = getattr(item, "callspec", None)
    name = callspec.params.get("name") if callspec is not None else None
    if not isinstance(name, str):
        return set()
    try:
        scorer_class = registry.entry(name).scorer_class
    except UnknownScorerError:
        return set()
    return {"needs_torch"} if getattr(scorer_class, "extra", None) == "bert" else set()


def _tier_marks(item: pytest.Item, where: str) -> set[str]:
    """The tier marks ``item`` lacks: those of the fixtures it uses and of its doctest module, and ``slow`` when
    it needs anything (a ``needs_*`` mark)."""
    own = {mark.name for mark in item.iter_markers()}
    marks = {name for fixture in getattr(item, "fixturenames", ()) for name in FIXTURE_MARKS.get(fixture, ())}
    marks.update(_scorer_marks(item))
    for prefix, names in DOCTEST_MARKS.items():
        if where.startswith(prefix):
            marks.update(names)
    if any(name.startswith("needs_") for name in own | marks):
        marks.add("slow")
    return marks - own


@pytest.hookimpl(tryfirst=True)  # before -m deselects by these marks
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Marks each test with what it needs (``needs_*``) and ``slow`` if it needs anything, so ``-m "not slow"``
    (the fast tier) leaves it out; skips the doctests of DOCTEST_PACKAGES whose package is not installed."""
    root = config.rootpath
    for item in items:
        where = item.path.relative_to(root).as_posix() if item.path.is_relative_to(root) else ""  # doctests' module
        for name in sorted(_tier_marks(item, where)):
            item.add_marker(name)
        package, extra = DOCTEST_PACKAGES.get(where, (None, None))
        if package is not None and importlib.util.find_spec(package) is None:
            item.add_marker(pytest.mark.skip(reason=f"needs {package}: pip install 'scorers[{extra}]'"))


# ----------------------------------------------------------------------------- a real OpenAI-compatible server
import dataclasses  # noqa: E402  (this section's own imports)
import socket  # noqa: E402
import subprocess  # noqa: E402
import time  # noqa: E402
import urllib.request  # noqa: E402

_LLM_SERVER_DIR = Path(__file__).resolve().parent / ".cache" / "llm-server"


@dataclasses.dataclass(frozen=True)
class RealLLMServer:
    """A running llama-cpp-python server: its ``base_url`` (ends in ``/v1``) and the ``model`` name it serves."""

    base_url: str
    model: str


@pytest.fixture(scope="session")
def real_llm_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealLLMServer]:
    """llama-cpp-python's OpenAI-compatible server with Gemma 3 270M, built by ``scripts/setup_llm_server.sh``.

    The model is a base model that cannot judge: tests assert the protocol (shapes, JSON, logprobs), never a
    verdict. One thread (two starve each other on a shared 2-core machine); ``--chat_format gemma`` drops
    system messages, so prompts go in user messages. Skipped, naming the setup command, when not built.
    """
    python = _LLM_SERVER_DIR / "venv" / "bin" / "python"
    model = _LLM_SERVER_DIR / "gemma-3-270m-q4_k_m.gguf"
    if not (_LLM_SERVER_DIR / "build.txt").exists():  # the setup script's last step
        pytest.skip("the real LLM server is not built: run bash scripts/setup_llm_server.sh")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    log_path = tmp_path_factory.mktemp("llm-server") / "server.log"
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [
                str(python),
                "-m",
                "llama_cpp.server",
                "--model",
                str(model),
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--n_threads",
                "1",
                "--n_threads_batch",
                "1",
                "--n_ctx",
                "2048",
                "--chat_format",
                "gemma",
                "--model_alias",
                "gemma",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        _wait_for_models(base_url, process, log_path)
        yield RealLLMServer(base_url=base_url, model="gemma")
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _wait_for_models(base_url: str, process: subprocess.Popen[bytes], log_path: Path) -> None:
    """Poll ``GET /v1/models`` until it answers (the model loads in about 1.5 s); fail if the server exits
    or is not up within 120 s (a loaded machine)."""
    for _ in range(1200):
        if process.poll() is not None:
            pytest.fail(f"the LLM server exited with {process.returncode}: {log_path.read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(f"{base_url}/models", timeout=5) as reply:
                if reply.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.1)
    pytest.fail(f"the LLM server did not answer /v1/models within 120 s: {log_path.read_text()[-2000:]}")
