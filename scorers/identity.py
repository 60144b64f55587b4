"""A run's identity: what produced a results file, kept beside it (never inside the results' bytes).

A results file ``OUT`` has a sidecar ``OUT.run.json`` (:func:`sidecar_path`) holding the list of configurations
that wrote it, each the row index it starts at and the run's configuration (:func:`configuration`): every
scorer's :meth:`~scorers.Scorer.signature` (its parameters, a judge's model, template hash and API) and the
field mapping. It is written atomically (a temporary file, then ``os.replace``). A resumed run compares its own
configuration with the last one recorded (:func:`check_resume`): the same one resumes; another one is a
:class:`~scorers.errors.ConfigError` naming what changed, unless forced, which appends the new configuration
with the row it starts at. Versions (``scorers_version``, ``sacrebleu_version``, ...) are not part of the
comparison: a library upgraded between two parts of a run is recorded as a new configuration and noted, not
refused (a scorer whose numbers change says so with its ``algorithm`` version, which is compared).

>>> import os, tempfile, scorers
>>> out = os.path.join(tempfile.mkdtemp(), "out.jsonl")
>>> bleu = configuration([scorers.get("BLEU")], {})
>>> write_identity(out, [{"start": 0, **bleu}])
>>> os.path.basename(sidecar_path(out)), read_identity(out)[0]["scorers"]["BLEU"]["tokenize"]
('out.jsonl.run.json', '13a')
>>> changes(bleu, configuration([scorers.get("BLEU", tokenize="char")], {}))
["BLEU.tokenize: '13a' -> 'char'"]
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import tempfile
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from .base import Scorer
from .errors import ConfigError, DataError

__all__ = [
    "SIDECAR_SUFFIX",
    "sidecar_path",
    "configuration",
    "changes",
    "read_identity",
    "write_identity",
    "check_resume",
    "ResumeCheck",
]

#: What a results file's name gets to name its sidecar.
SIDECAR_SUFFIX = ".run.json"
#: The sidecar's format version (its ``"format"`` key).
FORMAT = 1
#: Where no value was set (a key one configuration has and the other lacks).
_UNSET = "(unset)"


def sidecar_path(results: str) -> str:
    """The sidecar of results file ``results``: ``results.jsonl`` → ``results.jsonl.run.json``."""
    return results + SIDECAR_SUFFIX


def has_sidecar(results: str | None) -> bool:
    """Whether results written to ``results`` get a sidecar: a regular file (not stdout, a pipe or a device)."""
    if results in (None, "-"):
        return False
    try:
        return stat.S_ISREG(os.stat(str(results)).st_mode)
    except FileNotFoundError:
        return True


def configuration(scorers: Sequence[Scorer], mapping: Mapping[str, str]) -> dict[str, Any]:
    """What a run's results depend on: each scorer's signature, by name, and the field mapping, as JSON values."""
    config = {"scorers": {scorer.name: _signature(scorer) for scorer in scorers}, "mapping": dict(mapping)}
    return json.loads(json.dumps(config, default=str))


def _signature(scorer: Scorer) -> dict[str, Any]:
    """``scorer``'s signature; one that cannot be computed (a missing or broken dependency, whose version it
    holds) is recorded as why, and the run meets the error where it always did: scoring the rows."""
    try:
        return scorer.signature()
    except Exception as exc:
        return {"scorer": type(scorer).__name__, "signature_error": f"{type(exc).__name__}: {exc}"}


def _is_version(key: str) -> bool:
    return key.endswith("_version")


def _flat(value: Any, prefix: str) -> dict[str, Any]:
    """``value`` as ``{dotted path: leaf}`` (a dict's keys joined by dots; other values are leaves)."""
    if not isinstance(value, dict) or not value:
        return {prefix: value}
    flat: dict[str, Any] = {}
    for key, item in value.items():
        flat.update(_flat(item, f"{prefix}.{key}"))
    return flat


def _compared(config: Mapping[str, Any], versions: bool) -> dict[str, Any]:
    """The leaves of ``config`` that a resume compares (``versions``: the version leaves instead)."""
    leaves: dict[str, Any] = {}
    for name, signature in config.get("scorers", {}).items():
        for key, value in signature.items():
            if _is_version(key) == versions:
                leaves.update(_flat(value, f"{name}.{key}"))
    if not versions and config.get("mapping"):
        leaves.update(_flat(config["mapping"], "mapping"))
    return leaves


def _differences(before: Mapping[str, Any], after: Mapping[str, Any], versions: bool = False) -> list[str]:
    had, has = before.get("scorers", {}), after.get("scorers", {})
    found = [f"{name}: not in this run" for name in had if name not in has]
    found += [f"{name}: not in the recorded run" for name in has if name not in had]
    old, new = _compared(before, versions), _compared(after, versions)
    for key in dict.fromkeys([*old, *new]):
        name = key.split(".", 1)[0]
        was, now = old.get(key, _UNSET), new.get(key, _UNSET)
        if was != now and (name == "mapping" or (name in had and name in has)):
            found.append(f"{key}: {_shown(was)} -> {_shown(now)}")
    return found


def _shown(value: Any) -> str:
    return value if value is _UNSET else repr(value)


def changes(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    """What differs from configuration ``before`` to ``after``, versions aside: ``"BLEU.tokenize: '13a' -> 'char'"``,
    ``"mapping.output: 'response' -> (unset)"``, ``"Judge: not in this run"``."""
    return _differences(before, after)


def version_changes(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    """What versions differ from ``before`` to ``after``: ``"BLEU.sacrebleu_version: '2.5.1' -> '2.6.0'"``."""
    return _differences(before, after, versions=True)


def read_identity(results: str) -> list[dict[str, Any]] | None:
    """The configurations recorded for ``results`` (each with the row index ``start`` it starts at), or None when it
    has no sidecar (written before scorers kept one); an unreadable sidecar is a :class:`DataError`."""
    path = sidecar_path(results)
    try:
        with open(path, encoding="utf-8") as fh:
            recorded = json.load(fh)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise DataError(f"{path}: not a run identity ({exc}); remove it to resume without a check") from None
    if not isinstance(recorded, dict) or not isinstance(recorded.get("configurations"), list):
        raise DataError(f"{path}: not a run identity (no list of configurations); remove it to resume without a check")
    return recorded["configurations"]


def write_identity(results: str, configurations: Sequence[Mapping[str, Any]]) -> None:
    """Record ``configurations`` as what wrote ``results``, atomically: a reader sees the old sidecar or the new one."""
    path = sidecar_path(results)
    text = json.dumps({"format": FORMAT, "configurations": list(configurations)}, indent=2, ensure_ascii=False)
    folder = os.path.dirname(os.path.abspath(path))
    try:
        fd, temporary = tempfile.mkstemp(prefix=os.path.basename(path) + ".", suffix=".tmp", dir=folder)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(text + "\n")
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(temporary, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise
    except OSError as exc:
        raise DataError(f"cannot write {path}: {exc.strerror or exc}") from None


@dataclass
class ResumeCheck:
    """What resuming ``results`` under a configuration found: the configurations to record (None: keep the sidecar
    as it is) and the notes to show (no sidecar; versions that changed; a forced change)."""

    configurations: list[dict[str, Any]] | None
    notes: list[str] = field(default_factory=list)


def check_resume(
    results: str, config: Mapping[str, Any], start: int, *, force: bool = False, force_hint: str = "force=True"
) -> ResumeCheck:
    """Compare ``config`` with the configuration that last wrote ``results`` (which holds ``start`` rows).

    The same configuration: nothing to record. A different one: a :class:`ConfigError` naming what changed and the
    two ways out (another output file, or ``force_hint`` to append under this configuration); forced, the new
    configuration is recorded from row ``start`` on. Versions alone: recorded and noted. No sidecar: a note, and
    this configuration recorded from ``start``.
    """
    recorded = read_identity(results)
    entry = {"start": start, **config}
    if start == 0:  # no row written yet (a new file, or a run stopped before its first row): nothing to mix
        return ResumeCheck(None if recorded == [entry] else [entry])
    if recorded is None:
        note = (
            f"{results} has no record of the configuration that scored it ({os.path.basename(sidecar_path(results))}, "
            "which older versions of scorers did not write); resuming without checking that it is this run's"
        )
        return ResumeCheck([entry], [note])
    last = recorded[-1] if recorded else {}
    changed = changes(last, config)
    if changed and not force:
        raise ConfigError(
            f"{results} was scored with another configuration than this run's ({'; '.join(changed)}); resuming would "
            f"mix the two in one file: write to a new output file, or resume with {force_hint} to append the rest "
            f"under this run's configuration (recorded in {sidecar_path(results)})"
        )
    versions = version_changes(last, config)
    if not changed and not versions:
        return ResumeCheck(None)
    notes = [f"{results}: versions changed since it was written ({'; '.join(versions)})"] if versions else []
    if changed:
        entry["forced"] = True
        notes.append(f"{results}: rows from {start} on are scored under a new configuration ({'; '.join(changed)})")
    return ResumeCheck([*recorded, entry], notes)
