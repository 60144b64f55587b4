"""ToolPermission: hand-computed cases run in every input format the readers take, the path and host rules on
the ways out of a prefix or a host list, and properties of the share."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import scorers
from scorers.agents.permissions import host_of, path_within, patterns
from scorers.errors import ConfigError, ScorerInputError

from .in_formats import FORMATS, in_every_format, trajectory


def permission(output: Any, params: dict[str, Any] | None = None, **row: Any) -> scorers.Score:
    return scorers.get("ToolPermission", **(params or {}))(output=output, **row)


def broken(score: scorers.Score) -> list[tuple[int, list[str]]]:
    """Each violation as (call index, the rules it breaks)."""
    return [(v["index"], [reason["rule"] for reason in v["reasons"]]) for v in score.metadata["violations"]]


READ_DATA = {"tool": "read_file", "argument": "path", "prefix": "/srv/data/"}
API_HOSTS = {"tool": "fetch", "argument": "url", "hosts": ["api.example.com", "*.example.org"]}

#: (case, calls, scorer parameters, row fields, score, violations as (index, rules))
VECTORS = [
    ("no calls", [], {"deny": ["*"]}, {}, 1.0, []),
    ("nothing set: every call permitted", [("search", {}), ("shell_exec", {})], {}, {}, 1.0, []),
    (
        "deny by a glob",
        [("search", {}), ("shell_exec", {}), ("shell_rm", {})],
        {"deny": ["shell_*"]},
        {},
        1 / 3,
        [(1, ["deny"]), (2, ["deny"])],
    ),
    (
        "allow by globs",
        [("read_file", {}), ("search", {}), ("write_file", {})],
        {"allow": ["read_*", "search"]},
        {},
        2 / 3,
        [(2, ["allow"])],
    ),
    (
        "deny wins over allow",
        [("read_file", {}), ("write_file", {})],
        {"allow": ["*"], "deny": ["write_*"]},
        {},
        0.5,
        [(1, ["deny"])],
    ),
    (
        "patterns are case-sensitive",
        [("shell_exec", {}), ("Shell_exec", {})],
        {"deny": ["Shell*"]},
        {},
        0.5,
        [(1, ["deny"])],
    ),
    ("an empty allow list allows nothing", [("search", {})], {"allow": []}, {}, 0.0, [(0, ["allow"])]),
    ("? is one character", [("tool_1", {}), ("tool_12", {})], {"allow": ["tool_?"]}, {}, 0.5, [(1, ["allow"])]),
    ("[...] is a set", [("get_a", {}), ("get_z", {})], {"allow": ["get_[a-m]"]}, {}, 0.5, [(1, ["allow"])]),
    ("[!...] is its complement", [("get_a", {}), ("get_z", {})], {"deny": ["get_[!a-m]"]}, {}, 0.5, [(1, ["deny"])]),
    (
        "a path prefix: within, out by .., a sibling, relative, left out, not a string, another tool",
        [
            ("read_file", {"path": "/srv/data/a.csv"}),
            ("read_file", {"path": "/srv/data/../secrets"}),
            ("read_file", {"path": "/srv/database/x"}),
            ("read_file", {"path": "data/a.csv"}),
            ("read_file", {}),
            ("read_file", {"path": 42}),
            ("write_file", {"path": "/etc/passwd"}),
        ],
        {"constraints": [READ_DATA]},
        {},
        3 / 7,
        [(1, ["constraint"]), (2, ["constraint"]), (3, ["constraint"]), (5, ["constraint"])],
    ),
    (
        "a path prefix: dots and slashes within it",
        [
            ("read_file", {"path": "/srv//data/./x/../y"}),
            ("read_file", {"path": "/srv/data"}),
            ("read_file", {"path": "//srv/data/z"}),
        ],
        {"constraints": [READ_DATA]},
        {},
        1.0,
        [],
    ),
    (
        "hosts: case, a look-alike, user info, a subdomain pattern, no scheme, a trailing dot, a backslash",
        [
            ("fetch", {"url": "https://API.example.com/v1"}),
            ("fetch", {"url": "https://api.example.com.evil.test/"}),
            ("fetch", {"url": "https://api.example.com@evil.test/"}),
            ("fetch", {"url": "https://docs.example.org/x"}),
            ("fetch", {"url": "https://example.org/"}),
            ("fetch", {"url": "api.example.com/v1"}),
            ("fetch", {"url": "https://api.example.com./v1"}),
            ("fetch", {"url": "http://evil.test\\@api.example.com/"}),
        ],
        {"constraints": [API_HOSTS]},
        {},
        3 / 8,
        [(1, ["constraint"]), (2, ["constraint"]), (4, ["constraint"]), (5, ["constraint"]), (7, ["constraint"])],
    ),
    (
        "a nested argument by a dot path",
        [("http", {"request": {"url": "https://api.example.com/"}}), ("http", {"request": {"url": "https://x.test/"}})],
        {"constraints": [{"tool": "http", "argument": "request.url", "hosts": "api.example.com"}]},
        {},
        0.5,
        [(1, ["constraint"])],
    ),
    (
        "a call both denied and out of its prefix counts once, with both reasons",
        [("read_file", {"path": "/etc/shadow"}), ("search", {})],
        {"deny": ["read_*"], "constraints": [READ_DATA]},
        {},
        0.5,
        [(0, ["deny", "constraint"])],
    ),
    (
        "a row's deny replaces the scorer's",
        [("a", {}), ("b", {})],
        {"deny": ["a"]},
        {"deny": ["b"]},
        0.5,
        [(1, ["deny"])],
    ),
    (
        "a row's allow as text",
        [("a", {}), ("b", {}), ("c", {})],
        {"allow": ["b"]},
        {"allow": "a, c"},
        2 / 3,
        [(1, ["allow"])],
    ),
    ("a row's allow as JSON text", [("a", {}), ("b", {})], {}, {"allow": '["b*"]'}, 0.5, [(0, ["allow"])]),
    (
        "a row's blank allow is not given",
        [("a", {}), ("b", {})],
        {"allow": ["a"]},
        {"allow": " "},
        0.5,
        [(1, ["allow"])],
    ),
    ("a set as text is one pattern", [("a1", {}), ("d1", {})], {}, {"allow": "[a-c]*"}, 0.5, [(1, ["allow"])]),
]


@pytest.mark.parametrize("form", [*FORMATS, "bare calls"])
@pytest.mark.parametrize(
    ("case", "calls", "params", "row", "score", "violations"), VECTORS, ids=[v[0] for v in VECTORS]
)
def test_permissions_in_every_format(case, calls, params, row, score, violations, form):
    if form == "bare calls":
        value: Any = [{"name": name, "arguments": arguments} for name, arguments in calls]
    else:
        value = in_every_format(trajectory(*calls))[form]
    result = permission(value, params, **row)
    assert result.score == pytest.approx(score, abs=1e-15)
    assert broken(result) == violations
    assert (result.metadata["calls"], result.metadata["permitted"]) == (len(calls), len(calls) - len(violations))
    assert json.loads(json.dumps(result.metadata)) == result.metadata


def test_each_violation_says_which_rule():
    score = permission(
        [{"name": "read_file", "arguments": {"path": "/srv/data/../../etc/passwd"}}, {"name": "shell_exec"}],
        {"allow": ["read_*", "shell_*"], "deny": ["shell_*"], "constraints": [READ_DATA]},
    )
    assert score.metadata["violations"] == [
        {
            "index": 0,
            "name": "read_file",
            "arguments": {"path": "/srv/data/../../etc/passwd"},
            "reasons": [
                {
                    "rule": "constraint",
                    "constraint": 0,
                    "argument": "path",
                    "problem": "path '/etc/passwd' is not within /srv/data/",
                }
            ],
        },
        {"index": 1, "name": "shell_exec", "arguments": {}, "reasons": [{"rule": "deny", "pattern": "shell_*"}]},
    ]
    allow = permission([{"name": "x"}], {"allow": ["a*", "b"]}).metadata["violations"][0]["reasons"]
    assert allow == [{"rule": "allow", "patterns": ["a*", "b"]}]
    host = permission([{"name": "fetch", "arguments": {"url": "ftp:relative"}}], {"constraints": [API_HOSTS]})
    assert host.metadata["violations"][0]["reasons"][0]["problem"].startswith("URL has no host name")


@pytest.mark.parametrize(
    ("path", "prefix", "within"),
    [
        ("/srv/data", "/srv/data/", True),
        ("/srv/data/a/b", "/srv/data", True),
        ("/srv/data/a/../../data/b", "/srv/data", True),
        ("/srv/data/a/../../other", "/srv/data", False),
        ("/srv/data/../../../../srv/data/x", "/srv/data", True),  # .. at the root stays at the root
        ("/srv/database", "/srv/data", False),
        ("/", "/srv/data", False),
        ("", "/srv/data", False),
        ("srv/data/x", "/srv/data", False),
        ("data/x", "data", True),
        ("data/../../data/x", "data", False),
        ("./data/x", "data", True),
        ("/anything", "/", True),
    ],
)
def test_a_path_is_within_a_prefix_component_by_component(path, prefix, within):
    assert path_within(path, prefix) is within


def test_hosts_are_read_from_the_parsed_url():
    assert host_of("HTTPS://Api.Example.COM:443/x") == "api.example.com"
    assert host_of("https://[::1]:8080/") == "::1"
    for url in ("http://[::1", "no scheme/x", "https://a b.test/", "https://a.test\t/"):
        with pytest.raises(ValueError):
            host_of(url)


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"allow": 5}, "allow must be a list of tool-name patterns"),
        ({"deny": ["ok", ""]}, "deny must be a list of tool-name patterns"),
        ({"allow": '["a", 1]'}, "allow must be a list of tool-name patterns"),
        ({"constraints": {"argument": "p"}}, "constraints must be a list of objects"),
        ({"constraints": [{"argument": "p"}]}, "constraints[0] give exactly one of prefix"),
        ({"constraints": [{"argument": "p", "prefix": "/a", "hosts": ["h"]}]}, "give exactly one of prefix"),
        ({"constraints": [{"argument": "p", "prefix": "."}]}, "a prefix must name a directory"),
        ({"constraints": [{"argument": "p", "prefix": []}]}, "must be a non-empty string or list"),
        ({"constraints": [{"argument": "a..b", "hosts": "h"}]}, "argument must be a key or keys joined by dots"),
        ({"constraints": [{"prefix": "/a"}]}, "has no argument"),
        ({"constraints": [{"argument": "p", "prefix": "/a", "path": "/b"}]}, "has unknown keys ['path']"),
        ({"constraints": ["read_file"]}, "is not an object"),
    ],
)
def test_bad_settings_are_config_errors(params, message):
    with pytest.raises(ConfigError) as caught:
        scorers.get("ToolPermission", **params)
    assert message in str(caught.value) and "ToolPermission" in str(caught.value)


@pytest.mark.parametrize(
    ("row", "field", "problem"),
    [
        ({"output": "{not json"}, "output", "is text that is not JSON"),
        ({"output": [], "allow": ["a", 3]}, "allow", "must be a list of tool-name patterns"),
        ({"output": [], "deny": '[""]'}, "deny", "must be a list of tool-name patterns"),
        ({"output": [], "allow": 7}, "allow", "must be list or tuple or str"),
    ],
)
def test_bad_rows_are_input_errors_naming_the_field(row, field, problem):
    with pytest.raises(ScorerInputError, match=f"ToolPermission: field '{field}'") as caught:
        scorers.get("ToolPermission")(**row)
    assert problem in str(caught.value)


def test_the_signature_records_the_lists_and_constraints_as_data():
    scorer = scorers.get("ToolPermission", allow="a, b", constraints=[{"argument": "url", "hosts": "API.test"}])
    signature = scorer.signature()
    assert (signature["allow"], signature["deny"]) == (["a", "b"], [])
    assert signature["constraints"] == [{"tool": "*", "argument": "url", "hosts": ["api.test"]}]
    assert patterns("x , ,y") == ("x", "y")


NAMES = st.sampled_from(["read_file", "write_file", "search", "shell_exec", "fetch"])
CALLS = st.lists(st.tuples(NAMES, st.sampled_from(["/srv/data/a", "/etc/x", "/srv/data/../b"])), max_size=12)


@settings(max_examples=200, deadline=None)
@given(CALLS, st.randoms(use_true_random=False))
def test_the_share_does_not_depend_on_the_order_of_the_calls(calls, random):
    params = {"allow": ["read_*", "search", "fetch"], "deny": ["*exec"], "constraints": [READ_DATA]}
    as_calls = [{"name": name, "arguments": {"path": path}} for name, path in calls]
    shuffled = random.sample(as_calls, len(as_calls))
    first, second = permission(as_calls, params), permission(shuffled, params)
    assert first.score == second.score
    assert sorted(v["name"] for v in first.metadata["violations"]) == sorted(
        v["name"] for v in second.metadata["violations"]
    )


@settings(max_examples=200, deadline=None)
@given(CALLS, NAMES)
def test_adding_a_permitted_call_never_lowers_the_share_and_a_denied_one_never_raises_it(calls, name):
    params = {"deny": ["shell_*"], "constraints": [READ_DATA]}
    as_calls = [{"name": n, "arguments": {"path": p}} for n, p in calls]
    before = permission(as_calls, params).score
    permitted = permission([*as_calls, {"name": "search"}], params).score
    denied = permission([*as_calls, {"name": "shell_exec"}], params).score
    assert denied <= before <= permitted or not as_calls
