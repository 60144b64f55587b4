"""autoevals' ``ScorerWithPartial``: here every :class:`~scorers.score.Scorer` has ``partial``.

>>> from scorers.compat.autoevals.string import Levenshtein
>>> issubclass(Levenshtein, ScorerWithPartial)
True
"""

from __future__ import annotations

from .score import Scorer

__all__ = ["ScorerWithPartial"]

#: The base autoevals' built-in scorers derive from; ``partial`` lives on :class:`Scorer` itself.
ScorerWithPartial = Scorer
