#!/usr/bin/env bash
# Installs autoevals 0.4.1 and its test tools into .cache/autoevals-venv (git-ignored), for
# tests/compat/test_autoevals_suite.py, which runs autoevals' own shipped test files against
# scorers.compat.autoevals. The venv sees the main environment's packages (--system-site-packages:
# scorers itself, openai, pytest), so the main environment is left unchanged. Idempotent: a stamp
# naming the pins makes a second run return at once.
# Usage: bash scripts/setup_autoevals.sh        (run from anywhere)
set -euo pipefail
cd "$(dirname "$0")/.."

VENV=.cache/autoevals-venv
PINS="autoevals==0.4.1 respx==0.23.1 httpx==0.28.1 pytest-asyncio==1.5.0 pytest-mock==3.17.0"
STAMP="$VENV/.installed"

if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$PINS" ] && [ -x "$VENV/bin/python" ]; then
    exit 0
fi
python -m venv --system-site-packages "$VENV"
# shellcheck disable=SC2086
"$VENV/bin/python" -m pip install -q --disable-pip-version-check $PINS
echo "$PINS" > "$STAMP"
