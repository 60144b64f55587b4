"""The scorer registry: names to scorer factories (:class:`Entry`), a :class:`scorers.plugins.Registry`.

Names are case-insensitive and may have aliases. Third-party packages add
scorers through the ``scorers`` entry-point group (each entry point names a
:class:`~scorers.base.Scorer` subclass or a factory, registered under the entry
point's name; one that fails to load warns, and only its name fails); YAML judge
templates register into the same mapping.

>>> import scorers
>>> scorers.get("levenshtein").name
'Levenshtein'
>>> "ExactMatch" in scorers.names()
True
"""

from __future__ import annotations

from dataclasses import dataclass, field
from importlib.metadata import EntryPoint
from typing import Any, Callable, Iterator

from . import plugins
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
    """Case-insensitive mapping of scorer names (and aliases) to :class:`Entry` (a :class:`scorers.plugins.Registry`
    read from the ``scorers`` entry-point group)."""

    def __init__(self) -> None:
        self._entries: plugins.Registry[Entry] = plugins.Registry(
            "scorer",
            group=ENTRY_POINT_GROUP,
            accept=self._plugin_entry,
            placeholder=_failed_plugin,
            unknown=_unknown_scorer,
        )

    # -------------------------------------------------------------- writing
    def add(self, entry: Entry, *, replace: bool = False) -> Entry:
        return self._entries.register(entry.name, entry, aliases=entry.aliases, replace=replace)

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
            entry = _class_entry(cls, name or cls.name or cls.__name__, aliases=tuple(aliases), defaults=defaults)
            entry.kind = kind or entry.kind
            entry.description = description or entry.description
            self.add(entry, replace=replace)
            return cls

        if isinstance(cls_or_name, type):
            return decorate(cls_or_name)
        if isinstance(cls_or_name, str):
            name = cls_or_name
        return decorate

    def add_loader(self, loader: Callable[["Registry"], None]) -> None:
        """Run ``loader(registry)`` lazily, before the first lookup of a name not registered yet (used for
        templates)."""
        self._entries.add_loader(lambda: loader(self))

    def _plugin_entry(self, entry_point: EntryPoint, target: Any) -> Entry | None:
        """The entry of a ``scorers`` entry point: a Scorer subclass, or a factory of scorers."""
        if isinstance(target, type) and issubclass(target, Scorer):
            if target.__name__ in self._entries:  # its module registered it under its own name
                return None
            return _class_entry(target, entry_point.name, source=entry_point.value)
        if callable(target):
            description = (target.__doc__ or "").strip().split("\n")[0]
            return Entry(entry_point.name, target, "plugin", description, source=entry_point.value)
        raise TypeError(f"{target!r} is neither a Scorer subclass nor a factory of scorers")

    # -------------------------------------------------------------- reading
    def entry(self, name: str) -> Entry:
        # A name registered already is the answer: templates and plugins never replace one, so the loaders
        # (YAML files, entry points: most of a cold call to a built-in scorer) run only for a name not found yet.
        return self._entries.get(name)

    def get(self, name: str, **params: Any) -> Scorer:
        return self.entry(name).create(**params)

    def names(self) -> list[str]:
        return sorted(self._entries.names(), key=str.lower)

    def entries(self) -> list[Entry]:
        return [entry for _, entry in sorted(self._entries.items(), key=lambda item: item[0].lower())]

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self._entries)


def _class_entry(
    cls: type[Scorer],
    name: str,
    *,
    aliases: tuple[str, ...] = (),
    defaults: dict[str, Any] | None = None,
    source: str = "builtin",
) -> Entry:
    doc = (cls.__doc__ or "").strip().splitlines()
    return Entry(
        name=name,
        factory=_factory(cls, name),
        kind=cls.kind,
        description=cls.description or (doc[0] if doc else ""),
        aliases=aliases,
        defaults=dict(defaults or {}),
        source=source,
        scorer_class=cls,
        higher_is_better=cls.higher_is_better,
    )


def _failed_plugin(entry_point: EntryPoint, message: str) -> Entry:
    """What a plugin that failed to load stands as: an entry that raises ``message`` when built."""
    return Entry(
        entry_point.name,
        _failing(message, entry_point.name),
        "plugin",
        f"(failed to load) {message}",
        source=entry_point.value,
    )


def _unknown_scorer(name: str, close: list[str]) -> UnknownScorerError:
    hint = f" Did you mean {', '.join(close)}?" if close else ""
    return UnknownScorerError(f"no scorer named {name!r}.{hint} See `python -m scorers list`.")


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
