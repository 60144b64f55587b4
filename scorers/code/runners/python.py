"""Python: the program and each test as files, run by ``python -I -S`` (isolated mode: no ``PYTHON*`` variables,
no user site, not even site-packages: the standard library alone).

An assert-style test runs after the program, in the program's namespace (the program's ``__name__`` is
``"solution"``, so its ``if __name__ == "__main__":`` block does not run); on stdin the program runs as the main
script, ``solution.py``.

>>> argv, files = PythonRunner("/usr/bin/python3").with_test("def f(): return 1", "assert f() == 1")
>>> argv[:3], sorted(files)
(['/usr/bin/python3', '-I', '-S'], ['solution.py', 'test_case.py'])
"""

from __future__ import annotations

import sys

from . import Command, Runner

__all__ = ["PythonRunner", "RUNNER"]

#: Runs solution.py and then test_case.py in one namespace. A constant: the files are read as data.
_HARNESS = """\
namespace = {"__name__": "solution", "__builtins__": __builtins__}
for name in ("solution.py", "test_case.py"):
    with open(name, encoding="utf-8") as source:
        exec(compile(source.read(), name, "exec"), namespace)
"""


class PythonRunner(Runner):
    """Python programs, run by the Python that runs scorers unless another interpreter is given."""

    tags = ("python", "py", "python3")

    def default_interpreter(self) -> str:
        return sys.executable

    def with_test(self, program: str, test: str) -> Command:
        return [self.interpreter, "-I", "-S", "-c", _HARNESS], {"solution.py": program, "test_case.py": test}

    def on_stdin(self, program: str) -> Command:
        return [self.interpreter, "-I", "-S", "solution.py"], {"solution.py": program}

    def failure(self, stderr: str) -> str:
        last = stderr.rstrip().rpartition("\n")[2]
        if last.startswith("MemoryError"):
            return "memory"
        return "wrong answer" if last.startswith("AssertionError") else "crash"


RUNNER = PythonRunner
