"""Command-line options derived from the fields of a pydantic options model: the flag, ``choices``, ``type``,
default and help of each come from the field, declared once there.

>>> import argparse
>>> from pydantic import BaseModel, Field
>>> class Options(BaseModel):
...     concurrency: int = Field(default=16, description="in-flight calls")
...     dry_run: bool = Field(default=False, description="score nothing")
>>> parser = argparse.ArgumentParser()
>>> add_model_options(parser, Options, ["concurrency", "dry_run"])
>>> parser.parse_args(["--dry-run"])
Namespace(concurrency=16, dry_run=True)
>>> [action.help for action in parser._actions[1:]]
['in-flight calls (default: 16)', 'score nothing']
"""

from __future__ import annotations

import argparse
import types
import typing
from typing import Any, Literal, Sequence

from pydantic import BaseModel

__all__ = ["add_model_options", "option_flag"]


def option_flag(name: str) -> str:
    """The command-line flag of option ``name``: ``fail_on_error`` → ``--fail-on-error``."""
    return "--" + name.replace("_", "-")


def _choices(annotation: Any) -> list[Any] | None:
    """The values of a ``Literal[...]`` annotation (optionally ``| None``), else None."""
    if typing.get_origin(annotation) is Literal:
        return list(typing.get_args(annotation))
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        for member in typing.get_args(annotation):
            if typing.get_origin(member) is Literal:
                return list(typing.get_args(member))
    return None


def add_model_options(parser: argparse.ArgumentParser, model: type[BaseModel], names: Sequence[str]) -> None:
    """Add ``model``'s fields ``names`` to ``parser``: a bool as a switch, a ``Literal`` as ``choices``, an int or a
    float typed, with its default; the help is the field's description (and the default, where there is one)."""
    for name in names:
        field = model.model_fields[name]
        help_text = field.description or ""
        options: dict[str, Any] = {"dest": name}
        choices = _choices(field.annotation)
        if field.annotation is bool:
            options["action"] = "store_true"
        elif choices is not None:
            options["choices"] = choices
        elif field.annotation in (int, float):
            options["type"] = field.annotation
            options["default"] = field.default
            help_text += f" (default: {field.default})"
        parser.add_argument(option_flag(name), help=help_text, **options)
