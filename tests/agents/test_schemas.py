"""ToolCallValid's bounded JSON Schema validation (scorers.agents.schemas): schemas and arguments that would hang
jsonschema or raise an untyped error finish within their bound or are the row's typed error; the keywords it
replaces agree with jsonschema's where jsonschema is right."""

from __future__ import annotations

import json
from typing import Any

import pytest
from bounded import run_bounded

import scorers
from scorers.errors import ConfigError, ScorerError, ScorerInputError


def valid(arguments: Any, schema: Any, **params: Any) -> scorers.Score:
    tools = [{"name": "f", "parameters": schema}]
    return scorers.get("ToolCallValid", **params)(output=[{"name": "f", "arguments": arguments}], tools=tools)


def outcomes(cases: list[tuple[Any, Any]]) -> list[tuple[str, Any]]:
    """Each case's score, or its typed error's message (run in one bounded child)."""
    found: list[tuple[str, Any]] = []
    for arguments, schema in cases:
        try:
            found.append(("score", valid(arguments, schema).score))
        except ScorerError as error:
            found.append((type(error).__name__, str(error)))
    return found


#: 20 nested anyOf whose two branches each $ref the next level: 2**20 paths (about 1 KB of schema).
NESTED_ANY_OF = {
    "$defs": {
        **{f"d{i}": {"anyOf": [{"$ref": f"#/$defs/d{i + 1}"}, {"$ref": f"#/$defs/d{i + 1}"}]} for i in range(20)},
        "d20": {"type": "string"},
    },
    "$ref": "#/$defs/d0",
}
UNIQUE = {"properties": {"xs": {"uniqueItems": True}}}
#: (arguments, schema, the score or a part of the error): each would take minutes, or raise an untyped error,
#: on jsonschema alone
ADVERSARIAL = [
    # a pattern that backtracks catastrophically under re: minutes for 28 characters
    ({"s": "a" * 28 + "!"}, {"properties": {"s": {"pattern": "^(a+)+$"}}}, 0.0),
    ({"a" * 28 + "!": 1}, {"patternProperties": {"^(a+)+$": {}}, "additionalProperties": False}, 0.0),
    # exponential: the call's CPU time limit stops it, naming the limit
    ({"a": 1}, NESTED_ANY_OF, "ToolCallValid: field 'tools' took more than timeout_s=1.0 s of CPU time to validate"),
    # jsonschema compares every pair of 5,000 objects: minutes
    ({"xs": [{"i": i} for i in range(5_000)]}, UNIQUE, 1.0),
    ({"xs": [{"i": i % 4_999} for i in range(5_000)]}, UNIQUE, 0.0),
    # untyped errors in jsonschema: OverflowError, TypeError
    ({"n": 10**400}, {"properties": {"n": {"multipleOf": 0.5}}}, 1.0),
    ({"n": 10**400 + 1}, {"properties": {"n": {"multipleOf": 0.5}}}, 1.0),
    ({"n": 10**400 + 1}, {"properties": {"n": {"multipleOf": 2}}}, 0.0),
    ({}, 5, "ToolCallValid: field 'tools' tool 0 ('f') has a schema of type int, not a JSON Schema"),
    ({}, {"$schema": ["x"]}, "ToolCallValid: field 'tools' the tool 'f' has a $schema of type list, not a URI"),
    ({}, {"pattern": "a|" * 6_000}, "the tool 'f' has a pattern of 12,000 characters, more than 10,000"),
    # the engine builds search tables for a literal in time cubic in its length, outside any timeout: 325 s
    ({"s": "b"}, {"properties": {"s": {"pattern": "a" * 9_999}}}, "has a pattern of 9,999 literal characters in a row"),
]


@pytest.mark.slow
def test_adversarial_schemas_finish_in_bounds_or_are_typed_errors():
    found = run_bounded(outcomes, [case[:2] for case in ADVERSARIAL], timeout_s=60, memory_mb=300)
    for (_, schema, expected), (kind, value) in zip(ADVERSARIAL, found):
        if isinstance(expected, float):
            assert (kind, value) == ("score", expected), str(schema)[:80]
        else:
            assert kind == "ScorerInputError" and expected in value, value


def test_a_schema_the_constructor_gets_is_a_config_error():
    with pytest.raises(ConfigError, match=r"^ToolCallValid: tools tool 0 \('f'\) has a schema of type int"):
        scorers.get("ToolCallValid", tools=[{"name": "f", "parameters": 5}])


def test_timeout_s_is_checked_and_none_lifts_the_limit():
    with pytest.raises(ConfigError, match="timeout_s must be a positive number of seconds or None, got 0"):
        scorers.get("ToolCallValid", timeout_s=0)
    assert valid({"s": "aa"}, {"properties": {"s": {"pattern": "^a+$"}}}, timeout_s=None).score == 1.0


@pytest.mark.parametrize(
    ("value", "divisor", "multiple"),
    [(0.3, 0.1, True), (0.07, 0.01, True), (4.5, 1.5, True), (7, 2, False), (1e308, 1e-308, True), (0.35, 0.1, False)],
)
def test_multiple_of_compares_the_decimals_as_written(value, divisor, multiple):
    assert valid({"n": value}, {"properties": {"n": {"multipleOf": divisor}}}).score == float(multiple)


@pytest.mark.parametrize(
    "items",
    [[1, 1.0], [True, 1], [{"a": 1, "b": 2}, {"b": 2, "a": 1}], [[1], [1, 2]], ["1", 1], [None, False, 0]],
)
def test_unique_items_agrees_with_jsonschema(items):
    import jsonschema

    schema = {"type": "object", "properties": {"xs": {"uniqueItems": True}}}
    expected = jsonschema.Draft202012Validator(schema).is_valid({"xs": items})
    assert valid({"xs": items}, schema).score == float(expected)


def test_a_patterns_error_reads_as_jsonschemas():
    import jsonschema

    schema = {"properties": {"s": {"pattern": "^a"}}, "patternProperties": {"^x": {}}, "additionalProperties": False}
    for arguments in ({"s": "b"}, {"y": 1, "z": 2}, {"y": 1}):
        theirs = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(schema).iter_errors(arguments))
        ours = valid(arguments, schema).metadata["invalid"][0]["error"]
        assert ours.endswith(theirs.message), (ours, theirs.message)
    assert json.dumps(valid({"s": "ab", "x1": 3}, schema).metadata) and valid({"s": "ab"}, schema).score == 1.0


def test_a_rows_slow_schema_names_the_tools_field_and_the_limit():
    with pytest.raises(ScorerInputError, match=r"^ToolCallValid: field 'tools' took more than timeout_s=0.05 s"):
        scorers.get("ToolCallValid", timeout_s=0.05)(
            output=[{"name": "f", "arguments": {}}], tools=[{"name": "f", "parameters": NESTED_ANY_OF}]
        )


# --- Model Context Protocol definitions

SEARCH_SCHEMA = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
#: modelcontextprotocol.io specification, server/tools: a tools/list result, and its JSON-RPC response.
MCP_TOOLS = {"tools": [{"name": "search", "description": "Search the docs", "inputSchema": SEARCH_SCHEMA}]}
#: openai-python, responses/response_output_item.py: McpListTools.
MCP_LIST_TOOLS = {
    "type": "mcp_list_tools",
    "id": "mcpl_1",
    "server_label": "docs",
    "tools": [{"name": "search", "input_schema": SEARCH_SCHEMA, "annotations": None}],
}


@pytest.mark.parametrize(
    "tools",
    [
        MCP_TOOLS,
        MCP_TOOLS["tools"],
        {"jsonrpc": "2.0", "id": 2, "result": MCP_TOOLS},
        MCP_LIST_TOOLS,
        [MCP_LIST_TOOLS, {"type": "function", "function": {"name": "now", "parameters": {"type": "object"}}}],
    ],
    ids=["tools/list", "bare", "json-rpc", "mcp_list_tools", "listed-among-functions"],
)
def test_mcp_definitions_give_their_schemas(tools: Any) -> None:
    from scorers.agents.schemas import schemas

    assert schemas(tools)["search"] == SEARCH_SCHEMA
    scorer = scorers.get("ToolCallValid", tools=tools)
    mcp_call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "search", "arguments": {}}}
    scored = scorer(output=[mcp_call, {"type": "mcp_call", "name": "search", "arguments": '{"q": "x"}'}])
    assert scored.score == 0.5 and scored.metadata["invalid"][0]["error"] == "the arguments: 'q' is a required property"
    assert scored.metadata["invalid"][0]["kind"] == "mcp"
    assert scorers.get("ToolCallValid")(output=[{"name": "search", "args": {"q": "x"}}], tools=tools).score == 1.0


@pytest.mark.parametrize(
    ("tools", "problem"),
    [
        ({"jsonrpc": "2.0", "id": 2, "error": {"code": 1, "message": "x"}}, "is a JSON-RPC message with no result"),
        ({"tools": {"name": "search"}}, "must be a list of tool definitions or an MCP tools/list result, got dict"),
        ({"tools": [{"description": "no name"}]}, "tool 0 is not a tool definition with a name"),
    ],
)
def test_malformed_mcp_definitions_are_config_errors(tools: Any, problem: str) -> None:
    with pytest.raises(ConfigError) as caught:
        scorers.get("ToolCallValid", tools=tools)
    assert problem in str(caught.value)
