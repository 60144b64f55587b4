"""StepBudget and TokenBudget: one agent run of two model responses written in every format that carries usage,
each read to the same hand-computed steps, tool calls, tokens and cost; formats without usage, and usage with a
count missing, are the row's error naming the field and the format; the cost is exact."""

from __future__ import annotations

import json
from fractions import Fraction
from typing import Any, Callable

import pytest

from scorers import get
from scorers.agents import Usage, read_conversation
from scorers.errors import ConfigError, ScorerInputError
from tests.agents.test_readers import ANTHROPIC_MCP_MESSAGE, FORMATS, fixture

#: The run: two model responses; the first says something and calls two tools, the second answers. Each response's
#: input tokens include the cached ones ("cached").
RUN = [
    {
        "text": "Let me check.",
        "calls": [("c1", "get_weather", {"city": "Paris"}, "18C"), ("c2", "get_time", {"tz": "Europe/Paris"}, "21:05")],
        "input": 100,
        "cached": 40,
        "output": 20,
    },
    {"text": "It is 18C and 21:05 in Paris.", "calls": [], "input": 180, "cached": 100, "output": 30},
]
QUESTION = "Weather and time in Paris?"
#: Prices per million tokens, and the run's cost by hand: (280 - 140) x 3 + 140 x 0.3 + 50 x 15 = 1,212 per million.
PRICES = {"input": 3, "output": 15, "cache_read": 0.3}
WHOLE = {"steps": 2, "tool_calls": 2, "input": 280, "output": 50, "total": 330, "cached": 140, "cost": 0.001212}
#: The first response alone (the formats that hold one): 60 x 3 + 40 x 0.3 + 20 x 15 = 492 per million.
FIRST = {"steps": 1, "tool_calls": 2, "input": 100, "output": 20, "total": 120, "cached": 40, "cost": 0.000492}


def anthropic_messages() -> dict[str, Any]:
    """An Anthropic conversation whose assistant turns are the Messages the API returned, each with its usage
    (``input_tokens`` leaves out the cached ones)."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": QUESTION}]
    for index, response in enumerate(RUN):
        blocks = [{"type": "text", "text": response["text"]}]
        blocks += [{"type": "tool_use", "id": i, "name": n, "input": a} for i, n, a, _ in response["calls"]]
        usage = {
            "input_tokens": response["input"] - response["cached"],
            "cache_read_input_tokens": response["cached"],
            "cache_creation_input_tokens": 0,
            "output_tokens": response["output"],
        }
        messages.append(
            {"id": f"msg_{index}", "type": "message", "role": "assistant", "content": blocks, "usage": usage}
        )
        if response["calls"]:
            results = [{"type": "tool_result", "tool_use_id": i, "content": r} for i, _, _, r in response["calls"]]
            messages.append({"role": "user", "content": results})
    return {"system": "Be brief.", "messages": messages}


def langchain(usage: Callable[[dict[str, Any]], dict[str, Any]], serialised: bool = False) -> list[Any]:
    """LangChain messages (``model_dump`` form, or ``dumpd``'s), each AI message with ``usage(response)``."""
    messages: list[tuple[str, dict[str, Any]]] = [("human", {"content": QUESTION})]
    for response in RUN:
        calls = [{"name": n, "args": a, "id": i, "type": "tool_call"} for i, n, a, _ in response["calls"]]
        messages.append(("ai", {"content": response["text"], "tool_calls": calls, **usage(response)}))
        messages += [("tool", {"content": r, "tool_call_id": i}) for i, _, _, r in response["calls"]]
    if not serialised:
        return [{"type": kind, **fields} for kind, fields in messages]
    classes = {"human": "HumanMessage", "ai": "AIMessage", "tool": "ToolMessage"}
    return [
        {"lc": 1, "type": "constructor", "id": ["langchain", "schema", "messages", classes[kind]], "kwargs": fields}
        for kind, fields in messages
    ]


def usage_metadata(response: dict[str, Any]) -> dict[str, Any]:
    return {
        "usage_metadata": {
            "input_tokens": response["input"],
            "output_tokens": response["output"],
            "total_tokens": response["input"] + response["output"],
            "input_token_details": {"cache_read": response["cached"]},
        }
    }


def token_usage(response: dict[str, Any]) -> dict[str, Any]:
    """The provider's usage in ``response_metadata`` (OpenAI's, as langchain-openai keeps it), no usage_metadata."""
    usage = chat_usage(response)
    return {"response_metadata": {"token_usage": usage, "model_name": "gpt-4o"}}


def chat_usage(response: dict[str, Any]) -> dict[str, Any]:
    return {
        "prompt_tokens": response["input"],
        "completion_tokens": response["output"],
        "total_tokens": response["input"] + response["output"],
        "prompt_tokens_details": {"cached_tokens": response["cached"]},
    }


def _attribute(key: str, value: Any) -> dict[str, Any]:
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}
    return {"key": key, "value": {"stringValue": value if isinstance(value, str) else json.dumps(value)}}


def otlp() -> dict[str, Any]:
    """OpenTelemetry GenAI spans: an agent span whose usage totals its two inference spans' (not counted again),
    each inference span with its messages and usage, and a tool span per call."""
    spans = [
        {
            "name": "invoke_agent travel",
            "startTimeUnixNano": "1",
            "attributes": [
                _attribute("gen_ai.operation.name", "invoke_agent"),
                _attribute("gen_ai.usage.input_tokens", WHOLE["input"]),
                _attribute("gen_ai.usage.output_tokens", WHOLE["output"]),
            ],
        }
    ]
    history: list[dict[str, Any]] = [{"role": "user", "parts": [{"type": "text", "content": QUESTION}]}]
    for index, response in enumerate(RUN):
        parts = [{"type": "text", "content": response["text"]}]
        parts += [{"type": "tool_call", "id": i, "name": n, "arguments": a} for i, n, a, _ in response["calls"]]
        output = [{"role": "assistant", "parts": parts}]
        spans.append(
            {
                "name": "chat gpt-4o",
                "startTimeUnixNano": str(10 * (index + 1)),
                "attributes": [
                    _attribute("gen_ai.operation.name", "chat"),
                    _attribute("gen_ai.input.messages", history),
                    _attribute("gen_ai.output.messages", output),
                    _attribute("gen_ai.usage.input_tokens", response["input"]),
                    _attribute("gen_ai.usage.output_tokens", response["output"]),
                    _attribute("gen_ai.usage.cache_read.input_tokens", response["cached"]),
                ],
            }
        )
        history = history + output
        for i, n, a, r in response["calls"]:
            spans.append(
                {
                    "name": f"execute_tool {n}",
                    "startTimeUnixNano": str(10 * (index + 1) + 1),
                    "attributes": [
                        _attribute("gen_ai.operation.name", "execute_tool"),
                        _attribute("gen_ai.tool.name", n),
                        _attribute("gen_ai.tool.call.id", i),
                        _attribute("gen_ai.tool.call.arguments", a),
                        _attribute("gen_ai.tool.call.result", r),
                    ],
                }
            )
            history = history + [{"role": "tool", "parts": [{"type": "tool_call_response", "id": i, "response": r}]}]
    return {"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}


FIRST_RESPONSE = RUN[0]
CALLS = FIRST_RESPONSE["calls"]


def chat_completion() -> dict[str, Any]:
    calls = [{"id": i, "type": "function", "function": {"name": n, "arguments": json.dumps(a)}} for i, n, a, _ in CALLS]
    message = {"role": "assistant", "content": FIRST_RESPONSE["text"], "tool_calls": calls}
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": message}],
        "usage": chat_usage(FIRST_RESPONSE),
    }


def response() -> dict[str, Any]:
    text = {"type": "output_text", "text": FIRST_RESPONSE["text"], "annotations": []}
    output: list[dict[str, Any]] = [{"type": "message", "id": "msg_1", "role": "assistant", "content": [text]}]
    output += [
        {"type": "function_call", "id": f"fc_{i}", "call_id": i, "name": n, "arguments": json.dumps(a)}
        for i, n, a, _ in CALLS
    ]
    usage = {
        "input_tokens": FIRST_RESPONSE["input"],
        "input_tokens_details": {"cached_tokens": FIRST_RESPONSE["cached"], "cache_write_tokens": 0},
        "output_tokens": FIRST_RESPONSE["output"],
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": FIRST_RESPONSE["input"] + FIRST_RESPONSE["output"],
    }
    return {"id": "resp_1", "object": "response", "status": "completed", "output": output, "usage": usage}


def anthropic_message() -> dict[str, Any]:
    return anthropic_messages()["messages"][1]


#: Each format that carries usage, the run written in it, and the figures it holds.
WITH_USAGE: dict[str, tuple[Callable[[], Any], dict[str, Any]]] = {
    "anthropic-messages": (anthropic_messages, WHOLE),
    "langchain-usage_metadata": (lambda: langchain(usage_metadata), WHOLE),
    "langchain-serialised": (lambda: langchain(usage_metadata, serialised=True), WHOLE),
    "langchain-token_usage": (lambda: langchain(token_usage), WHOLE),
    "otlp": (otlp, WHOLE),
    "chat-completion": (chat_completion, FIRST),
    "response": (response, FIRST),
    "anthropic-message": (anthropic_message, FIRST),
}


@pytest.mark.parametrize("as_text", [False, True], ids=["value", "json-text"])
@pytest.mark.parametrize("name", WITH_USAGE)
def test_each_format_reads_to_the_hand_computed_figures(name: str, as_text: bool) -> None:
    write, figures = WITH_USAGE[name]
    value = json.dumps(write()) if as_text else write()
    usage = read_conversation(value, scorer="Test", field="output").usage
    assert usage is not None
    assert (usage.input_tokens, usage.output_tokens, usage.total_tokens, usage.cache_read_tokens) == (
        figures["input"],
        figures["output"],
        figures["total"],
        figures["cached"],
    )
    assert usage.responses == usage.reported == figures["steps"]
    steps = get("StepBudget", max_steps=figures["steps"], max_tool_calls=figures["tool_calls"])(output=value)
    assert steps.score == 1.0 and steps.metadata["steps"] == figures["steps"]
    assert steps.metadata["tool_calls"] == {"total": figures["tool_calls"], "function": figures["tool_calls"], "mcp": 0}
    assert get("StepBudget", max_steps=figures["steps"] - 1)(output=value).score == 0.0
    tokens = get("TokenBudget", max_total_tokens=figures["total"], max_cost=figures["cost"], prices=PRICES)
    scored = tokens(output=value)
    assert scored.score == 1.0 and scored.metadata["passed"] is True
    assert scored.metadata["cost"] == figures["cost"]  # exactly the hand-computed cost, at the budget: within it
    assert scored.metadata["usage"]["total_tokens"] == figures["total"]
    over = get("TokenBudget", max_total_tokens=figures["total"] - 1)(output=value)
    assert over.score == 0.0 and over.metadata["budgets"]["total_tokens"]["over"] is True


def test_the_cost_is_exact_where_float_sums_drift() -> None:
    million = {**chat_completion(), "usage": {"prompt_tokens": 10**6, "completion_tokens": 10**6}}
    assert 10**6 * 0.1 / 1e6 + 10**6 * 0.2 / 1e6 > 0.3  # in floats, 0.30000000000000004: over a budget of 0.3
    scorer = get("TokenBudget", max_cost=0.3, prices={"input": 0.1, "output": 0.2})
    scored = scorer(output=million)
    assert scored.score == 1.0 and scored.metadata["cost"] == 0.3  # the prices as written: exactly 0.3
    assert get("TokenBudget", max_cost=0.001211, prices=PRICES)(output=anthropic_messages()).score == 0.0


def test_cache_prices_default_to_the_input_price_and_cache_writes_have_their_own() -> None:
    # without a cache_read price the cached tokens cost the input price: 280 x 3 + 50 x 15 = 1,590 per million
    scored = get("TokenBudget", max_total_tokens=1_000, prices={"input": 3, "output": 15})(output=otlp())
    assert scored.metadata["cost"] == 0.00159
    # Anthropic: 60 read at 0.3, 100 written at 3.75, 40 uncached at 3, 20 out at 15 = 18 + 375 + 120 + 300
    message = anthropic_message()
    message["usage"] = {
        "input_tokens": 40,
        "cache_read_input_tokens": 60,
        "cache_creation_input_tokens": 100,
        "output_tokens": 20,
    }
    prices = {**PRICES, "cache_write": 3.75}
    scored = get("TokenBudget", max_input_tokens=200, prices=prices)(output=message)
    assert scored.metadata["usage"]["input_tokens"] == 200 and scored.metadata["cost"] == 0.000813


def test_the_graded_score_is_linear_from_the_budget_to_the_hard_limit() -> None:
    run = anthropic_messages()  # 330 tokens, 2 steps, 2 calls
    graded = get("TokenBudget", max_total_tokens=300, hard_limits={"total_tokens": 360})(output=run)
    assert graded.score == 0.5 and graded.metadata["passed"] is False
    assert graded.metadata["budgets"]["total_tokens"] == {
        "value": 330,
        "budget": 300,
        "hard_limit": 360,
        "over": True,
        "score": 0.5,
    }
    both = get("TokenBudget", max_input_tokens=300, max_total_tokens=300, hard_limits={"total_tokens": 360})
    assert both(output=run).score == 0.5  # the lowest of the quantities' scores
    past = get("TokenBudget", max_total_tokens=100, hard_limits={"total_tokens": 330})(output=run)
    assert past.score == 0.0  # at the hard limit and past it: 0
    cost = get("TokenBudget", max_cost=0.001, prices=PRICES, hard_limits={"cost": 0.0013})(output=run)
    assert cost.score == float(Fraction(13_000 - 12_120, 3_000))
    steps = get("StepBudget", max_steps=1, max_tool_calls=1, hard_limits={"steps": 3, "tool_calls": 4})
    scored = steps(output=run)  # steps: 2 of 1..3 scores 0.5; calls: 2 of 1..4 scores 2/3; the row the lower
    assert scored.score == 0.5 and scored.metadata["budgets"]["tool_calls"]["score"] == float(Fraction(2, 3))


@pytest.mark.parametrize("name", FORMATS)
def test_steps_and_tool_calls_of_every_reader_format(name: str) -> None:
    # the shared conversation of the reader tests: two assistant messages, three calls
    value = fixture(name)
    assert get("StepBudget", max_steps=2, max_tool_calls=3)(output=value).score == 1.0
    assert get("StepBudget", max_steps=1, hard_limits={"steps": 3})(output=value).score == 0.5
    graded = get("StepBudget", max_tool_calls=2, hard_limits={"tool_calls": 5})(output=value)
    assert graded.score == float(Fraction(2, 3)) and graded.metadata["budgets"]["tool_calls"]["value"] == 3


@pytest.mark.parametrize(
    ("value", "budget", "problem"),
    [
        (fixture("openai_chat.json"), {}, "carries no token usage, which max_total_tokens needs"),
        (fixture("openai_responses.json"), {}, "carries no token usage"),
        (fixture("anthropic.json"), {}, "carries no token usage"),
        (
            fixture("langchain.json"),
            {},
            "carries usage in 1 of its 2 model responses (LangChain usage_metadata): input_tokens would be "
            "undercounted",
        ),
        (
            fixture("otel_genai.json"),
            {},
            "has no output_tokens: its usage (OpenTelemetry gen_ai.usage attributes) has no gen_ai.usage.output_tokens",
        ),
        (
            {**chat_completion(), "usage": {"prompt_tokens": 10, "completion_tokens": 2}},
            {"cost": 1},
            "has no cache_read_tokens: its usage (ChatCompletion usage) has no prompt_tokens_details.cached_tokens",
        ),
        ({**chat_completion(), "usage": {"prompt_tokens": -1}}, {}, "at usage: usage prompt_tokens is -1, not a count"),
        ({**chat_completion(), "usage": {"prompt_tokens": True}}, {}, "at usage: usage prompt_tokens is True, not a"),
    ],
    ids=[
        "chat",
        "responses-items",
        "anthropic-request",
        "langchain-partial",
        "otel-no-output",
        "no-cache",
        "neg",
        "bool",
    ],
)
def test_usage_a_format_lacks_is_the_rows_error_naming_field_and_format(value: Any, budget: Any, problem: str) -> None:
    scorer = get("TokenBudget", max_total_tokens=1_000, prices=PRICES)
    with pytest.raises(ScorerInputError) as caught:
        scorer(output=value, budget=budget)
    assert caught.value.field == "output" and caught.value.problem.startswith(problem), caught.value.problem


def test_only_the_counts_a_budget_needs_are_required() -> None:
    # the trace has no output tokens, but the input tokens are budgeted alone: 120 + 190
    scored = get("TokenBudget", max_input_tokens=310)(output=fixture("otel_genai.json"))
    assert scored.score == 1.0 and scored.metadata["usage"]["input_tokens"] == 310
    assert scored.metadata["cost"] is None


def test_a_rows_budget_is_over_the_scorers() -> None:
    run = anthropic_messages()
    scorer = get("StepBudget", max_steps=5)
    assert scorer(output=run).score == 1.0
    assert scorer(output=run, budget={"steps": 1}).score == 0.0
    assert get("StepBudget")(output=run, budget={"tool_calls": 2}).metadata["budgets"] == {
        "tool_calls": {"value": 2, "budget": 2, "hard_limit": None, "over": False, "score": 1.0}
    }


@pytest.mark.parametrize(
    ("name", "row", "problem"),
    [
        ("StepBudget", None, "is required: no budget is given (set max_steps, max_tool_calls on the scorer"),
        ("StepBudget", {"tokens": 3}, "names 'tokens': accepted: steps, tool_calls"),
        ("StepBudget", {"steps": -1}, "gives 'steps' -1, not a finite number >= 0"),
        ("StepBudget", {"steps": True}, "gives 'steps' True, not a finite number >= 0"),
        ("TokenBudget", {"cost": 1}, "budgets the cost, which needs prices"),
    ],
)
def test_a_missing_or_wrong_row_budget_is_the_rows_error(name: str, row: Any, problem: str) -> None:
    with pytest.raises(ScorerInputError) as caught:
        get(name)(output=anthropic_messages(), budget=row)
    assert caught.value.field == "budget" and caught.value.problem.startswith(problem), caught.value.problem


def test_a_row_budget_at_its_hard_limit_is_the_rows_error() -> None:
    with pytest.raises(ScorerInputError, match=r"gives 'steps' 3, not below its hard limit 3 \(hard_limits\)"):
        get("StepBudget", hard_limits={"steps": 3})(output=anthropic_messages(), budget={"steps": 3})


@pytest.mark.parametrize(
    ("name", "settings", "problem"),
    [
        ("StepBudget", {"hard_limits": {"cost": 2}}, "hard_limits names 'cost': accepted: steps, tool_calls"),
        ("StepBudget", {"max_steps": 3, "hard_limits": {"steps": 3}}, "the hard limit of 'steps' (3) must be above"),
        ("StepBudget", {"max_steps": -1}, "max_steps must be"),
        ("StepBudget", {"hard_limits": {"steps": float("nan")}}, "the hard limit of 'steps' must be a finite number"),
        ("TokenBudget", {"hard_limits": {"cost": float("inf")}}, "the hard limit of 'cost' must be a finite number"),
        ("TokenBudget", {"prices": {"input": 1, "output": 2, "audio": 3}}, "prices names 'audio': accepted"),
        ("TokenBudget", {"prices": {"input": 1}}, "prices must give both input and output"),
        ("TokenBudget", {"prices": {"input": 1, "output": float("nan")}}, "prices['output'] must be a finite"),
        ("TokenBudget", {"max_cost": 1.0}, "max_cost needs prices"),
    ],
)
def test_wrong_settings_are_config_errors(name: str, settings: dict[str, Any], problem: str) -> None:
    with pytest.raises(ConfigError, match=problem.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
        get(name, **settings)


def test_mcp_calls_count_as_tool_calls_and_their_results_follow_their_step() -> None:
    scored = get("StepBudget", max_steps=1, max_tool_calls=1)(output=ANTHROPIC_MCP_MESSAGE)
    assert scored.score == 1.0 and scored.metadata["tool_calls"] == {"total": 1, "function": 0, "mcp": 1}


def test_usage_sums_once_per_response_and_says_what_it_lacks() -> None:
    one = Usage(10, 2, None, 0, source="a")
    two = one + Usage(5, 1, 3, 0, source="b")
    assert (two.input_tokens, two.output_tokens, two.cache_read_tokens, two.cache_write_tokens) == (15, 3, None, 0)
    assert two.responses == 2 and two.source == "a, b"
    read = read_conversation(langchain(usage_metadata), scorer="Test", field="output")
    assert read == read_conversation(langchain(lambda _: {}), scorer="Test", field="output")  # usage not compared
