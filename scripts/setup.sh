#!/usr/bin/env bash
# Installs scorers with every extra and the test tools, offline data included:
#   - Debian's WordNet 3.0 (wordnet-base, wordnet-sense-index) for METEOR, when not already there;
#   - torch pinned to 2.13.0 (the CPU build; any other spec may pull a multi-GB CUDA build).
# Usage: bash scripts/setup.sh        (run from the repository root; root or sudo for apt)
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -f /usr/share/wordnet/index.sense ] || [ ! -f /usr/share/wordnet/data.noun ]; then
    if command -v apt-get >/dev/null 2>&1; then
        SUDO=""
        [ "$(id -u)" -ne 0 ] && SUDO="sudo"
        export DEBIAN_FRONTEND=noninteractive
        $SUDO apt-get install -y -q --no-install-recommends wordnet-base wordnet-sense-index >/dev/null 2>&1 || {
            $SUDO apt-get update -q >/dev/null
            $SUDO apt-get install -y -q --no-install-recommends wordnet-base wordnet-sense-index >/dev/null
        }
    else
        echo "setup: WordNet not found and no apt-get; METEOR will raise ConfigError until WordNet is installed" >&2
    fi
fi

# editable_mode=compat puts the checkout on sys.path (a .pth line): `python -m scorers` then finds the real
# package even when run from a folder holding a clone named scorers/ (setuptools' default import hook loses to it)
python -m pip install -q --disable-pip-version-check "torch==2.13.0" -e ".[all,dev,braintrust,langsmith]" --config-settings editable_mode=compat
