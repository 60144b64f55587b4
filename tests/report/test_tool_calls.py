"""The lowest-scoring rows of the tool-call scorers say why: calls left unmatched, arguments that disagree, where
trajectories part, invalid calls; escaped, bounded, and a note when the run had no ``--metadata``. The results
files are written by ``python -m scorers run`` itself (its ``main``), on examples/conversations.jsonl."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import markupsafe
import pytest

from scorers.cli import main
from scorers.report import write_report
from scorers.report.html import MAX_EXPLAINED
from scorers.stats import compare

from .conftest import HOSTILE

CONVERSATIONS = Path(__file__).resolve().parents[2] / "examples" / "conversations.jsonl"
MAP = ["--map", "output=conversation", "--map", "expected=expected_calls"]
TOOLS = [
    {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}},
    {"name": "get_order", "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}}},
]
SCORERS = ["-s", "ToolCallMatch", "-s", "TrajectoryMatch", "-s", "ToolCallValid", "-s", "ToolCallF1"]
PARAMS = ["-p", "TrajectoryMatch.mode=unordered", "-p", f"ToolCallValid.tools={json.dumps(TOOLS)}"]


def run(data: Path, out: Path, *options: str) -> Path:
    assert main(["run", str(data), *SCORERS, *PARAMS, *MAP, "--no-progress", "-o", str(out), *options]) == 0
    return out


def why(page: str) -> dict[str, dict[str, str]]:
    """{scorer: {row id: the text of its last cell, a line per item}} of the lowest-rows tables."""
    found: dict[str, dict[str, str]] = {}
    for scorer, table in re.findall(r'<h3>([^<]*)</h3>\s*<table class="rows">(.*?)</table>', page, flags=re.S):
        rows = {}
        for row in re.findall(r"<tr><td.*?</tr>", table, flags=re.S):
            cells = re.findall(r"<td[^>]*>(.*?)</td>", row, flags=re.S)
            text = re.sub(r"<[^>]+>", "", re.sub(r"<br>|</div>", "\n", cells[-1]))
            rows[html.unescape(cells[1])] = html.unescape(text).strip()
        found[html.unescape(scorer)] = rows
    return found


@pytest.fixture(scope="module")
def calls(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return run(CONVERSATIONS, tmp_path_factory.mktemp("calls") / "calls.jsonl", "--metadata")


def test_the_lowest_rows_say_why_each_tool_call_scorer_scored_them(calls: Path, tmp_path: Path) -> None:
    page = write_report([calls], tmp_path / "report.html").read_text()
    shown = why(page)
    assert shown["ToolCallMatch"]["wrong_tool"] == (
        'unmatched expected calls\n#0 book_table {"party_size": 2, "time": "20:00"}\n'
        'unmatched actual calls\n#0 get_weather {"city": "here"}'
    )
    assert shown["ToolCallMatch"]["convert_json_text"] == (
        'arguments that disagree\nconvert #0↔#0 · amount (exact): expected "100", actual 100'
    )
    assert shown["ToolCallMatch"]["weather"] == ""  # a perfect row: nothing to explain
    assert shown["TrajectoryMatch"]["search_responses"].startswith(
        "trajectories part at\nexpected call #0: no actual call matches it\nunmatched expected calls\n"
        '#0 search {"query": "Left Hand of Darkness author"}'
    )
    assert shown["ToolCallValid"]["refund"] == (
        "invalid calls\n#0 get_order {\"order_id\": 1042}: $.order_id: 1042 is not of type 'string'\n"
        '#1 refund {"order_id": 1042, "amount": 59.9}: no tool is named \'refund\' (tools: get_weather, get_order)'
    )
    assert shown["ToolCallF1"]["wrong_tool"] == "missing\nbook_table\nextra\nget_weather"
    headings = re.findall(r"<th>([^<]*)</th></tr></thead>", page)
    assert headings == ["why"] * 4 and "--metadata" not in page


def test_strict_trajectories_part_at_a_message(tmp_path: Path) -> None:
    data = tmp_path / "strict.jsonl"
    wanted = [
        {"role": "user", "content": "weather?"},
        {"role": "assistant", "tool_calls": [{"id": "1", "function": {"name": "get_weather", "arguments": "{}"}}]},
    ]
    got = [wanted[0], {"role": "assistant", "content": "sunny"}]
    data.write_text(json.dumps({"id": "r", "output": got, "expected": wanted}) + "\n")
    out = tmp_path / "out.jsonl"
    assert main(["run", str(data), "-s", "TrajectoryMatch", "--metadata", "--no-progress", "-o", str(out)]) == 0
    page = write_report([out], tmp_path / "report.html").read_text()
    assert why(page)["TrajectoryMatch"]["r"].startswith("trajectories part at\nmessage #1: ")


def test_hostile_tool_names_and_arguments_stay_text(tmp_path: Path) -> None:
    data = tmp_path / "hostile.jsonl"
    call = {"name": "<script>alert(1)</script>", "arguments": {"q": HOSTILE}}
    row = {"id": "h", "conversation": [call], "expected_calls": [{"name": "search", "arguments": {HOSTILE: 1}}]}
    data.write_text(json.dumps(row) + "\n")
    page = write_report([run(data, tmp_path / "out.jsonl", "--metadata")], tmp_path / "report.html").read_text()
    assert "<script" not in page and "<img" not in page
    assert str(markupsafe.escape('#0 <script>alert(1)</script> {"q": "<script>window.__pwned')) in page
    shown = why(page)["ToolCallValid"]["h"]
    assert "#0 <script>alert(1)</script>" in shown and "no tool is named '<script>alert(1)</script>'" in shown


def test_explanations_are_bounded(tmp_path: Path) -> None:
    data = tmp_path / "many.jsonl"
    expected = [{"name": f"tool_{i}", "arguments": {"text": "x" * 500}} for i in range(MAX_EXPLAINED + 7)]
    data.write_text(json.dumps({"id": "many", "conversation": [], "expected_calls": expected}) + "\n")
    page = write_report([run(data, tmp_path / "out.jsonl", "--metadata")], tmp_path / "report.html").read_text()
    lines = why(page)["ToolCallMatch"]["many"].splitlines()
    assert lines[0] == "unmatched expected calls" and lines[-1] == "and 7 more"
    assert [line.split()[:2] for line in lines[1:-1]] == [[f"#{i}", f"tool_{i}"] for i in range(MAX_EXPLAINED)]
    assert all(len(line) < 140 and line.endswith("…") for line in lines[1:-1])  # arguments cut short


def test_without_metadata_the_section_says_to_run_with_it(tmp_path: Path) -> None:
    bare = run(CONVERSATIONS, tmp_path / "bare.jsonl")
    page = write_report([bare], tmp_path / "report.html").read_text()
    assert (
        "No score metadata in bare.jsonl, so nothing here on why\n"
        "ToolCallMatch, TrajectoryMatch, ToolCallValid, ToolCallF1 gave these scores: run with <code>--metadata</code>"
    ) in page
    assert set(why(page)["ToolCallMatch"].values()) == {""}


def test_two_runs_of_other_argument_rules_are_compared(calls: Path, tmp_path: Path) -> None:
    rules = ["-p", "ToolCallMatch.arguments=loose", "-p", "TrajectoryMatch.arguments=loose"]
    loose = run(CONVERSATIONS, tmp_path / "loose.jsonl", "--metadata", *rules)
    page = write_report([calls, loose], tmp_path / "report.html", key="id").read_text()
    match = next(f for f in compare([calls, loose], key="id").figures if f.scorer == "ToolCallMatch")
    assert match.systems[1].difference == pytest.approx(1 / 3 / 8)  # convert's "100" agrees with 100 when loose
    assert f"{match.systems[1].difference:+.4f}" in page and page.count('data-chart="differences"') == 4
    assert why(page.split("Lowest scores: loose.jsonl")[1])["ToolCallMatch"]["convert_json_text"] == ""
