"""scripts/steps_lib.sh, the step lines of scripts/setup.sh: a long step prints a "still ..." line while it runs,
and no ticker outlives its step, or the script when a step fails."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _bash(script: str, tick_s: int) -> subprocess.CompletedProcess[str]:
    # A ticker left running would hold stdout open, and run() waits for it: the timeout is the hang guard
    return subprocess.run(
        ["bash", "-c", f"set -euo pipefail; . scripts/steps_lib.sh; trap stop_ticker EXIT; {script}"],
        cwd=ROOT,
        env={**os.environ, "SETUP_TICK_S": str(tick_s)},
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


@pytest.mark.slow
def test_a_long_step_says_it_is_still_running() -> None:
    # the step itself waits for the ticker's first line (to a file: the test's own pipe is read at the end)
    out = _bash(
        'log=$(mktemp); exec 3>&1 >"$log"; step "compiling the server"; '
        'until grep -q still "$log"; do sleep 0.1; done; step_done; sleep 0.2; cat "$log" >&3; rm "$log"',
        tick_s=1,
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith("setup [") and lines[0].endswith("] compiling the server..."), lines
    assert any(line.split("] ", 1)[1].startswith("  still compiling the server (0:0") for line in lines[1:-1]), lines
    assert lines[-1].split("] ", 1)[1].startswith("... done (0:0"), lines  # no tick after step_done


@pytest.mark.parametrize("end", ["step_done", "step two; false"])
def test_no_ticker_outlives_its_step_or_a_failed_script(end: str) -> None:
    # once the ticker sleeps (its sleep would hold stdout for 10 minutes, past the timeout, if it were left behind)
    out = _bash(f"step one; until pgrep -P $TICKER_PID sleep >/dev/null; do sleep 0.05; done; {end}", tick_s=600)
    assert out.returncode == (0 if end == "step_done" else 1), out.stderr
    assert "still" not in out.stdout
