"""autoevals' ``Moderation``: not provided; the name stays importable and raises when used.

>>> Moderation().eval("hello")
Traceback (most recent call last):
...
scorers.compat.autoevals._adapter.NotSupportedError: autoevals' Moderation is not provided by scorers; use the OpenAI moderation endpoint (client.moderations.create) directly
"""

from __future__ import annotations

from ._adapter import Unsupported

__all__ = ["Moderation"]


class Moderation(Unsupported):
    """Not provided."""

    instead = "the OpenAI moderation endpoint (client.moderations.create) directly"
