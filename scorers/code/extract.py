r"""The program in a model's output: the code-block extraction rule of :class:`~scorers.code.CodeExecution`.

The rule, in order:

1. Fenced code blocks are found as Markdown writes them: a line that starts (after up to three spaces) with three or
   more backticks or tildes, an optional info string whose first word is the language tag, the code, and a closing
   line of the same character at least as long (a block left open runs to the end of the text, as a model cut off
   mid-answer leaves it).
2. The first block tagged with one of the runner's tags (for Python: ``python``, ``py``, ``python3``; any case)
   wins; else the first untagged block; else the first block of any tag; else the whole output.
3. The prose around the chosen block is dropped; the code is returned as written, its indentation kept.

>>> extract_code("Here you go:\n```python\ndef f():\n    return 1\n```\nHope it helps.", ("python", "py"))
'def f():\n    return 1\n'
>>> extract_code("```\nprint(2)\n```", ("python",))
'print(2)\n'
>>> extract_code("print(3)", ("python",))
'print(3)'
"""

from __future__ import annotations

import re
from typing import NamedTuple, Sequence

__all__ = ["Block", "code_blocks", "extract_code"]

_OPEN = re.compile(r"^ {0,3}(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^\n]*)$", re.MULTILINE)


class Block(NamedTuple):
    """One fenced block: its language tag (lower case, ``""`` for none) and its code."""

    tag: str
    code: str


def code_blocks(text: str) -> list[Block]:
    r"""The fenced code blocks of ``text``, in order.

    >>> code_blocks("~~~ Python {.numberLines}\nx = 1\n~~~")
    [Block(tag='python', code='x = 1\n')]
    """
    blocks = []
    position = 0
    while (opening := _OPEN.search(text, position)) is not None:
        fence, info = opening.group("fence"), opening.group("info")
        if fence[0] == "`" and "`" in info:  # not a fence: Markdown forbids backticks in a backtick fence's info
            position = opening.end()
            continue
        closing = re.compile(rf"^ {{0,3}}{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$", re.MULTILINE)
        start = min(opening.end() + 1, len(text))
        end = closing.search(text, start)
        code = text[start : end.start() if end else len(text)]
        blocks.append(Block(info.split()[0].lower() if info.split() else "", code))
        position = end.end() if end else len(text)
    return blocks


def extract_code(text: str, tags: Sequence[str]) -> str:
    """The program in ``text`` by the module's rule; ``tags`` are the runner's language tags (lower case)."""
    blocks = code_blocks(text)
    for wanted in (lambda tag: tag in tags, lambda tag: tag == "", lambda tag: True):
        chosen = next((block.code for block in blocks if wanted(block.tag)), None)
        if chosen is not None:
            return chosen
    return text
