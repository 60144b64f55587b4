"""Replies and the replies file's rules."""

from __future__ import annotations

import json
import re

import pytest

from scorers.testing import Reply


def test_scripted_logprobs_need_a_token_per_entry():
    with pytest.raises(ValueError, match="top_logprobs"):
        Reply.text("4", top_logprobs=[{}])


def test_replies_file_rules_and_their_errors(tmp_path):
    from scorers.errors import ConfigError
    from scorers.testing import load_rules

    path = tmp_path / "replies.jsonl"
    path.write_text(
        '{"match": "Venus", "reply": {"choice": "D", "reasons": "Mercury is"}, "times": 1}\n\n'
        '{"reply": {"tool": "grade_rubric", "arguments": {"tone": 4}}}\n'
        '{"reply": {"json": {"score": 3}}}\n{"reply": {"text": "C"}}\n'
        '{"reply": {"error": 429, "message": "slow down"}}\n'
    )
    rules = load_rules(path)
    assert [(r.match, r.times) for r in rules] == [("Venus", 1), (None, None), (None, None), (None, None), (None, None)]
    assert rules[0].reply == Reply.choice("D", reasons="Mercury is")
    assert (rules[1].reply.tool_name, json.loads(rules[1].reply.arguments)) == ("grade_rubric", {"tone": 4})
    assert (rules[2].reply.content, rules[3].reply.content) == ('{"score": 3}', "C")
    assert (rules[4].reply.status, rules[4].reply.error_message) == (429, "slow down")
    for line, message in [
        ('{"match": "x"}', "expected"),
        ('{"reply": {"choice": "A", "text": "B"}}', "one of"),
        ('{"reply": {"choice": 1}}', "choice: a text"),
        ('{"reply": {"error": 200}}', "400 to 599"),
        ('{"reply": {"tool": "t", "arguments": [1]}}', "arguments: a JSON object"),
        ('{"reply": {"text": "x"}, "times": 0}', "times"),
        ("{not json", "Expecting"),
    ]:
        path.write_text('{"reply": {"text": "ok"}}\n' + line + "\n")
        with pytest.raises(ConfigError, match=rf"replies.jsonl:2: .*{re.escape(message)}"):
            load_rules(path)
