"""Scripted rules: which requests a :class:`~scorers.testing.Reply` answers, and how many times; a replies file.

>>> rule = Rule(Reply.text("Paris"), match="capital", times=1)
>>> rule.matches(RecordedRequest("POST", "/v1/responses", {}, {"input": "The capital of France?"}, 0.0))
True
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Union

from .._util import is_int
from ..errors import ConfigError
from .recorded import RecordedRequest
from .replies import Reply

__all__ = ["Matcher", "ReplySource", "Rule", "load_rules"]

Matcher = Union[str, "re.Pattern[str]", Callable[[RecordedRequest], bool], None]
ReplySource = Union[Reply, Callable[[RecordedRequest], Reply]]


@dataclass
class Rule:
    """A scripted rule: answer requests that ``match`` with ``reply``, at most ``times`` times."""

    reply: ReplySource
    match: Matcher = None
    times: int | None = None
    used: int = 0

    def matches(self, request: RecordedRequest) -> bool:
        if self.times is not None and self.used >= self.times:
            return False
        if self.match is None:
            return True
        if isinstance(self.match, str):
            return self.match in request.last_user_message
        if isinstance(self.match, re.Pattern):
            return self.match.search(request.last_user_message) is not None
        return bool(self.match(request))


def load_rules(path: str | Path) -> list[Rule]:
    """The rules of a replies file (:data:`~scorers.testing.REPLIES_FORMAT`); a bad line raises :class:`ConfigError` naming it.

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "replies.jsonl")
    >>> _ = open(path, "w").write('{"match": "Venus", "reply": {"choice": "D"}, "times": 1}\\n')
    >>> [(rule.match, rule.reply.arguments, rule.times) for rule in load_rules(path)]
    [('Venus', '{"choice": "D"}', 1)]
    """
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"--replies {path}: cannot read it ({exc})") from None
    rules = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
            if (
                not isinstance(entry, dict)
                or not isinstance(entry.get("reply"), dict)
                or set(entry) - {"match", "reply", "times"}
            ):
                raise ValueError('expected {"match": TEXT, "reply": {...}, "times": N} ("match" and "times" optional)')
            match, times = entry.get("match"), entry.get("times")
            if match is not None and not isinstance(match, str):
                raise ValueError(f"match: a text, got {match!r}")
            if times is not None and (not is_int(times) or times < 1):
                raise ValueError(f"times: a whole number of at least 1, got {times!r}")
            rules.append(Rule(reply=Reply.from_dict(entry["reply"]), match=match, times=times))
        except ValueError as exc:
            raise ConfigError(f"{path}:{number}: {exc}") from None
    return rules
