#!/usr/bin/env bash
# Installs scorers with every extra and the test tools, offline data included, into the Python that runs it (a
# venv or not). Every step prints a line with the time since the start, a "still ..." line every 30 s while it runs
# (scripts/steps_lib.sh), then "... done"; a step that fails shows its command's own message and stops the script.
# A second run skips what is already there.
#   - Debian's packages, when missing: WordNet 3.0 for METEOR, redis-server (the Redis cache tests start their
#     own), Chromium and fonts (the report's browser tests, driven by playwright; playwright's own browsers are
#     never installed), Java (the Spark engine);
#   - scorers, editable, with every extra and the test tools, at the versions of scripts/constraints.txt (torch
#     2.13.0: the CPU build; any other spec may pull a multi-GB CUDA build);
#   - the promptfoo CLI (npm), the local OpenAI-compatible server (llama-cpp-python, compiled here once per machine:
#     scripts/setup_llm_server.sh keeps the wheel in ~/.cache/scorers/wheels) and the
#     harnesses' own venvs (autoevals' test suite, promptflow, DeepEval) and moverscore 1.0.3 (the MoverScore
#     equality test's reference) under .cache/ (git-ignored).
# Usage: bash scripts/setup.sh        (run from the repository root; root or sudo for apt)
set -euo pipefail
cd "$(dirname "$0")/.."

. scripts/steps_lib.sh
trap stop_ticker EXIT

# apt_install PACKAGE...: install Debian packages. apt-get's output is kept out of the way unless it fails, when
# it is shown and setup stops. A first failure may be missing or stale package lists: one update, one more try.
apt_install() {
    if ! command -v apt-get >/dev/null 2>&1; then
        echo "setup: no apt-get here: install $* yourself (the tests that need them fail without them)" >&2
        return 0
    fi
    local sudo="" log
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    log="$(mktemp)"
    if ! $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$@" >"$log" 2>&1 \
       && ! { $sudo apt-get update -q && $sudo env DEBIAN_FRONTEND=noninteractive \
                  apt-get install -y -q --no-install-recommends "$@"; } >"$log" 2>&1; then
        cat "$log" >&2
        rm -f "$log"
        echo "setup: apt-get could not install $* (its output is above)" >&2
        return 1
    fi
    rm -f "$log"
}

say "Python: $(command -v python) ($(python -c 'import sys; print(sys.version.split()[0], "in a venv" if sys.prefix != sys.base_prefix else "(no venv)")'))"

missing=()
[ -f /usr/share/wordnet/index.sense ] && [ -f /usr/share/wordnet/data.noun ] || missing+=(wordnet-base wordnet-sense-index)
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
[ -x /usr/bin/chromium ] || missing+=(chromium fonts-dejavu-core)
command -v java >/dev/null 2>&1 || missing+=(default-jre-headless)
if [ ${#missing[@]} -gt 0 ]; then
    step "installing Debian packages: ${missing[*]}"
    apt_install "${missing[@]}"
    step_done
else
    say "Debian packages (WordNet, redis-server, Chromium, Java): present"
fi

# editable_mode=compat puts the checkout on sys.path (a .pth line): `python -m scorers` then finds the real
# package even when run from a folder holding a clone named scorers/ (setuptools' default import hook loses to it)
step "installing scorers with every extra and the test tools (torch: the CPU build)"
python -m pip install -q --disable-pip-version-check -c scripts/constraints.txt \
    -e ".[all,dev,braintrust,langsmith,ray,spark]" --config-settings editable_mode=compat
step_done

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
    step "installing the promptfoo CLI $PROMPTFOO_VERSION (npm) into $PROMPTFOO_DIR"
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
    step_done
else
    say "the promptfoo CLI $PROMPTFOO_VERSION: present"
fi

# the real OpenAI-compatible server of tests/llm/test_real_server.py (llama-cpp-python + Gemma 3 270M)
step "the local LLM server in .cache/llm-server (llama-cpp-python: compiled once per machine, 5-10 min on 2 cores)"
bash scripts/setup_llm_server.sh
step_done
step "autoevals 0.4.1 and its test tools in .cache/autoevals-venv (for tests/compat/test_autoevals_suite.py)"
bash scripts/setup_autoevals.sh
step_done
step "promptflow 1.18.5 and DeepEval 4.3.1, each in its own venv under .cache/harness"
bash scripts/setup_harnesses.sh
step_done
step "moverscore 1.0.3, pyemd and POT in .cache/moverscore-venv (for tests/embedding/test_moverscore.py)"
bash scripts/setup_moverscore.sh
step_done
say "setup done"
