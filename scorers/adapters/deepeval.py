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
from typing import TYPE_CHECKING, Any, Mapping

from .._util import ABSENT, is_number, lookup
from ..base import Scorer
from ..errors import ConfigError, MissingExtraError, ScorerInputError, _rebuild
from ..score import Score
from ._common import build_scorer, check_field

if TYPE_CHECKING:
    from deepeval.metrics import BaseMetric
    from deepeval.test_case import LLMTestCase

__all__ = ["DEFAULT_FIELDS", "MissingTestCaseFieldError", "metric", "metric_class"]

#: Our field -> the ``LLMTestCase`` attribute it is read from, unless ``fields=`` says otherwise
#: (``context`` only for scorers that read it).
DEFAULT_FIELDS = {
    "input": "input",
    "output": "actual_output",
    "expected": "expected_output",
    "context": "retrieval_context",
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


def _deepeval() -> tuple[type, type, type, type]:
    try:
        from deepeval.errors import MissingTestCaseParamsError
        from deepeval.metrics import BaseMetric
        from deepeval.test_case import LLMTestCase
        from deepeval.test_case.llm_test_case import RetrievedContextData
    except ImportError as exc:
        raise MissingExtraError("the DeepEval adapter", "deepeval", "deepeval") from exc
    return BaseMetric, MissingTestCaseParamsError, LLMTestCase, RetrievedContextData


class MissingTestCaseFieldError(ScorerInputError):
    """A field the scorer requires is absent from the test case (raised as a subclass that is also DeepEval's
    ``MissingTestCaseParamsError``, built on first use; catch this class or DeepEval's)."""

    def __init__(self, scorer: str, field: str, attribute: str) -> None:
        super().__init__(
            scorer,
            field,
            f"is required but the test case has no {attribute} "
            f"(set LLMTestCase({attribute.split('.')[0]}=...)"
            f"{' or map the field with fields=' if field not in DEFAULT_FIELDS else ''})",
        )
        self.attribute = attribute


def metric_class() -> type:
    """The ``BaseMetric`` subclass :func:`metric` builds (DeepEval is imported here, on first use)."""
    return _classes()[0]


@lru_cache(maxsize=None)
def _classes() -> tuple[type, type]:
    """The metric class and the missing-field error that is also DeepEval's, built once DeepEval is imported."""
    base_metric, missing_params, test_case_type, retrieved_type = _deepeval()
    test_case_fields = set(test_case_type.model_fields)

    class MissingField(MissingTestCaseFieldError, missing_params):  # type: ignore[misc, valid-type]
        __doc__ = MissingTestCaseFieldError.__doc__

        def __reduce__(self) -> tuple[Any, ...]:  # a class made at run time: pickled through the function that makes it
            return _rebuild_missing_field, (self.args, self.__dict__)

    MissingField.__name__ = MissingField.__qualname__ = "MissingTestCaseFieldError"

    class ScorerMetric(base_metric):  # type: ignore[misc, valid-type]
        """One of our scorers as a DeepEval metric; build it with :func:`scorers.adapters.deepeval.metric`."""

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
            accepted = scorer.accepted_fields()
            for name, path in self.fields.items():
                check_field(
                    scorer,
                    name,
                    path,
                    valid=isinstance(path, str) and path.split(".")[0] in test_case_fields,
                    wanted=f"name an LLMTestCase attribute or a dotted path into one "
                    f"({', '.join(sorted(test_case_fields))})",
                )
            self._paths = {**{name: path for name, path in DEFAULT_FIELDS.items() if name in accepted}, **self.fields}

        @property
        def __name__(self) -> str:  # DeepEval names the metric's results after it
            return self.scorer.name

        def _arguments(self, test_case: LLMTestCase) -> dict[str, Any]:
            values = {name: _read(test_case, path, retrieved_type) for name, path in self._paths.items()}
            for f in self.scorer.fields:
                value = values.get(f.name)
                if f.required and not f.nullable and f.name in self._paths and (value is None or value is ABSENT):
                    raise MissingField(self.scorer.name, f.name, self._paths[f.name])
            return {name: value for name, value in values.items() if value is not ABSENT}

        # DeepEval passes _show_indicator and _in_component to every metric; ours shows no progress indicator
        def measure(
            self, test_case: LLMTestCase, _show_indicator: bool = True, _in_component: bool = False
        ) -> float | None:
            self._reset()
            return self._record(self.scorer(**self._arguments(test_case)))

        async def a_measure(
            self, test_case: LLMTestCase, _show_indicator: bool = True, _in_component: bool = False
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
            return f"DeepEval metric for {self.scorer!r} (threshold={self.threshold:g})"

    return ScorerMetric, MissingField


def _rebuild_missing_field(args: tuple[Any, ...], state: dict[str, Any]) -> MissingTestCaseFieldError:
    return _rebuild(_classes()[1], args, state)


def _read(test_case: Any, path: str, retrieved_type: type) -> Any:
    """The value at an attribute of the test case or a dotted path into one; retrieved chunks as their text."""
    root, _, rest = path.partition(".")
    value = getattr(test_case, root, None)
    if isinstance(value, list):  # retrieval_context may hold RetrievedContextData(context=text, source=...)
        value = [item.context if isinstance(item, retrieved_type) else item for item in value]
    if not rest or value is None:
        return value
    if hasattr(value, "model_dump"):
        value = value.model_dump()
    return lookup(value, rest) if isinstance(value, (Mapping, list)) else ABSENT
