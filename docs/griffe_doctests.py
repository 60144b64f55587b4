"""A griffe extension for the API reference (mkdocs.yml): the doctest examples of our docstrings as code.

The docstrings are plain text with doctest examples (``>>>`` lines, their ``...`` continuations and the expected
output, up to a blank line). Rendered as Markdown, that text would be a quote whose brackets read as links; this
wraps each example in a ``pycon`` fence, the way it is meant to be read. It changes only what the site shows.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_PROMPT = re.compile(r"^(?P<indent>\s*)>>>( |$)")


def fence_doctests(text: str) -> str:
    """``text`` with each run of doctest lines (from a ``>>>`` line to the next blank line) in a pycon fence."""
    lines, out, i = text.splitlines(), [], 0
    while i < len(lines):
        prompt = _PROMPT.match(lines[i])
        if not prompt:
            out.append(lines[i])
            i += 1
            continue
        indent = prompt["indent"]
        out.append(f"{indent}```pycon")
        while i < len(lines) and lines[i].strip():
            out.append(lines[i])
            i += 1
        out.append(f"{indent}```")
    return "\n".join(out)


class DoctestFences(griffe.Extension):
    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None and ">>>" in obj.docstring.value:
            obj.docstring.value = fence_doctests(obj.docstring.value)
