"""The engine registry: names to :class:`~scorers.engines.Engine` classes.

Names are case-insensitive. The built-in engines are ``local``, ``ray`` and ``spark``; third-party packages add
engines through the ``scorers.engines`` entry-point group (each entry point names an ``Engine`` subclass,
registered under the entry point's name). A plugin that fails to load warns and fails only when its engine is
asked for.

>>> registry.get("ray", address="auto")
Ray(address='auto')
>>> registry.names()[:3]
['local', 'ray', 'spark']
"""

from __future__ import annotations

from importlib import metadata as importlib_metadata
from typing import Any, Iterable

from ..errors import ConfigError
from ..plugins import Registry
from .base import Engine
from .local import Local
from .ray import Ray
from .spark import Spark

__all__ = ["EngineRegistry", "registry", "engine_named", "ENTRY_POINT_GROUP"]

ENTRY_POINT_GROUP = "scorers.engines"


class EngineRegistry:
    """Case-insensitive mapping of engine names to :class:`~scorers.engines.Engine` classes."""

    def __init__(self, builtins: Iterable[type[Engine]] = ()) -> None:
        self._classes: Registry[type[Engine]] = Registry("engine", group=ENTRY_POINT_GROUP, accept=_engine_class)
        for cls in builtins:
            self.register(cls)

    def register(self, cls: type[Engine], *, replace: bool = False) -> type[Engine]:
        """Register ``cls`` under its ``name`` (usable as a class decorator)."""
        return self._classes.register(_engine_class(None, cls).name.lower(), cls, replace=replace)

    def get(self, name: str, **options: Any) -> Engine:
        """The engine registered as ``name`` with ``options`` (a wrong one is a ConfigError naming the engine)."""
        return self.engine_class(name)(**options)

    def engine_class(self, name: str) -> type[Engine]:
        """The class registered as ``name`` (case-insensitive); an unknown name is a ConfigError naming the others."""
        return self._classes.get(name)

    def names(self) -> list[str]:
        """Every engine's name, the built-in ones first."""
        return self._classes.names()

    def options_help(self) -> str:
        """Every registered engine's options, as ``--engine-option``'s help lists them (``Engine.options()``).

        >>> EngineRegistry([Local, Ray]).options_help().split(" (")[0]
        'ray: address'
        """
        return "; ".join(
            f"{name}: {key} ({text})" for name, cls in self._classes.items() for key, text in cls.options().items()
        )


def _engine_class(entry_point: importlib_metadata.EntryPoint | None, loaded: Any) -> type[Engine]:
    """``loaded`` when it is an :class:`Engine` subclass (what an entry point may name)."""
    if not (isinstance(loaded, type) and issubclass(loaded, Engine)):
        raise ConfigError(f"cannot register {loaded!r} as an engine: not a subclass of scorers.engines.Engine")
    return loaded


#: The engines ``evaluate(engine=NAME)`` and ``--engine NAME`` know.
registry = EngineRegistry((Local, Ray, Spark))


def engine_named(engine: str | Engine) -> Engine:
    """``engine`` itself, or the engine registered under that name with its default options.

    >>> engine_named("spark"), engine_named(Ray(address="auto"))
    (Spark(master=None, conf={}), Ray(address='auto'))
    """
    if isinstance(engine, Engine):
        return engine
    if isinstance(engine, str):
        return registry.get(engine)
    raise ConfigError(f"engine= takes an engine's name ({', '.join(registry.names())}) or an Engine, got {engine!r}")
