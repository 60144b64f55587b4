"""Runs ``moverscore_v2.word_mover_score`` of moverscore 1.0.3 (PyPI) for tests/embedding/test_moverscore.py.

Run with the Python of .cache/moverscore-venv (scripts/setup.sh), offline. Reads JSON on stdin:
``{"model": FOLDER, "refs": [...], "hyps": [...], "batch_size": N, "runs": [{"name", "idf", "stop_words",
"num_layers"}]}``; writes ``{"scores": {name: [score, ...]}, "seconds": {name: s}}`` on stdout (the wall time of
the ``word_mover_score`` call, for benchmarks/bench_moverscore.py). ``idf`` true: ``get_idf_dict(refs)`` and
``get_idf_dict(hyps)``, as moverscore's README does; false: uniform weights (``defaultdict(lambda: 1.0)``).

moverscore 1.0.3 was written for transformers 2-3 and numpy < 1.24, and its module loads DistilBERT from the
hub when imported. What is adapted here, so that it runs on today's packages with the model given on stdin,
leaves its scoring code (tokenising, IDF, word_mover_score, pyemd's emd_with_flow) as it is:

- the three DistilBERT classes it names, for its import: their ``from_pretrained`` return that model's
  configuration, tokenizer (``do_lower_case=True``, with ``max_len``, the old name of ``model_max_length``) and
  model, which returns the tuple of transformers 2-3 (last hidden state, hidden states, attentions: None) and
  stays on the CPU (the module moves it to ``cuda:0``);
- ``np.float`` (removed in numpy 1.24) is ``float``; matplotlib, imported for ``plot_example`` only, is an
  empty module;
- a run with ``num_layers`` sets the module's ``model`` to the model's first ``num_layers`` layers.
"""

from __future__ import annotations

import json
import sys
import time
import types
from collections import defaultdict
from typing import Any

import numpy as np
import torch
from transformers import AutoConfig, AutoModel, AutoTokenizer


class LegacyModel(torch.nn.Module):
    """A model called as transformers 2-3 called DistilBertModel with hidden states on."""

    def __init__(self, inner: Any) -> None:
        super().__init__()
        self.inner = inner

    def forward(self, input_ids: Any, attention_mask: Any = None) -> tuple[Any, Any, None]:
        out = self.inner(input_ids=input_ids, attention_mask=attention_mask, output_hidden_states=True)
        return out.last_hidden_state, out.hidden_states, None

    def to(self, *args: Any, **kwargs: Any) -> "LegacyModel":
        return self  # the CPU: the module asks for cuda:0


def load_model(folder: str, num_layers: int | None) -> LegacyModel:
    inner = AutoModel.from_pretrained(folder, local_files_only=True).eval()
    if num_layers is not None:
        inner.encoder.layer = torch.nn.ModuleList(list(inner.encoder.layer)[:num_layers])
    return LegacyModel(inner)


def stand_in(name: str, value: Any) -> type:
    return type(name, (), {"from_pretrained": staticmethod(lambda *args, **kwargs: value)})


def import_moverscore_v2(folder: str) -> Any:
    tokenizer = AutoTokenizer.from_pretrained(folder, do_lower_case=True, local_files_only=True)
    tokenizer.max_len = tokenizer.model_max_length
    transformers = sys.modules["transformers"]
    old = types.ModuleType("transformers")  # what `from transformers import *` gives the module
    old.DistilBertConfig = stand_in("DistilBertConfig", AutoConfig.from_pretrained(folder, local_files_only=True))
    old.DistilBertTokenizer = stand_in("DistilBertTokenizer", tokenizer)
    old.DistilBertModel = stand_in("DistilBertModel", load_model(folder, None))
    old.__all__ = ["DistilBertConfig", "DistilBertTokenizer", "DistilBertModel"]
    pyplot = types.ModuleType("matplotlib.pyplot")
    matplotlib = types.ModuleType("matplotlib")
    matplotlib.pyplot = pyplot
    np.float = float  # type: ignore[attr-defined]
    sys.modules.update({"transformers": old, "matplotlib": matplotlib, "matplotlib.pyplot": pyplot})
    try:
        import moverscore_v2
    finally:
        sys.modules["transformers"] = transformers
    return moverscore_v2


def main() -> None:
    job = json.load(sys.stdin)
    moverscore_v2 = import_moverscore_v2(job["model"])
    refs, hyps = job["refs"], job["hyps"]
    scores, seconds = {}, {}
    for run in job["runs"]:
        moverscore_v2.model = load_model(job["model"], run["num_layers"])
        if run["idf"]:
            idf_ref, idf_hyp = moverscore_v2.get_idf_dict(refs), moverscore_v2.get_idf_dict(hyps)
        else:
            idf_ref, idf_hyp = defaultdict(lambda: 1.0), defaultdict(lambda: 1.0)
        start = time.perf_counter()
        values = moverscore_v2.word_mover_score(
            refs, hyps, idf_ref, idf_hyp, stop_words=run["stop_words"], batch_size=job["batch_size"], device="cpu"
        )
        seconds[run["name"]] = time.perf_counter() - start
        scores[run["name"]] = [float(v) for v in values]
    json.dump({"scores": scores, "seconds": seconds}, sys.stdout)


if __name__ == "__main__":
    main()
