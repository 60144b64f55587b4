"""What every format returns: a file's :class:`Definition` s and its located :class:`Problem` s.

>>> problems = Problems("judge.yaml", {"prompt": 2})
>>> problems.add("prompt.text", "must not be empty")
>>> str(problems[0])
'judge.yaml:2: prompt.text: must not be empty'
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from ..template import JudgeTemplate

__all__ = ["Definition", "Problem", "Problems"]


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a template file, located by file, key and (when known) line."""

    file: str
    key: str
    message: str
    line: int | None = None

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        return f"{where}: {self.key or '<file>'}: {self.message}"


class Problems(list[Problem]):
    """Collects the :class:`Problem` items of one file; a key's line comes from the file's key map."""

    def __init__(self, file: str, lines: Mapping[str, int] | None = None) -> None:
        super().__init__()
        self.file = file
        self.lines = lines or {}

    def add(self, key: str, message: str, line: int | None = None) -> None:
        if line is None:
            probe = key
            while probe and probe not in self.lines:  # the closest enclosing key the file has
                probe = probe[: max(probe.rfind("."), probe.rfind("["), 0)]  # one segment shorter, always
            line = self.lines.get(probe)
        self.append(Problem(self.file, key, message, line))


@dataclass(frozen=True)
class Definition:
    """What a template file defines: the judge ``kind``, its ``template`` and the judge's other ``settings``."""

    kind: str
    template: JudgeTemplate
    settings: Mapping[str, Any] = field(default_factory=dict)
