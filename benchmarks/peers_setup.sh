#!/usr/bin/env bash
# The peers' venvs for benchmarks/bench_tool_calls_peers.py, one per library, each pinned to the version the
# comparison was made with (docs/agents.md, docs/benchmarks.md). Run from the repository's top folder:
#
#     bash benchmarks/peers_setup.sh                # all three
#     bash benchmarks/peers_setup.sh ragas          # one (deepeval, ragas or openevals)
#
# Each venv lives in .cache/peers-venv-<name> (git-ignored); nothing in the test suite uses them.
set -euo pipefail
cd "$(dirname "$0")/.."
# ragas 0.4.3 imports langchain_community.chat_models.vertexai, which langchain-community 0.4 removed
declare -A PACKAGES=([deepeval]="deepeval==4.3.1" [ragas]="ragas==0.4.3 langchain-community<0.4" [openevals]="openevals==0.2.2")
names=("$@")
if [ ${#names[@]} -eq 0 ]; then names=(deepeval ragas openevals); fi
for name in "${names[@]}"; do
    package=${PACKAGES[$name]:-}
    if [ -z "$package" ]; then echo "unknown peer $name (deepeval, ragas or openevals)" >&2; exit 2; fi
    venv=.cache/peers-venv-$name
    start=$SECONDS
    python -m venv "$venv"
    # shellcheck disable=SC2086  # the packages are words
    "$venv/bin/python" -m pip install --quiet $package
    echo "$venv: $package ($((SECONDS - start)) s)"
done
