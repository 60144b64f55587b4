"""What the harness adapters share: the scorer they wrap and the checks on a field mapping.

- :func:`build_scorer`: a registered name built with its parameters, or an instance (parameters go only with a name);
- :func:`check_field`: one entry of a ``fields`` mapping (our field -> where the harness holds it), refused with
  a :class:`~scorers.errors.ConfigError` naming the scorer.

>>> build_scorer("ExactMatch", {"ignore_case": True}).params()["ignore_case"]
True
>>> from scorers import get
>>> build_scorer(get("ExactMatch"), {"ignore_case": True})
Traceback (most recent call last):
...
scorers.errors.ConfigError: parameters ['ignore_case'] go with a scorer's name, not with an instance: set them when building ExactMatch
>>> check_field(get("ExactMatch"), "tone", "inputs.tone", valid=True, wanted="name a key")
Traceback (most recent call last):
...
scorers.errors.ConfigError: ExactMatch does not read a field 'tone' (it reads: output, expected, input, metadata)
"""

from __future__ import annotations

from typing import Any, Mapping

from ..base import Scorer
from ..errors import ConfigError
from ..registry import get

__all__ = ["build_scorer", "check_field"]


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
