"""The code-block rule: which block is the program, prose dropped."""

from __future__ import annotations

import pytest

from scorers.code.extract import Block, code_blocks, extract_code

PY = ("python", "py", "python3")
CASES = [
    ("print(1)", "print(1)"),
    ("Sure:\n```python\nx = 1\n```\nDone.", "x = 1\n"),
    ("```bash\nls\n```\n```py\nx = 2\n```", "x = 2\n"),
    ("```bash\nls\n```\n```\nx = 3\n```", "x = 3\n"),
    ("```bash\nls\n```", "ls\n"),
    ("```Python\nfirst\n```\n```python\nsecond\n```", "first\n"),
    ("````python\n```\nnested\n````", "```\nnested\n"),
    ("~~~python\nx = 4\n~~~", "x = 4\n"),
    ("cut off:\n```python\nx = 5", "x = 5"),
    ("```python\n\n```", "\n"),
    ("   ```python\n    indented = 1\n   ```", "    indented = 1\n"),
    ("``` `not a fence`\nx\n```python\ny\n```", "y\n"),
]


@pytest.mark.parametrize("text,program", CASES)
def test_the_program_is_the_block_the_rule_picks(text, program):
    assert extract_code(text, PY) == program


def test_blocks_are_listed_in_order_with_their_tags():
    assert code_blocks("a\n```py title\n1\n```\nb\n```\n2\n```") == [Block("py", "1\n"), Block("", "2\n")]
