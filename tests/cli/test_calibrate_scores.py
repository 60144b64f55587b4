"""``python -m scorers calibrate LABELS -s JUDGE --label FIELD --scores isotonic|platt -o MAP.json`` and
``--threshold MEASURE``, over real HTTP against a scripted loopback judge: figures on held-out rows only, the map
written with the judge's signature and the labels' hash, then applied by the template's ``calibration:`` key."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from scorers.calibration.fewshot import file_sha256
from scorers.cli import main
from scorers.testing import LoopbackLLM, Reply

pytestmark = pytest.mark.slow  # 100 rows over loopback HTTP per call, and a scorers process per applied map

#: Per rating the judge gives (1..5): how many of its 20 rows people call good; its 5s are good 45% of the time.
GOOD_OF_20 = {1: 1, 2: 2, 3: 4, 4: 6, 5: 9}
PROMPT = "Is this answer good? {{output}}"
ROWS = [
    {"id": f"{rating}-{j}", "output": f"group {rating} item {j}.", "good": "Y" if j < good else "N"}
    for rating, good in GOOD_OF_20.items()
    for j in range(20)
]


@pytest.fixture
def files(llm_env: LoopbackLLM, tmp_path: Path) -> tuple[Path, Path]:
    for rating in GOOD_OF_20:
        llm_env.script(
            Reply.tool_call({"reasons": "-", "rating": rating}, name="record_rating"), match=f"group {rating} "
        )
    labels, templates = tmp_path / "labels.jsonl", tmp_path / "judges"
    labels.write_text("".join(json.dumps(row) + "\n" for row in ROWS))
    templates.mkdir()
    judge = {"name": name_of(templates), "kind": "rating", "prompt": PROMPT, "scale": {"min": 1, "max": 5}}
    (templates / "good.yaml").write_text(yaml.safe_dump(judge))
    return labels, templates


def name_of(templates: Path) -> str:
    """The judge's name: one per test, as the registry of this process keeps every name it has read."""
    return f"Good_{templates.parent.name}"


def calibrate(labels: Path, templates: Path, *extra: str) -> int:
    common = ["calibrate", str(labels), "--templates", str(templates), "-s", name_of(templates), "--label", "good"]
    return main([*common, "--label-scores", "Y=1,N=0", "--positive", "Y", "--resamples", "200", *extra])


def run_in_a_new_process(labels: Path, templates: Path, out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    """``python -m scorers run`` in its own process: this one has read the templates before the map was named."""
    command = [sys.executable, "-m", "scorers", "run", str(labels), "--templates", str(templates)]
    command += ["-s", name_of(templates)]
    return subprocess.run([*command, "-o", str(out), *extra], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("method", ["isotonic", "platt"])
def test_calibrate_scores_writes_a_map_measured_on_held_out_rows(
    files: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str], method: str
) -> None:
    labels, templates = files
    out = templates / "good.calibration.json"
    assert calibrate(labels, templates, "--scores", method, "--bins", "5", "-o", str(out)) == 0
    table = capsys.readouterr().err
    assert "every figure below is on the held-out test split only" in table
    data = json.loads(out.read_text())
    assert data["format"] == "scorers-calibration" and data["method"] == method and data["held_out"] == "test"
    assert data["labels"] == {"file": "labels.jsonl", "sha256": file_sha256(str(labels))}
    name = name_of(templates)
    assert data["judge"]["name"] == name and data["judge"]["signature"]["scorer"] == f"RatingJudge:{name}"
    assert data["outcome"] == "label == 'Y'" and data["input"] == "score"
    test_rows = len(data["split"]["test"]) if isinstance(data["split"].get("test"), list) else None
    figures = data["figures"]
    assert figures["ece_before"]["n"] == data["bins"]["before"]["n"] == (test_rows or figures["ece_before"]["n"])
    assert data["train_n"] + figures["ece_before"]["n"] < len(ROWS)  # the dev split is in neither
    assert figures["ece_after"]["value"] < figures["ece_before"]["value"]
    assert figures["brier_after"]["value"] < figures["brier_before"]["value"]

    # applied by the template's calibration: key (a path from the template's directory)
    judge = yaml.safe_load((templates / "good.yaml").read_text())
    (templates / "good.yaml").write_text(yaml.safe_dump({**judge, "calibration": out.name}))
    results = tmp_path / "results.jsonl"
    assert run_in_a_new_process(labels, templates, results, "--metadata").returncode == 0
    records = [json.loads(line) for line in results.read_text().splitlines()]
    top = next(r for r in records if r["id"] == "5-0")["metadata_scores"][name]
    assert top["raw_score"] == 1.0 and top["calibration"]["method"] == method
    assert next(r for r in records if r["id"] == "5-0")["scores"][name] < 0.7


def test_calibrate_threshold_chooses_on_dev_and_measures_on_test(
    files: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    labels, templates = files
    out = tmp_path / "threshold.json"
    assert calibrate(labels, templates, "--threshold", "accuracy", "-o", str(out)) == 0
    table = capsys.readouterr().err
    assert "held-out test split: accuracy" in table and "(chose it, optimistic)" in table
    data = json.loads(out.read_text())
    assert data["measure"] == "accuracy" and data["test"]["split"] == "test" and data["dev"]["split"] == "dev"
    assert data["threshold_on_scale"] == 1 + 4 * data["threshold"]
    assert data["labels"]["sha256"] == file_sha256(str(labels))


def test_a_map_for_another_judge_and_a_missing_output_are_refused(
    files: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    labels, templates = files
    assert calibrate(labels, templates, "--scores", "isotonic") == 2
    assert "name the calibration file with -o MAP.json" in capsys.readouterr().err
    out = tmp_path / "good.calibration.json"
    assert calibrate(labels, templates, "--scores", "isotonic", "-o", str(out)) == 0
    other = {
        "name": name_of(templates),
        "kind": "rating",
        "prompt": "Is it helpful? {{output}}",
        "scale": {"min": 1, "max": 5},
    }
    (templates / "good.yaml").write_text(yaml.safe_dump({**other, "calibration": str(out)}))
    refused = run_in_a_new_process(labels, templates, tmp_path / "r.jsonl")
    assert refused.returncode == 2 and "was fitted for another judge (template: " in refused.stderr
