"""One registry type for every plugin point: :class:`Registry`, names to plugins of one kind.

Scorers (:mod:`scorers.registry`), engines (:mod:`scorers.engines.registry`), judge kinds, judge template
formats and the command line's commands are each a ``Registry``. A registry maps names (and aliases;
case-insensitive unless asked otherwise) to values, refuses a name that is taken, answers an unknown name with
the closest ones, and loads its entry-point group lazily, on the first lookup of a name it does not have or the
first listing. A plugin whose entry point fails to import, is not what the registry holds, or cannot be registered
is isolated: a ``RuntimeWarning`` names the entry point and the error, the other plugins load, and only asking
for that name fails (with the same message).

>>> from typing import Callable
>>> greetings: Registry[Callable[[str], str]] = Registry("greeting")
>>> @greetings.register("hello", aliases=("hi",))
... def hello(name: str) -> str:
...     return f"hello {name}"
>>> greetings.get("HI")("Ada")
'hello Ada'
>>> greetings.names(), "Hello" in greetings
(['hello'], True)
>>> greetings.get("helo")
Traceback (most recent call last):
...
scorers.errors.ConfigError: unknown greeting 'helo'; expected hello; did you mean 'hello'?

A plugin package declares its plugins in the registry's entry-point group (``pyproject.toml``)::

    [project.entry-points."scorers.engines"]
    careful = "my_package.engines:Careful"
"""

from __future__ import annotations

import difflib
import threading
import warnings
from importlib import metadata as importlib_metadata
from typing import Any, Callable, Generic, Iterator, Sequence, TypeVar, overload

from .errors import ConfigError

__all__ = ["Registry"]

T = TypeVar("T")


class Registry(Generic[T]):
    """Names (and aliases) to plugins of one ``kind``, extended by the entry points of ``group``.

    - ``kind``: what the plugins are, in messages ("engine": "unknown engine 'x'; expected ...");
    - ``group``: the entry-point group plugin packages declare theirs in (``None``: none is read);
    - ``case_sensitive``: whether ``"BLEU"`` and ``"bleu"`` are different names (by default they are one);
    - ``accept(entry_point, loaded)``: the value an entry point's object registers (raises when it is not one;
      ``None`` registers nothing); by default the object itself;
    - ``placeholder(entry_point, message)``: what a plugin that failed stands as under its name (a value that
      fails when used); by default nothing, and getting the name raises a :class:`~scorers.errors.ConfigError`
      with the message;
    - ``unknown(name, suggestions)``: the error for an unknown name; by default a ``ConfigError`` listing the
      names.
    """

    def __init__(
        self,
        kind: str,
        *,
        group: str | None = None,
        case_sensitive: bool = False,
        accept: Callable[[importlib_metadata.EntryPoint, Any], T | None] | None = None,
        placeholder: Callable[[importlib_metadata.EntryPoint, str], T] | None = None,
        unknown: Callable[[str, list[str]], Exception] | None = None,
    ) -> None:
        self.kind = kind
        self.group = group
        self._case_sensitive = case_sensitive
        self._accept = accept
        self._placeholder = placeholder
        self._unknown = unknown
        self._values: dict[str, T] = {}  # name -> value, in registration order
        self._keys: dict[str, str] = {}  # folded name or alias -> name
        self._failures: dict[str, tuple[str, str]] = {}  # folded name -> (name, why its plugin failed)
        self._loaders: list[Callable[[], None]] = []
        self._entry_points_read = False
        self._lock = threading.RLock()

    # -------------------------------------------------------------- writing
    @overload
    def register(self, name: str, value: T, /, *, aliases: Sequence[str] = (), replace: bool = False) -> T: ...

    @overload
    def register(self, name: str, /, *, aliases: Sequence[str] = (), replace: bool = False) -> Callable[[T], T]: ...

    def register(self, name: str, /, *args: T, aliases: Sequence[str] = (), replace: bool = False) -> Any:
        """Register ``value`` as ``name`` (and ``aliases``); without a value, a decorator that registers what it
        decorates. A name or alias taken by another plugin is a ``ConfigError`` unless ``replace``; registering the
        same value again under its name changes nothing."""

        def add(value: T) -> T:
            self._add(name, value, tuple(aliases), replace)
            return value

        return add(args[0]) if args else add

    def _add(self, name: str, value: T, aliases: tuple[str, ...], replace: bool) -> None:
        with self._lock:
            for key in (name, *aliases):
                owner = self._keys.get(self._fold(key))
                if owner is not None and owner != name and not replace:
                    raise ConfigError(f"cannot register {name!r}: the name {key!r} is taken by {owner!r}")
            if name in self._values and self._values[name] is not value and not replace:
                raise ConfigError(f"{_article(self.kind)} {self.kind} named {name!r} is already registered")
            for key in [key for key, owner in self._keys.items() if owner == name]:  # a replaced entry's aliases
                del self._keys[key]
            self._values[name] = value  # (a replaced name keeps its place)
            self._failures.pop(self._fold(name), None)
            for key in (name, *aliases):
                self._keys[self._fold(key)] = name

    def remove(self, name: str) -> None:
        """Forget ``name`` (the registered name, not an alias) and its aliases; an unknown name is ignored."""
        with self._lock:
            if name in self._values:
                del self._values[name]
                for key in [key for key, owner in self._keys.items() if owner == name]:
                    del self._keys[key]

    def add_loader(self, loader: Callable[[], None]) -> None:
        """Call ``loader()`` once, lazily: before the first lookup of an unknown name or the first listing."""
        with self._lock:
            self._loaders.append(loader)

    # -------------------------------------------------------------- reading
    def get(self, name: str) -> T:
        """The plugin registered as ``name`` (or an alias); an unknown name is an error naming the closest ones."""
        key = self._fold(name)
        if key not in self._keys:  # what is registered already is the answer: loaders run only for a miss
            self.load()
        if key in self._keys:
            return self._values[self._keys[key]]
        if key in self._failures:
            raise ConfigError(self._failures[key][1])
        close = self.suggestions(name)
        if self._unknown is not None:
            raise self._unknown(name, close)
        hint = f"; did you mean {' or '.join(map(repr, close))}?" if close else ""
        raise ConfigError(f"unknown {self.kind} {name!r}; expected {', '.join(self.names())}{hint}")

    def registered(self, name: str) -> T | None:
        """The plugin registered as ``name`` (or an alias) so far, or ``None``: it runs no loader and reads no entry
        point, for code that registers (a plugin's module that imports the registering code is not loaded
        while that code is half-imported)."""
        key = self._keys.get(self._fold(name))
        return None if key is None else self._values[key]

    def names(self) -> list[str]:
        """Every name, in registration order, then those of the plugins that failed to load."""
        self.load()
        return [*self._values, *(name for name, _ in self._failures.values())]

    def items(self) -> list[tuple[str, T]]:
        """Every ``(name, plugin)``, in registration order (plugins that failed to load are not among them)."""
        self.load()
        return list(self._values.items())

    def failures(self) -> dict[str, str]:
        """The plugins that failed to load (and stand as no placeholder): name to why."""
        self.load()
        return dict(self._failures.values())

    def suggestions(self, name: str) -> list[str]:
        """Up to three registered names whose name or alias is close to ``name``, each once."""
        keys = {self._fold(key): owner for key, owner in self._keys.items()}
        matches = difflib.get_close_matches(self._fold(name), list(keys), n=6, cutoff=0.6)
        return list(dict.fromkeys(keys[match] for match in matches))[:3]

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        if self._fold(name) not in self._keys:
            self.load()
        return self._fold(name) in self._keys

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self.names())

    # -------------------------------------------------------------- loading
    def load(self) -> None:
        """Run the pending loaders, then read the entry-point group (once)."""
        with self._lock:
            while self._loaders:
                self._loaders.pop(0)()
            if self.group is not None and not self._entry_points_read:
                self._entry_points_read = True
                for entry_point in importlib_metadata.entry_points(group=self.group):
                    if self._fold(entry_point.name) not in self._keys:  # a plugin never replaces a name
                        self._load_entry_point(entry_point)

    def _load_entry_point(self, entry_point: importlib_metadata.EntryPoint) -> None:
        key = self._fold(entry_point.name)
        try:
            loaded = entry_point.load()
            if key in self._keys:  # its module registered it on import
                return
            value = loaded if self._accept is None else self._accept(entry_point, loaded)
            if value is not None:
                self._add(entry_point.name, value, (), replace=False)
        except Exception as exc:  # a broken plugin must not break the others: only its own name fails
            message = (
                f"{self.kind} entry point {entry_point.name!r} ({entry_point.value}) failed to load: "
                f"{type(exc).__name__}: {exc}"
            )
            warnings.warn(message, RuntimeWarning, stacklevel=4)
            if key in self._keys:
                return
            if self._placeholder is not None:
                self._add(entry_point.name, self._placeholder(entry_point, message), (), replace=False)
            else:
                self._failures[key] = (entry_point.name, message)

    def _fold(self, name: str) -> str:
        return name if self._case_sensitive else name.lower()


def _article(word: str) -> str:
    return "an" if word[:1].lower() in "aeiou" else "a"
