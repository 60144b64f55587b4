#!/usr/bin/env bash
# Installs the harnesses whose adapters are tested against the real thing, each in its own virtual environment
# under .cache/harness/ (git-ignored), so that their pins and pytest plugins stay out of the main environment:
#   - .cache/harness/promptflow: promptflow-devkit (the `pf` CLI), promptflow and promptflow-tools;
#   - .cache/harness/deepeval:   deepeval (it brings pytest-asyncio, xdist, rerunfailures, repeat, nest-asyncio).
# Each venv also holds this checkout, installed editable, with its dependencies (scripts/venv_lib.sh).
# Idempotent: current venvs are left alone; a fresh checkout builds both (about 2.5 min on 2 cores).
# Usage: bash scripts/setup_harnesses.sh        (run from anywhere; called by scripts/setup.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/venv_lib.sh

harness_venv .cache/harness/promptflow "promptflow-devkit==1.18.5 promptflow==1.18.5 promptflow-tools==1.6.1"
harness_venv .cache/harness/deepeval "deepeval==4.3.1"
