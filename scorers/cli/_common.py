"""What the commands share: the exit codes epilog, file arguments, KEY=VALUE options, --price and -p NAME.KEY=VALUE."""

from __future__ import annotations

import argparse
import os
import sys
from types import UnionType
from typing import Annotated, Any, Callable, Literal, Mapping, NamedTuple, Sequence, Union, get_args, get_origin

import yaml
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from ..errors import ConfigError

EXIT_CODES = """exit codes:
  0    success
  1    a --threshold was not met, or (with --fail-on-error) a row had a scorer error
  2    bad usage, configuration or data: the run stopped before scoring more rows
  3    the run could not score: an unexpected error on some row, or a scorer failed on every row
  130  interrupted (Ctrl-C); 143 terminated (SIGTERM): rows written stay valid, --resume continues
"""


class Command(NamedTuple):
    """A command: ``add_parser(sub, templates)`` adds its subparser, ``run(args)`` runs it and returns the exit code."""

    add_parser: Callable[[argparse._SubParsersAction[argparse.ArgumentParser], argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


def file_path(text: str) -> str:
    """The argparse ``type`` of every argument that names a file to read or write (``-``: standard input or
    output): a directory there is a usage error (exit 2) naming it.

    >>> file_path("-"), file_path("results.jsonl")
    ('-', 'results.jsonl')
    >>> file_path(".")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: . is a directory, not a file
    """
    if text != "-" and os.path.isdir(text):
        raise argparse.ArgumentTypeError(f"{text} is a directory, not a file")
    return text


def parse_pairs(items: Sequence[str], option: str) -> list[tuple[str, str]]:
    pairs = []
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ConfigError(f"{option} expects KEY=VALUE, got {item!r}")
        pairs.append((key.strip(), value))
    return pairs


def parse_prices(items: Sequence[str]) -> dict[str, tuple[float, ...]]:
    """``--price MODEL=IN,OUT[,CACHED_IN]`` options (USD per 1M tokens) as ``configure(prices=...)`` takes them.

    >>> parse_prices(["gpt-4o-mini=0.15,0.6", "claude-sonnet-4-5=3,15,0.3"])
    {'gpt-4o-mini': (0.15, 0.6), 'claude-sonnet-4-5': (3.0, 15.0, 0.3)}
    """
    prices = {}
    for model, value in parse_pairs(items, "--price"):
        try:
            price = tuple(float(x) for x in value.split(","))
        except ValueError:
            price = ()
        if len(price) not in (2, 3):
            raise ConfigError(
                f"--price {model}={value}: expected MODEL=INPUT,OUTPUT or MODEL=INPUT,OUTPUT,CACHED_INPUT "
                "(USD per 1M tokens)"
            )
        prices[model] = price
    return prices


def scorer_params(names: Sequence[str], params: Sequence[str]) -> dict[str, dict[str, Any]]:
    by_name: dict[str, dict[str, Any]] = {name: {} for name in names}
    lowered = {name.lower(): name for name in names}
    for key, value in parse_pairs(params, "--param"):
        scorer, dot, param = key.rpartition(".")
        if not dot or scorer.lower() not in lowered:
            raise ConfigError(f"--param {key}: expected NAME.KEY with NAME one of the -s scorers ({', '.join(names)})")
        by_name[lowered[scorer.lower()]][param] = yaml.safe_load(value) if value else ""
    return by_name


def add_progress(parser: argparse.ArgumentParser) -> None:
    """``--progress`` / ``--no-progress`` (``args.progress``: True, False, or None to follow stderr)."""
    parser.add_argument(
        "--progress",
        dest="progress",
        action="store_true",
        default=None,
        help="force the progress bar (default: only when stderr is a terminal)",
    )
    parser.add_argument("--no-progress", dest="progress", action="store_false", help="no progress bar")


def wants_progress(args: argparse.Namespace) -> bool:
    """Whether to show a progress bar: as asked, else when stderr is a terminal."""
    return bool(args.progress) if args.progress is not None else sys.stderr.isatty()


# ------------------------------------------------------------------ options models -> argparse (add_options)
class Flag(NamedTuple):
    """How one field of an options model (a pydantic model, e.g. :class:`scorers.options.CorrelateOptions`) is
    spelt on the command line; everything else comes from the field (see :func:`add_options`).

    ``names``: the option strings (default ``--field-name``, ``--no-field-name`` for a field that defaults to
    True); ``help``: default the field's description (``%(default)s`` shows the default); ``type``: argparse's
    (default: the field's int or float); ``append``: repeatable (default: the field is a tuple or list);
    ``convert``: turns the parsed value into the field's (e.g. ``KEY=VALUE`` items into a dict), applied by
    :func:`options_of` inside the command, so that its ``ConfigError`` exits 2.
    """

    names: tuple[str, ...] = ()
    metavar: str | None = None
    help: str | None = None
    type: Callable[[str], Any] | None = None
    append: bool | None = None
    convert: Callable[[Any], Any] | None = None


def command_parser(
    sub: argparse._SubParsersAction[argparse.ArgumentParser],
    name: str,
    *,
    help: str,
    description: str,
    epilog: str = EXIT_CODES,
    parents: Sequence[argparse.ArgumentParser] = (),
) -> argparse.ArgumentParser:
    """A command's subparser: its line in ``--help``, its description and its exit codes (the epilog), kept as
    written."""
    return sub.add_parser(
        name,
        help=help,
        parents=list(parents),
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=epilog,
        description=description,
    )


def add_options(parser: argparse.ArgumentParser, model: type[BaseModel], flags: Mapping[str, Flag]) -> None:
    """Add the fields of ``model`` named in ``flags`` (in that order) to ``parser`` as options, each with the
    field's default, choices (a ``Literal``, or a tuple of them), type and description; ``args.<field>`` holds
    its value, ``None`` when an option without a default is not given. :func:`options_of` reads them back.

    >>> from pydantic import BaseModel, Field
    >>> from typing import Literal
    >>> class Options(BaseModel):
    ...     resamples: int = Field(1000, description="bootstrap resamples (default: %(default)s)")
    ...     levels: tuple[Literal["summary", "global"], ...] | None = Field(None, description="only this level")
    ...     compare: bool = Field(True, description="test every pair")
    >>> parser = argparse.ArgumentParser(prog="correlate")
    >>> add_options(parser, Options, {"resamples": Flag(metavar="N"), "levels": Flag(names=("--level",)),
    ...                               "compare": Flag(help="no tests")})
    >>> args = parser.parse_args(["--level", "global", "--no-compare"])
    >>> args.resamples, args.levels, args.compare
    (1000, ['global'], False)
    >>> options_of(args, {"resamples": Flag(), "levels": Flag()})
    {'resamples': 1000, 'levels': ['global']}
    """
    for name, flag in flags.items():
        names, options = _argparse_option(name, model.model_fields[name], flag)
        parser.add_argument(*names, **options)


def options_of(args: argparse.Namespace, flags: Mapping[str, Flag]) -> dict[str, Any]:
    """The options of :func:`add_options` that ``args`` gives (an option not given and without a default is left
    out, so the model's default holds), each through its ``Flag.convert``: the keyword arguments of the entry
    point."""
    given = {name: getattr(args, name) for name in flags}
    return {
        name: flags[name].convert(value) if flags[name].convert else value  # type: ignore[misc]
        for name, value in given.items()
        if value is not None
    }


def _argparse_option(name: str, field: FieldInfo, flag: Flag) -> tuple[tuple[str, ...], dict[str, Any]]:
    """The option strings and ``add_argument`` keywords of one field."""
    kind, repeated = _kind(field.annotation)
    default = None if field.is_required() else field.get_default(call_default_factory=True)
    option = name.replace("_", "-")
    options: dict[str, Any] = {"dest": name, "help": field.description if flag.help is None else flag.help}
    if flag.metavar is not None:
        options["metavar"] = flag.metavar
    if kind is bool:
        options["action"] = "store_false" if default else "store_true"
        return flag.names or (f"--no-{option}" if default else f"--{option}",), options
    if get_origin(kind) is Literal:
        options["choices"] = get_args(kind)
    if kind in (int, float) or flag.type is not None:
        options["type"] = flag.type or kind
    options |= _presence(field, default, repeated if flag.append is None else flag.append)
    return flag.names or (f"--{option}",), options


def _presence(field: FieldInfo, default: Any, repeated: bool) -> dict[str, Any]:
    """Required, repeatable (no default list: argparse would append to it) or with the field's default."""
    if field.is_required():
        return {"required": True}
    return {"action": "append"} if repeated else {"default": default}


def _kind(annotation: Any) -> tuple[Any, bool]:
    """The value type of an annotation without ``None`` and ``Annotated``'s metadata, and whether it is repeated
    (a tuple or list of it)."""
    if get_origin(annotation) is Annotated:
        return _kind(get_args(annotation)[0])
    if get_origin(annotation) in (Union, UnionType):
        kinds = [kind for kind in get_args(annotation) if kind is not type(None)]
        return _kind(kinds[0]) if len(kinds) == 1 else (Any, False)
    if get_origin(annotation) in (tuple, list):
        return _kind(get_args(annotation)[0])[0], True
    return annotation, False
