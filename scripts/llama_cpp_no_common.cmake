# Included into llama.cpp's CMakeLists.txt right after its project() call, by scripts/setup_llm_server.sh
# (-DCMAKE_PROJECT_llama.cpp_INCLUDE=this file): llama.cpp's common library (argument parsing, chat templates,
# an HTTP client: 53 of the 127 objects) is for llama.cpp's own programs, and llama-cpp-python forces it on, though
# the Python package only loads libllama and libggml. A normal variable set here hides that cache entry from
# llama.cpp's option(LLAMA_BUILD_COMMON), so neither it nor the HTTP library it needs is compiled.
set(LLAMA_BUILD_COMMON OFF)
