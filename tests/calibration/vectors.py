"""Shared vectors of the calibration tests: generated judge predictions and 0/1 outcomes."""

from __future__ import annotations

import numpy as np


def _vector(seed: int, kind: str, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Judge predictions and 0/1 outcomes: a judge whose scores are the true rate bent by a power (over- or
    under-confident), on a continuous scale or on a 5-point one (ties, values on bin edges)."""
    rng = np.random.default_rng(seed)
    truth = rng.random(n)
    outcomes = (rng.random(n) < truth).astype(float)
    bent = truth ** rng.choice([0.3, 0.6, 2.0])
    if kind == "five_point":
        bent = np.round(bent * 4) / 4
    return bent, outcomes


#: Shared vectors: (name, predictions, outcomes), both outcomes present in each.
VECTORS = [
    (f"{kind}-{seed}-{n}", *_vector(seed, kind, n))
    for seed, (kind, n) in enumerate([("continuous", 40), ("continuous", 300), ("five_point", 60), ("five_point", 500)])
]
