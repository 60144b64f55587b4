"""Results files for the report tests, built as `python -m scorers run --metadata` writes them (seeded)."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

CHOICES = {"A": 0.4, "B": 0.6, "C": 1.0, "D": 0.0, "E": 1.0}
#: Row text that must stay text: the browser test checks it never runs.
HOSTILE = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">'


def results_records(
    rows: int, *, seed: int, judge: bool = True, hostile: bool = False, shift: float = 0.0
) -> list[dict[str, Any]]:
    """Records with Levenshtein, BLEU and (optionally) a Factuality judge; every 17th row fails, every 23rd skips."""
    rng = random.Random(seed)
    records = []
    for i in range(rows):
        base = min(1.0, max(0.0, rng.betavariate(2, 1.5) + shift))
        record: dict[str, Any] = {
            "id": f"row-{i}",
            "input": f"Question {i}?",
            "output": f"answer {i} " * 3,
            "expected": f"reference {i}",
        }
        if hostile and i == 0:  # the lowest score of every scorer: listed with its text
            record["output"], base = HOSTILE, 0.0
        scores: dict[str, float | None] = {
            "Levenshtein": round(base, 6),
            "BLEU": None if i % 23 == 5 else round(base * rng.random(), 6),
        }
        metadata: dict[str, Any] = {"Levenshtein": {}, "BLEU": {}}
        errors = {}
        if judge:
            if i % 17 == 3:
                scores["Factuality"] = None
                errors["Factuality"] = {"type": "JudgeError", "message": "Factuality: no valid choice after 2 re-asks"}
            else:
                choice = "D" if hostile and i == 0 else rng.choice(sorted(CHOICES))
                scores["Factuality"] = CHOICES[choice]
                rationale = HOSTILE if hostile and i == 0 else f"choice {choice} because of row {i}"
                metadata["Factuality"] = {
                    "choice": choice,
                    "rationale": rationale,
                    "model": "gpt-4o-mini",
                    "usage": {
                        "prompt_tokens": 150 + i % 7,
                        "completion_tokens": 12,
                        "total_tokens": 162 + i % 7,
                        "requests": 1,
                        "cached": 0,
                    },
                }
        record["scores"] = scores
        if errors:
            record["errors"] = errors
        record["metadata_scores"] = {k: v for k, v in metadata.items() if k in scores and k not in errors}
        records.append(record)
    return records


def write_results(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


#: (name, files as (rows, seed, judge, hostile, shift)): one file, a judge with hostile text, two files compared,
#: one file with a meta-eval.
CASES = {
    "one file": [(40, 1, False, False, 0.0)],
    "judge, hostile text": [(60, 2, True, True, 0.0)],
    "two files": [(80, 3, True, False, 0.0), (80, 3, True, False, 0.1)],
    "meta-eval": [(30, 4, True, False, 0.0)],
}
LABELS = Path(__file__).resolve().parents[2] / "examples" / "factuality_labels.jsonl"


@pytest.fixture(scope="session")
def meta_eval_file(tmp_path_factory) -> Path:
    """``meta-eval`` of Factuality on examples/factuality_labels.jsonl, replies scripted: the judge answers the
    row's label except on three rows, and fails on one (its reply is not a choice)."""
    from scorers.judges import LLMClassifier  # noqa: F401  (registers the built-in judges)
    from scorers.llm import LLMEngine
    from scorers.registry import registry
    from scorers.stats.metaeval import meta_evaluate
    from scorers.testing import LoopbackLLM, Reply

    rows = [json.loads(line) for line in LABELS.read_text().splitlines() if line.strip()]
    with LoopbackLLM(default=Reply.choice("C", reasons="same facts")) as server:
        for i, row in enumerate(rows):
            reply = (
                Reply.text("<b>no choice</b>")
                if i == 5
                else Reply.choice({2: "C", 7: "A", 11: "D"}.get(i, row["label"]), reasons=f"row {row['id']}")
            )
            server.script(reply, match=row["output"])
        engine = LLMEngine(base_url=server.base_url, api_key="placeholder", cache=False, max_reasks=0)
        report = meta_evaluate(rows, registry.get("Factuality", engine=engine), label="label", key="id", resamples=200)
    path = tmp_path_factory.mktemp("meta") / "meta.json"
    path.write_text(json.dumps(report.to_dict()), encoding="utf-8")
    return path


@pytest.fixture(params=sorted(CASES))
def case(request, tmp_path) -> tuple[str, list[Path], list[Path]]:
    """(case name, results files, meta-eval files) for each of :data:`CASES`."""
    paths = [
        write_results(
            tmp_path / f"run{i}.jsonl", results_records(rows, seed=seed, judge=judge, hostile=hostile, shift=shift)
        )
        for i, (rows, seed, judge, hostile, shift) in enumerate(CASES[request.param])
    ]
    meta = [request.getfixturevalue("meta_eval_file")] if request.param == "meta-eval" else []
    return request.param, paths, meta


@pytest.fixture(scope="session")
def trust_files(tmp_path_factory) -> dict[str, Path]:
    """The trust sections' inputs (issue 27), each made as its command makes it: ``jury``, a results file of a
    2-juror Factuality jury over examples/factuality_labels.jsonl (juror b disagrees on rows 2 and 7, fails on 9)
    and ``meta``, that jury's meta-eval against the labels; ``ranking``, a ranking of pairwise verdicts;
    ``calibration``, an isotonic map of a 5-point judge measured on a held-out split."""
    import contextlib

    import numpy as np

    import scorers
    from scorers.calibration.scores import calibrate_scores
    from scorers.judges.jury import Jury
    from scorers.llm import LLMEngine
    from scorers.registry import registry
    from scorers.stats import rank
    from scorers.stats.metaeval import meta_evaluate
    from scorers.testing import LoopbackLLM, Reply

    folder = tmp_path_factory.mktemp("trust")
    rows = [json.loads(line) for line in LABELS.read_text().splitlines() if line.strip()]
    with contextlib.ExitStack() as stack:
        servers = [stack.enter_context(LoopbackLLM()) for _ in range(2)]
        for i, row in enumerate(rows):
            servers[0].script(Reply.choice(row["label"], reasons="a"), match=row["output"])
            other = Reply.error(400) if i == 9 else Reply.choice({2: "A", 7: "D"}.get(i, row["label"]), reasons="b")
            servers[1].script(other, match=row["output"])
        jurors = [
            registry.get(
                "Factuality",
                model=f"juror-{name}",
                engine=LLMEngine(base_url=s.base_url, api_key="placeholder", cache=False, max_retries=0),
            )
            for name, s in zip("ab", servers)
        ]
        jury = Jury("Factuality", jurors, aggregate="majority", tie="abstain", min_jurors=1, labels=["a", "b"])
        results = list(scorers.evaluate(rows, [jury]))
        meta = meta_evaluate(rows, jury, label="label", key="id", resamples=200)
    paths = {"jury": folder / "jury.jsonl", "meta": folder / "meta.json"}
    paths["jury"].write_text("".join(json.dumps(r.to_record(with_metadata=True)) + "\n" for r in results))
    paths["meta"].write_text(json.dumps(meta.to_dict()))

    games = [("x", "y", "a"), ("y", "z", "a"), ("z", "x", "b"), ("x", "z", "tie"), ("y", "x", "b"), ("z", "y", "a")]
    pairs = [
        {"id": f"{i}-{j}", "model_a": a, "model_b": b, "winner": w}
        for i in range(4)
        for j, (a, b, w) in enumerate(games)
    ]
    paths["ranking"] = folder / "rank.json"
    paths["ranking"].write_text(json.dumps(rank(pairs, winner="winner", prompt="id", resamples=100).to_dict()))

    rng = np.random.default_rng(4)
    truth = rng.random(300)
    outcomes = (rng.random(300) < truth).astype(float)
    judged = np.round(np.sqrt(truth) * 4) / 4  # a 5-point judge, too high in the middle
    fitted = calibrate_scores((judged[:200], outcomes[:200]), (judged[200:], outcomes[200:]), bins=5, resamples=100)
    paths["calibration"] = folder / "map.json"
    paths["calibration"].write_text(json.dumps(fitted.to_dict(judge={"name": "Helpful", "signature": {}})))
    return paths
