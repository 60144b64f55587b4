"""autoevals' multi-turn thread variables (``{{thread}}``, ``{{thread_count}}``, ...), computed by our judges.

The variables render as autoevals 0.4.1 renders them (:mod:`scorers.judges.conversation`); an
``LLMClassifier`` called with ``trace=`` reads the thread from ``trace.get_thread()`` when its template uses one.

>>> template_uses_thread_variables("Count: {{ thread_count }}"), template_uses_thread_variables("{{output}}")
(True, False)
>>> variables = compute_thread_template_vars([{"role": "user", "content": "Hi"}])
>>> variables["thread_count"], str(variables["first_message"])
(1, 'user: Hi')
"""

from __future__ import annotations

import re
from typing import Any, Mapping, Sequence

from ...judges.conversation import THREAD_VARIABLES, thread_variables

__all__ = [
    "THREAD_VARIABLE_NAMES",
    "compute_thread_template_vars",
    "filter_system_messages_from_thread",
    "template_uses_thread_variables",
]

#: The thread variables, in autoevals' order.
THREAD_VARIABLE_NAMES = list(THREAD_VARIABLES)
_USES_THREAD = re.compile(r"\{[{%]\s*(" + "|".join(THREAD_VARIABLE_NAMES) + ")")


def template_uses_thread_variables(template: str) -> bool:
    """Whether a mustache/Jinja text names a thread variable (``{{thread...``, ``{% if thread...``)."""
    return _USES_THREAD.search(template) is not None


def filter_system_messages_from_thread(thread: Sequence[Any]) -> list[Any]:
    """``thread`` without its system messages."""
    return [m for m in thread if not (isinstance(m, Mapping) and m.get("role") == "system")]


def compute_thread_template_vars(
    thread: Sequence[Any], thread_with_system: Sequence[Any] | None = None
) -> dict[str, Any]:
    """The thread variables of ``thread`` (``thread_with_system``, when given, is the same thread with its system
    messages); each prints as autoevals prints it."""
    variables = thread_variables(list(thread), scorer="compute_thread_template_vars", drop_system=False)
    if thread_with_system is not None:
        variables["thread_with_system"] = thread_variables(
            list(thread_with_system), scorer="compute_thread_template_vars"
        )["thread_with_system"]
    return variables
