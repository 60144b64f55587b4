"""NLIEntailment, the NLI plug-in point, on a tiny BERT classifier with random weights built here (no download).

The expected numbers come from transformers itself: the same folder loaded with AutoTokenizer and
AutoModelForSequenceClassification, one pair at a time, softmax of the logits.
"""

from __future__ import annotations

import json
import pickle
import shutil
from pathlib import Path

import pytest

import scorers
from scorers.embedding.nli import NLIEntailment
from scorers.errors import ConfigError, ScorerInputError
from scorers.registry import Registry
from scorers.testing import TINY_NLI_LABELS, TINY_NLI_WORDS, tiny_nli_model

pytestmark = pytest.mark.needs_torch
torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

WORDS, LABELS = TINY_NLI_WORDS, TINY_NLI_LABELS


@pytest.fixture(scope="module")
def tiny_nli(tmp_path_factory) -> Path:
    """A one-layer BERT with a 3-class head (random weights, seeded) and a WordPiece tokenizer of ``WORDS``."""
    return tiny_nli_model(tmp_path_factory.mktemp("tiny-nli"))


def with_labels(source: Path, target: Path, id2label: dict[int, str]) -> str:
    """A copy of the tiny model whose configuration names its classes ``id2label``."""
    shutil.copytree(source, target)
    config = json.loads((target / "config.json").read_text())
    config["id2label"] = {str(index): name for index, name in id2label.items()}
    config["label2id"] = {name: index for index, name in id2label.items()}
    (target / "config.json").write_text(json.dumps(config))
    return str(target)


def reference(folder: Path, premise: str, hypothesis: str) -> list[float]:
    """Every class's probability for one pair, computed by transformers directly."""
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder, local_files_only=True)
    model = transformers.AutoModelForSequenceClassification.from_pretrained(folder, local_files_only=True).eval()
    with torch.inference_mode():
        logits = model(**tokenizer(premise, hypothesis, truncation=True, return_tensors="pt")).logits
    return torch.softmax(logits[0].float(), dim=-1).tolist()


PAIRS = [
    ("A man plays the guitar.", "Someone makes music."),
    ("The dog sleeps on the mat.", "A dog is outside."),
    ("A woman runs.", "A woman is not outside, the cat sleeps on a mat."),
    ("Cat.", "The man plays music, the woman plays the guitar, a dog runs outside."),
    ("The xylophone is loud.", "Unknown words."),  # words the vocabulary lacks: [UNK]
    # longer than the model's 32 tokens: truncated, as transformers truncates the pair
    (" ".join(["the man plays the guitar"] * 8), "someone makes music"),
]


def test_the_score_is_the_entailment_probability_transformers_computes(tiny_nli):
    scorer = NLIEntailment(model=str(tiny_nli), device="cpu")
    assert scorer.entailment_index == 2 and scorer.required_fields() == ["input", "output"]
    for premise, hypothesis in PAIRS:
        expected = reference(tiny_nli, premise, hypothesis)
        score = scorer(input=premise, output=hypothesis)
        assert score.score == pytest.approx(expected[2], abs=1e-6)
        assert list(score.metadata["probabilities"]) == ["contradiction", "neutral", "entailment"]
        assert list(score.metadata["probabilities"].values()) == pytest.approx(expected, abs=1e-6)
    assert len({round(scorer(input=p, output=h).score, 6) for p, h in PAIRS}) > 1  # the pairs are told apart


def test_a_batch_of_mixed_lengths_equals_its_rows_one_by_one(tiny_nli):
    scorer = NLIEntailment(model=str(tiny_nli), device="cpu", batch_size=4)
    rows = [{"input": p, "output": h} for p, h in PAIRS * 2]
    batch = scorer.score_batch(rows)
    assert [s.score for s in batch] == pytest.approx([scorer(**row).score for row in rows], abs=1e-6)


def test_the_premise_field_is_chosen(tiny_nli):
    expected = NLIEntailment(model=str(tiny_nli), premise="expected", device="cpu")
    assert expected.required_fields() == ["expected", "output"]
    assert expected(expected="A man plays the guitar.", output="Someone makes music.").score == pytest.approx(
        reference(tiny_nli, "A man plays the guitar.", "Someone makes music.")[2], abs=1e-6
    )
    with pytest.raises(ScorerInputError, match="'expected' is required"):
        expected(input="A man plays the guitar.", output="Someone makes music.")
    context = NLIEntailment(model=str(tiny_nli), premise="context", device="cpu")
    chunks = ["A man plays the guitar.", "The dog sleeps."]
    assert context(context=chunks, output="Someone makes music.").score == pytest.approx(
        reference(tiny_nli, "A man plays the guitar.\n\nThe dog sleeps.", "Someone makes music.")[2], abs=1e-6
    )


def test_the_entailment_class_comes_from_the_labels(tiny_nli, tmp_path):
    upper = with_labels(tiny_nli, tmp_path / "upper", {0: "ENTAILMENT", 1: "NEUTRAL", 2: "CONTRADICTION"})
    assert NLIEntailment(model=upper).entailment_index == 0
    plain = with_labels(tiny_nli, tmp_path / "plain", {0: "LABEL_0", 1: "LABEL_1", 2: "LABEL_2"})
    with pytest.raises(ConfigError, match="cannot tell the entailment class.*0: 'LABEL_0'.*entailment_label="):
        NLIEntailment(model=plain)
    assert NLIEntailment(model=plain, entailment_label="label_1").entailment_index == 1
    assert NLIEntailment(model=plain, entailment_label=2).entailment_index == 2
    for wrong in (3, "yes"):
        with pytest.raises(ConfigError, match="is not one of the model's classes"):
            NLIEntailment(model=plain, entailment_label=wrong)
    with pytest.raises(ConfigError, match="entailment_label must be a class name or index, or None, got True"):
        NLIEntailment(model=plain, entailment_label=True)


@pytest.mark.parametrize(
    "settings, message",
    [
        ({"premise": "output"}, "premise must be one of input, expected, context"),
        ({"batch_size": 0}, "batch_size must be a positive integer"),
        ({"model": ""}, "model must be a hub name or a local folder"),
    ],
)
def test_bad_settings_are_config_errors(tiny_nli, settings, message):
    with pytest.raises(ConfigError, match=message):
        NLIEntailment(**{"model": str(tiny_nli), **settings})


def test_a_model_that_is_not_there_is_a_config_error_and_nothing_is_downloaded(tmp_path):
    with pytest.raises(ConfigError, match="nothing is downloaded unless allow_download=True"):
        NLIEntailment(model="no-such-org/no-such-nli-model")


def test_the_signature_names_the_model_premise_and_class(tiny_nli):
    signature = NLIEntailment(model=str(tiny_nli)).signature()
    assert signature["model"] == tiny_nli.name and len(signature["weights_sha256"]) == 16
    assert (signature["premise"], signature["entailment_label"]) == ("input", "entailment")
    assert NLIEntailment(model=str(tiny_nli), premise="expected").signature() != signature


def test_it_is_a_plug_in_point_registered_by_the_user_and_travels(tiny_nli):
    assert "NLIEntailment" not in scorers.names()
    registry = Registry()
    registry.register(NLIEntailment, name="Entailment", model=str(tiny_nli), device="cpu")
    scorer = registry.get("Entailment")
    score = scorer(input="A man plays the guitar.", output="Someone makes music.")
    assert score.name == "Entailment"
    copy = pickle.loads(pickle.dumps(scorer))
    assert copy(input="A man plays the guitar.", output="Someone makes music.").score == score.score
