"""Run's options are declared once: the command line's defaults, choices and help come from ``scorers.Run``'s
fields, and the default concurrency is written in one place (``scorers._aio.DEFAULT_CONCURRENCY``)."""

from __future__ import annotations

import inspect
import re
import typing
from pathlib import Path

import pytest

import scorers
from scorers._aio import DEFAULT_CONCURRENCY
from scorers.batch import BatchScorer
from scorers.cli import build_parser
from scorers.errors import ConfigError

PACKAGE = Path(scorers.__file__).parent


def run_options() -> dict[str, object]:
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    return {action.dest: action for action in sub.choices["run"]._actions}


def test_the_run_commands_options_are_runs_fields():
    options = run_options()
    fields = scorers.Run.model_fields
    for name in ("resume", "force", "format", "concurrency", "workers", "ordered", "metadata", "fail_on_error"):
        option, field = options[name], fields[name]
        assert option.default == field.default, name
        assert option.help == field.description, name
    assert tuple(options["format"].choices) == typing.get_args(typing.get_args(fields["format"].annotation)[0])
    assert options["output"].help == fields["output"].description
    assert options["engine"].default == fields["engine"].default


def test_every_engines_options_are_in_the_help():
    helped = run_options()["engine_options"].help
    for name in scorers.engines.registry.names():
        for option in scorers.engines.registry.engine_class(name).options():
            assert f"{name}: {option} (" in helped


def test_the_default_concurrency_is_written_once():
    assert (
        run_options()["concurrency"].default == DEFAULT_CONCURRENCY == scorers.Run.model_fields["concurrency"].default
    )
    for function in (scorers.evaluate, BatchScorer, scorers.Scorer.ascore_batch):
        assert inspect.signature(function).parameters["concurrency"].default == DEFAULT_CONCURRENCY
    written = [
        f"{path.relative_to(PACKAGE)}:{number}"
        for path in PACKAGE.rglob("*.py")
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if re.search(r"concurrency\b.*\b16\b", line) and ">>>" not in line and path.name != "_aio.py"
    ]
    assert written == []


@pytest.mark.parametrize(
    "options,message",
    [
        ({"concurrency": 0}, "concurrency must be at least 1, got 0"),
        ({"workers": -1}, "workers must be at least 1, got -1"),
        ({"thresholds": {"Nope": 0.5}}, "thresholds Nope: not one of the scorers being run (ExactMatch)"),
        ({"thresholds": {"exactmatch": 2.0}}, "thresholds exactmatch=2: scores lie in [0, 1]"),
        ({"force": True}, "force needs resume"),
        ({"resume": True}, "resume needs -o OUT.jsonl"),
        ({"concurency": 4}, "Run has no option 'concurency'; did you mean 'concurrency'?"),
        ({"format": "xml"}, "Run option format='xml'"),
    ],
)
def test_a_refused_option_is_named(options, message):
    with pytest.raises(ConfigError) as refused:
        scorers.Run([{"output": "a"}], ["ExactMatch"], **options)
    assert message in str(refused.value)


def test_thresholds_are_keyed_by_the_scorers_own_names():
    run = scorers.Run([{"output": "a", "expected": "a"}], ["ExactMatch"], thresholds={"exactmatch": 0.5})
    assert run.thresholds == {"ExactMatch": 0.5}
