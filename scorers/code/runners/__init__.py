"""Runners: how a program of one language is run in the sandbox. A language is one module here.

A runner module defines a :class:`Runner` subclass and names it ``RUNNER``; its module name is the language's name
(``CodeExecution(language="python")`` loads ``scorers.code.runners.python``). A runner says which fence tags mark
its code, which files and command run a program against an assert-style test or on stdin, and how to read a
failure from stderr. The sandbox, the limits, the tests and the score are the same for every language.

>>> runner = get_runner("python", None)
>>> runner.tags
('python', 'py', 'python3')
>>> sorted(languages())
['python']
"""

from __future__ import annotations

import importlib
import pkgutil
from abc import ABC, abstractmethod
from typing import ClassVar

from ...errors import ConfigError

__all__ = ["Runner", "Command", "get_runner", "languages"]

#: A run: the command (argv) and the files written into its directory first.
Command = tuple[list[str], dict[str, str]]


class Runner(ABC):
    """How programs of one language run. ``interpreter``: the program that runs them (None: the runner's own
    default)."""

    #: The fence tags (lower case) that mark this language's code blocks, the first one its name.
    tags: ClassVar[tuple[str, ...]] = ()

    def __init__(self, interpreter: str | None) -> None:
        self.interpreter = interpreter or self.default_interpreter()

    @abstractmethod
    def default_interpreter(self) -> str:
        """The absolute path of the program that runs this language's code when none is given."""

    @abstractmethod
    def with_test(self, program: str, test: str) -> Command:
        """The run of ``program`` followed by the assert-style ``test`` (source of the same language), each in a
        file of its own: a test is data, never pasted into the program's text."""

    @abstractmethod
    def on_stdin(self, program: str) -> Command:
        """The run of ``program`` alone, reading its stdin."""

    def failure(self, stderr: str) -> str:
        """Why a run that exited with an error failed, read from its stderr: ``memory``, ``wrong answer`` (a
        test's assertion failed) or ``crash``."""
        return "crash"


def languages() -> list[str]:
    """The languages there are runners for: the modules of this package."""
    return [module.name for module in pkgutil.iter_modules(__path__) if not module.name.startswith("_")]


def get_runner(language: str, interpreter: str | None) -> Runner:
    """The runner of ``language`` (a module of this package), with ``interpreter``."""
    if language not in languages():
        raise ConfigError(
            f"CodeExecution: no runner for language {language!r} (there are: {', '.join(languages())})",
            scorer="CodeExecution",
        )
    runner: type[Runner] = importlib.import_module(f"{__name__}.{language}").RUNNER
    return runner(interpreter)
