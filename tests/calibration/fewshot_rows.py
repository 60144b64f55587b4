"""Labelled rows and scripted judges for the few-shot tests: replies chosen by what the prompt shows."""

from __future__ import annotations

import re
from typing import Callable

from scorers.judges.examples import HEADING
from scorers.testing import Reply
from scorers.testing.recorded import RecordedRequest

#: 80 rows; every third one's text carries a hint that, shown as an example, fixes the judge's mistakes.
ROWS = [
    {
        "id": f"r{i:02d}",
        "doc": f"d{i // 4}",
        "output": f"case {i}: {'thanks a lot' if i % 2 else 'go away'}" + (" (HINT)" if i % 3 == 0 else ""),
        "polite": "Y" if i % 2 else "N",
    }
    for i in range(80)
]
PROMPT = "Is this reply polite?\n{{output}}"


def case_of(request: RecordedRequest) -> tuple[int, str]:
    """The judged row's number (from the text before the examples block) and the examples block."""
    case, _, shown = request.last_user_message.partition(HEADING)
    number = re.search(r"case (\d+):", case)
    assert number is not None, request.last_user_message
    return int(number.group(1)), shown


def scripted(fixed: Callable[[int], bool]) -> Callable[[RecordedRequest], Reply]:
    """A judge wrong on every fourth row, unless its prompt shows a hinted example and ``fixed(row)`` holds."""

    def reply(request: RecordedRequest) -> Reply:
        number, shown = case_of(request)
        truth = ROWS[number]["polite"]
        right = number % 4 != 0 or ("(HINT)" in shown and fixed(number))
        return Reply.choice(truth if right else {"Y": "N", "N": "Y"}[truth])

    return reply
