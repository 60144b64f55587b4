"""nltk's modules for METEOR and ROUGE without ``import nltk``, whose package ``__init__`` costs seconds.

``import nltk`` runs nltk's ``__init__``, which imports nearly all of nltk and,
through it, scipy, scikit-learn and pandas: about 2 s, most of a cold METEOR
call. The scorers need a few plain modules of it (the word tokenizer's rules,
the Porter stemmer, ``nltk.data.find`` to locate WordNet and the version), and
those do not need that ``__init__``.

:func:`nltk_module` returns nltk's module itself where nltk is imported already
(``sys.modules["nltk"]`` is nltk's package), and else a *private* copy: the
module's file of the installed nltk, executed unchanged into a module object
that only scorers holds. Its ``import nltk…`` statements get other private
copies, loaded the same way on first use (through an ``__import__`` given to
these modules alone; any other import is the ordinary one); package
``__init__`` files are not run, their modules are loaded one by one. Nothing is
added to ``sys.modules`` under nltk's names and no process-wide setting
changes, so a later ``import nltk`` (in any thread, at any time) runs nltk's
``__init__`` as usual and gets nltk's own modules, unaware of the copies.

A copy behaves as nltk's module does, with one known difference, handled where
it matters: nltk's path checks on zip archives (``nltk.pathsec``) read the data
path of the ``nltk.data`` module in ``sys.modules``, which a private copy is
not (see :mod:`scorers.text.wordnet`). A module that fails to load privately
(a future nltk whose modules need its ``__init__``) is imported the ordinary
way instead, which is slower but gives the same numbers.

>>> nltk_module("nltk.stem.porter", scorer="METEOR").PorterStemmer().stem("running")
'run'
"""

from __future__ import annotations

import builtins
import importlib
import importlib.machinery
import importlib.util
import sys
import threading
from pathlib import Path
from types import ModuleType
from typing import Any, Mapping, Sequence

from .._util import memoize
from ..errors import MissingExtraError

__all__ = ["is_private", "nltk_imported", "nltk_module", "nltk_version", "require_nltk"]

_EXTRA = "text"


def require_nltk(*, scorer: str) -> None:
    """Raise :class:`~scorers.errors.MissingExtraError` naming ``scorer`` when nltk is not installed (imports nothing).

    >>> require_nltk(scorer="METEOR")
    """
    if "nltk" in sys.modules:
        if sys.modules["nltk"] is None:  # the way to make `import nltk` fail on purpose
            raise MissingExtraError(scorer, "nltk", _EXTRA)
        return
    try:
        _nltk_spec()
    except ImportError as exc:
        raise MissingExtraError(scorer, "nltk", _EXTRA) from exc


@memoize
def _nltk_spec() -> importlib.machinery.ModuleSpec:
    """nltk's package's spec (looked up once: a search of ``sys.path``); ImportError where nltk is not installed."""
    try:
        spec = importlib.util.find_spec("nltk")
    except ValueError as exc:  # a broken nltk, or one without a spec
        raise ImportError(f"nltk cannot be imported: {exc}") from exc
    if spec is None:
        raise ModuleNotFoundError("No module named 'nltk'", name="nltk")
    return spec


def nltk_imported() -> bool:
    """Whether nltk's package is imported, or being imported (its modules then come from the import system)."""
    return sys.modules.get("nltk") is not None


def nltk_module(name: str, *, scorer: str) -> ModuleType:
    """nltk's module ``name`` (``"nltk.data"``, ...): nltk's own where nltk is imported, else a private copy.

    Raises :class:`~scorers.errors.MissingExtraError` naming ``scorer`` when nltk is not installed.
    """
    if not name.startswith("nltk."):
        raise ValueError(f"not a module of nltk's package: {name!r}")
    require_nltk(scorer=scorer)
    if not nltk_imported():
        found = _PRIVATE.module(name)
        if found is not None:
            return found
    try:
        return _nltks_own(name)
    except ImportError as exc:
        raise MissingExtraError(scorer, "nltk", _EXTRA) from exc


def _nltks_own(name: str) -> ModuleType:
    """nltk's module ``name`` from the import system, once nltk's package is imported whole.

    ``import_module("nltk")`` first: while another thread is running nltk's ``__init__``
    it waits for the end (importing ``name`` meanwhile could meet nltk's modules half made).
    """
    importlib.import_module("nltk")
    return importlib.import_module(name)


def is_private(module: ModuleType) -> bool:
    """Whether ``module`` is a private copy made by :func:`nltk_module` (not the one in ``sys.modules``)."""
    return _PRIVATE.owns(module)


def nltk_version(*, scorer: str) -> str:
    """``nltk.__version__`` without importing nltk: the ``VERSION`` file its ``__init__`` reads it from.

    >>> nltk_version(scorer="METEOR") == __import__("nltk").__version__
    True
    """
    require_nltk(scorer=scorer)
    if not nltk_imported():
        version = _PRIVATE.version()
        if version is not None:
            return version
    return str(_nltks_own("nltk").__version__)


class _PrivateNltk:
    """The private copies of nltk's modules of this process, by name (see the module's notes)."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._modules: dict[str, ModuleType] = {}
        self._failed: set[str] = set()
        self._builtins: dict[str, Any] | None = None

    def owns(self, module: ModuleType) -> bool:
        return self._modules.get(module.__name__) is module

    def version(self) -> str | None:
        """The stripped text of the package's ``VERSION`` file, or None where there is none to read."""
        spec = _nltk_spec()
        if spec.origin is None:
            return None
        try:
            return Path(spec.origin).with_name("VERSION").read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError):
            return None

    def module(self, name: str) -> ModuleType | None:
        """The private copy of ``name``, loaded now if needed; None where it cannot be loaded privately."""
        with self._lock:
            if name in self._failed:
                return None
            try:
                return self.run(self._load(name))
            except Exception:  # noqa: BLE001  (any failure: the caller imports nltk the ordinary way)
                self._failed.add(name)
                return None

    def _load(self, name: str, *, deferred: bool = False) -> ModuleType:
        """The private module ``name``, run now or (``deferred``) when one of its attributes is first read."""
        found = self._modules.get(name)
        if found is not None:
            return found if deferred else self.run(found)
        parent_name, _, child = name.rpartition(".")
        if parent_name:
            parent = self._load(parent_name)
            spec = importlib.machinery.PathFinder.find_spec(name, parent.__path__)
        else:
            spec = _nltk_spec()
        if spec is None or spec.loader is None:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        module = importlib.util.module_from_spec(spec)
        module.__dict__["__builtins__"] = self._module_builtins()
        self._modules[name] = module  # before running it: modules that import one another find it
        if parent_name:
            setattr(self._modules[parent_name], child, module)
        if spec.submodule_search_locations is None:  # a package's __init__ is not run
            module.__class__ = _Deferred
            module.__dict__[_OWNER] = self
            if not deferred:
                self.run(module)
        return module

    def run(self, module: ModuleType) -> ModuleType:
        """Run a deferred module's code, once (a failure leaves it deferred, to fail again where it is read)."""
        with self._lock:
            if type(module) is _Deferred:
                changing: Any = module  # its class changes below
                changing.__class__ = ModuleType
                owner = changing.__dict__.pop(_OWNER)
                try:
                    changing.__spec__.loader.exec_module(changing)
                except BaseException:
                    changing.__class__ = _Deferred
                    changing.__dict__[_OWNER] = owner
                    raise
        return module

    def _module_builtins(self) -> dict[str, Any]:
        """The builtins the private modules see: Python's, with :meth:`_import` as ``__import__``."""
        if self._builtins is None:
            self._builtins = {**vars(builtins), "__import__": self._import}
        return self._builtins

    def _import(
        self,
        name: str,
        globals: Mapping[str, Any] | None = None,
        locals: Mapping[str, Any] | None = None,
        fromlist: Sequence[str] | None = (),
        level: int = 0,
    ) -> ModuleType:
        """``__import__`` for the private modules: nltk's names resolve to private copies, others as usual."""
        if level:
            package = (globals or {}).get("__package__") or ""
            target = importlib.util.resolve_name("." * level + name, package) if name else package
        else:
            target = name
        if target != "nltk" and not target.startswith("nltk."):
            return builtins.__import__(name, globals, locals, fromlist or (), level)
        with self._lock:
            module = self._load(target)
            if not fromlist:
                return self._modules[target.partition(".")[0]] if not level else module
            if hasattr(module, "__path__"):
                for item in fromlist:
                    if item != "*" and not hasattr(module, item):
                        try:
                            self._load(f"{target}.{item}", deferred=True)
                        except ModuleNotFoundError as exc:
                            if exc.name != f"{target}.{item}":
                                raise
            return module


#: The key under which a deferred module holds the :class:`_PrivateNltk` that runs it.
_OWNER = "__scorers_private_nltk__"


class _Deferred(ModuleType):
    """A private module whose code runs when one of its attributes is first read.

    ``from nltk import grammar, sem`` binds modules without reading them: ``nltk.data``'s
    ``grammar`` and ``sem``, half of its cost, never run for METEOR.
    """

    def __getattr__(self, name: str) -> Any:
        owner = self.__dict__.get(_OWNER)
        if owner is None:
            raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}")
        owner.run(self)
        return ModuleType.__getattribute__(self, name)


_PRIVATE = _PrivateNltk()
