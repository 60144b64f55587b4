"""Code that is run, not read: :class:`CodeExecution` runs the program in an output against tests, in a sandbox.

:mod:`scorers.code.extract` finds the program (the code-block rule), :mod:`scorers.code.runners` knows how each
language runs (a language is one module), :mod:`scorers.code.sandbox` isolates and limits each run. pass@k over
several samples per task is :mod:`scorers.stats.passk`.

>>> from scorers.code import CodeExecution
>>> score = CodeExecution()(output="```python\\ndef add(a, b):\\n    return a + b\\n```", tests=["assert add(1, 2) == 3"])
>>> score.score, score.metadata["tests"][0]["reason"]
(1.0, None)
"""

from __future__ import annotations

from .extract import extract_code
from .scorer import CodeExecution, compare_output

__all__ = ["CodeExecution", "extract_code", "compare_output"]
