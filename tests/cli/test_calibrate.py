"""``python -m scorers calibrate LABELS -s JUDGE --label FIELD --examples K -o OUT.yaml``: over real HTTP against a
scripted loopback judge, the written template loads with ``check`` and runs with ``run --templates DIR``; the report
says which split each figure is on; a repeated run is free (the cache); a bad plan exits 2 before any request."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
import yaml
from calibration.fewshot_rows import PROMPT, ROWS, scripted

from scorers.calibration.fewshot import file_sha256
from scorers.cli import main
from scorers.testing import LoopbackLLM

pytestmark = pytest.mark.slow  # hundreds of loopback requests


#: --templates registers a directory for the whole process: each test's judge has a name of its own
NUMBERS = itertools.count()


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path, str]:
    labels, templates, name = tmp_path / "labels.jsonl", tmp_path / "judges", f"Polite{next(NUMBERS)}"
    labels.write_text("".join(json.dumps(row) + "\n" for row in ROWS))
    templates.mkdir()
    (templates / "polite.yaml").write_text(
        yaml.safe_dump({"name": name, "prompt": PROMPT, "choice_scores": {"Y": 1, "N": 0}, "temperature": 0})
    )
    return labels, templates, name


def calibrate(files: tuple[Path, Path, str], out: Path, *extra: str) -> int:
    labels, templates, name = files
    return main(
        ["calibrate", str(labels), "--templates", str(templates), "-s", name, "--label", "polite", "--key", "id"]
        + ["--split", "0.3,0.35,0.35", "--examples", "1", "--pool", "6", "--resamples", "300", "-o", str(out), *extra]
    )


def test_calibrate_writes_a_template_that_check_loads_and_run_runs(
    llm_env: LoopbackLLM, files: tuple[Path, Path, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    labels, _, name = files
    monkeypatch.setenv("SCORERS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("SCORERS_CACHE", raising=False)
    llm_env.default = scripted(lambda row: True)
    made = tmp_path / "made"
    made.mkdir()
    out, report_file = made / "polite_fewshot.yaml", tmp_path / "report.json"
    assert calibrate(files, out, "--report", str(report_file)) == 0
    table = capsys.readouterr().err
    assert "held out (test): kappa 1.0000 with the examples" in table and "at most 252 requests" in table
    plan = "pool 6; the selection needs up to 252 judge requests (1 per row x (dev 28 x (1 + 6) + 2 x test 28))"
    assert table.index(plan) < table.index("greedy selection on dev")  # said before anything was sent
    assert llm_env.request_count == 252

    document = yaml.safe_load(out.read_text())
    assert document["name"] == f"{name}FewShot" and document["prompt"] == PROMPT and document["temperature"] == 0
    (example,) = document["examples"]
    chosen = ROWS[document["provenance"]["examples"][0]["index"]]
    assert example == {"variables": {"output": chosen["output"]}, "verdict": chosen["polite"]}
    provenance = document["provenance"]
    assert provenance["labels"] == {
        "file": "labels.jsonl",
        "sha256": file_sha256(str(labels)),
        "label": "polite",
        "rows": 80,
    }
    assert (
        provenance["split"]["fractions"] == {"train": 0.3, "dev": 0.35, "test": 0.35}
        and provenance["split"]["seed"] == 0
    )
    assert provenance["figures"]["test"]["selected"] == {"split": "test", **provenance["figures"]["test"]["selected"]}
    assert provenance["figures"]["test"]["selected"]["value"] == 1.0 and provenance["difference"]["split"] == "test"

    report = json.loads(report_file.read_text())
    assert report["format"] == "scorers-calibrate" and report["headline"]["split"] == "test"
    assert report["template"] == {"file": str(out), "name": f"{name}FewShot"}
    assert report["selected"]["signature"]["template"]["hash"] != report["judge"]["signature"]["template"]["hash"]

    assert main(["check", str(out)]) == 0
    results = tmp_path / "results.jsonl"
    assert main(["run", str(labels), "--templates", str(made), "-s", f"{name}FewShot", "-o", str(results)]) == 0
    scores = [json.loads(line)["scores"][f"{name}FewShot"] for line in results.read_text().splitlines()]
    assert scores == [1.0 if row["polite"] == "Y" else 0.0 for row in ROWS]  # the hinted judge is right everywhere

    before = llm_env.request_count
    assert calibrate(files, tmp_path / "again.yaml") == 0
    assert llm_env.request_count == before  # every judgment came from the cache
    assert yaml.safe_load((tmp_path / "again.yaml").read_text())["examples"] == document["examples"]


def test_a_plan_over_the_cap_and_a_missing_mode_exit_2_before_any_request(
    llm_env: LoopbackLLM, files: tuple[Path, Path, str], tmp_path: Path, capsys
) -> None:
    labels, templates, name = files
    llm_env.default = scripted(lambda row: True)
    assert calibrate(files, tmp_path / "x.yaml", "--no-cache", "--max-requests", "100") == 2
    assert "up to 252 judge requests" in capsys.readouterr().err
    command = ["calibrate", str(labels), "--templates", str(templates), "-s", name, "--label", "polite"]
    assert main(command) == 2
    assert "choose one mode (--examples, --scores, --threshold)" in capsys.readouterr().err
    assert main([*command, "--examples", "1", "--split", "0.5,0.5"]) == 2
    assert "three numbers" in capsys.readouterr().err
    assert llm_env.request_count == 0
