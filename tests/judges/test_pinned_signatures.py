"""Every judge's signature, byte for byte, as recorded before the kinds were built from their spec models
(issue 25): the registered judges (``templates/*.yaml`` and the multi-step metrics) and each template kind
built in code with settings away from its defaults. A signature is in every score's metadata and a judge's
``params()`` in its cache key, so a change here would re-ask every cached judgment.

``python tests/judges/test_pinned_signatures.py`` rewrites ``pinned_signatures.json`` (only when a change
of a signature is meant).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import scorers
from scorers.judges import GEvalJudge, LLMClassifier, LLMJudge, PairwiseJudge, RatingJudge, RubricJudge
from scorers.judges.discovery import builtin_template_dir
from scorers.llm import LLMEngine

PINNED = Path(__file__).with_name("pinned_signatures.json")
CRITERIA = [
    {"name": "clear", "description": "Clear.", "anchors": {1: "no", 5: "yes"}},
    {"name": "brief", "description": "Brief.", "weight": 2},
]


def _engine() -> LLMEngine:
    return LLMEngine(base_url="http://127.0.0.1:9/v1", api_key="placeholder", model="pinned-model", cache=False)


def _built_in_code(engine: LLMEngine) -> dict[str, LLMJudge]:
    prompt = "Is {{output}} right, given {{expected}}?"
    return {
        "classifier": LLMClassifier("C", prompt, {"Y": 1, "N": 0}, engine=engine),
        "classifier-samples": LLMClassifier(
            "C", prompt, {"Y": 1, "N": 0.5}, samples=3, aggregate="majority", temperature=0.7, engine=engine
        ),
        "classifier-text": LLMClassifier(
            "C", prompt, {"Y": 1, "N": 0}, use_cot=False, response_mode="text", max_tokens=9, engine=engine
        ),
        "rubric": RubricJudge("R", prompt, criteria=CRITERIA, engine=engine),
        "rubric-threshold": RubricJudge(
            "R",
            prompt,
            criteria=CRITERIA,
            scale={"min": 1, "max": 6},
            threshold=3,
            extra_args={"top_p": 0.5},
            engine=engine,
        ),
        "rating": RatingJudge("T", prompt, scale={"min": 1, "max": 10}, reasoning_effort="low", engine=engine),
        "geval": GEvalJudge("G", prompt, criteria="Coherent?", engine=engine),
        "geval-top-token": GEvalJudge(
            "G",
            prompt,
            criteria="Coherent?",
            steps=("Read.", "Judge."),
            score_mode="top_token",
            response_mode="json",
            scale={"min": 0, "max": 3},
            engine=engine,
        ),
        "pairwise": PairwiseJudge("P", prompt, swap=True, allow_tie=False, api="responses", engine=engine),
    }


def _described(judge: LLMJudge) -> dict[str, Any]:
    """``describe()`` with a template file's base name (the checkout's path differs between machines)."""
    described = judge.describe()
    if described.get("template_file"):
        described["template_file"] = Path(described["template_file"]).name
    return described


def _built_in(source: str) -> bool:
    """A judge of the package (code, or templates/*.yaml), not one a test registered with --templates DIR."""
    return source == "builtin" or Path(source).parent == builtin_template_dir()


def signatures() -> dict[str, Any]:
    """Each judge's ``json.dumps(signature())`` and ``json.dumps(describe())``, keys in their order."""
    engine = _engine()
    judges: dict[str, Any] = {}
    for entry in scorers.entries():
        if entry.kind == "llm" and _built_in(entry.source):
            judges[entry.name] = scorers.get(entry.name, engine=engine)
    judges.update(_built_in_code(engine))
    return {
        name: {
            "signature": json.dumps(judge.signature(), default=str),
            "describe": json.dumps(_described(judge), default=str),
        }
        for name, judge in judges.items()
    }


def test_every_judge_signature_is_as_pinned() -> None:
    pinned = json.loads(PINNED.read_text(encoding="utf-8"))
    now = signatures()
    assert set(now) == set(pinned)
    for name in pinned:
        assert now[name] == pinned[name], name


if __name__ == "__main__":
    PINNED.write_text(json.dumps(signatures(), indent=1, sort_keys=True) + "\n", encoding="utf-8")
