"""Fixtures of the judges' tests that sample (issue 27): a protocol with a seed on the wire and one without."""

from __future__ import annotations

from typing import Callable, Sequence

import pytest

from scorers.testing import LoopbackLLM, Reply, loopback_env


def wilson_reference(count: float, n: int) -> tuple[float, float]:
    """statsmodels' 95 % Wilson interval for ``count`` successes in ``n``: the reference the sampled intervals
    equal. Imported here, not at a module's top: statsmodels.stats.proportion imports pandas, an optional extra,
    and the fast tier collects without the extras (tests/test_tiers.py)."""
    from statsmodels.stats.proportion import proportion_confint

    low, high = proportion_confint(count, n, alpha=0.05, method="wilson")
    return float(low), float(high)


@pytest.fixture(params=["chat", "anthropic"])
def api_env(request: pytest.FixtureRequest, llm_server: LoopbackLLM, monkeypatch: pytest.MonkeyPatch) -> str:
    """The judges' protocol (chat; Anthropic's Messages API through the ``anthropic`` SDK, which sends no seed)
    pointed at ``llm_server``, with the judge cache on (in this test's own folder); returns the protocol."""
    for name, value in loopback_env(llm_server, request.param).items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("SCORERS_CACHE")
    return str(request.param)


@pytest.fixture
def script_samples(api_env: str, llm_server: LoopbackLLM) -> Callable[[Sequence[Reply]], None]:
    """Script each sample's reply: by its seed on chat; on Anthropic's API, which carries no seed, in the order
    the requests come (one rule for each, used once)."""

    def script(replies: Sequence[Reply]) -> None:
        if api_env == "chat":
            llm_server.default = lambda request: replies[request.body["seed"]]
        else:
            for reply in replies:
                llm_server.script(reply, times=1)

    return script
