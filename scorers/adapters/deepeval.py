"""DeepEval adapter: our scorers and judges as DeepEval metrics, for ``deepeval.evaluate`` and ``assert_test``.

:func:`metric` returns a ``deepeval.metrics.BaseMetric`` that scores a test
case with one of our scorers::

    from deepeval import assert_test, evaluate
    from deepeval.test_case import LLMTestCase
    from scorers.adapters.deepeval import metric

    case = LLMTestCase(input="Capital of Italy?", actual_output="Roma", expected_output="Rome")
    evaluate([case], [metric("Levenshtein", threshold=0.7), metric("Factuality")])
    assert_test(case, [metric("Levenshtein", threshold=0.7)])      # inside a pytest test

(``tests/adapters/test_deepeval.py`` runs this, and docs/adapters.md's example, in
DeepEval's own virtual environment.)

Agents and conversations: for a scorer that reads tool calls (``ToolCallMatch``,
``TrajectoryMatch``, ``ToolCallValid``, ``ToolCallF1``) our ``output`` and
``expected`` come from the test case's ``tools_called`` and ``expected_tools``
(each DeepEval ``ToolCall`` as our :class:`~scorers.agents.model.ToolCall`: its
name, and its ``input_parameters`` as the arguments). :func:`conversational_metric`
is a ``BaseConversationalMetric`` for a ``ConversationalTestCase``: its ``turns``
reach the scorer's conversation field as OpenAI chat messages (an assistant
turn's ``tools_called`` as a message of calls and the tool messages of their
``output``, before the turn's reply).

Fields come from the test case: our ``input``, ``output`` and ``expected`` from
``input``, ``actual_output`` and ``expected_output``, and a scorer that reads
``context`` (the RAG judges) gets ``retrieval_context``, the chunks your
retriever returned (a ``RetrievedContextData`` chunk as its ``context``
text). ``fields={"criteria": "metadata.rubric", "context": "context"}`` maps
any other field, or overrides those, to a test case attribute or a dotted path
into one (``metadata.rubric``).

What DeepEval shows, per metric of a test case (``metrics_data`` in
``evaluate``'s results, the message of ``assert_test``):

- ``score``: our score; ``success``: score at or above ``threshold``
  (``strict_mode=True``: threshold 1 and a score below it becomes 0, as
  DeepEval's own metrics do); ``reason``: the comparison with the threshold,
  followed by a judge's rationale; ``evaluation_model``: a judge's model. The
  score's metadata is the metric's ``score_breakdown`` (and its verbose log
  with ``verbose_mode=True``).
- A skipped score (the scorer does not apply to the test case) is
  ``score=None``, ``success=False``, with a reason that starts with
  ``skipped``: never a made-up number, and not a pass (as ``assert_score``).
- A required field the test case lacks (``expected_output=None`` for
  ``ExactMatch``) raises :class:`MissingTestCaseFieldError`, which is both our
  :class:`~scorers.errors.ScorerInputError` and DeepEval's
  ``MissingTestCaseParamsError``, so DeepEval treats it as it treats its own
  metrics: it stops ``evaluate`` / fails ``assert_test`` by default, becomes
  the metric's ``error`` with ``ErrorConfig(ignore_errors=True)``, and leaves
  the metric out with ``ErrorConfig(skip_on_missing_params=True)``.
- Any other :class:`~scorers.errors.ScorerError` (bad input, a judge that gave
  up) is raised the same way: it propagates by default, and with
  ``ignore_errors=True`` DeepEval records the error's message as the metric's
  ``error`` (prefixed with its type on the ``run_async=False`` path), with
  ``score=None`` and ``success=False``.
- A :class:`~scorers.errors.ConfigError` such as an unknown scorer name is
  raised by :func:`metric` itself, before DeepEval runs anything.

DeepEval itself is imported only when a metric is built; without it,
:func:`metric` raises :class:`~scorers.errors.MissingExtraError` naming ``pip
install 'scorers[deepeval]'``. The error for a missing field reads:

>>> print(MissingTestCaseFieldError("ExactMatch", "expected", "expected_output"))
ExactMatch: field 'expected' is required but the test case has no expected_output (set LLMTestCase(expected_output=...))
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import TYPE_CHECKING, Any, ClassVar, Mapping, NamedTuple, cast

from .._util import ABSENT, is_number, lookup
from ..agents.model import ToolCall, freeze
from ..base import Scorer
from ..errors import ConfigError, MissingExtraError, ScorerInputError, _rebuild
from ..score import Score
from .common import build_scorer, check_field, conversation_field, reads_calls

if TYPE_CHECKING:
    from deepeval.metrics import BaseConversationalMetric, BaseMetric

__all__ = [
    "CONVERSATIONAL_FIELDS",
    "DEFAULT_FIELDS",
    "TOOL_CALL_FIELDS",
    "MissingTestCaseFieldError",
    "conversational_metric",
    "metric",
    "metric_class",
]

#: Our field -> the ``LLMTestCase`` attribute it is read from, unless ``fields=`` says otherwise
#: (``context`` only for scorers that read it).
DEFAULT_FIELDS = {
    "input": "input",
    "output": "actual_output",
    "expected": "expected_output",
    "context": "retrieval_context",
}
#: The same for a scorer that reads tool calls in its ``output`` (``ToolCallMatch`` and its family).
TOOL_CALL_FIELDS = {"input": "input", "output": "tools_called", "expected": "expected_tools"}
#: Our field -> the ``ConversationalTestCase`` attribute, for :func:`conversational_metric` (each only for a
#: scorer that reads it); ``turns``, the conversation, goes to the scorer's conversation field (see
#: :func:`conversational_metric`). A scorer that reads tool calls gets the turns as its ``output`` and nothing else.
CONVERSATIONAL_FIELDS = {
    "input": "scenario",
    "expected": "expected_outcome",
    "context": "context",
    "role": "chatbot_role",
}


def metric(
    scorer: Scorer | str,
    threshold: float = 0.5,
    *,
    fields: Mapping[str, str] | None = None,
    strict_mode: bool = False,
    async_mode: bool = True,
    verbose_mode: bool = False,
    **params: Any,
) -> BaseMetric:
    """A DeepEval metric scoring with ``scorer`` (an instance, or a registered name built with ``params``).

    ``threshold`` is the score a test case needs to pass (DeepEval's usual
    default, 0.5); ``fields`` maps our fields to test case attributes (see the
    module's docstring). Needs ``deepeval`` (``pip install 'scorers[deepeval]'``).
    """
    scorer = build_scorer(scorer, params)  # the name is resolved before DeepEval is needed
    return metric_class()(
        scorer,
        threshold=threshold,
        fields=dict(fields or {}),
        strict_mode=strict_mode,
        async_mode=async_mode,
        verbose_mode=verbose_mode,
    )


def conversational_metric(
    scorer: Scorer | str,
    threshold: float = 0.5,
    *,
    fields: Mapping[str, str] | None = None,
    strict_mode: bool = False,
    async_mode: bool = True,
    verbose_mode: bool = False,
    **params: Any,
) -> BaseConversationalMetric:
    """A DeepEval conversational metric (for a ``ConversationalTestCase``) scoring with ``scorer``.

    The test case's ``turns`` go to the scorer's conversation field: the first field its template declares a
    conversation, else its field ``conversation``, else ``thread``, else ``output`` (a tool-call scorer reads
    the calls in them); :data:`CONVERSATIONAL_FIELDS` gives the others. ``fields`` maps any field to a test case
    attribute or a dotted path into one (``{"expected": "metadata.expected_tools"}``); the rest is as
    :func:`metric`.
    """
    scorer = build_scorer(scorer, params)
    return _classes()[2](
        scorer,
        threshold=threshold,
        fields=dict(fields or {}),
        strict_mode=strict_mode,
        async_mode=async_mode,
        verbose_mode=verbose_mode,
    )


class _DeepEval(NamedTuple):
    """The DeepEval types the adapter builds on or reads (``Any``: DeepEval is not a dependency)."""

    base_metric: Any
    base_conversational_metric: Any
    missing_params: Any
    llm_test_case: Any
    conversational_test_case: Any
    retrieved: Any
    tool_call: Any


def _deepeval() -> _DeepEval:
    try:
        from deepeval.errors import MissingTestCaseParamsError
        from deepeval.metrics import BaseConversationalMetric, BaseMetric
        from deepeval.test_case import ConversationalTestCase, LLMTestCase
        from deepeval.test_case import ToolCall as DeepEvalToolCall
        from deepeval.test_case.llm_test_case import RetrievedContextData
    except ImportError as exc:
        raise MissingExtraError("the DeepEval adapter", "deepeval", "deepeval") from exc
    return _DeepEval(
        BaseMetric,
        BaseConversationalMetric,
        MissingTestCaseParamsError,
        LLMTestCase,
        ConversationalTestCase,
        RetrievedContextData,
        DeepEvalToolCall,
    )


class MissingTestCaseFieldError(ScorerInputError):
    """A field the scorer requires is absent from the test case (raised as a subclass that is also DeepEval's
    ``MissingTestCaseParamsError``, built on first use; catch this class or DeepEval's). ``attribute`` is where
    the field was looked for, ``None`` when no attribute is mapped to it."""

    def __init__(self, scorer: str, field: str, attribute: str | None, test_case: str = "LLMTestCase") -> None:
        if attribute is None:
            problem = f"is required but no {test_case} attribute is mapped to it (map it with fields=)"
        else:
            problem = (
                f"is required but the test case has no {attribute} "
                f"(set {test_case}({attribute.split('.')[0]}=...)"
                f"{' or map the field with fields=' if field not in DEFAULT_FIELDS else ''})"
            )
        super().__init__(scorer, field, problem)
        self.attribute = attribute


def metric_class() -> type:
    """The ``BaseMetric`` subclass :func:`metric` builds (DeepEval is imported here, on first use)."""
    return _classes()[0]


class _ScorerMetric:
    """What both metric classes do: read the scorer's fields from a test case, score, and record the result
    where DeepEval reads it. Mixed into DeepEval's base classes by :func:`_classes`."""

    #: Set by each class :func:`_classes` builds.
    _conversational: ClassVar[bool]
    _test_case: ClassVar[str]
    _an_attribute: ClassVar[str]
    _attributes: ClassVar[frozenset[str]]
    _types: ClassVar[_DeepEval]
    _missing: ClassVar[type[MissingTestCaseFieldError]]

    score: float | None
    reason: str | None
    success: bool | None
    error: str | None
    score_breakdown: Any
    verbose_logs: str | None
    evaluation_model: str | None

    # DeepEval copies a metric before each run as type(m)(**{name: vars(m)[name] for each __init__
    # parameter}): every argument is kept under an attribute of the same name.
    def __init__(
        self,
        scorer: Scorer,
        threshold: float = 0.5,
        fields: dict[str, str] | None = None,
        strict_mode: bool = False,
        async_mode: bool = True,
        verbose_mode: bool = False,
    ) -> None:
        if not isinstance(scorer, Scorer):
            raise ConfigError(f"not a scorer: {scorer!r}")
        if not is_number(threshold) or not 0 <= threshold <= 1:
            raise ConfigError(f"{scorer.name}: threshold must be a number in [0, 1], got {threshold!r}")
        self.scorer = scorer
        self.threshold = 1.0 if strict_mode else float(threshold)
        self.fields = dict(fields or {})
        self.strict_mode = strict_mode
        self.async_mode = async_mode
        self.verbose_mode = verbose_mode
        self.include_reason = True
        for name, path in self.fields.items():
            check_field(
                scorer,
                name,
                path,
                valid=isinstance(path, str) and path.split(".")[0] in self._attributes,
                wanted=f"name {self._an_attribute} or a dotted path into one ({', '.join(sorted(self._attributes))})",
            )
        self._paths = {**_default_paths(scorer, self._conversational), **self.fields}

    @property
    def __name__(self) -> str:  # DeepEval names the metric's results after it
        return self.scorer.name

    def _arguments(self, test_case: Any) -> dict[str, Any]:
        values = {name: _read(test_case, path, self._types) for name, path in self._paths.items()}
        for f in self.scorer.fields:
            value = values.get(f.name, ABSENT)
            if f.required and not f.nullable and (value is None or value is ABSENT):
                raise self._missing(self.scorer.name, f.name, self._paths.get(f.name), self._test_case)
        return {name: value for name, value in values.items() if value is not ABSENT}

    # DeepEval passes _show_indicator and _in_component to every metric; ours shows no progress indicator
    def measure(self, test_case: Any, _show_indicator: bool = True, _in_component: bool = False) -> float | None:
        self._reset()
        return self._record(self.scorer(**self._arguments(test_case)))

    async def a_measure(
        self, test_case: Any, _show_indicator: bool = True, _in_component: bool = False
    ) -> float | None:
        self._reset()
        return self._record(await self.scorer.acall(**self._arguments(test_case)))

    def is_successful(self) -> bool:
        if self.error is not None:  # set by DeepEval when it catches what measure raised (ignore_errors)
            self.success = False
        return bool(self.success)

    def _reset(self) -> None:
        self.score = self.reason = self.success = self.error = self.score_breakdown = self.verbose_logs = None

    def _record(self, score: Score) -> float | None:
        metadata = score.metadata
        self.score_breakdown = metadata
        model = metadata.get("signature", {}).get("model")
        self.evaluation_model = model if isinstance(model, str) else None
        if self.verbose_mode:
            self.verbose_logs = json.dumps(metadata, ensure_ascii=False, indent=2, default=str)
        if score.score is None:
            why = metadata.get("reason")
            self.score, self.success = None, False
            self.reason = f"skipped: {score.name} does not apply to this test case" + (f" ({why})" if why else "")
            return None
        value = score.score
        if self.strict_mode and value < self.threshold:
            value = 0.0
        self.score, self.success = value, value >= self.threshold
        reason = f"{score.name} {score.score:.3f} {'>=' if self.success else '<'} {self.threshold:g}"
        rationale = metadata.get("rationale")
        self.reason = f"{reason}: {rationale}" if isinstance(rationale, str) and rationale else reason
        return value

    def __repr__(self) -> str:
        kind = "conversational metric" if self._conversational else "metric"
        return f"DeepEval {kind} for {self.scorer!r} (threshold={self.threshold:g})"


@lru_cache(maxsize=None)
def _classes() -> tuple[type, type, type]:
    """The metric class, the missing-field error that is also DeepEval's, and the conversational metric class,
    built once DeepEval is imported."""
    types = _deepeval()

    class MissingField(MissingTestCaseFieldError, types.missing_params):  # type: ignore[misc, name-defined]
        __doc__ = MissingTestCaseFieldError.__doc__

        def __reduce__(self) -> tuple[Any, ...]:  # a class made at run time: pickled through the function that makes it
            return _rebuild_missing_field, (self.args, self.__dict__)

    MissingField.__name__ = MissingField.__qualname__ = "MissingTestCaseFieldError"

    class ScorerMetric(_ScorerMetric, types.base_metric):  # type: ignore[misc, name-defined]
        """One of our scorers as a DeepEval metric; build it with :func:`scorers.adapters.deepeval.metric`."""

        _conversational = False
        _test_case = "LLMTestCase"
        _an_attribute = "an LLMTestCase attribute"
        _attributes = frozenset(types.llm_test_case.model_fields)
        _types = types
        _missing = MissingField

    class ConversationalScorerMetric(_ScorerMetric, types.base_conversational_metric):  # type: ignore[misc, name-defined]
        """One of our scorers as a DeepEval conversational metric; build it with
        :func:`scorers.adapters.deepeval.conversational_metric`."""

        _conversational = True
        _test_case = "ConversationalTestCase"
        _an_attribute = "a ConversationalTestCase attribute"
        _attributes = frozenset(types.conversational_test_case.model_fields)
        _types = types
        _missing = MissingField

    return ScorerMetric, MissingField, ConversationalScorerMetric


def _rebuild_missing_field(args: tuple[Any, ...], state: dict[str, Any]) -> MissingTestCaseFieldError:
    return cast(MissingTestCaseFieldError, _rebuild(_classes()[1], args, state))


def _default_paths(scorer: Scorer, conversational: bool) -> dict[str, str]:
    """Our field -> the test case attribute it is read from when ``fields=`` does not say."""
    calls = reads_calls(scorer)
    if conversational:
        turns_to = conversation_field(scorer) or "output"
        defaults = {"output": "turns"} if calls else {**CONVERSATIONAL_FIELDS, turns_to: "turns"}
    else:
        defaults = TOOL_CALL_FIELDS if calls else DEFAULT_FIELDS
    accepted = scorer.accepted_fields()
    return {name: path for name, path in defaults.items() if name in accepted}


def _read(test_case: Any, path: str, types: _DeepEval) -> Any:
    """The value at an attribute of the test case or a dotted path into one: retrieved chunks as their text,
    DeepEval tool calls as ours, a conversational test case's turns as OpenAI chat messages."""
    root, _, rest = path.partition(".")
    value = _plain(getattr(test_case, root, None), types)
    if root == "turns" and isinstance(test_case, types.conversational_test_case):
        value = _messages(value)
    if not rest or value is None:
        return value
    if hasattr(value, "model_dump"):
        value = value.model_dump()
    return _plain(lookup(cast(Mapping[str, Any], value), rest), types) if isinstance(value, (Mapping, list)) else ABSENT


def _plain(value: Any, types: _DeepEval) -> Any:
    """A ``RetrievedContextData`` as its text, a DeepEval ``ToolCall`` as ours (name and ``input_parameters``);
    the items of a list the same way; anything else as it is."""
    if isinstance(value, list):
        return [_plain(item, types) for item in value]
    if isinstance(value, types.retrieved):
        return value.context
    if isinstance(value, types.tool_call):
        return ToolCall(value.name, freeze(value.input_parameters or {}))
    return value


def _messages(turns: list[Any]) -> list[dict[str, Any]]:
    """DeepEval turns as OpenAI chat messages: a turn's ``tools_called`` become an assistant message of calls
    (ids ``turn{i}.{j}``) and a tool message for each call with an ``output``, then comes the turn's content."""
    messages: list[dict[str, Any]] = []
    for index, turn in enumerate(turns):
        calls = [(f"turn{index}.{number}", call) for number, call in enumerate(turn.tools_called or [])]
        if calls:
            messages.append(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": id_,
                            "type": "function",
                            "function": {"name": c.name, "arguments": c.input_parameters or {}},
                        }
                        for id_, c in calls
                    ],
                }
            )
            messages += [
                {"role": "tool", "tool_call_id": id_, "content": _result(c.output)}
                for id_, c in calls
                if c.output is not None
            ]
        if turn.content or not calls:
            messages.append({"role": turn.role, "content": turn.content})
    return messages


def _result(output: Any) -> str:
    """A tool's output as the text of its tool message (JSON for anything but text)."""
    return output if isinstance(output, str) else json.dumps(output, ensure_ascii=False, default=str)
