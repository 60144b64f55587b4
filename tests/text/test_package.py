"""Package-wide properties of scorers.text: no private attributes of other packages, lazy imports, pickling."""

from __future__ import annotations

import ast
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

import scorers
import scorers.text

TEXT_MODULES = sorted(Path(scorers.text.__file__).parent.glob("*.py"))


def test_no_private_attribute_of_another_package_is_read_outside_the_guard():
    """``x._name`` only on our own objects (``self``/``cls``); sacrebleu's private parts only via sacrebleu_private."""
    found = []
    for path in TEXT_MODULES:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
                if not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
                    found.append(f"{path.name}:{node.lineno}: {ast.unparse(node)}")
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) in ("getattr", "hasattr", "setattr"):
                if (
                    len(node.args) > 1
                    and isinstance(node.args[1], ast.Constant)
                    and str(node.args[1].value).startswith("_")
                    and not str(node.args[1].value).startswith("__")
                ):
                    found.append(f"{path.name}:{node.lineno}: {ast.unparse(node)}")
    assert not found


def test_importing_scorers_loads_no_reference_library():
    script = (
        "import sys, scorers, scorers.text.bleu, scorers.text.chrf, scorers.text.ter, scorers.text._sacrebleu, "
        "scorers.text._pool, scorers.text.rouge, scorers.text.meteor, scorers.text.wordnet\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'sacrebleu', 'nltk', 'rouge_score'}))"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.strip() == "[]", done.stdout


# ------------------------------------------------------------------------- pickling
TEXT_SCORERS = ["BLEU", "chrF", "chrF++", "TER", "ROUGE-1", "ROUGE-2", "ROUGE-L", "ROUGE-Lsum", "ROUGE", "METEOR"]
ROWS = [
    {"output": "The cats sat on the mat.", "expected": "A cat was sitting on the mat."},
    {"output": "the cat is glad\nit purrs", "expected": ["the cat is happy\nit purrs", "a dog"]},
    {"output": "", "expected": "nothing here"},
    {"output": "Straße café 我们", "expected": "Strasse cafe 我们"},
]


def _numbers(scorer):
    return [(s.score, s.stats, s.metadata) for s in scorer.score_batch(ROWS)]


@pytest.fixture
def needs_wordnet(request):
    if request.node.callspec.params.get("name") == "METEOR":
        request.getfixturevalue("offline_wordnet")


@pytest.mark.parametrize(
    "dumps, loads",
    [(pickle.dumps, pickle.loads), (pytest.importorskip("cloudpickle").dumps, pickle.loads)],
    ids=["pickle", "cloudpickle"],
)
@pytest.mark.parametrize("name", TEXT_SCORERS)
def test_text_scorers_round_trip_through_pickle_before_and_after_use(name, dumps, loads, needs_wordnet):
    pytest.importorskip("sacrebleu")
    fresh = scorers.get(name)
    before = loads(dumps(fresh))  # never used
    expected = _numbers(fresh)
    after = loads(dumps(fresh))  # used: caches, metric objects, stemmers are rebuilt, not pickled
    assert _numbers(before) == expected
    assert _numbers(after) == expected
    assert _numbers(loads(dumps(after))) == expected
    assert type(after) is type(fresh) and after.name == fresh.name and after.params() == fresh.params()


def test_pickled_scorers_score_identically_in_a_fresh_process(offline_wordnet, tmp_path):
    import json
    import os

    pytest.importorskip("sacrebleu")
    used = [scorers.get(name) for name in TEXT_SCORERS]
    expected = [[s.to_dict() for s in scorer.score_batch(ROWS)] for scorer in used]
    payload = tmp_path / "scorers.pickle"
    payload.write_bytes(pickle.dumps((used, ROWS)))
    script = (
        "import json, pickle, sys\n"
        "scorers, rows = pickle.loads(open(sys.argv[1], 'rb').read())\n"
        "print(json.dumps([[s.to_dict() for s in scorer.score_batch(rows)] for scorer in scorers]))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(payload)], capture_output=True, text=True, timeout=300, env=dict(os.environ)
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == json.loads(json.dumps(expected))
