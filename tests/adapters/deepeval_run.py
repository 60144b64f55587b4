"""Runs ``deepeval.evaluate`` with our metrics inside DeepEval's venv; driven by tests/adapters/test_deepeval.py.

Usage: ``python deepeval_run.py SCENARIO OUT.json``. Writes what DeepEval returned
(each test result: name, success and its metrics' data), or, when ``evaluate``
raised, the error's type names and message. DeepEval is imported inside the functions: our own suite collects this
file for doctests (``--doctest-modules``) in the main environment, which has no DeepEval.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from scorers import Field, Score, Scorer, references_field, text_field
from scorers.adapters.deepeval import MissingTestCaseFieldError, conversational_metric, metric
from scorers.agents.tool_calls import ToolCallMatch

QUESTIONS = [
    ("Capital of France?", "Paris", "Paris"),
    ("Capital of Italy?", "Roma", "Rome"),
    ("Largest planet?", "Saturn", "Jupiter"),
]


class Grounded(Scorer):
    """1 when the output appears in one of the retrieved chunks (a scorer that reads ``context``, as RAG judges do)."""

    fields = (text_field("output"), references_field("context"))

    def _score(self, *, output, context):
        return self.make_score(float(any(output in chunk for chunk in context)), chunks=list(context))


class Transcript(Scorer):
    """Scores 1 and keeps in its metadata the conversation and the role it was given (what the turns became)."""

    fields = (Field("conversation", (list,)), text_field("role"))

    def _score(self, *, conversation: list[Any], role: str) -> Score:
        return self.make_score(1.0, conversation=conversation, role=role)


WEATHER_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        },
    }
]


def run(cases: list, metrics: list, **config: Any) -> list[dict[str, Any]]:
    from deepeval import evaluate
    from deepeval.evaluate.configs import DisplayConfig

    result = evaluate(cases, metrics, display_config=DisplayConfig(show_indicator=False, print_results=False), **config)
    return [
        {
            "name": t.name,
            "success": t.success,
            "input": t.input,
            "metrics": [
                {
                    "name": m.name,
                    "score": m.score,
                    "success": m.success,
                    "reason": m.reason,
                    "error": m.error,
                    "threshold": m.threshold,
                    "strict_mode": m.strict_mode,
                    "evaluation_model": m.evaluation_model,
                    "verbose_logs": m.verbose_logs,
                }
                for m in t.metrics_data or []
            ],
        }
        for t in result.test_results
    ]


def scenario(name: str) -> Any:
    from deepeval.evaluate.configs import AsyncConfig, ErrorConfig
    from deepeval.test_case import LLMTestCase
    from deepeval.test_case.llm_test_case import RetrievedContextData

    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from tests.adapters import OnlyCapitals  # the skipping scorer the adapter tests share

    CASES = [LLMTestCase(input=q, actual_output=o, expected_output=e) for q, o, e in QUESTIONS]
    NO_EXPECTED = [LLMTestCase(input="Capital of Italy?", actual_output="Roma")]
    if name == "scores":  # run_async (DeepEval's default) calls a_measure
        return run(CASES, [metric("ExactMatch"), metric("Levenshtein", threshold=0.7), metric(OnlyCapitals())])
    if name == "scores_sync":  # AsyncConfig(run_async=False) calls measure
        return run(
            CASES,
            [metric("ExactMatch"), metric("Levenshtein", threshold=0.7), metric(OnlyCapitals())],
            async_config=AsyncConfig(run_async=False),
        )
    if name == "strict":
        return run(
            CASES, [metric("Levenshtein", strict_mode=True, verbose_mode=True), metric("ExactMatch", ignore_case=True)]
        )
    if name == "fields":  # the reference from the metadata, the input from another attribute
        case = LLMTestCase(input="q", actual_output="Rome", metadata={"gold": {"answer": "Rome"}})
        return run([case], [metric("ExactMatch", fields={"expected": "metadata.gold.answer"})])
    if name == "missing_ignored":
        return run(NO_EXPECTED, [metric("ExactMatch")], error_config=ErrorConfig(ignore_errors=True))
    if name == "missing_skipped":
        return run(
            NO_EXPECTED,
            [metric("ExactMatch"), metric(OnlyCapitals())],
            error_config=ErrorConfig(skip_on_missing_params=True),
        )
    if name == "missing_raised":
        return run(NO_EXPECTED, [metric("ExactMatch")])
    if name == "context":  # retrieval_context by default, as text or RetrievedContextData; context on request
        case = LLMTestCase(
            input="q",
            actual_output="Paris",
            context=["Rome is in Italy."],
            retrieval_context=[
                "Lyon is in France.",
                RetrievedContextData(context="Paris is in France.", source="atlas"),
            ],
        )
        return run(
            [case], [metric(Grounded()), metric(Grounded(name="GroundedInContext"), fields={"context": "context"})]
        )
    if name == "pickle":  # the missing-field error crosses process boundaries intact
        import pickle

        try:
            metric("ExactMatch").measure(NO_EXPECTED[0])
        except MissingTestCaseFieldError as exc:
            back = pickle.loads(pickle.dumps(exc))
            return [
                type(back).__name__,
                str(back),
                back.field,
                back.attribute,
                back.scorer,
                [c.__name__ for c in type(back).__mro__],
            ]
        raise AssertionError("no error")
    if name == "config_errors":  # mistakes in metric()'s arguments, found before anything runs
        found = []
        for kwargs in ({"fields": {"criteria": "input"}}, {"fields": {"expected": "answer"}}, {"threshold": 2}):
            try:
                metric("ExactMatch", **kwargs)
            except Exception as exc:
                found.append([type(exc).__name__, str(exc)])
        return found
    if name == "judge":
        return run(CASES[:2], [metric("Factuality")])
    if name.startswith(("tool_calls", "conversation")):
        return agent_scenario(name)
    raise SystemExit(f"unknown scenario {name!r}")


def agent_scenario(name: str) -> Any:
    """Tool calls of an LLMTestCase, the turns of a ConversationalTestCase."""
    from deepeval.evaluate.configs import ErrorConfig
    from deepeval.test_case import ConversationalTestCase, LLMTestCase, ToolCall, Turn

    paris, rome = (
        ToolCall(name="get_weather", input_parameters={"city": "Paris"}),
        ToolCall(name="get_weather", input_parameters={"city": "Rome"}),
    )
    if name == "tool_calls":  # an extra call (search), the expected ones in another order
        case = LLMTestCase(
            input="Weather in Paris and Rome?",
            actual_output="18C in Paris, 21C in Rome.",
            tools_called=[paris, ToolCall(name="search", input_parameters={"q": "Rome"}, output="..."), rome],
            expected_tools=[rome, paris],
            metadata={"tools": WEATHER_TOOLS},
        )
        no_calls = LLMTestCase(
            input="Hi", actual_output="Hello!", tools_called=[], expected_tools=[], metadata={"tools": WEATHER_TOOLS}
        )
        return run(
            [case, no_calls],
            [
                metric("ToolCallMatch", verbose_mode=True),
                metric(ToolCallMatch(extra_calls="ignore", name="ToolCallRecall")),
                metric("ToolCallF1"),
                metric("TrajectoryMatch", mode="superset"),
                metric("ToolCallValid", fields={"tools": "metadata.tools"}),
            ],
        )
    if name == "tool_calls_missing":  # no tools_called: DeepEval's missing-parameter error, recorded
        case = LLMTestCase(input="Weather?", actual_output="Sunny.", expected_tools=[paris])
        return run([case], [metric("ToolCallMatch")], error_config=ErrorConfig(ignore_errors=True))
    turns = [
        Turn(role="user", content="Weather in Paris?"),
        Turn(
            role="assistant",
            content="18C and cloudy.",
            tools_called=[ToolCall(name="get_weather", input_parameters={"city": "Paris"}, output={"temp": 18})],
        ),
        Turn(role="user", content="Thanks!"),
        Turn(role="assistant", content="", tools_called=[ToolCall(name="log_thanks")]),
    ]
    case = ConversationalTestCase(
        turns=turns,
        scenario="A user asks for the weather.",
        chatbot_role="a travel assistant",
        metadata={"expected_tools": [paris, ToolCall(name="log_thanks")]},
    )
    if name == "conversation":
        return run(
            [case],
            [
                conversational_metric("ToolCallMatch", fields={"expected": "metadata.expected_tools"}),
                conversational_metric("ToolCallF1", fields={"expected": "metadata.expected_tools"}),
                conversational_metric(Transcript(), verbose_mode=True),
            ],
        )
    if name == "conversation_missing":  # ToolCallMatch's expected calls are nowhere by default
        return run([case], [conversational_metric("ToolCallMatch")], error_config=ErrorConfig(ignore_errors=True))
    if name == "conversation_judge":  # a template with a conversation field, over LoopbackLLM
        from scorers.judges.discovery import add_template_dir

        Path("templates").mkdir()
        Path("templates/conversation_helpful.yaml").write_text(
            "fields: {conversation: conversation}\n"
            "prompt: |\n  {{conversation}}\n  Did the assistant help the user?\n"
            'choice_scores: {"Y": 1, "N": 0}\n'
        )
        add_template_dir("templates")
        return run([case], [conversational_metric("ConversationHelpful")])
    raise SystemExit(f"unknown scenario {name!r}")


def main() -> None:
    name, out = sys.argv[1], Path(sys.argv[2])
    try:
        result: Any = {"results": scenario(name)}
    except Exception as exc:  # what evaluate raised: the test checks its types and message
        result = {"raised": [c.__module__ + "." + c.__qualname__ for c in type(exc).__mro__], "message": str(exc)}
    out.write_text(json.dumps(result))


if __name__ == "__main__":
    main()
