"""A results file knows what produced it: ``OUT.run.json`` beside it, compared by ``--resume``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from scorers.cli import main

REPO = Path(__file__).resolve().parents[1]


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def keep_lines(path: Path, count: int) -> None:
    """Cut the results file to its first ``count`` lines, as a run stopped there would have left it."""
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:count]))


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(["run", *args, "--no-progress"])
    return code, capsys.readouterr().err


@pytest.fixture
def texts(tmp_path: Path) -> Path:
    pytest.importorskip("sacrebleu")
    rows = [
        {"id": i, "output": f"the cat sat on mat {i % 3}", "expected": f"the cat sat on the mat {i % 4}"}
        for i in range(12)
    ]
    return write_jsonl(tmp_path / "texts.jsonl", rows)


def test_the_same_configuration_resumes_into_the_bytes_of_an_uninterrupted_run(tmp_path, capsys, texts):
    out = tmp_path / "out.jsonl"
    code, _ = run(capsys, str(texts), "-s", "BLEU", "-s", "ExactMatch", "-o", str(out))
    assert code == 0
    whole, identity = out.read_bytes(), (tmp_path / "out.jsonl.run.json").read_bytes()
    recorded = json.loads(identity)["configurations"]
    assert [c["start"] for c in recorded] == [0] and recorded[0]["scorers"]["BLEU"]["tokenize"] == "13a"
    assert b"run.json" not in whole and b"configurations" not in whole  # never inside the results' bytes

    keep_lines(out, 5)
    code, err = run(capsys, str(texts), "-s", "BLEU", "-s", "ExactMatch", "-o", str(out), "--resume")
    assert code == 0 and "warning" not in err, err
    assert out.read_bytes() == whole
    assert (tmp_path / "out.jsonl.run.json").read_bytes() == identity  # nothing new to record


def test_a_changed_text_metric_parameter_stops_the_resume_naming_it(tmp_path, capsys, texts):
    out = tmp_path / "out.jsonl"
    assert run(capsys, str(texts), "-s", "BLEU", "-o", str(out))[0] == 0
    keep_lines(out, 4)
    before = out.read_bytes()
    code, err = run(capsys, str(texts), "-s", "BLEU", "-p", "BLEU.tokenize=char", "-o", str(out), "--resume")
    assert code == 2
    assert "BLEU.tokenize: '13a' -> 'char'" in err
    assert "new output file" in err and "--resume --force" in err
    assert out.read_bytes() == before  # stopped at once: nothing written


def test_force_appends_under_the_new_configuration_and_records_where_it_starts(tmp_path, capsys, texts):
    out = tmp_path / "out.jsonl"
    assert run(capsys, str(texts), "-s", "BLEU", "-o", str(out))[0] == 0
    keep_lines(out, 4)
    code, err = run(capsys, str(texts), "-s", "BLEU", "-p", "BLEU.tokenize=char", "-o", str(out), "--resume", "--force")
    assert code == 0, err
    assert "rows from 4 on are scored under a new configuration (BLEU.tokenize: '13a' -> 'char')" in err
    assert len(out.read_text().splitlines()) == 12
    recorded = json.loads((tmp_path / "out.jsonl.run.json").read_text())["configurations"]
    assert [(c["start"], c.get("forced", False), c["scorers"]["BLEU"]["tokenize"]) for c in recorded] == [
        (0, False, "13a"),
        (4, True, "char"),
    ]
    # the forced configuration is the one a further resume is compared with
    keep_lines(out, 8)
    code, err = run(capsys, str(texts), "-s", "BLEU", "-p", "BLEU.tokenize=char", "-o", str(out), "--resume")
    assert code == 0 and "warning" not in err, err


def test_force_without_resume_is_a_usage_error(tmp_path, capsys, texts):
    code, err = run(capsys, str(texts), "-s", "BLEU", "-o", str(tmp_path / "out.jsonl"), "--force")
    assert code == 2 and "--force needs resume" in err


def test_an_older_results_file_without_an_identity_resumes_with_a_warning(tmp_path, capsys, texts):
    out = tmp_path / "out.jsonl"
    assert run(capsys, str(texts), "-s", "ExactMatch", "-o", str(out))[0] == 0
    whole = out.read_bytes()
    keep_lines(out, 3)
    (tmp_path / "out.jsonl.run.json").unlink()
    code, err = run(capsys, str(texts), "-s", "ExactMatch", "-o", str(out), "--resume")
    assert code == 0, err
    assert f"warning: {out} has no record of the configuration that scored it" in err
    assert out.read_bytes() == whole
    recorded = json.loads((tmp_path / "out.jsonl.run.json").read_text())["configurations"]
    assert [c["start"] for c in recorded] == [3]  # recorded from where this run took over


def test_a_changed_tool_call_parameter_stops_the_resume(tmp_path, capsys):
    call = {"name": "get_weather", "arguments": {"city": "Paris", "unit": "c"}}
    rows = [{"output": [call], "expected": [call]} for _ in range(4)]
    data = write_jsonl(tmp_path / "calls.jsonl", rows)
    out = tmp_path / "out.jsonl"
    assert run(capsys, str(data), "-s", "ToolCallMatch", "-o", str(out))[0] == 0
    keep_lines(out, 2)
    code, err = run(
        capsys, str(data), "-s", "ToolCallMatch", "-p", "ToolCallMatch.arguments=loose", "-o", str(out), "--resume"
    )
    assert code == 2 and "ToolCallMatch.arguments: 'exact' -> 'loose'" in err, err


def test_a_changed_field_mapping_stops_the_resume(tmp_path, capsys):
    data = write_jsonl(tmp_path / "d.jsonl", [{"output": "a", "expected": "a", "answer": "b"}] * 3)
    out = tmp_path / "out.jsonl"
    assert run(capsys, str(data), "-s", "ExactMatch", "-o", str(out))[0] == 0
    keep_lines(out, 1)
    code, err = run(capsys, str(data), "-s", "ExactMatch", "--map", "expected=answer", "-o", str(out), "--resume")
    assert code == 2 and "mapping.expected: (unset) -> 'answer'" in err, err


def cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "scorers", "run", *args, "--no-progress"]
    return subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=REPO, env=env)


@pytest.mark.slow
def test_a_judge_whose_model_or_template_changed_stops_the_resume(tmp_path, fake_api_key):
    from scorers.testing import LoopbackLLM, Reply

    templates = tmp_path / "judges"
    templates.mkdir()
    template = templates / "polite.yaml"
    template.write_text("name: Polite\nprompt: Is {{output}} polite?\nchoice_scores:\n  Y: 1\n  N: 0\n")
    data = write_jsonl(tmp_path / "rows.jsonl", [{"output": f"reply {i}"} for i in range(4)])
    out = tmp_path / "out.jsonl"
    args = (str(data), "-s", "Polite", "--templates", str(templates), "-o", str(out), "--model", "judge-a")
    with LoopbackLLM(default=Reply.choice("Y")) as server:
        env = {
            **os.environ,
            "OPENAI_API_KEY": fake_api_key,
            "OPENAI_BASE_URL": server.base_url,
            "SCORERS_CACHE_DIR": str(tmp_path / "cache"),
        }
        env.pop("SCORERS_TEMPLATES", None)
        first = cli(*args, env=env)
        assert first.returncode == 0, first.stderr
        whole = out.read_bytes()
        keep_lines(out, 2)

        other_model = cli(*args[:-1], "judge-b", "--resume", env=env)
        assert other_model.returncode == 2 and "Polite.model: 'judge-a' -> 'judge-b'" in other_model.stderr

        template.write_text(template.read_text().replace("polite?", "courteous?"))
        other_template = cli(*args, "--resume", env=env)
        assert other_template.returncode == 2 and "Polite.template.hash: '" in other_template.stderr
        assert len(out.read_text().splitlines()) == 2

        template.write_text(template.read_text().replace("courteous?", "polite?"))
        same = cli(*args, "--resume", env=env)
        assert same.returncode == 0, same.stderr
    assert out.read_bytes() == whole


def test_resuming_a_file_with_no_rows_yet_records_this_configuration_without_a_warning(tmp_path, capsys, texts):
    out = tmp_path / "out.jsonl"
    code, err = run(capsys, str(texts), "-s", "BLEU", "-o", str(out), "--resume")  # a new file
    assert code == 0 and "warning" not in err, err
    whole = out.read_bytes()
    out.write_bytes(b"")  # stopped before its first row: another configuration has nothing to mix with
    code, err = run(capsys, str(texts), "-s", "BLEU", "-p", "BLEU.tokenize=char", "-o", str(out), "--resume")
    assert code == 0 and "warning" not in err, err
    recorded = json.loads((tmp_path / "out.jsonl.run.json").read_text())["configurations"]
    assert [(c["start"], c["scorers"]["BLEU"]["tokenize"]) for c in recorded] == [(0, "char")]
    assert out.read_bytes() != whole


def test_the_protocol_a_judge_sends_with_is_part_of_its_signature():
    """A resume under another provider's protocol is refused like a changed model; chat (the default) leaves the
    signature as it always was."""
    from scorers.judges import LLMClassifier
    from scorers.llm import LLMEngine

    def judge(**engine: str) -> LLMClassifier:
        return LLMClassifier(
            name="Polite",
            prompt_template="Is {{output}} polite?",
            choice_scores={"Y": 1, "N": 0},
            engine=LLMEngine(**engine),
        )

    assert judge().params()["api"] is None and judge(api="chat").params()["api"] is None
    assert judge(api="responses").params()["api"] == "responses"
    assert judge(api="responses").signature() != judge().signature()
