"""Each statistics entry point's options are declared once (scorers.options): the command's defaults, choices and
option names, and the function's signature, all come from the model, so they cannot drift apart."""

from __future__ import annotations

import argparse
import inspect
import subprocess
import sys
from typing import Any, Literal, get_args, get_origin

import pytest

from scorers.cli import build_parser
from scorers.cli import compare as cli_compare
from scorers.cli import correlate as cli_correlate
from scorers.cli import meta_eval as cli_meta_eval
from scorers.cli._common import Flag, _kind
from scorers.errors import ConfigError
from scorers.options import CompareOptions, CorrelateOptions, MetaEvalOptions, Options
from scorers.stats import compare, correlate, meta_evaluate

ENTRY_POINTS = [
    ("compare", CompareOptions, cli_compare.FLAGS, compare),
    ("meta-eval", MetaEvalOptions, cli_meta_eval.FLAGS, meta_evaluate),
    ("correlate", CorrelateOptions, cli_correlate.FLAGS, correlate),
]


def subparser(command: str) -> argparse.ArgumentParser:
    actions = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return actions[0].choices[command]


def actions_by_dest(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    return {action.dest: action for action in parser._actions}


@pytest.mark.parametrize(("command", "model", "flags", "function"), ENTRY_POINTS, ids=[e[0] for e in ENTRY_POINTS])
def test_the_command_and_the_function_take_the_models_options(
    command: str, model: type[Options], flags: dict[str, Flag], function: Any
) -> None:
    """Every option of the model is an option of the command (except those the command sets otherwise, named
    here) with the model's default, choices and description, and a keyword of the function with its default."""
    actions = actions_by_dest(subparser(command))
    not_on_the_command_line = {"pairs"} - set(flags) if model is CorrelateOptions else set()
    assert set(flags) | not_on_the_command_line == set(model.model_fields)
    signature = inspect.signature(function).parameters
    for name, field in model.model_fields.items():
        default = inspect.Parameter.empty if field.is_required() else model.default(name)
        assert signature[name].default == default, name
        if name not in flags:
            continue
        action = actions[name]
        kind, _ = _kind(field.annotation)
        if isinstance(action, (argparse._StoreTrueAction, argparse._StoreFalseAction)):
            assert action.default == default, name
        elif isinstance(action, argparse._AppendAction):
            assert action.default is None, name  # not given: the model's default
        else:
            assert action.default == (None if default is inspect.Parameter.empty else default), name
            assert action.required == field.is_required(), name
        assert action.choices == (get_args(kind) if get_origin(kind) is Literal else None), name
        assert action.help == (flags[name].help or field.description), name


@pytest.mark.parametrize(("command", "model", "flags", "function"), ENTRY_POINTS, ids=[e[0] for e in ENTRY_POINTS])
def test_not_given_options_take_the_models_defaults(
    command: str, model: type[Options], flags: dict[str, Flag], function: Any
) -> None:
    """What the command passes when no option is given builds the model's defaults."""
    from scorers.cli._common import options_of

    required = {"compare": ["a", "b"], "meta-eval": ["data", "-s", "J", "--label", "L"], "correlate": ["r"]}[command]
    args = subparser(command).parse_args(required)
    given = options_of(args, flags)
    extra = {"human": ("h",)} if model is CorrelateOptions else {}
    assert model(**{**given, **extra}) == model(**{**{"label": "L"}, **extra} if model is MetaEvalOptions else extra)


def test_help_shows_the_models_defaults() -> None:
    text = subparser("correlate").format_help()
    assert "bootstrap resamples (default: 1000)" in text and "(default: 0, any difference)" in text
    assert "seed of every draw (default: 12345, sacrebleu's)" in subparser("compare").format_help()
    assert CorrelateOptions.describe("confidence") == "interval level (default: 0.95)"


def test_a_bad_option_names_it() -> None:
    with pytest.raises(ConfigError, match="level 'summary': needs group_by"):
        CorrelateOptions(human=["h"], levels=["summary"])
    with pytest.raises(ConfigError, match="coefficient 'tau': choose from pearson"):
        CorrelateOptions(human=["h"], coefficients=["tau"])
    with pytest.raises(ConfigError, match="resamples must be an integer of at least 100, got 10"):
        MetaEvalOptions(label="l", resamples=10)
    with pytest.raises(ConfigError, match="test 'x': choose bs"):
        CompareOptions(test="x")
    with pytest.raises(ConfigError, match="key=3: "):
        CompareOptions(key=3)
    with pytest.raises(TypeError, match="compare\\(\\) got an unexpected keyword argument 'sead'.*seed"):
        CompareOptions(sead=1)


def test_building_the_parser_imports_neither_numpy_nor_scipy() -> None:
    code = "import sys; from scorers.cli import build_parser; build_parser(); print('numpy' in sys.modules, 'scipy' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stdout.split() == ["False", "False"], done.stderr
