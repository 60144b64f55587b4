"""Reference-exact text metrics: BLEU, chrF, TER (sacrebleu), ROUGE (rouge-score), METEOR (nltk).

Importing this package registers the scorers; the reference libraries are
imported only when a scorer is first used (``pip install 'scorers[text]'``).
"""

from __future__ import annotations

from . import bleu, chrf, meteor, rouge, ter  # noqa: F401  (registers the scorers)
