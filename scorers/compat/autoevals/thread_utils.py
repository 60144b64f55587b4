"""autoevals' multi-turn thread variables (``{{thread}}``, ``trace=``): not provided; the names raise when used.

>>> template_uses_thread_variables("{{thread}}")
Traceback (most recent call last):
...
scorers.compat.autoevals._adapter.NotSupportedError: autoevals' template_uses_thread_variables is not provided by scorers; use a template variable holding the conversation as text, passed at call time
"""

from __future__ import annotations

from ._adapter import unsupported_function

__all__ = ["compute_thread_template_vars", "template_uses_thread_variables"]

_INSTEAD = "a template variable holding the conversation as text, passed at call time"

compute_thread_template_vars = unsupported_function("compute_thread_template_vars", _INSTEAD)
template_uses_thread_variables = unsupported_function("template_uses_thread_variables", _INSTEAD)
