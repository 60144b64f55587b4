"""LangSmith adapter: our scorers and judges as evaluators of ``langsmith.evaluate``.

LangSmith binds an evaluator's arguments *by name*: a function of
``(inputs, outputs, reference_outputs)`` receives the example's inputs, the
target's outputs and the example's reference outputs, three dicts. A scorer
passed as it is would be called with no arguments at all (its parameters have
none of those names), and LangSmith would refuse the :class:`~scorers.score.Score`
it returns. :func:`evaluator` builds the function LangSmith wants; it maps keys
of those dicts to our fields and returns LangSmith's result dict::

    {"key": scorer name, "score": float or None, "comment": str or None, "metadata": {...}}

- ``inputs`` / ``outputs`` / ``reference`` name the key (or dotted path) of
  LangSmith's ``inputs`` / ``outputs`` / ``reference_outputs`` that holds our
  ``input`` / ``output`` / ``expected``. Left out, a dict with a single key
  gives its value and an empty one gives nothing; a dict with several keys is
  a :class:`~scorers.errors.ConfigError` when the scorer requires the field
  (name the key) and gives nothing otherwise.
- ``fields={"criteria": "inputs.rubric"}`` maps any other field the scorer reads
  (a judge's template variables) to a path that starts with ``inputs.``,
  ``outputs.`` or ``reference_outputs.``.
- Agents: for a scorer that reads tool calls (``ToolCallMatch``, ``TrajectoryMatch``,
  ``ToolCallValid``, ``ToolCallF1``), ``outputs`` or ``reference_outputs``
  holding ``messages`` or ``tool_calls`` is given whole (with no key named): the
  calls in its messages (OpenAI chat, LangChain or any format
  :mod:`scorers.agents.readers` reads) or its list of calls. A judge's
  conversation field (one its template declares, else ``conversation`` or
  ``thread``) not mapped otherwise is ``outputs["messages"]``. LangChain message
  objects (any pydantic model) are read as their ``model_dump()``.
- A skipped score stays ``None`` (LangSmith stores it as it is), with a comment
  saying it was skipped; never a made-up number.
- A :class:`~scorers.errors.ScorerError` for one example (bad input, a judge that
  gave up) becomes that example's result: score ``None``, the error in
  ``comment`` and ``metadata["error"]``, and ``extra={"error": True}`` as
  LangSmith marks its own evaluator errors. The experiment goes on.
- A :class:`~scorers.errors.ConfigError` (no API key, a bad template...) is
  raised. Note that ``langsmith.evaluate`` catches whatever an evaluator raises:
  it logs the error with its traceback and records ``comment=repr(error)``,
  ``extra={"error": True}`` for that example under the key
  ``"scorers_evaluator"`` (the name it reads from our source), and goes on.

Building and calling the evaluator needs nothing from LangSmith:

>>> from scorers.adapters.langsmith import evaluator
>>> lev = evaluator("Levenshtein", outputs="answer", reference="answer")
>>> lev.__name__
'Levenshtein'
>>> result = lev({"question": "Who?"}, {"answer": "kitten"}, {"answer": "sitting"})
>>> result["key"], result["score"], result["comment"]
('Levenshtein', 0.5714285714285714, None)
>>> bad = lev({}, {"answer": None}, {"answer": "sitting"})
>>> bad["score"], bad["comment"], bad["extra"]
(None, "ScorerInputError: Levenshtein: field 'output' is required but was None", {'error': True})

In an experiment (add ``upload_results=False`` to keep the results local; the
tests run it offline over ``langsmith.schemas.Example`` objects)::

    from langsmith import evaluate
    from scorers.adapters.langsmith import evaluator

    results = evaluate(
        target,                       # inputs -> {"answer": ...}
        data=examples,                # a dataset name, or langsmith.schemas.Example objects
        evaluators=[
            evaluator("ExactMatch", outputs="answer", reference="answer"),
            evaluator("Factuality", inputs="question", outputs="answer", reference="answer"),
        ],
    )
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

from .._util import ABSENT, lookup
from ..base import Scorer
from ..errors import ConfigError, ScorerError, ScorerInputError
from ..score import Score
from .common import build_scorer, check_field, conversation_field, plain_data, reads_calls

__all__ = ["evaluator", "SOURCES"]

#: The dicts LangSmith gives an evaluator, in the order of its parameters.
SOURCES = ("inputs", "outputs", "reference_outputs")


def evaluator(
    scorer: Scorer | str,
    *,
    inputs: str | None = None,
    outputs: str | None = None,
    reference: str | None = None,
    fields: Mapping[str, str] | None = None,
    **params: Any,
) -> Callable[[dict[str, Any], dict[str, Any], dict[str, Any]], dict[str, Any]]:
    """A LangSmith evaluator ``(inputs, outputs, reference_outputs) -> dict`` scoring with ``scorer``.

    ``scorer`` is an instance or a registered name (built with ``params``).
    ``inputs``, ``outputs`` and ``reference`` name the keys that hold our
    ``input``, ``output`` and ``expected``; ``fields`` maps other fields to
    ``"inputs.key"``, ``"outputs.key"`` or ``"reference_outputs.key"``. The
    evaluator's ``__name__`` is the scorer's name, the key of its results.

    A judge's template variable from the example's inputs:

    >>> from scorers import LLMClassifier
    >>> polite = LLMClassifier("Polite", "Is this {{tone}} reply polite?\\n{{output}}", {"Yes": 1, "No": 0})
    >>> evaluator(polite, outputs="answer", fields={"tone": "inputs.tone"}).paths
    {'output': ('outputs', 'answer'), 'tone': ('inputs', 'tone')}

    Mistakes in the mapping are found when the evaluator is built:

    >>> evaluator("ExactMatch", fields={"tone": "inputs.tone"})
    Traceback (most recent call last):
    ...
    scorers.errors.ConfigError: ExactMatch does not read a field 'tone' (it reads: output, expected, input, metadata)
    """
    scorer = build_scorer(scorer, params)
    accepted = scorer.accepted_fields()

    # field -> (source dict, key or dotted path); the defaults: field -> the source dict whose single key holds it
    paths: dict[str, tuple[str, str]] = {}
    for name, source, key in (
        ("input", "inputs", inputs),
        ("output", "outputs", outputs),
        ("expected", "reference_outputs", reference),
    ):
        if key is not None:
            paths[name] = (source, key)
    for name, spec in (fields or {}).items():
        source, _, key = str(spec).partition(".")
        check_field(
            scorer,
            name,
            spec,
            taken=name in paths,
            valid=source in SOURCES and bool(key),
            wanted=f"start with one of {', '.join(s + '.' for s in SOURCES)} and name a key",
        )
        paths[name] = (source, key)
    defaults = {
        name: source
        for name, source in (("input", "inputs"), ("output", "outputs"), ("expected", "reference_outputs"))
        if name not in paths and name in accepted
    }
    required = set(scorer.required_fields())
    whole = {"output", "expected"} if reads_calls(scorer) else set()  # given whole when they hold messages or calls
    conversation = conversation_field(scorer)
    messages_to = conversation if conversation is not None and conversation not in paths else None

    # LangSmith keys the results it makes up for an evaluator that raised after the def's name in the source
    def scorers_evaluator(
        inputs: dict[str, Any], outputs: dict[str, Any], reference_outputs: dict[str, Any]
    ) -> dict[str, Any]:
        dicts = {"inputs": inputs or {}, "outputs": outputs or {}, "reference_outputs": reference_outputs or {}}
        try:
            args = {}
            for name, (source, key) in paths.items():
                value = lookup(dicts[source], key)
                if value is ABSENT:
                    raise ScorerInputError(
                        scorer.name,
                        name,
                        f"is mapped to {source}.{key}, which this example lacks ({source} has: {_keys(dicts[source])})",
                    )
                args[name] = value
            for name, source in defaults.items():
                given = dicts[source]
                if name in whole and ("messages" in given or "tool_calls" in given):
                    args[name] = given
                elif len(given) == 1:
                    args[name] = next(iter(given.values()))
                elif len(given) > 1 and name in required:
                    argument = {"input": "inputs", "output": "outputs", "expected": "reference"}[name]
                    raise ConfigError(
                        f"{scorer.name} reads {name!r}: say which key of {source} holds it with "
                        f"{argument}=... ({source} has: {_keys(given)})",
                        scorer=scorer.name,
                    )
            if messages_to is not None and "messages" in dicts["outputs"]:
                args[messages_to] = dicts["outputs"]["messages"]
            result = scorer(**{name: plain_data(value) for name, value in args.items()})
        except ConfigError:
            raise
        except ScorerError as exc:
            return {
                "key": scorer.name,
                "score": None,
                "comment": f"{type(exc).__name__}: {exc}",
                "metadata": {"error": exc.to_dict()},
                "extra": {"error": True},
            }
        return _as_langsmith(result)

    scorers_evaluator.__name__ = scorers_evaluator.__qualname__ = scorer.name
    scorers_evaluator.__doc__ = f"LangSmith evaluator scoring with {scorer!r}."
    scorers_evaluator.scorer = scorer  # type: ignore[attr-defined]
    scorers_evaluator.paths = dict(paths)  # type: ignore[attr-defined]
    return scorers_evaluator


def _keys(d: Mapping[str, Any]) -> str:
    return ", ".join(map(str, d)) or "no keys"


def _as_langsmith(score: Score) -> dict[str, Any]:
    comment: str | None
    if score.score is None:
        reason = score.metadata.get("reason")
        comment = f"skipped: {score.name} does not apply to this example" + (f" ({reason})" if reason else "")
    else:
        rationale = score.metadata.get("rationale")
        comment = rationale if isinstance(rationale, str) else None
    return {"key": score.name, "score": score.score, "comment": comment, "metadata": score.metadata}
