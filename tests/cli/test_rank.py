"""``python -m scorers rank`` end to end: a pairwise judge over real HTTP against a loopback server scripted so that
the systems' strengths are known, ``run`` writes the results, ``rank`` reads them; and the command's options,
output file and errors."""

from __future__ import annotations

import hashlib
import json
import math
import re
from pathlib import Path

import choix
import numpy as np
import pytest

from scorers.cli import main
from scorers.testing import LoopbackLLM, RecordedRequest, Reply, loopback_env

#: The systems' log-strengths: the judge prefers each answer with Bradley-Terry odds from these.
STRENGTHS = {"alpha": 1.2, "beta": 0.4, "gamma": -0.3, "delta": -1.3}
PROMPTS = 30
#: prompts whose first position the judge always prefers: the two orders disagree there
BIASED = {"q3", "q11", "q17"}
TEMPLATE = """\
name: Preference
kind: pairwise
swap: true
use_cot: false
prompt: |-
  Question: {{input}}
  A: {{output}}
  B: {{expected}}
  Which answer is better?
"""
SHOWN = re.compile(r"Question: (\S+)\nA: \[(\w+)\].*\nB: \[(\w+)\]")


def draw(question: str, first: str, second: str) -> float:
    """A uniform number fixed by the prompt and the unordered pair: both orders see the same verdict."""
    key = "|".join([question, *sorted((first, second))]).encode()
    return int(hashlib.sha256(key).hexdigest()[:12], 16) / 16**12


def verdict(question: str, first: str, second: str) -> str:
    """``first``, ``second`` or ``tie``: the Bradley-Terry draw with a tie band in the middle."""
    p_first = 1 / (1 + math.exp(-(STRENGTHS[first] - STRENGTHS[second])))
    low, high = sorted((first, second))
    u = draw(question, first, second)
    p_low = p_first if low == first else 1 - p_first
    return low if u < p_low - 0.05 else high if u > p_low + 0.05 else "tie"


def judge(request: RecordedRequest) -> Reply:
    question, first, second = SHOWN.search(request.last_user_message).groups()
    if question in BIASED:
        return Reply.choice("A")
    winner = verdict(question, first, second)
    return Reply.choice("tie" if winner == "tie" else "A" if winner == first else "B")


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("rank")
    (folder / "templates").mkdir()
    (folder / "templates" / "preference.yaml").write_text(TEMPLATE)
    names = list(STRENGTHS)
    with (folder / "pairs.jsonl").open("w") as out:
        for q in range(PROMPTS):
            for i, a in enumerate(names):
                for b in names[i + 1 :]:
                    first, second = (a, b) if q % 2 else (b, a)  # each system shown first half the time
                    row = {"input": f"q{q}", "model_a": first, "model_b": second}
                    row |= {"output": f"[{first}] x", "expected": f"[{second}] y"}
                    out.write(json.dumps(row) + "\n")
    path = folder / "results.jsonl"
    with LoopbackLLM(default=judge) as server, pytest.MonkeyPatch.context() as patch:
        for name, value in loopback_env(server).items():
            patch.setenv(name, value)
        argv = ["run", str(folder / "pairs.jsonl"), "-s", "Preference", "--templates", str(folder / "templates")]
        code = main([*argv, "--metadata", "-o", str(path), "--no-progress"])
        assert code == 0
        assert len(server.chat_requests) == 2 * 6 * PROMPTS  # both orders of every pair
    return path


def expected_comparisons() -> list[tuple[str, str, float]]:
    """What the server's script decided, swap disagreements (the biased prompts) as ties."""
    out = []
    names = list(STRENGTHS)
    for q in range(PROMPTS):
        for i, a in enumerate(names):
            for b in names[i + 1 :]:
                first, second = (a, b) if q % 2 else (b, a)
                if f"q{q}" in BIASED:
                    out.append((first, second, 0.5))
                    continue
                winner = verdict(f"q{q}", first, second)
                out.append((first, second, 1.0 if winner == first else 0.0 if winner == second else 0.5))
    return out


def test_rank_recovers_the_scripted_strengths(results: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "rank.json"
    code = main(["rank", str(results), "--ties", "half", "--resamples", "300", "--seed", "3", "-o", str(out)])
    assert code == 0
    err = capsys.readouterr().err
    assert "a 400-point gap is 10:1 odds" in err and "position swap: 18 of 180 swapped verdicts disagreed" in err
    data = json.loads(out.read_text())
    assert data["format"] == "scorers-ranking" and data["format_version"] == 1
    assert data["verdicts"] == "judge Preference" and data["counts"]["comparisons"] == 6 * PROMPTS
    assert [s["system"] for s in data["systems"]] == ["alpha", "beta", "gamma", "delta"]
    # exactly choix's maximum likelihood of the verdicts the server scripted (ties as a win each way, doubled)
    names = data["counts"]["systems"]
    doubled = []
    for a, b, value in expected_comparisons():
        i, j = names.index(a), names.index(b)
        doubled += [(i, j), (i, j)] if value == 1.0 else [(j, i), (j, i)] if value == 0.0 else [(i, j), (j, i)]
    reference = choix.opt_pairwise(len(names), doubled, alpha=0, tol=1e-12)
    ours = [next(s["strength"] for s in data["systems"] if s["system"] == name) for name in names]
    assert np.max(np.abs(np.array(ours) - (reference - reference.mean()))) < 1e-6
    for entry in data["systems"]:
        assert entry["low"] < entry["rating"] < entry["high"] and entry["comparisons"] == 3 * PROMPTS


def test_rank_swap_drop_and_json(results: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["rank", str(results), "--swap", "drop", "--resamples", "0", "--json"]) == 0
    captured = capsys.readouterr()
    data = json.loads(captured.out)
    assert data["counts"]["comparisons"] == 6 * (PROMPTS - len(BIASED))
    assert data["counts"]["left_out"] == {"the two orders disagreed (--swap drop)": 6 * len(BIASED)}
    assert data["tie_parameter"]["value"] > 0 and data["bootstrap"]["resamples"] == 0


def test_preference_data_from_csv_with_style(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    path = tmp_path / "prefs.csv"
    lines = ["id,model_a,model_b,winner,response_a,response_b"]
    rng = np.random.default_rng(0)
    for i in range(60):
        a, b = rng.choice(["x", "y", "z"], 2, replace=False)
        winner = rng.choice(["model_a", "model_b", "tie (bothbad)"], p=[0.45, 0.4, 0.15])
        lines.append(f"{i},{a},{b},{winner},{'w ' * rng.integers(1, 30)},{'w ' * rng.integers(1, 30)}")
    path.write_text("\n".join(lines) + "\n")
    argv = ["rank", str(path), "--winner", "winner", "--prompt", "id", "--style", "length"]
    code = main([*argv, "--answer-a", "response_a", "--answer-b", "response_b", "--resamples", "50", "--anchor", "x"])
    assert code == 0
    err = capsys.readouterr().err
    assert "no style" in err and "style length:" in err and "rating: 1000 at x," in err


def test_bad_input_is_exit_2_naming_it(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    path = tmp_path / "prefs.jsonl"
    path.write_text(json.dumps({"model_a": "x", "model_b": "y", "winner": "left"}) + "\n")
    assert main(["rank", str(path), "--winner", "winner"]) == 2
    assert f"error: {path}: row 1: winner field 'winner' is 'left'" in capsys.readouterr().err
    assert main(["rank", str(path)]) == 2
    assert "not a results file of `run` (no scores); name the winner field with --winner" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exited:
        main(["rank", str(tmp_path)])
    assert exited.value.code == 2
    assert f"{tmp_path} is a directory, not a file" in capsys.readouterr().err


def test_a_run_without_metadata_is_found_by_its_identity(
    results: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """Without --metadata the verdicts are the scores (a disagreement reads as a tie) and the judge is found by the
    run's identity (the sidecar names its class)."""
    stripped = tmp_path / "plain.jsonl"
    records = [json.loads(line) for line in results.read_text().splitlines()]
    stripped.write_text(
        "".join(json.dumps({k: v for k, v in r.items() if k != "metadata_scores"}) + "\n" for r in records)
    )
    Path(f"{stripped}.run.json").write_text(Path(f"{results}.run.json").read_text())
    assert main(["rank", str(stripped), "--resamples", "0", "--json"]) == 0
    captured = capsys.readouterr()
    data = json.loads(captured.out)
    assert data["verdicts"] == "judge Preference" and data["counts"]["without_metadata"] == 6 * PROMPTS
    assert "a 0.5 of a swapped judge counts as a tie" in captured.err
    Path(f"{stripped}.run.json").unlink()
    assert main(["rank", str(stripped)]) == 2
    assert "name it with --scorer" in capsys.readouterr().err
