"""Our scorers as a ``type: python`` assertion of the real promptfoo CLI, run offline, plus unit tests of get_assert.

promptfoo is the npm package that ``scripts/setup.sh`` installs into
``.cache/promptfoo`` (0.121.20, the last one that runs on Node 20). Each run uses
the ``echo`` provider (the "model output" is the rendered prompt, here a var),
a throw-away ``PROMPTFOO_CONFIG_DIR``, no telemetry, update check or sharing,
and a dead proxy, so nothing leaves the machine.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

import scorers
from scorers import ConfigError, Scorer, text_field
from scorers.adapters import common, promptfoo
from scorers.adapters.promptfoo import get_assert
from scorers.errors import UnknownScorerError
from scorers.testing import LoopbackLLM, Reply

ROOT = Path(__file__).resolve().parents[2]
PROMPTFOO = ROOT / ".cache" / "promptfoo" / "node_modules" / ".bin" / "promptfoo"


# ------------------------------------------------------------------ the real CLI
def promptfoo_cli() -> Path:
    if not PROMPTFOO.exists():
        pytest.skip(f"the promptfoo CLI is not installed at {PROMPTFOO}: run `bash scripts/setup.sh` (needs npm)")
    return PROMPTFOO


def init(directory: Path, name: str = "assert.py") -> Path:
    """The assertion file, written by the command users run."""
    path = directory / name
    done = subprocess.run(
        [sys.executable, "-m", "scorers", "promptfoo", "init", str(path)], capture_output=True, text=True, cwd=directory
    )
    assert done.returncode == 0, done.stderr
    assert path.read_text() == promptfoo.assertion_file()
    return path


def eval_(tmp_path: Path, config: dict[str, Any], env: dict[str, str] | None = None) -> tuple[int, list[dict]]:
    """Run ``promptfoo eval`` on ``config``; its exit code and the result rows of out.json, in test order."""
    cli = promptfoo_cli()
    (tmp_path / "promptfooconfig.yaml").write_text(yaml.safe_dump(config))
    run_env = {
        **os.environ,
        "PROMPTFOO_CONFIG_DIR": str(tmp_path / ".promptfoo"),
        "PROMPTFOO_DISABLE_TELEMETRY": "1",
        "PROMPTFOO_DISABLE_UPDATE": "1",
        "PROMPTFOO_DISABLE_SHARING": "1",
        "HTTPS_PROXY": "http://127.0.0.1:9",
        "PROMPTFOO_PYTHON": sys.executable,
        **(env or {}),
    }
    done = subprocess.run(
        [str(cli), "eval", "-c", "promptfooconfig.yaml", "--no-cache", "--no-table", "-o", "out.json"],
        cwd=tmp_path,
        env=run_env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    out = tmp_path / "out.json"
    assert out.exists(), f"exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    rows = json.loads(out.read_text())["results"]["results"]
    return done.returncode, sorted(rows, key=lambda r: r["testIdx"])


def components(row: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Our per-scorer components of a row (promptfoo lists them after the assertion's own entry)."""
    return {c["scorer"]: c for c in row["gradingResult"]["componentResults"] if "scorer" in c}


SKIPPING_SCORER = '''
from scorers import Scorer, register, text_field

@register(name="NonEmptyExpected", replace=True)
class NonEmptyExpected(Scorer):
    """1.0 when output equals expected; skipped when there is no reference answer."""
    fields = (text_field("output"), text_field("expected", required=False))

    def _score(self, *, output, expected):
        return self.make_score(None if not expected else float(output == expected), reason="no reference")
'''


@pytest.mark.needs_harness
def test_eval_passes_fails_skips_and_errors(tmp_path: Path) -> None:
    assertion = init(tmp_path)
    custom = tmp_path / "custom_assert.py"  # the user's own scorer, registered next to the import
    custom.write_text(SKIPPING_SCORER + promptfoo.assertion_file())
    checks = {
        "type": "python",
        "value": f"file://{assertion}",
        "config": {
            "scorers": ["ExactMatch", "Levenshtein"],
            "threshold": {"Levenshtein": 0.5},
            "map": {"expected": "reference"},
        },
    }
    config = {
        "prompts": ["{{answer}}"],
        "providers": ["echo"],
        "defaultTest": {"assert": [checks]},
        "tests": [
            {"vars": {"answer": "Paris", "reference": "Paris"}},
            {"vars": {"answer": "kitten", "reference": "sitting"}},
            {"vars": {"answer": "Rome"}},  # no reference: both scorers raise ScorerInputError
            {
                "vars": {"answer": "Paris", "reference": ""},
                "options": {"disableDefaultAsserts": True},
                "assert": [{"type": "python", "value": f"file://{custom}", "config": {"scorers": "NonEmptyExpected"}}],
            },
        ],
    }
    code, rows = eval_(tmp_path, config)
    assert code == 100  # a test failed
    assert [row["success"] for row in rows] == [True, False, False, True]

    perfect, partial, broken, skipped = rows
    assert perfect["score"] == 1 and perfect["namedScores"] == {"ExactMatch": 1, "Levenshtein": 1}
    assert {n: c["pass"] for n, c in components(perfect).items()} == {"ExactMatch": True, "Levenshtein": True}

    lev = scorers.get("Levenshtein")(output="kitten", expected="sitting").score
    assert partial["namedScores"] == {"ExactMatch": 0, "Levenshtein": lev}
    assert partial["score"] == pytest.approx(lev / 2)
    assert partial["gradingResult"]["reason"] == f"ExactMatch 0.000 < 1; Levenshtein {lev:.3f} >= 0.5"
    parts = components(partial)
    assert (parts["ExactMatch"]["pass"], parts["ExactMatch"]["score"]) == (False, 0)
    assert (parts["Levenshtein"]["pass"], parts["Levenshtein"]["score"]) == (True, lev)

    assert broken["namedScores"] == {} and broken["failureReason"] == 1
    errors = components(broken)
    assert {n: (c["pass"], c["score"], c["error"]["type"]) for n, c in errors.items()} == {
        "ExactMatch": (False, None, "ScorerInputError"),
        "Levenshtein": (False, None, "ScorerInputError"),
    }
    assert "is mapped to the var 'reference', which this test lacks" in errors["Levenshtein"]["reason"]

    assert skipped["namedScores"] == {}  # no made-up number for a skipped score
    assert skipped["gradingResult"]["reason"] == "All assertions passed"
    part = components(skipped)["NonEmptyExpected"]
    assert (part["pass"], part["score"]) == (True, None)
    assert part["reason"] == "skipped: NonEmptyExpected does not apply to this test (no reference)"


@pytest.mark.needs_harness
def test_eval_reports_a_config_error(tmp_path: Path) -> None:
    assertion = init(tmp_path)
    config = {
        "prompts": ["{{answer}}"],
        "providers": ["echo"],
        "tests": [
            {
                "vars": {"answer": "Paris", "expected": "Paris"},
                "assert": [
                    {
                        "type": "python",
                        "value": f"file://{assertion}",
                        "config": {"scorers": ["ExactMatch", "NoSuchScorer"]},
                    }
                ],
            }
        ],
    }
    code, [row] = eval_(tmp_path, config)
    assert code == 100
    assert row["success"] is False
    reason = row["gradingResult"]["reason"]
    assert reason.startswith("Error running Python script") and "UnknownScorerError" in reason
    assert "NoSuchScorer" in reason


@pytest.mark.needs_harness
def test_eval_with_a_judge(tmp_path: Path, llm_server: LoopbackLLM, fake_api_key: str) -> None:
    llm_server.script(Reply.choice("D", reasons="Milan is not Rome."), match="Milan")
    llm_server.default = Reply.choice("C", reasons="Same facts.")
    assertion = init(tmp_path)
    config = {
        "prompts": ["{{answer}}"],
        "providers": ["echo"],
        "defaultTest": {
            "assert": [
                {
                    "type": "python",
                    "value": f"file://{assertion}",
                    "config": {"scorers": ["Factuality"], "map": {"input": "question"}},
                }
            ]
        },
        "tests": [
            {"vars": {"question": "Capital of France?", "answer": "Paris", "expected": "Paris"}},
            {"vars": {"question": "Capital of Italy?", "answer": "Milan", "expected": "Rome"}},
        ],
    }
    env = {
        "OPENAI_BASE_URL": llm_server.base_url,
        "OPENAI_API_KEY": fake_api_key,
        "SCORERS_CACHE_DIR": str(tmp_path / "judge-cache"),
    }
    code, rows = eval_(tmp_path, config, env)
    assert code == 100
    assert [(r["success"], r["namedScores"]) for r in rows] == [(True, {"Factuality": 1}), (False, {"Factuality": 0})]
    assert components(rows[1])["Factuality"]["reason"] == "Factuality 0.000 < 1: Milan is not Rome."
    assert len(llm_server.chat_requests) == 2
    assert all(fake_api_key not in json.dumps(r) for r in rows)


def chat_completion(content: str | None, *calls: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    """An OpenAI chat completion whose message has ``content`` and the ``calls`` (name, arguments)."""
    tool_calls = [
        {"id": f"call_{i}", "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}
        for i, (name, arguments) in enumerate(calls)
    ]
    message = {"role": "assistant", "content": content, **({"tool_calls": tool_calls} if tool_calls else {})}
    finish = "tool_calls" if calls else "stop"
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": "gpt-4o-mini",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 5, "total_tokens": 10},
    }


PARIS = ("get_weather", {"city": "Paris"})
ROME = ("get_weather", {"city": "Rome"})
WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}


@pytest.mark.needs_harness
def test_eval_scores_the_tool_calls_of_openais_provider(
    tmp_path: Path, llm_server: LoopbackLLM, fake_api_key: str
) -> None:
    """promptfoo's own openai provider, over LoopbackLLM: its output is the tool_calls list when the message has
    no text, the whole message when it has both, the text when there is no call."""
    llm_server.script(Reply.raw(chat_completion(None, PARIS)), match="Paris?")
    llm_server.script(Reply.raw(chat_completion("Checking both.", PARIS, ("search", {"q": "Rome"}))), match="Rome?")
    llm_server.script(Reply.raw(chat_completion("Hello!")), match="Hi")
    assertion = init(tmp_path)
    expected = [{"name": name, "arguments": arguments} for name, arguments in (PARIS, ROME)]
    config = {
        "prompts": ["{{question}}"],
        "providers": [
            {
                "id": "openai:chat:gpt-4o-mini",
                "config": {"apiBaseUrl": llm_server.base_url, "apiKey": fake_api_key, "tools": [WEATHER_TOOL]},
            }
        ],
        "defaultTest": {
            "assert": [
                {
                    "type": "python",
                    "value": f"file://{assertion}",
                    "config": {
                        "scorers": ["ToolCallMatch", "ToolCallF1", "ToolCallValid"],
                        "threshold": 0.5,
                        "map": {"expected": "calls"},
                    },
                },
                {"type": "tool-call-f1", "value": ["get_weather"]},  # promptfoo's own, beside ours
            ]
        },
        "tests": [
            {"vars": {"question": "Weather in Paris?", "calls": expected[:1], "tools": [WEATHER_TOOL]}},
            {"vars": {"question": "Weather in Paris and Rome?", "calls": expected, "tools": [WEATHER_TOOL]}},
            {"vars": {"question": "Hi", "calls": [], "tools": [WEATHER_TOOL]}},
        ],
    }
    code, rows = eval_(tmp_path, config)
    assert code == 100, rows  # the last test fails promptfoo's tool-call-f1: no call at all
    assert [row["response"]["output"] for row in rows][0] == [
        {"id": "call_0", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}
    ]
    assert rows[1]["response"]["output"]["content"] == "Checking both."  # the whole message
    assert [row["namedScores"] for row in rows] == [
        {"ToolCallMatch": 1, "ToolCallF1": 1, "ToolCallValid": 1},
        {"ToolCallMatch": 0.5, "ToolCallF1": 0.5, "ToolCallValid": 0.5},  # Rome's call missing, search extra
        {"ToolCallMatch": 1, "ToolCallF1": 1, "ToolCallValid": 1},  # no call, none expected
    ]
    assert [components(row)["ToolCallMatch"]["pass"] for row in rows] == [True, True, True]
    assert len(llm_server.chat_requests) == 3


@pytest.mark.needs_harness
def test_eval_scores_tool_calls_in_a_texts_json_lines(tmp_path: Path) -> None:
    """The echo provider's output is the prompt: Anthropic's provider writes a text and its tool_use blocks as
    JSON lines like this; OpenAI's tool_calls as JSON text."""
    assertion = init(tmp_path)
    tool_use = {"type": "tool_use", "id": "t1", "name": "get_weather", "input": {"city": "Paris"}}
    openai_calls = [{"id": "c1", "type": "function", "function": {"name": "search", "arguments": "{}"}}]
    config = {
        "prompts": ["{{answer}}"],
        "providers": ["echo"],
        "defaultTest": {
            "assert": [
                {
                    "type": "python",
                    "value": f"file://{assertion}",
                    "config": {"scorers": ["ToolCallMatch", "ToolCallF1"]},
                }
            ]
        },
        "tests": [
            {
                "vars": {
                    "answer": "Let me look.\n\n" + json.dumps(tool_use),
                    "expected": [{"name": "get_weather", "arguments": {"city": "Paris"}}],
                }
            },
            {"vars": {"answer": json.dumps(openai_calls), "expected": "search"}},  # F1's comma-separated names
        ],
    }
    code, rows = eval_(tmp_path, config)
    assert [row["namedScores"] for row in rows][0] == {"ToolCallMatch": 1, "ToolCallF1": 1}
    assert components(rows[1])["ToolCallF1"]["score"] == 1
    assert components(rows[1])["ToolCallMatch"]["error"]["type"] == "ScorerInputError"  # "search" is no call list
    assert code == 100


@pytest.mark.needs_harness
def test_the_docs_tool_call_config_runs(tmp_path: Path) -> None:
    """docs/adapters.md's promptfoo tool-call config, as printed, beside the file `init` writes."""
    section = (ROOT / "docs" / "adapters.md").read_text().split("## promptfoo\n", 1)[1].split("\n## ", 1)[0]
    block = section.split("### Tool calls\n", 1)[1].split("```yaml\n", 1)[1].split("```", 1)[0]
    init(tmp_path, promptfoo.DEFAULT_FILE)
    code, [row] = eval_(tmp_path, yaml.safe_load(block))
    assert code == 0 and row["success"] is True
    assert row["namedScores"] == {"ToolCallMatch": 1, "ToolCallF1": 1}


# ------------------------------------------------------------- get_assert alone
def context(config: dict[str, Any], **variables: Any) -> dict[str, Any]:
    return {"config": config, "vars": variables, "prompt": "p", "test": {}, "provider": {}, "metadata": {}}


class MaybeSkips(Scorer):
    name = "MaybeSkips"
    fields = (text_field("output"),)

    def _score(self, *, output: str) -> scorers.Score:
        return self.make_score(None if output == "n/a" else 0.5)


@pytest.fixture
def maybe_skips(monkeypatch: pytest.MonkeyPatch) -> None:
    real_get = common.get  # the adapters build every scorer through common
    monkeypatch.setattr(
        common, "get", lambda name, **params: MaybeSkips() if name == "MaybeSkips" else real_get(name, **params)
    )


def test_a_skipped_score_is_explicit(maybe_skips: None) -> None:
    result = get_assert("n/a", context({"scorers": ["MaybeSkips", "ExactMatch"], "threshold": 0.5}, expected="n/a"))
    assert result["pass"] is True and result["score"] == 1.0  # the mean of the scored ones
    assert result["namedScores"] == {"ExactMatch": 1.0}
    skipped = result["componentResults"][0]
    assert (skipped["pass"], skipped["score"], skipped["reason"]) == (
        True,
        None,
        "skipped: MaybeSkips does not apply to this test",
    )


def test_every_scorer_skipped(maybe_skips: None) -> None:
    result = get_assert("n/a", context({"scorers": "MaybeSkips"}))
    assert (result["pass"], result["score"], result["namedScores"]) == (True, 0.0, {})
    assert result["reason"].startswith("skipped: no scorer applies to this test")
    json.dumps(result)  # what promptfoo reads back


def test_a_rows_error_fails_its_component_only() -> None:
    result = get_assert(None, context({"scorers": ["ExactMatch"]}, expected="x"))
    assert result["pass"] is False and result["score"] == 0.0 and result["namedScores"] == {}
    [part] = result["componentResults"]
    assert part["error"] == {
        "type": "ScorerInputError",
        "message": "ExactMatch: field 'output' is required but was None",
    }


def test_thresholds_params_and_map() -> None:
    config = {
        "scorers": ["ExactMatch", "Levenshtein", "BLEU"],
        "threshold": {"default": 0.5, "ExactMatch": 1},
        "params": {"ExactMatch": {"ignore_case": True}},
        "map": {"expected": "gold.text"},
    }
    result = get_assert("PARIS", context(config, gold={"text": "Paris"}))
    assert result["namedScores"]["ExactMatch"] == 1.0
    assert [c["pass"] for c in result["componentResults"]] == [True, False, False]
    assert result["pass"] is False
    assert result["reason"].startswith("ExactMatch 1.000 >= 1; Levenshtein 0.200 < 0.5; BLEU ")


@pytest.mark.parametrize(
    "config, message",
    [
        ({}, "config needs 'scorers'"),
        ({"scorers": ["ExactMatch"], "thresold": 0.5}, "unknown config key 'thresold'"),
        ({"scorers": ["ExactMatch"], "threshold": 2}, "must be a number in [0, 1]"),
        ({"scorers": ["ExactMatch"], "threshold": {"BLEU": 0.3}}, "threshold for 'BLEU', which is not in scorers"),
        ({"scorers": ["ExactMatch"], "params": {"BLEU": {"tokenize": "intl"}}}, "params for 'BLEU'"),
        ({"scorers": ["ExactMatch"], "params": {"ExactMatch": True}}, "params['ExactMatch'] must be a mapping"),
        ({"scorers": ["ExactMatch"], "map": {"output": "answer"}}, "'output' is always promptfoo's output"),
        (
            {"scorers": ["ExactMatch"], "map": {"criteria": "rubric"}},
            "no scorer in ExactMatch reads a field 'criteria'",
        ),
        ({"scorers": ["ExactMatch", "exactmatch"]}, "listed twice"),
    ],
)
def test_config_errors_are_raised(config: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as info:
        get_assert("x", context(config, expected="x"))
    assert message in str(info.value)


def test_unknown_scorer_is_raised() -> None:
    with pytest.raises(UnknownScorerError, match="NoSuchScorer"):
        get_assert("x", context({"scorers": ["NoSuchScorer"]}))


def test_a_judge_without_api_key_is_a_config_error() -> None:
    with pytest.raises(ConfigError):
        get_assert("Paris", context({"scorers": ["Factuality"], "map": {"input": "q"}}, q="Capital?", expected="Paris"))


@pytest.mark.slow
def test_init_keeps_a_different_file(tmp_path: Path) -> None:
    other = tmp_path / "assert.py"
    other.write_text("def get_assert(output, context):\n    return True\n")
    done = subprocess.run(
        [sys.executable, "-m", "scorers", "promptfoo", "init", str(other)], capture_output=True, text=True
    )
    assert done.returncode == 2 and "is not the scorers assertion file" in done.stderr
    assert other.read_text().startswith("def get_assert")
    assert init(tmp_path, "again.py").exists() and init(tmp_path, "again.py").exists()  # idempotent
