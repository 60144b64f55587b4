"""BERTScore (Zhang et al. 2020) with bert-score's semantics, batch-independent."""

from __future__ import annotations

import csv
import hashlib
import importlib.util
import math
import os
from pathlib import Path
from typing import Any, Sequence

from .._util import is_int, lazy
from ..base import Scorer
from ..errors import ConfigError, ScorerError
from ..fields import references_field, text_field
from ..params import param
from ..registry import register
from ..score import Score
from . import models
from .models import DEFAULT_LAYERS, DEFAULT_MODEL_LABEL

__all__ = ["BERTScore"]


@register
class BERTScore(models.HubModel, Scorer):
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
    meets a negative cosine), to float32 rounding. Empty sentences score P=R=F=0 as in bert-score.
    Texts are tokenized as bert-score's ``sent_encode`` does (stripped, special
    tokens added, truncated to the tokenizer's ``model_max_length``); bert-score
    itself is not imported to score.

    Parameters: ``model_type`` (``None``: the bundled MiniLM, layer 6; a hub name
    such as ``"roberta-large"`` or a local folder otherwise, with ``num_layers``
    defaulting to bert-score's tuned layer), ``num_layers``, ``idf``/``idf_sents``,
    ``lang`` (only picks the rescale baseline file, as in bert-score),
    ``rescale_with_baseline``/``baseline_path`` (``ConfigError`` when no baseline
    exists for the model, e.g. MiniLM), ``batch_size`` (the most sentences per
    forward pass, which groups sentences of one token length so that no padding is
    computed; never changes the numbers), ``device``, ``use_fast_tokenizer`` and
    ``allow_download`` (hub models are read from the local HF cache only unless True).
    For paper-comparable numbers: ``BERTScore(model_type="roberta-large",
    rescale_with_baseline=True, allow_download=True)``.

    ``score`` is F1 (rescaled if ``rescale_with_baseline``) clamped to [0, 1]:
    raw F1 is a mean of cosines and can in theory be negative, and rescaled values
    often are; the unclamped ``precision``, ``recall`` and ``f1`` are in metadata.

    Building the scorer imports neither torch nor transformers; the first score
    loads them and the model (once per process, shared by all instances). The
    model, tokenizer and idf table are ``@lazy``: a pickled scorer carries its
    settings only and reloads them in the receiving process.

    >>> s = BERTScore()(output="The cat sat on the mat.", expected="A feline was sitting on the rug.")
    >>> round(s.metadata["f1"], 4)   # float32 arithmetic: agree to about 1e-6 across CPUs
    0.5838
    """

    name = "BERTScore"
    kind = "embedding"
    extra = "bert"
    description = "BERTScore F1: greedy token matching of contextual embeddings (bert-score semantics)."
    fields = (text_field("output", utf8=True, description="candidate text"), references_field("expected", utf8=True))
    example = 'BERTScore()(output="The cat sat on the mat.", expected="A feline was sitting on the rug.")'
    algorithm_version = "1"

    model_type: str | None = param("a hub name or a local folder (None: the bundled MiniLM, layer 6)", default=None)
    num_layers: int | None = param(
        "the layer whose embeddings are compared (None: bert-score's tuned layer for the model)", default=None, ge=0
    )
    idf: bool = param("weight tokens by idf over idf_sents", default=False)
    idf_sents: Sequence[str] | None = param("the corpus the idf weights come from (needs idf=True)", default=None)
    lang: str = param("the language of the rescale baseline file (as in bert-score)", default="en")
    rescale_with_baseline: bool = param("rescale with bert-score's baseline for the model", default=False)
    baseline_path: str | None = param(
        "a baseline CSV (LAYER,P,R,F) of your own (needs rescale_with_baseline=True)", default=None
    )
    batch_size: int = param("most sentences per forward pass (never changes a number)", default=64, ge=1, signed=False)
    device: str | None = param("the torch device (None: cuda when available, else cpu)", default=None, signed=False)
    use_fast_tokenizer: bool = param("use the model's fast tokenizer", default=False)
    allow_download: bool = param(
        "fetch a hub model not in the local cache (otherwise nothing is downloaded)", default=False, signed=False
    )

    def __post_init__(self) -> None:
        models.require_packages(self.name, "torch", "transformers", "bert_score")
        layer = self.num_layers = self._resolve_layers(self.model_type, self.num_layers)
        given = self.idf_sents
        self.idf_sents = [str(s) for s in given] if given is not None else None
        if self.idf and not self.idf_sents:
            raise ConfigError(
                f"{self.name}: idf=True needs idf_sents (the corpus the idf weights come from)", scorer=self.name
            )
        if not self.idf and given is not None:
            raise ConfigError(f"{self.name}: idf_sents given but idf=False", scorer=self.name)
        self._baseline: tuple[float, float, float] | None = None
        self._baseline_digest: str | None = None
        if self.rescale_with_baseline:
            self._baseline, self._baseline_digest = self._read_baseline(self.model_type, self.baseline_path, layer)
        elif self.baseline_path is not None:
            raise ConfigError(f"{self.name}: baseline_path given but rescale_with_baseline=False", scorer=self.name)

    # ------------------------------------------------------------ per-process state (dropped when pickled)
    def _model_name(self) -> str | None:
        return self.model_type

    @lazy
    def _tokenizer(self) -> Any:
        return models.load_tokenizer(self._source, self.use_fast_tokenizer, self.allow_download, self.name)

    @lazy
    def _model(self) -> Any:
        total = models.layer_count(self._source, self.allow_download, self.name)
        layers = None if self.num_layers == total else self.num_layers  # the full model is shared with other scorers
        return models.load_model(self._source, self._torch_device, layers, self.allow_download, self.name)

    @lazy
    def _encoding(self) -> tuple[bool, int, frozenset[int]]:
        """(add a prefix space as bert-score does for GPT-2/RoBERTa tokenizers, pad id, [CLS]/[SEP] ids)."""
        import transformers

        tokenizer = self._tokenizer
        prefix_space = isinstance(tokenizer, (transformers.GPT2Tokenizer, transformers.RobertaTokenizer))
        pad = tokenizer.pad_token_id
        return prefix_space, pad if pad is not None else 0, frozenset({tokenizer.cls_token_id, tokenizer.sep_token_id})

    @lazy
    def _idf(self) -> tuple[dict[int, float], float]:
        """Token id -> idf over ``idf_sents``, and the weight of unseen tokens (``log(M+1)``)."""
        counts: dict[int, int] = {}
        for sentence in self.idf_sents or ():
            for token in set(self._tokenize(sentence)):
                counts[token] = counts.get(token, 0) + 1
        m = len(self.idf_sents or ())
        return {t: math.log((m + 1) / (c + 1)) for t, c in counts.items()}, math.log(m + 1)

    @lazy
    def _identity(self) -> dict[str, Any]:
        return self._source.identity()

    # ------------------------------------------------------------ configuration
    def _resolve_layers(self, model_type: str | None, num_layers: int | None) -> int:
        if num_layers is None:
            if model_type is None:
                num_layers = DEFAULT_LAYERS
            else:
                from bert_score.utils import model2layers  # bert-score's tuned layers (imports torch)

                if model_type not in model2layers:
                    raise ConfigError(
                        f"{self.name}: num_layers is required for {model_type!r} "
                        "(bert-score has no tuned layer for it)",
                        scorer=self.name,
                    )
                num_layers = model2layers[model_type]
        if not is_int(num_layers) or num_layers < 0:
            raise ConfigError(
                f"{self.name}: num_layers must be a non-negative integer, got {num_layers!r}", scorer=self.name
            )
        if self._source.is_local:
            total = models.layer_count(self._source, self.allow_download, self.name)
            if total is not None and num_layers > total:
                raise ConfigError(
                    f"{self.name}: num_layers must be between 0 and {total}, got {num_layers}", scorer=self.name
                )
        return num_layers

    def _read_baseline(
        self, model_type: str | None, baseline_path: str | None, layer: int
    ) -> tuple[tuple[float, float, float], str]:
        if baseline_path is None:
            if model_type is None:
                raise ConfigError(
                    f"{self.name}: bert-score ships no rescale baseline for {DEFAULT_MODEL_LABEL}; "
                    "pass baseline_path= (CSV LAYER,P,R,F) or use a model that has one",
                    scorer=self.name,
                )
            spec = importlib.util.find_spec("bert_score")  # bert-score's data files, without importing it
            folder = list(spec.submodule_search_locations or [""])[0] if spec is not None else ""
            baseline_path = os.path.join(folder, "rescale_baseline", self.lang, f"{model_type}.tsv")
        if not os.path.isfile(baseline_path):
            raise ConfigError(
                f"{self.name}: no rescale baseline for {self._source.label!r} in language "
                f"{self.lang!r} (looked for {baseline_path})",
                scorer=self.name,
            )
        with open(baseline_path, newline="") as fh:
            rows = list(csv.reader(fh))[1:]
        if layer >= len(rows):  # bert-score takes the row at index num_layers
            raise ConfigError(f"{self.name}: baseline {baseline_path} has no row for layer {layer}", scorer=self.name)
        p, r, f = (float(x) for x in rows[layer][1:4])
        return (p, r, f), hashlib.sha256(Path(baseline_path).read_bytes()).hexdigest()[:16]

    def params(self) -> dict[str, Any]:
        out: dict[str, Any] = {**self._identity, "num_layers": self.num_layers, "idf": self.idf}
        if self.idf_sents is not None:
            joined = "\n".join(self.idf_sents).encode()
            out["idf_sents"] = {"n": len(self.idf_sents), "sha256": hashlib.sha256(joined).hexdigest()[:16]}
        out["baseline"] = (
            {"lang": self.lang, "values": list(self._baseline), "sha256": self._baseline_digest}
            if self._baseline is not None
            else None
        )
        out["fast_tokenizer"] = self.use_fast_tokenizer
        out["bert_score"] = models.dist_version("bert-score")
        out.update(models.stack_versions())
        return out

    # ------------------------------------------------------------ pieces
    def _tokenize(self, text: str) -> list[int]:
        """Token ids exactly as bert-score 0.3.13's ``sent_encode`` makes them (transformers >= 4).

        Empty text gets just the special tokens (what bert-score's
        ``build_inputs_with_special_tokens([])`` gave before transformers 5 dropped it
        from the slow tokenizers, where bert-score now crashes).
        """
        tokenizer = self._tokenizer
        text = text.strip()
        if not text:
            return list(tokenizer("", add_special_tokens=True)["input_ids"])
        options: dict[str, Any] = {"add_prefix_space": True} if self._encoding[0] else {}
        return list(
            tokenizer.encode(
                text, add_special_tokens=True, max_length=tokenizer.model_max_length, truncation=True, **options
            )
        )

    def _weights(self, ids: list[int]) -> list[float]:
        if not self.idf:
            special = self._encoding[2]
            return [0.0 if i in special else 1.0 for i in ids]
        table, unseen = self._idf  # [CLS]/[SEP] occur in every sentence: idf log(1) = 0
        return [table.get(i, unseen) for i in ids]

    # ------------------------------------------------------------ scoring
    def _encode(self, ids: list[list[int]]) -> list[Any]:
        """Unit-length layer-``num_layers`` states of each id sequence, on the model's device, in input order.

        Sentences go through the model in :func:`~scorers.embedding.models.length_batches`: equal token lengths together,
        so that no padding is computed and no attention mask is needed (see there); the passes run on every core
        at once, one core each (:func:`~scorers.embedding.models.run_passes`), the most tokens first.
        """
        torch = models.import_torch(self.name)
        device, pad = self._torch_device, self._encoding[1]
        model = self._model

        def forward(batch: list[int]) -> Any:
            lengths = [len(ids[i]) for i in batch]
            tokens = torch.full((len(batch), lengths[-1]), pad, dtype=torch.long)
            for row, i in enumerate(batch):
                tokens[row, : lengths[row]] = torch.tensor(ids[i], dtype=torch.long)
            mask = None
            if lengths[0] != lengths[-1]:  # a batch of several lengths (see models.length_batches): mask the padding
                mask = (torch.arange(lengths[-1]) < torch.tensor(lengths).unsqueeze(1)).long().to(device)
            states = model(tokens.to(device), attention_mask=mask)[0]
            return torch.nn.functional.normalize(states.float(), dim=-1)

        batches = models.length_batches([len(x) for x in ids], self.batch_size)
        batches.sort(key=lambda batch: -len(batch) * len(ids[batch[-1]]))  # longest passes first
        units: list[Any] = [None] * len(ids)
        for batch, states in zip(batches, models.run_passes(forward, batches, device)):
            for row, i in enumerate(batch):
                units[i] = states[row, : len(ids[i])]  # a view: no copy
        return units

    def _score_batch(self, rows: list[dict[str, Any]]) -> list[Score | ScorerError]:
        torch = models.import_torch(self.name)

        pairs = [(row["output"], ref) for row in rows for ref in row["expected"]]
        texts = list(dict.fromkeys(t for pair in pairs for t in pair))  # each text encoded once
        index = {t: i for i, t in enumerate(texts)}
        ids = [self._tokenize(t) for t in texts]
        with torch.inference_mode():
            units = self._encode(ids)
            weights = []  # per text, normalized once: each token's share of the sentence's weight
            for x in ids:
                w = torch.tensor(self._weights(x), dtype=torch.float32, device=self._torch_device)
                weights.append(w / w.sum())  # 0/0 = nan for an empty text: _greedy_match scores it 0
            prf = _greedy_match(torch, [(index[h], index[r]) for h, r in pairs], units, weights, self.batch_size)
        if self._baseline is not None:
            base = torch.tensor(self._baseline, dtype=torch.float64)
            prf = (prf - base) / (1 - base)
        values, start = prf.tolist(), 0
        results: list[Score | ScorerError] = []
        for row in rows:
            n = len(row["expected"])
            p, r, f = (max(column) for column in zip(*values[start : start + n]))
            start += n
            results.append(self.make_score(min(max(f, 0.0), 1.0), precision=p, recall=r, f1=f))
        return results


def _greedy_match(
    torch: Any, pairs: list[tuple[int, int]], units: list[Any], weights: list[Any], batch_size: int
) -> Any:
    """(P, R, F) per (hypothesis, reference) pair; float64 CPU tensor of shape (n, 3).

    ``units`` are unit-length token states and ``weights`` each token's normalized weight,
    per text. Pairs are length-sorted and matched with batched matmuls (the batches spread over
    the cores as the forward passes are); padded positions are masked with -inf so they never
    win a max (unlike bert-score's zero padding).
    """
    pad_sequence = torch.nn.utils.rnn.pad_sequence

    def match(batch: list[int]) -> Any:
        hyps, refs = [pairs[i][0] for i in batch], [pairs[i][1] for i in batch]
        hyp, ref = (pad_sequence([units[t] for t in side], batch_first=True) for side in (hyps, refs))
        hyp_w, ref_w = (pad_sequence([weights[t] for t in side], batch_first=True) for side in (hyps, refs))
        hyp_len, ref_len = (torch.tensor([units[t].shape[0] for t in side], device=hyp.device) for side in (hyps, refs))
        hyp_mask = torch.arange(hyp.shape[1], device=hyp.device) < hyp_len.unsqueeze(1)
        ref_mask = torch.arange(ref.shape[1], device=ref.device) < ref_len.unsqueeze(1)
        sim = torch.bmm(hyp, ref.transpose(1, 2))
        sim.masked_fill_(~(hyp_mask.unsqueeze(2) & ref_mask.unsqueeze(1)), float("-inf"))
        precision = (sim.max(dim=2).values.masked_fill_(~hyp_mask, 0.0) * hyp_w).sum(dim=1)
        recall = (sim.max(dim=1).values.masked_fill_(~ref_mask, 0.0) * ref_w).sum(dim=1)
        empty = (hyp_len <= 2) | (ref_len <= 2)  # only [CLS] [SEP]
        precision = torch.nan_to_num(precision.masked_fill_(empty, 0.0), nan=0.0)
        recall = torch.nan_to_num(recall.masked_fill_(empty, 0.0), nan=0.0)
        f1 = torch.nan_to_num(2 * precision * recall / (precision + recall), nan=0.0)
        return torch.stack([precision, recall, f1], dim=1).double().cpu()

    out = torch.zeros((len(pairs), 3), dtype=torch.float64)
    sizes = [units[h].shape[0] * units[r].shape[0] for h, r in pairs]
    batches = models.sorted_batches(sizes, batch_size)
    device = str(units[0].device) if units else "cpu"
    for batch, prf in zip(batches, models.run_passes(match, batches, device)):
        out[batch] = prf
    return out
