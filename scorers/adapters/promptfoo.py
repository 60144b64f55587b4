"""promptfoo adapter: our scorers and judges as one ``type: python`` assertion.

promptfoo runs a Python assertion by calling ``get_assert(output, context)`` in a
new Python process per test; ``context["vars"]`` holds the test's vars and
``context["config"]`` the assertion's ``config:`` block. ``python -m scorers
promptfoo init`` writes a two-line file that imports :func:`get_assert`; point
the assertion at it and name the scorers in its config::

    prompts: ["{{question}}"]
    providers: [openai:gpt-4o-mini]
    defaultTest:
      assert:
        - type: python
          value: file://scorers_assert.py
          config:
            scorers: [ExactMatch, Levenshtein, BLEU]   # registered names (python -m scorers list)
            threshold: {default: 1.0, Levenshtein: 0.8, BLEU: 0.3}   # or one number for all
            params: {BLEU: {tokenize: intl}}           # scorer parameters, by scorer name
            map: {expected: answer, input: question}   # field -> var (a key or a dotted path)
    tests:
      - vars: {question: "Capital of France?", answer: "Paris"}

The config:

- ``scorers``: a name or a list of names (required).
- ``threshold``: the minimum score for a scorer to pass; one number, or a
  mapping of scorer names to numbers with an optional ``default``. The default
  is 1.0: a scorer passes only with full marks unless you say otherwise.
- ``params``: ``{scorer name: {parameter: value}}``, passed to ``scorers.get``.
- ``map``: ``{field: var}``; our ``output`` is always promptfoo's output. A
  field not in ``map`` is taken from the var of the same name when the test has
  one and the scorer reads that field (so ``expected`` needs no mapping when the
  var is called ``expected``).

Tool calls: for a scorer that reads them (``ToolCallMatch``, ``TrajectoryMatch``,
``ToolCallValid``, ``ToolCallF1``), ``output`` is the calls in the provider's
output, found as promptfoo's own ``tool-call-f1`` finds them but keeping the
arguments (:func:`provider_calls`): OpenAI's ``tool_calls`` (the list, or the
message holding it) and legacy ``function_call``, Anthropic ``tool_use`` blocks,
Google ``functionCall`` parts and Live ``toolCall``, as objects or as JSON text,
whole or one per line of a longer text. An output that is a conversation (a list
of messages, a dict with ``messages``) is given as it is; a text with no call in
it is no calls. The expected calls come from a var (``expected``, or ``map``).

The result is promptfoo's ``{pass, score, reason, namedScores, componentResults}``:

- one component per scorer, with its own ``pass``, ``score`` and ``reason``,
  and ``namedScores`` ``{scorer name: score}``;
- ``score`` is the mean of the scores, ``pass`` is true when every scorer is at
  or above its threshold;
- a skipped score (``None``, the scorer does not apply to this test) is a
  component with ``pass: true``, ``score: null`` and a reason that starts with
  ``skipped``; it is left out of the mean and of ``namedScores``. promptfoo
  requires a number for the assertion's own score, so when *every* scorer
  skipped the assertion passes with score 0 and says so in its reason;
- a :class:`~scorers.errors.ScorerError` for this test (bad input, a judge that
  gave up) is a failing component with ``score: null`` and the error as its
  reason; the other scorers still run;
- a :class:`~scorers.errors.ConfigError` (an unknown scorer or config key, no
  ``scorers``, no API key for a judge) is raised: promptfoo fails the test with
  the error and its traceback as the reason.

>>> result = get_assert("kitten", {"vars": {"expected": "sitting"},
...                                "config": {"scorers": ["ExactMatch", "Levenshtein"], "threshold": 0.5}})
>>> result["pass"], result["score"], result["namedScores"]
(False, 0.2857142857142857, {'ExactMatch': 0.0, 'Levenshtein': 0.5714285714285714})
>>> result["reason"]
'ExactMatch 0.000 < 0.5; Levenshtein 0.571 >= 0.5'
>>> get_assert("x", {"vars": {}, "config": {"scorers": ["Nope"]}})
Traceback (most recent call last):
...
scorers.errors.UnknownScorerError: ...
"""

from __future__ import annotations

import json
from typing import Any, Mapping

from .._util import ABSENT, is_number, lookup
from ..base import Scorer
from ..errors import ConfigError, ScorerError, ScorerInputError
from ..score import Score
from .common import build_scorers, reads_calls

__all__ = ["get_assert", "assertion_file", "provider_calls", "DEFAULT_THRESHOLD", "CONFIG_KEYS", "DEFAULT_FILE"]

#: The threshold of a scorer the config gives none.
DEFAULT_THRESHOLD = 1.0
#: The keys an assertion's ``config:`` may hold.
CONFIG_KEYS = ("scorers", "threshold", "params", "map")
#: The file ``python -m scorers promptfoo init`` writes when given no path.
DEFAULT_FILE = "scorers_assert.py"


def assertion_file() -> str:
    """The text of the assertion file promptfoo's ``value: file://...`` points at.

    >>> print(assertion_file(), end="")
    # promptfoo `type: python` assertion: scores with the scorers named in its config (see scorers.adapters.promptfoo)
    from scorers.adapters.promptfoo import get_assert  # noqa: F401
    """
    return (
        "# promptfoo `type: python` assertion: scores with the scorers named in its config "
        "(see scorers.adapters.promptfoo)\n"
        "from scorers.adapters.promptfoo import get_assert  # noqa: F401\n"
    )


def get_assert(output: Any, context: Mapping[str, Any]) -> dict[str, Any]:
    """Score promptfoo's ``output`` with the scorers in ``context["config"]``; promptfoo's result dict.

    A skipped score and a bad test are explicit components:

    >>> r = get_assert("4", {"vars": {}, "config": {"scorers": ["ExactMatch"]}})
    >>> r["pass"], r["score"], r["namedScores"], r["componentResults"][0]["reason"]
    (False, 0.0, {}, "ExactMatch: ScorerInputError: ExactMatch: field 'expected' is required but was missing")
    """
    config = (context or {}).get("config") or {}
    variables = (context or {}).get("vars") or {}
    scorers, thresholds, mapping = _parse_config(config)

    components: list[dict[str, Any]] = []
    named: dict[str, float] = {}
    for scorer in scorers:
        threshold = thresholds[scorer.name]
        try:
            score = scorer(**_arguments(scorer, output, variables, mapping))
        except ConfigError:
            raise
        except ScorerError as exc:
            components.append(
                {
                    "pass": False,
                    "score": None,
                    "reason": f"{scorer.name}: {type(exc).__name__}: {exc}",
                    "scorer": scorer.name,
                    "error": exc.to_dict(),
                }
            )
            continue
        components.append(_component(score, threshold))
        if score.score is not None:
            named[score.name] = score.score

    scored = list(named.values())
    if scored:
        overall = sum(scored) / len(scored)
    else:
        overall = 0.0
    passed = all(c["pass"] for c in components)
    reason = "; ".join(c["reason"] for c in components)
    if not scored and passed:
        reason = f"skipped: no scorer applies to this test ({reason})"
    return {"pass": passed, "score": overall, "reason": reason, "namedScores": named, "componentResults": components}


def _parse_config(config: Mapping[str, Any]) -> tuple[list[Scorer], dict[str, float], dict[str, str]]:
    """The assertion's scorers, each one's threshold by its name, and ``map``; a :class:`ConfigError` naming
    what is wrong in ``config``."""
    if not isinstance(config, Mapping):
        raise ConfigError(f"promptfoo assertion: config must be a mapping, got {type(config).__name__}")
    unknown = [key for key in config if key not in CONFIG_KEYS]
    if unknown:
        raise ConfigError(f"promptfoo assertion: unknown config key {unknown[0]!r} (known: {', '.join(CONFIG_KEYS)})")
    names = _scorer_names(config.get("scorers"))
    params = config.get("params") or {}
    if not isinstance(params, Mapping):
        raise ConfigError(f"promptfoo assertion: 'params' must map scorer names to parameters, got {params!r}")
    scorers = build_scorers(names, params, harness="promptfoo assertion")
    thresholds = _thresholds(config.get("threshold", DEFAULT_THRESHOLD), names, scorers)
    return scorers, thresholds, _field_map(config.get("map") or {}, scorers)


def _scorer_names(names: Any) -> list[str]:
    """The config's ``scorers``: a name or a list of names."""
    if isinstance(names, str):
        names = [names]
    if not names or not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise ConfigError(
            "promptfoo assertion: config needs 'scorers', a scorer name or a list of names "
            f"(python -m scorers list), got {names!r}"
        )
    return names


def _field_map(mapping: Any, scorers: list[Scorer]) -> dict[str, str]:
    """The config's ``map``: ``{field: var}`` for fields other than ``output`` that one of ``scorers`` reads."""
    if not isinstance(mapping, Mapping) or not all(isinstance(v, str) for v in mapping.values()):
        raise ConfigError(f"promptfoo assertion: 'map' must map fields to var names, got {mapping!r}")
    if "output" in mapping:
        raise ConfigError("promptfoo assertion: 'output' is always promptfoo's output and cannot be mapped")
    for field in mapping:
        if not any(field in s.accepted_fields() for s in scorers):
            raise ConfigError(
                f"promptfoo assertion: map[{field!r}]: no scorer in {', '.join(s.name for s in scorers)} reads a "
                f"field {field!r}"
            )
    return dict(mapping)


def _thresholds(spec: Any, names: list[str], scorers: list[Scorer]) -> dict[str, float]:
    by_name = dict(zip(names, (s.name for s in scorers)))
    if isinstance(spec, Mapping):
        spec = dict(spec)
        default = spec.pop("default", DEFAULT_THRESHOLD)
        for name in spec:
            if name not in by_name:
                raise ConfigError(
                    f"promptfoo assertion: threshold for {name!r}, which is not in scorers ({', '.join(names)})"
                )
        values = {by_name[n]: spec.get(n, default) for n in names}
    else:
        values = {by_name[n]: spec for n in names}
    for name, value in values.items():
        if not is_number(value) or not 0.0 <= value <= 1.0:
            raise ConfigError(f"promptfoo assertion: the threshold of {name} must be a number in [0, 1], got {value!r}")
    return {name: float(value) for name, value in values.items()}


def _arguments(scorer: Scorer, output: Any, variables: Mapping[str, Any], mapping: Mapping[str, str]) -> dict[str, Any]:
    args: dict[str, Any] = {"output": provider_calls(output) if reads_calls(scorer) else output}
    for field in scorer.accepted_fields():
        if field == "output":
            continue
        if field in mapping:
            value = lookup(variables, mapping[field])
            if value is ABSENT:
                raise ScorerInputError(
                    scorer.name,
                    field,
                    f"is mapped to the var {mapping[field]!r}, which this test "
                    f"lacks (vars: {', '.join(map(str, variables)) or 'none'})",
                )
            args[field] = value
        elif field in variables:
            args[field] = variables[field]
    return args


def _component(score: Score, threshold: float) -> dict[str, Any]:
    if score.score is None:
        why = score.metadata.get("reason")
        reason = f"skipped: {score.name} does not apply to this test" + (f" ({why})" if why else "")
        return {"pass": True, "score": None, "reason": reason, "scorer": score.name}
    passed = score.score >= threshold
    reason = f"{score.name} {score.score:.3f} {'>=' if passed else '<'} {threshold:g}"
    rationale = score.metadata.get("rationale")
    if isinstance(rationale, str) and rationale:
        reason += f": {rationale}"
    return {"pass": passed, "score": score.score, "reason": reason, "scorer": score.name}


def provider_calls(output: Any) -> Any:
    """The tool calls in a promptfoo provider's output, as a list our readers take; a conversation as it is.

    >>> provider_calls({"role": "assistant", "content": "On it.", "tool_calls": [
    ...     {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]})
    [{'id': 'c1', 'type': 'function', 'function': {'name': 'get_weather', 'arguments': '{"city": "Paris"}'}}]
    >>> provider_calls('Let me look.\\n\\n{"type": "tool_use", "id": "t1", "name": "search", "input": {"q": "x"}}')
    [{'type': 'tool_use', 'id': 't1', 'name': 'search', 'input': {'q': 'x'}}]
    >>> provider_calls({"functionCall": {"name": "search", "args": {"q": "x"}}}), provider_calls("No tool needed.")
    ([{'name': 'search', 'arguments': {'q': 'x'}}], [])
    """
    if isinstance(output, str):
        try:
            output = json.loads(output)
        except json.JSONDecodeError:
            return [call for line in output.splitlines() for call in _calls(_json_line(line.strip()))]
    if _is_conversation(output):
        return output
    return _calls(output)


def _json_line(line: str) -> Any:
    """A line of text that is a JSON object or array, parsed; ``None`` for any other line."""
    if not line.startswith(("{", "[")):
        return None
    try:
        return json.loads(line)
    except json.JSONDecodeError:
        return None


def _is_conversation(value: Any) -> bool:
    if isinstance(value, Mapping):
        return "messages" in value
    return isinstance(value, list) and any(isinstance(item, Mapping) and "role" in item for item in value)


def _calls(value: Any) -> list[Any]:
    """The calls in one parsed value, in the shapes promptfoo's ``tool-call-f1`` reads (see the module)."""
    if isinstance(value, list):
        return [call for item in value if isinstance(item, Mapping) for call in _item_calls(item)]
    if not isinstance(value, Mapping):
        return []
    if isinstance(value.get("tool_calls"), list):
        return list(value["tool_calls"])
    live = value.get("toolCall")
    if isinstance(live, Mapping) and isinstance(live.get("functionCalls"), list):
        return [_google(call) for call in live["functionCalls"] if isinstance(call, Mapping)]
    return _item_calls(value)


def _item_calls(item: Mapping[str, Any]) -> list[Any]:
    """One object as calls: a Google ``functionCall`` part, or a call with a ``function`` or a ``name``."""
    if isinstance(item.get("functionCall"), Mapping):
        return [_google(item["functionCall"])]
    if isinstance(item.get("function"), Mapping) or isinstance(item.get("name"), str):
        return [item]
    return []


def _google(call: Mapping[str, Any]) -> dict[str, Any]:
    return {"name": call.get("name"), "arguments": call.get("args")}
