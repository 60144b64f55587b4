"""Compatibility layers: other libraries' public names and call conventions over our scorers.

``from scorers.compat import autoevals`` replaces ``import autoevals`` (Braintrust
autoevals 0.4): the same classes, ``init`` and call forms, each computed by the
scorer of the same name in this library. See docs/autoevals.md ("Coming from autoevals")
for where it differs and why.

>>> from scorers.compat import autoevals
>>> autoevals.Levenshtein()("kitten", "sitting").score
0.5714285714285714
"""

from __future__ import annotations

__all__ = ["autoevals"]
