"""MoverScore (Zhao et al. 2019) as moverscore_v2 computes it, batch-independent."""

from __future__ import annotations

import hashlib
import importlib.util
import math
import string
from typing import Any, Sequence

from .._util import is_int, lazy, memoize, optional_import
from ..base import Scorer
from ..errors import ConfigError, MissingExtraError, ScorerError, ScorerInputError
from ..fields import references_field, text_field
from ..params import param
from ..registry import register
from ..score import Score
from . import models
from .models import ModelSource

__all__ = ["MoverScore", "SCORE_MAPS"]

#: How the earth mover's distance ``d`` becomes the score: moverscore_v2 on the project's repository
#: (since 2021) returns ``1 / (1 + d)``; moverscore 1.0.3 on PyPI returns ``1 - d``.
SCORE_MAPS = {"reciprocal": "1/(1+d)", "complement": "1-d"}
#: Tokens moverscore_v2 gives no weight: one ASCII punctuation character (besides stop words and ``##`` pieces).
PUNCTUATION = frozenset(string.punctuation)


@register
class MoverScore(models.HubModel, Scorer):
    """MoverScore: the earth mover's distance between the IDF-weighted contextual token embeddings of
    ``output`` and ``expected`` (Zhao et al. 2019), as ``moverscore_v2.word_mover_score`` computes it.

    Tokens are moverscore_v2's (``[CLS]``, word pieces truncated to ``model_max_length - 2``, ``[SEP]``;
    the tokenizer loaded with ``do_lower_case=True``), embedded by the model's last layer (or layer
    ``num_layers``). Stop words, ``##`` pieces and single punctuation characters weigh 0; other tokens
    their IDF (``idf=True``) or 1. ``d`` is the exact optimal transport cost between the two normalised
    weight vectors over the Euclidean distances of the unit embeddings (POT's ``ot.emd2``, which pyemd,
    moverscore_v2's solver, runs by default). ``score_map="reciprocal"`` (default) scores ``1 / (1 + d)``
    (moverscore_v2 on the project's repository); ``"complement"`` scores ``1 - d`` (moverscore 1.0.3 on
    PyPI), clamped to [0, 1]. ``metadata``: ``distance`` and ``moverscore`` (unclamped); several
    references score their mean (``metadata["references"]``: each).

    IDF corpora are settings, so a row's score never depends on its batch: ``idf_sents`` weighs the
    references (and the outputs, unless ``idf_output_sents`` is given): ``word_mover_score(refs, hyps,
    get_idf_dict(refs), get_idf_dict(hyps))`` is ``MoverScore(idf=True, idf_sents=refs,
    idf_output_sents=hyps)``. Unlike moverscore_v2, padding never weighs (it weighs the id of ``[PAD]``,
    0 only in BERT vocabularies), a text with no weighted token is the row's ``ScorerInputError`` (1.0
    there), and distances are float64, so an output equal to its reference scores exactly 1 (float32
    noise there). ``n_gram`` and ``remove_subwords``, which moverscore_v2 takes but never uses, are not
    parameters. Details: docs/moverscore.md.

    Parameters: ``model`` (``None``: the bundled all-MiniLM-L6-v2; a hub name or a local folder),
    ``num_layers`` (``None``: all), ``idf``/``idf_sents``/``idf_output_sents``, ``stop_words`` (word
    pieces as the tokenizer writes them), ``score_map``; ``batch_size`` (texts per forward pass, 256 as
    in moverscore_v2), ``device`` and ``allow_download`` (hub models only from the local HF cache unless
    True) never change the numbers.

    >>> s = MoverScore()(output="The cat sat on the mat.", expected="A feline was sitting on the rug.")
    >>> round(s.score, 4), round(s.metadata["distance"], 4)  # float32 embeddings: agree to about 1e-6 across CPUs
    (0.526, 0.9011)
    """

    name = "MoverScore"
    kind = "embedding"
    extra = "bert"
    description = "MoverScore: earth mover's distance between IDF-weighted contextual token embeddings."
    fields = (text_field("output", utf8=True, description="candidate text"), references_field("expected", utf8=True))
    example = 'MoverScore()(output="The cat sat on the mat.", expected="A feline was sitting on the rug.")'
    algorithm_version = "1"

    model: str | None = param("a hub name or a local folder (None: the bundled MiniLM)", default=None)
    num_layers: int | None = param(
        "how many layers run; the last one's embeddings are compared (None: all)", default=None, ge=0
    )
    idf: bool = param("weight tokens by idf over idf_sents (and idf_output_sents)", default=False)
    idf_sents: Sequence[str] | None = param("the reference corpus of the idf weights (needs idf=True)", default=None)
    idf_output_sents: Sequence[str] | None = param(
        "the output corpus of the idf weights (None: idf_sents)", default=None
    )
    stop_words: Sequence[str] = param(
        "words that weigh nothing in the transport", default=(), expected="a list of strings"
    )
    score_map: str = param(
        "how the transport distance becomes a similarity", default="reciprocal", choices=tuple(SCORE_MAPS)
    )
    batch_size: int = param("most sentences per forward pass (never changes a number)", default=256, ge=1, signed=False)
    device: str | None = param("the torch device (None: cuda when available, else cpu)", default=None, signed=False)
    allow_download: bool = param(
        "fetch a hub model not in the local cache (otherwise nothing is downloaded)", default=False, signed=False
    )

    def __post_init__(self) -> None:
        models.require_packages(self.name, "torch", "transformers")
        if importlib.util.find_spec("ot") is None:
            raise MissingExtraError(self.name, "POT", "bert")
        self._stop_words = frozenset(self.stop_words)
        idf_sents, idf_output_sents = self.idf_sents, self.idf_output_sents
        self.idf_sents = [str(s) for s in idf_sents] if idf_sents is not None else None
        self.idf_output_sents = [str(s) for s in idf_output_sents] if idf_output_sents is not None else None
        if self.idf and not self.idf_sents:
            raise ConfigError(
                f"{self.name}: idf=True needs idf_sents (the corpus the idf weights come from)", scorer=self.name
            )
        if not self.idf and (idf_sents is not None or idf_output_sents is not None):
            raise ConfigError(f"{self.name}: idf_sents or idf_output_sents given but idf=False", scorer=self.name)
        if self.idf_output_sents is not None and not self.idf_output_sents:
            raise ConfigError(f"{self.name}: idf_output_sents is empty", scorer=self.name)
        self.num_layers = self._resolve_layers(self.num_layers)

    def _resolve_layers(self, num_layers: int | None) -> int | None:
        """``num_layers``, checked; None becomes the model's layer count when its local config says."""
        if num_layers is not None and (not is_int(num_layers) or num_layers < 0):
            raise ConfigError(
                f"{self.name}: num_layers must be a non-negative integer, got {num_layers!r}", scorer=self.name
            )
        if not self._source.is_local:
            return num_layers
        total = models.layer_count(self._source, self.allow_download, self.name)
        if total is not None and num_layers is not None and num_layers > total:
            raise ConfigError(
                f"{self.name}: num_layers must be between 0 and {total}, got {num_layers}", scorer=self.name
            )
        return total if num_layers is None else num_layers

    # ------------------------------------------------------------ per-process state (dropped when pickled)
    @lazy
    def _tokenizer(self) -> Any:
        optional_import("transformers", scorer=self.name, extra="bert")
        try:
            return _load_tokenizer(self._source, self.allow_download)
        except OSError as exc:
            hint = "" if self.allow_download else " (nothing is downloaded unless allow_download=True)"
            raise ConfigError(
                f"{self.name}: cannot load {self._source.label!r}{hint}: {exc}", scorer=self.name
            ) from exc

    @lazy
    def _model(self) -> Any:
        total = models.layer_count(self._source, self.allow_download, self.name)
        layers = None if self.num_layers in (None, total) else self.num_layers  # the full model is shared
        return models.load_model(self._source, self._torch_device, layers, self.allow_download, self.name)

    @lazy
    def _ot(self) -> Any:
        return optional_import("ot", scorer=self.name, extra="bert", package="POT")

    @lazy
    def _idf_tables(self) -> tuple[tuple[dict[int, float], float], tuple[dict[int, float], float]] | None:
        """(references' table, outputs' table), each token id -> idf and the idf of unseen ids; None without idf."""
        if self.idf_sents is None:
            return None
        references = self._idf_table(self.idf_sents)
        outputs = references if self.idf_output_sents is None else self._idf_table(self.idf_output_sents)
        return references, outputs

    @lazy
    def _identity(self) -> dict[str, Any]:
        return self._source.identity()

    def params(self) -> dict[str, Any]:
        out: dict[str, Any] = {**self._identity, "num_layers": self.num_layers, "idf": self.idf}
        for key, corpus in (("idf_sents", self.idf_sents), ("idf_output_sents", self.idf_output_sents)):
            if corpus is not None:
                out[key] = _digest(corpus)
        out["stop_words"] = _digest(sorted(self._stop_words)) if self._stop_words else None
        out["score_map"] = SCORE_MAPS[self.score_map]
        out["pot"] = models.dist_version("POT")
        out.update(models.stack_versions())
        return out

    # ------------------------------------------------------------ pieces
    def _tokens(self, text: str) -> list[str]:
        """``[CLS]``, the word pieces (truncated as moverscore_v2 truncates them), ``[SEP]``."""
        tokenizer = self._tokenizer
        return ["[CLS]", *tokenizer.tokenize(text)[: max(tokenizer.model_max_length - 2, 0)], "[SEP]"]

    def _idf_table(self, corpus: Sequence[str]) -> tuple[dict[int, float], float]:
        counts: dict[int, int] = {}
        for text in corpus:
            for token in set(self._tokenizer.convert_tokens_to_ids(self._tokens(text))):
                counts[token] = counts.get(token, 0) + 1
        m = len(corpus)
        return {t: math.log((m + 1) / (c + 1)) for t, c in counts.items()}, math.log(m + 1)

    def _weights(self, tokens: list[str], ids: list[int], side: int) -> list[float]:
        """Each token's weight on one side (0: references, 1: outputs)."""
        tables = self._idf_tables
        table, unseen = tables[side] if tables is not None else ({}, 1.0)
        return [
            0.0 if t in self._stop_words or "##" in t or t in PUNCTUATION else table.get(i, unseen)
            for t, i in zip(tokens, ids)
        ]

    # ------------------------------------------------------------ scoring
    def _score_batch(self, rows: list[dict[str, Any]]) -> list[Score | ScorerError]:
        import numpy as np
        from scipy.spatial.distance import cdist  # scipy comes with POT

        texts = list(dict.fromkeys(t for row in rows for t in (row["output"], *row["expected"])))
        tokens = [self._tokens(t) for t in texts]
        ids = [self._tokenizer.convert_tokens_to_ids(x) for x in tokens]
        pad = self._tokenizer.pad_token_id
        states = models.encode_tokens(
            self._model, self._torch_device, ids, pad if pad is not None else 0, self.batch_size
        )
        index = {t: i for i, t in enumerate(texts)}
        sides: list[dict[int, tuple[Any, Any] | None]] = [{}, {}]  # text index -> (unit embeddings, weights)

        def side(i: int, which: int) -> tuple[Any, Any] | None:
            """The kept tokens' unit embeddings (float64) and normalised weights of text ``i``; None: no weight.

            numpy, not torch: these arrays are small, and torch's thread pool costs more than the arithmetic."""
            if i not in sides[which]:
                weights = np.array(self._weights(tokens[i], ids[i], which), dtype=np.float64)
                kept = weights > 0
                vectors = states[i].numpy()[kept].astype(np.float64)
                vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
                total = weights[kept].sum()
                sides[which][i] = (vectors, weights[kept] / total) if total > 0 else None
            return sides[which][i]

        results: list[Score | ScorerError] = []
        for row in rows:
            output = side(index[row["output"]], 1)
            if output is None:
                results.append(ScorerInputError(self.name, "output", _NO_WEIGHT))
                continue
            distances: list[float] = []
            for ref in row["expected"]:
                reference = side(index[ref], 0)
                if reference is None:
                    break
                cost = cdist(reference[0], output[0])  # |x - y| summed directly: 0 between equal embeddings
                distances.append(float(self._ot.emd2(reference[1], output[1], cost)))
            if len(distances) < len(row["expected"]):
                results.append(ScorerInputError(self.name, "expected", _NO_WEIGHT))
                continue
            values = [1.0 / (1.0 + d) if self.score_map == "reciprocal" else 1.0 - d for d in distances]
            value = sum(values) / len(values)
            extra: dict[str, Any] = {"references": values} if len(values) > 1 else {}
            results.append(
                self.make_score(
                    min(max(value, 0.0), 1.0), distance=sum(distances) / len(distances), moverscore=value, **extra
                )
            )
        return results


_NO_WEIGHT = (
    "has no token to weigh: every token is a stop word, a ## word piece or punctuation, or has idf 0 "
    "(moverscore_v2 scores such a text 1.0)"
)


@memoize
def _load_tokenizer(source: ModelSource, allow_download: bool) -> Any:
    """The model's tokenizer as moverscore_v2 loads it (``do_lower_case=True``), once per process."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(source.location, do_lower_case=True, local_files_only=not allow_download)


def _digest(texts: Sequence[str]) -> dict[str, Any]:
    return {"n": len(texts), "sha256": hashlib.sha256("\n".join(texts).encode()).hexdigest()[:16]}
