"""The building blocks of a harness adapter, public so that a new adapter (docs/development.md) uses what ours use.

- :func:`build_scorer`: a registered name built with its parameters, or an instance (parameters go only with a name);
- :func:`build_scorers`: several of them, with parameters by scorer name, none listed twice;
- :func:`check_field`: one entry of a ``fields`` mapping (our field -> where the harness holds it), refused with
  a :class:`~scorers.errors.ConfigError` naming the scorer;
- :func:`reads_calls` and :func:`conversation_field`: whether a scorer reads tool calls, and which of its fields
  holds a conversation, for the adapters' default mappings;
- :func:`plain_data`: a harness's value with the SDK objects in it (LangChain messages, OpenAI's
  ``ChatCompletionMessage``: pydantic models) as plain data our readers take.

>>> build_scorer("ExactMatch", {"ignore_case": True}).params()["ignore_case"]
True
>>> from scorers import get
>>> build_scorer(get("ExactMatch"), {"ignore_case": True})
Traceback (most recent call last):
...
scorers.errors.ConfigError: parameters ['ignore_case'] go with a scorer's name, not with an instance: set them when building ExactMatch
>>> [s.name for s in build_scorers(["ExactMatch", get("Levenshtein")], {"ExactMatch": {}}, harness="a harness")]
['ExactMatch', 'Levenshtein']
>>> build_scorers(["ExactMatch"], {"BLEU": {"tokenize": "intl"}}, harness="a harness")
Traceback (most recent call last):
...
scorers.errors.ConfigError: a harness: params for 'BLEU', which is not among the scorers (ExactMatch)
>>> check_field(get("ExactMatch"), "tone", "inputs.tone", valid=True, wanted="name a key")
Traceback (most recent call last):
...
scorers.errors.ConfigError: ExactMatch does not read a field 'tone' (it reads: output, expected, input, metadata)
>>> reads_calls(get("ToolCallF1")), reads_calls(get("ExactMatch")), conversation_field(get("ToolCallF1"))
(True, False, None)
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from ..agents.model import Conversation
from ..base import Scorer
from ..errors import ConfigError
from ..registry import get

__all__ = ["build_scorer", "build_scorers", "check_field", "conversation_field", "plain_data", "reads_calls"]


def build_scorer(scorer: Scorer | str, params: Mapping[str, Any]) -> Scorer:
    """``get(scorer, **params)`` for a name; an instance as it is, and then ``params`` must be empty."""
    if isinstance(scorer, str):
        return get(scorer, **params)
    if not isinstance(scorer, Scorer):
        raise ConfigError(f"not a scorer: {scorer!r}")
    if params:
        raise ConfigError(
            f"parameters {sorted(params)} go with a scorer's name, not with an instance: "
            f"set them when building {scorer.name}"
        )
    return scorer


def build_scorers(
    scorers: Sequence[Scorer | str], params: Mapping[str, Mapping[str, Any]], *, harness: str
) -> list[Scorer]:
    """Each of ``scorers`` built by :func:`build_scorer` with ``params[its name]``; a :class:`ConfigError`, its
    message starting with ``harness``, for parameters of a scorer not listed or a scorer listed twice."""
    listed = [item if isinstance(item, str) else item.name if isinstance(item, Scorer) else None for item in scorers]
    for name, value in params.items():
        if name not in listed:
            raise ConfigError(
                f"{harness}: params for {name!r}, which is not among the scorers "
                f"({', '.join(n for n in listed if n is not None)})"
            )
        if not isinstance(value, Mapping):
            raise ConfigError(f"{harness}: params[{name!r}] must be a mapping of parameters, got {value!r}")
    built = [build_scorer(item, params.get(name, {}) if name else {}) for item, name in zip(scorers, listed)]
    names = [scorer.name for scorer in built]
    if len(set(names)) != len(names):
        raise ConfigError(f"{harness}: a scorer is listed twice ({', '.join(names)})")
    return built


def check_field(scorer: Scorer, name: str, path: Any, *, valid: bool, wanted: str, taken: bool = False) -> None:
    """Refuse the mapping ``fields[name] = path``: a field ``scorer`` does not read, one already mapped another way
    (``taken``), or a ``path`` that is not ``valid`` for the harness (``wanted`` says what it must be)."""
    accepted = scorer.accepted_fields()
    if name not in accepted:
        raise ConfigError(f"{scorer.name} does not read a field {name!r} (it reads: {', '.join(accepted)})")
    if taken:
        raise ConfigError(f"{scorer.name}: field {name!r} is mapped twice, by fields= and by its own argument")
    if not valid:
        raise ConfigError(f"{scorer.name}: fields[{name!r}] = {path!r} must {wanted}")


def reads_calls(scorer: Scorer) -> bool:
    """Whether ``scorer`` reads tool calls in its ``output`` (``ToolCallMatch`` and its family)."""
    return any(f.name == "output" and Conversation in f.types for f in scorer.fields)


def conversation_field(scorer: Scorer) -> str | None:
    """The field of ``scorer`` that holds a conversation: the first its template declares one, else its field
    ``conversation``, else ``thread`` (autoevals' thread variables); ``None`` when it reads none of these."""
    declared = [name for name, _ in getattr(getattr(scorer, "template", None), "conversations", ())]
    names = {f.name for f in scorer.fields}
    return next((name for name in (*declared, "conversation", "thread") if name in names), None)


def plain_data(value: Any) -> Any:
    """``value`` with every pydantic model in it (LangChain's messages, the OpenAI SDK's) as its ``model_dump()``;
    lists, tuples and mappings are copied only to reach them.

    >>> from pydantic import BaseModel
    >>> class Call(BaseModel):
    ...     name: str
    >>> plain_data({"tool_calls": (Call(name="search"),), "n": 1})
    {'tool_calls': [{'name': 'search'}], 'n': 1}
    """
    if isinstance(value, Mapping):
        return {key: plain_data(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain_data(item) for item in value]
    dump = getattr(value, "model_dump", None)
    return plain_data(dump()) if callable(dump) and not isinstance(value, type) else value
