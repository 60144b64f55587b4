#!/usr/bin/env bash
# Installs the harnesses whose adapters are tested against the real thing, each in its own virtual environment
# under .cache/harness/ (git-ignored), so that their pins and pytest plugins stay out of the main environment:
#   - .cache/harness/promptflow: promptflow-devkit (the `pf` CLI), promptflow and promptflow-tools;
#   - .cache/harness/deepeval:   deepeval (it brings pytest-asyncio, xdist, rerunfailures, repeat, nest-asyncio).
# Each venv also holds this checkout, installed editable, with its dependencies.
# Idempotent: a venv whose stamp (harness pins, this checkout's path, a hash of pyproject.toml) is current and whose
# installed versions are the pinned ones is left alone (a fraction of a second); a changed pyproject.toml reinstalls
# our dependencies (about 10 s), a fresh checkout builds both venvs (about 2.5 min on 2 cores).
# Usage: bash scripts/setup_harnesses.sh        (run from anywhere; called by scripts/setup.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"

PROMPTFLOW_PINS="promptflow-devkit==1.18.5 promptflow==1.18.5 promptflow-tools==1.6.1"
DEEPEVAL_PINS="deepeval==4.3.1"

# setup NAME "PINS": (re)build .cache/harness/NAME unless its stamp says it is current
setup() {
    local name="$1" pins="$2" venv="$ROOT/.cache/harness/$1"
    local stamp
    stamp="pins: $pins; checkout: $ROOT; pyproject: $(sha256sum pyproject.toml | cut -d' ' -f1)"
    if [ -x "$venv/bin/python" ] && [ -f "$venv/.scorers-stamp" ] && [ "$(cat "$venv/.scorers-stamp")" = "$stamp" ] \
       && "$venv/bin/python" - $pins <<'PY'
import sys
from importlib.metadata import PackageNotFoundError, version
def installed(name):
    try:
        return version(name)
    except PackageNotFoundError:
        return None
sys.exit(any(installed(pin.split("==")[0]) != pin.split("==")[1] for pin in sys.argv[1:]))
PY
    then
        return 0
    fi
    echo "setup_harnesses: installing $pins into .cache/harness/$name" >&2
    rm -f "$venv/.scorers-stamp"
    [ -x "$venv/bin/python" ] || python -m venv "$venv"
    # one resolution for the harness and our dependencies; our package itself is the editable checkout
    # shellcheck disable=SC2086
    nice "$venv/bin/python" -m pip install -q --disable-pip-version-check $pins -e "$ROOT" \
        --config-settings editable_mode=compat
    printf '%s' "$stamp" > "$venv/.scorers-stamp"
}

setup promptflow "$PROMPTFLOW_PINS"
setup deepeval "$DEEPEVAL_PINS"
