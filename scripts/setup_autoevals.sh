#!/usr/bin/env bash
# Installs autoevals 0.4.1 and its test tools into .cache/autoevals-venv (git-ignored), for
# tests/compat/test_autoevals_suite.py, which runs autoevals' own shipped test files against
# scorers.compat.autoevals. The venv is one of its own, holding the pins and this checkout (editable, with its
# dependencies: scripts/venv_lib.sh), so it works the same whether setup runs from a bare interpreter or inside
# a venv (a --system-site-packages venv made from inside a venv sees the base interpreter's packages, not the
# venv's), and the main environment is left unchanged. Idempotent: a current venv returns at once.
# Usage: bash scripts/setup_autoevals.sh        (run from anywhere; called by scripts/setup.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/venv_lib.sh

# braintrust: autoevals' test_oai.py imports braintrust.oai
harness_venv .cache/autoevals-venv \
    "autoevals==0.4.1 respx==0.23.1 httpx==0.28.1 pytest-asyncio==1.5.0 pytest-mock==3.17.0 braintrust==0.48.1"
