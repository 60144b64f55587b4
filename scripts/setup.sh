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

# Debian's redis-server for tests/llm/test_cache_redis.py (the tests start their own on a free port; no service is used).
if ! command -v redis-server >/dev/null 2>&1; then
    if command -v apt-get >/dev/null 2>&1; then
        SUDO=""
        [ "$(id -u)" -ne 0 ] && SUDO="sudo"
        export DEBIAN_FRONTEND=noninteractive
        $SUDO apt-get install -y -q --no-install-recommends redis-server >/dev/null 2>&1 || {
            $SUDO apt-get update -q >/dev/null
            $SUDO apt-get install -y -q --no-install-recommends redis-server >/dev/null
        }
    else
        echo "setup: redis-server not found and no apt-get; the Redis cache tests need it (install Redis and rerun)" >&2
    fi
fi

# Debian's Chromium for tests/report (driven by playwright from the dev extra; playwright's own browsers are never
# installed). fonts-dejavu-core: text in the page and its screenshots.
if [ ! -x /usr/bin/chromium ]; then
    if command -v apt-get >/dev/null 2>&1; then
        SUDO=""
        [ "$(id -u)" -ne 0 ] && SUDO="sudo"
        export DEBIAN_FRONTEND=noninteractive
        $SUDO apt-get install -y -q --no-install-recommends chromium fonts-dejavu-core >/dev/null 2>&1 || {
            $SUDO apt-get update -q >/dev/null
            $SUDO apt-get install -y -q --no-install-recommends chromium fonts-dejavu-core >/dev/null
        }
    else
        echo "setup: /usr/bin/chromium not found and no apt-get; the report's browser tests need it" >&2
    fi
fi

# Java for the Spark engine's tests (tests/engines/): Debian's default JRE (17) when no java is on PATH.
if ! command -v java >/dev/null 2>&1; then
    if command -v apt-get >/dev/null 2>&1; then
        SUDO=""
        [ "$(id -u)" -ne 0 ] && SUDO="sudo"
        export DEBIAN_FRONTEND=noninteractive
        $SUDO apt-get install -y -q --no-install-recommends default-jre-headless >/dev/null 2>&1 || {
            $SUDO apt-get update -q >/dev/null
            $SUDO apt-get install -y -q --no-install-recommends default-jre-headless >/dev/null
        }
    else
        echo "setup: java not found and no apt-get; the Spark engine needs Java 17+ (install it and rerun)" >&2
    fi
fi

# editable_mode=compat puts the checkout on sys.path (a .pth line): `python -m scorers` then finds the real
# package even when run from a folder holding a clone named scorers/ (setuptools' default import hook loses to it)
python -m pip install -q --disable-pip-version-check "torch==2.13.0" -e ".[all,dev,braintrust,langsmith,ray,spark]" --config-settings editable_mode=compat

# The promptfoo CLI for tests/adapters/test_promptfoo.py, into .cache/promptfoo (git-ignored). 0.121.20 is the last
# promptfoo that runs on Node 20 (0.122.0 needs Node >= 22.22.0). --omit=optional leaves out ~1 GB of agent SDK
# binaries but also libsql's native binding, so that is installed by name, at the version libsql pins.
PROMPTFOO_VERSION=0.121.20
LIBSQL_BINDING_VERSION=0.5.29   # require('libsql/package.json').optionalDependencies['@libsql/linux-x64-gnu']
PROMPTFOO_DIR=.cache/promptfoo
if ! command -v npm >/dev/null 2>&1; then
    echo "setup: npm not found; the promptfoo adapter's tests need the promptfoo CLI (install Node.js 20+ and rerun)" >&2
elif [ "$(node -p "try { require('./$PROMPTFOO_DIR/node_modules/promptfoo/package.json').version } catch (e) { '' }")" != "$PROMPTFOO_VERSION" ] \
     || [ ! -x "$PROMPTFOO_DIR/node_modules/.bin/promptfoo" ]; then
    mkdir -p "$PROMPTFOO_DIR"
    ( cd "$PROMPTFOO_DIR" \
      && { [ -f package.json ] || npm init -y >/dev/null; } \
      && npm install --omit=optional --no-audit --no-fund --loglevel=error \
             "promptfoo@$PROMPTFOO_VERSION" "@libsql/linux-x64-gnu@$LIBSQL_BINDING_VERSION" >/dev/null )
    pinned="$(node -p "require('./$PROMPTFOO_DIR/node_modules/libsql/package.json').optionalDependencies['@libsql/linux-x64-gnu']")"
    if [ "$pinned" != "$LIBSQL_BINDING_VERSION" ]; then
        echo "setup: libsql pins @libsql/linux-x64-gnu@$pinned, not $LIBSQL_BINDING_VERSION: installing that one" >&2
        ( cd "$PROMPTFOO_DIR" && npm install --omit=optional --no-audit --no-fund --loglevel=error \
              "@libsql/linux-x64-gnu@$pinned" >/dev/null )
    fi
fi
bash scripts/setup_llm_server.sh   # the real OpenAI-compatible server of tests/llm/test_real_server.py (llama-cpp-python + Gemma 3 270M)
bash scripts/setup_autoevals.sh   # autoevals 0.4.1 + its test tools in .cache/autoevals-venv, for tests/compat/test_autoevals_suite.py
bash scripts/setup_harnesses.sh   # promptflow 1.18.5 and deepeval 4.3.1, each in its own venv under .cache/harness
