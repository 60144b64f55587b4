"""The scorer registry: a plain mapping from names to scorer factories.

Names are case-insensitive and may have aliases. Third-party packages add
scorers through the ``scorers`` entry-point group (each entry point names a
:class:`~scorers.base.Scorer` subclass or a factory); YAML judge templates
register into the same mapping.

>>> import scorers
>>> scorers.get("levenshtein").name
'Levenshtein'
>>> "ExactMatch" in scorers.names()
True
"""

from __future__ import annotations

import difflib
import threading
import warnings
from dataclasses import dataclass, field
from importlib import metadata as importlib_metadata
from typing import Any, Callable, Iterator

from ._util import did_you_mean
from .base import Scorer
from .errors import ConfigError, UnknownScorerError

__all__ = ["Entry", "Registry", "registry", "register", "get", "names", "entries"]

ScorerFactory = Callable[..., Scorer]

ENTRY_POINT_GROUP = "scorers"


@dataclass
class Entry:
    """One registered scorer: how to build it and how to describe it."""

    name: str
    factory: ScorerFactory
    kind: str
    description: str
    aliases: tuple[str, ...] = ()
    defaults: dict[str, Any] = field(default_factory=dict)
    source: str = "builtin"
    #: The Scorer class, when the entry was registered from one (lets listings skip construction).
    scorer_class: type[Scorer] | None = None
    #: False when lower scores are better (the class's ``higher_is_better``).
    higher_is_better: bool = True

    def required_fields(self) -> list[str]:
        """The fields a call must give; read off the class when possible, so heavy scorers are not built."""
        if self.scorer_class is not None and self.scorer_class.fields:
            return [f.name for f in self.scorer_class.fields if f.required]
        return self.create().required_fields()

    def create(self, **params: Any) -> Scorer:
        try:
            scorer = self.factory(**{**self.defaults, **params})
        except TypeError as exc:
            raise self._invalid(params, exc) from exc
        return scorer

    def _invalid(self, params: dict[str, Any], exc: TypeError) -> ConfigError:
        """The error for parameters the factory refused: the unknown ones, with the closest known names."""
        known = self._parameter_names()
        unknown = [name for name in params if known and name not in known]
        if not known or not unknown:
            return ConfigError(f"{self.name}: invalid parameters {sorted(params)}: {exc}", scorer=self.name)
        hints = "".join(did_you_mean(name, known) for name in unknown)
        return ConfigError(
            f"{self.name}: unknown parameter{'s' if len(unknown) > 1 else ''} "
            f"{', '.join(map(repr, unknown))}{hints} (parameters: {', '.join(known)})",
            scorer=self.name,
        )

    def _parameter_names(self) -> list[str]:
        """The constructor parameters of the scorer this entry builds; none when it cannot be built to tell."""
        cls = self.scorer_class
        if cls is None:
            try:
                cls = type(self.factory(**self.defaults))
            except Exception:  # noqa: BLE001  (only used to word an error: without it, no suggestion)
                return []
        return cls.constructor_params()


class Registry:
    """Case-insensitive mapping of scorer names (and aliases) to :class:`Entry`."""

    def __init__(self) -> None:
        self._entries: dict[str, Entry] = {}
        self._keys: dict[str, str] = {}
        self._lock = threading.RLock()
        self._plugins_loaded = False
        self._loaders: list[Callable[["Registry"], None]] = []

    # -------------------------------------------------------------- writing
    def add(self, entry: Entry, *, replace: bool = False) -> Entry:
        with self._lock:
            for key in (entry.name, *entry.aliases):
                owner = self._keys.get(key.lower())
                if owner is not None and owner != entry.name and not replace:
                    raise ConfigError(f"cannot register {entry.name!r}: the name {key!r} is taken by {owner!r}")
            if entry.name in self._entries and not replace:
                raise ConfigError(
                    f"a scorer named {entry.name!r} is already registered ({self._entries[entry.name].source})"
                )
            old = self._entries.get(entry.name)
            if old is not None:
                for key in (old.name, *old.aliases):
                    self._keys.pop(key.lower(), None)
            self._entries[entry.name] = entry
            for key in (entry.name, *entry.aliases):
                self._keys[key.lower()] = entry.name
            return entry

    def register(
        self,
        cls_or_name: Any = None,
        /,
        *,
        name: str | None = None,
        aliases: tuple[str, ...] = (),
        kind: str | None = None,
        description: str | None = None,
        replace: bool = False,
        **defaults: Any,
    ) -> Any:
        """Register a :class:`Scorer` subclass (usable as a bare decorator or with options).

        >>> from scorers import Scorer, Score, register
        >>> @register(name="Shouting", replace=True)
        ... class Shouting(Scorer):
        ...     def _score(self, output, **_):
        ...         return self.make_score(float(output.isupper()))
        """

        def decorate(cls: type[Scorer]) -> type[Scorer]:
            entry_name = name or cls.name or cls.__name__
            doc = (cls.__doc__ or "").strip().splitlines()
            self.add(
                Entry(
                    name=entry_name,
                    factory=_factory(cls, entry_name),
                    kind=kind or cls.kind,
                    description=description or cls.description or (doc[0] if doc else ""),
                    aliases=tuple(aliases),
                    defaults=dict(defaults),
                    scorer_class=cls,
                    higher_is_better=cls.higher_is_better,
                ),
                replace=replace,
            )
            return cls

        if isinstance(cls_or_name, type):
            return decorate(cls_or_name)
        if isinstance(cls_or_name, str):
            name = cls_or_name
        return decorate

    def add_loader(self, loader: Callable[["Registry"], None]) -> None:
        """Run ``loader(registry)`` lazily, before the first lookup (used for templates)."""
        with self._lock:
            self._loaders.append(loader)

    # -------------------------------------------------------------- reading
    def _ensure_loaded(self) -> None:
        with self._lock:
            while self._loaders:
                self._loaders.pop(0)(self)
            if not self._plugins_loaded:
                self._plugins_loaded = True
                self._load_entry_points()

    def _load_entry_points(self) -> None:
        for ep in importlib_metadata.entry_points(group=ENTRY_POINT_GROUP):
            try:
                target = ep.load()
            except Exception as exc:  # a broken plugin must not break the library: only its own entry fails
                message = f"entry point {ep.name!r} ({ep.value}) failed to load: {type(exc).__name__}: {exc}"
                warnings.warn(message, RuntimeWarning, stacklevel=2)
                if ep.name.lower() not in self._keys:
                    self.add(
                        Entry(
                            name=ep.name,
                            factory=_failing(message, ep.name),
                            kind="plugin",
                            description=f"(failed to load) {message}",
                            source=ep.value,
                        )
                    )
                continue
            if isinstance(target, type) and issubclass(target, Scorer):
                if target.__name__ not in self._entries and ep.name.lower() not in self._keys:
                    self.register(target, name=ep.name)
            elif callable(target):
                if ep.name.lower() not in self._keys:
                    self.add(
                        Entry(
                            name=ep.name,
                            factory=target,
                            kind="plugin",
                            description=(target.__doc__ or "").strip().split("\n")[0],
                            source=ep.value,
                        )
                    )

    def entry(self, name: str) -> Entry:
        # A name registered already is the answer: templates and plugins never replace one, so the loaders
        # (YAML files, entry points: most of a cold call to a built-in scorer) run only for a name not found yet.
        key = self._keys.get(name.lower())
        if key is None:
            self._ensure_loaded()
            key = self._keys.get(name.lower())
        if key is None:
            lowered = {n.lower(): n for n in self._keys}
            matches = difflib.get_close_matches(name.lower(), list(lowered), n=6, cutoff=0.6)
            close = list(dict.fromkeys(self._keys[k] for k in matches))[:3]  # aliases of one scorer name it once
            hint = f" Did you mean {', '.join(close)}?" if close else ""
            raise UnknownScorerError(f"no scorer named {name!r}.{hint} See `python -m scorers list`.")
        return self._entries[key]

    def get(self, name: str, **params: Any) -> Scorer:
        return self.entry(name).create(**params)

    def names(self) -> list[str]:
        self._ensure_loaded()
        return sorted(self._entries, key=str.lower)

    def entries(self) -> list[Entry]:
        return [self._entries[n] for n in self.names()]

    def __contains__(self, name: object) -> bool:
        self._ensure_loaded()
        return isinstance(name, str) and name.lower() in self._keys

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self.names())


def _failing(message: str, name: str) -> ScorerFactory:
    def fail(**_: Any) -> Scorer:
        raise ConfigError(message, scorer=name)

    return fail


def _factory(cls: type[Scorer], entry_name: str) -> ScorerFactory:
    if entry_name == (cls.name or cls.__name__):
        return cls

    def build(**params: Any) -> Scorer:
        params.setdefault("name", entry_name)
        return cls(**params)

    build.__name__ = entry_name
    build.__doc__ = cls.__doc__
    return build


registry = Registry()
register = registry.register


def get(name: str, **params: Any) -> Scorer:
    """Build the scorer registered as ``name`` (case-insensitive) with ``params``."""
    return registry.get(name, **params)


def names() -> list[str]:
    """Names of every registered scorer."""
    return registry.names()


def entries() -> list[Entry]:
    """Every registered :class:`Entry`, sorted by name."""
    return registry.entries()
