#!/usr/bin/env bash
# Installs moverscore 1.0.3 (PyPI; its moverscore_v2 module), the reference of tests/embedding/test_moverscore.py and
# benchmarks/bench_moverscore.py, into .cache/moverscore-venv (git-ignored), with pyemd and POT and the torch and
# transformers versions of this environment (the same model arithmetic on both sides). moverscore itself goes in
# without its dependencies: they name `typing`, the Python 2 backport. Idempotent: a venv whose stamp matches the
# pins returns at once.
# Usage: bash scripts/setup_moverscore.sh        (run from anywhere; called by scripts/setup.sh)
set -euo pipefail
cd "$(dirname "$0")/.."

VENV=.cache/moverscore-venv
TRANSFORMERS="$(python -c 'from importlib.metadata import version; print(version("transformers"))')"
PINS="torch==2.13.0 transformers==$TRANSFORMERS pyemd==1.1.0 POT==0.9.7.post1"
STAMP="$PINS moverscore==1.0.3"
if [ -x "$VENV/bin/python" ] && [ "$(cat "$VENV/.scorers-stamp" 2>/dev/null)" = "$STAMP" ]; then
    echo "moverscore 1.0.3 in $VENV: present"
    exit 0
fi
python -m venv --clear "$VENV"
# shellcheck disable=SC2086
"$VENV/bin/python" -m pip install -q --disable-pip-version-check -c scripts/constraints.txt $PINS
"$VENV/bin/python" -m pip install -q --disable-pip-version-check --no-deps moverscore==1.0.3
printf '%s' "$STAMP" > "$VENV/.scorers-stamp"
