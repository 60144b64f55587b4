"""The engine registry: names to :class:`~scorers.engines.Engine` classes.

Names are case-insensitive. The built-in engines are ``local``, ``ray`` and ``spark``; third-party packages add
engines through the ``scorers.engines`` entry-point group (each entry point names an ``Engine`` subclass,
registered under its ``name``). A plugin that fails to load warns and fails only when its engine is asked for.

>>> registry.get("ray", address="auto")
Ray(address='auto')
>>> registry.names()[:3]
['local', 'ray', 'spark']
"""

from __future__ import annotations

import threading
import warnings
from importlib import metadata as importlib_metadata
from typing import Any, Iterable

from ..errors import ConfigError
from .base import Engine
from .local import Local
from .ray import Ray
from .spark import Spark

__all__ = ["EngineRegistry", "registry", "engine_named", "ENTRY_POINT_GROUP"]

ENTRY_POINT_GROUP = "scorers.engines"


class EngineRegistry:
    """Case-insensitive mapping of engine names to :class:`~scorers.engines.Engine` classes."""

    def __init__(self, builtins: Iterable[type[Engine]] = ()) -> None:
        self._classes: dict[str, type[Engine]] = {}
        self._failures: dict[str, str] = {}  # name -> why its plugin did not load
        self._lock = threading.RLock()
        self._plugins_loaded = False
        for cls in builtins:
            self.register(cls)

    def register(self, cls: type[Engine], *, replace: bool = False) -> type[Engine]:
        """Register ``cls`` under its ``name`` (usable as a class decorator)."""
        if not (isinstance(cls, type) and issubclass(cls, Engine)):
            raise ConfigError(f"cannot register {cls!r} as an engine: not a subclass of scorers.engines.Engine")
        key = cls.name.lower()
        with self._lock:
            if key in self._classes and self._classes[key] is not cls and not replace:
                raise ConfigError(f"an engine named {cls.name!r} is already registered ({self._classes[key]!r})")
            self._classes[key] = cls
            self._failures.pop(key, None)
        return cls

    def get(self, name: str, **options: Any) -> Engine:
        """The engine registered as ``name`` with ``options`` (a wrong one is a ConfigError naming the engine)."""
        return self.engine_class(name)(**options)

    def engine_class(self, name: str) -> type[Engine]:
        """The class registered as ``name`` (case-insensitive); an unknown name is a ConfigError naming the others."""
        self._load_plugins()
        key = name.lower()
        if key in self._failures:
            raise ConfigError(self._failures[key])
        if key not in self._classes:
            raise ConfigError(f"unknown engine {name!r}; expected {', '.join(self.names())}")
        return self._classes[key]

    def names(self) -> list[str]:
        """Every engine's name, the built-in ones first."""
        self._load_plugins()
        return [*self._classes, *self._failures]

    def _load_plugins(self) -> None:
        with self._lock:
            if self._plugins_loaded:
                return
            self._plugins_loaded = True
            for ep in importlib_metadata.entry_points(group=ENTRY_POINT_GROUP):
                if ep.name.lower() in self._classes:
                    continue
                try:
                    target = ep.load()
                    if not (isinstance(target, type) and issubclass(target, Engine)):
                        raise TypeError(f"{target!r} is not a subclass of scorers.engines.Engine")
                    self.register(target)
                except Exception as exc:  # a broken plugin must not break the library: only its own engine fails
                    message = f"engine entry point {ep.name!r} ({ep.value}) failed to load: {type(exc).__name__}: {exc}"
                    warnings.warn(message, RuntimeWarning, stacklevel=3)
                    self._failures[ep.name.lower()] = message


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
