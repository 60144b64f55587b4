"""``meta-eval``: how well a judge agrees with human labels."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..base import Scorer
from ..errors import ConfigError
from ..io import read_rows
from ..options import MetaEvalOptions
from ..registry import registry
from ._common import Command, Flag, add_options, command_parser, file_path, options_of, parse_pairs, scorer_params


def add_meta_eval(sub: argparse._SubParsersAction[argparse.ArgumentParser], templates: argparse.ArgumentParser) -> None:
    p_meta = command_parser(
        sub,
        "meta-eval",
        help="does a judge agree with human labels? accuracy, kappa, correlations, confusion",
        parents=[templates],
        description="Run one judge over DATA, whose rows carry a human label, and report agreement with "
        "bootstrap confidence intervals (JSON to -o, a table on stderr; see scorers.stats.metaeval).",
    )
    p_meta.add_argument(
        "data", type=file_path, help="labelled rows (.jsonl, .json array, .csv/.tsv), or - for JSONL on stdin"
    )
    p_meta.add_argument("-s", "--scorer", required=True, dest="judge", metavar="JUDGE", help="the judge to grade")
    add_options(p_meta, MetaEvalOptions, _flags("label", "label_scores", "samples"))
    p_meta.add_argument(
        "--swap",
        action="store_true",
        help="pairwise judges: ask each pair in both orders; report position bias and consistency",
    )
    add_judge_param(p_meta)
    add_options(p_meta, MetaEvalOptions, _flags("mapping", "key"))
    p_meta.add_argument("-o", "--output", type=file_path, metavar="META.json", help="report file (default: stdout)")
    p_meta.add_argument("--format", choices=["jsonl", "json", "csv"], help="input format (default: from the extension)")
    add_options(p_meta, MetaEvalOptions, _flags("concurrency"))
    p_meta.add_argument("--model", help="model of the judge (default: SCORERS_MODEL, else the library default)")
    p_meta.add_argument(
        "--api",
        metavar="PROTOCOL",
        help="wire protocol of the LLM judges: chat, responses, anthropic, gemini, bedrock (default: SCORERS_API, "
        "else chat; docs/providers/)",
    )
    p_meta.add_argument("--no-cache", action="store_true", help="do not read or write the LLM judge cache")
    add_options(p_meta, MetaEvalOptions, _flags("resamples", "confidence", "seed"))


def add_judge_param(parser: argparse.ArgumentParser) -> None:
    """``-p JUDGE.KEY=VALUE`` (repeatable), the judge's parameters as :func:`_judge` reads them."""
    parser.add_argument(
        "-p",
        "--param",
        action="append",
        default=[],
        metavar="JUDGE.KEY=VALUE",
        help="judge parameter, VALUE parsed as YAML (e.g. -p Factuality.temperature=0.7)",
    )


def _flags(*names: str) -> dict[str, Flag]:
    """The options ``names`` of :data:`FLAGS`, added where --help lists them."""
    return {name: FLAGS[name] for name in names}


def _label_scores(text: str) -> dict[str, float] | None:
    """``--label-scores``: ``Y=1,N=0`` or a JSON object (an empty one: none)."""
    if not text:
        return None
    if text.lstrip().startswith(("{", "[")):
        try:
            mapping = json.loads(text)
        except ValueError as exc:
            raise ConfigError(f"--label-scores: not valid JSON ({exc})") from None
        if not isinstance(mapping, dict):
            raise ConfigError(f"--label-scores: the JSON must be an object {{label: score}}, got {text!r}")
        return mapping
    scores = {}
    for name, value in parse_pairs([p for p in text.split(",") if p.strip()], "--label-scores"):
        try:
            scores[name] = float(value)
        except ValueError:
            raise ConfigError(f"--label-scores {name}={value}: not a number") from None
    return scores


def _mapping(items: list[str]) -> dict[str, str]:
    return dict(parse_pairs(items, "--map"))


#: The options of scorers.options.MetaEvalOptions and how the command spells them.
FLAGS = {
    "label": Flag(metavar="FIELD"),
    "label_scores": Flag(metavar="MAP", convert=_label_scores),
    "samples": Flag(metavar="K"),
    "key": Flag(metavar="FIELD"),
    "mapping": Flag(names=("--map",), metavar="FIELD=COLUMN", append=True, convert=_mapping),
    "concurrency": Flag(),
    "resamples": Flag(),
    "confidence": Flag(),
    "seed": Flag(),
}


def _judge(args: argparse.Namespace) -> Scorer:
    """The judge of -s with its -p parameters (--swap: asked in both orders), --model, --api and --no-cache."""
    from ..judges import PairwiseJudge

    settings = {"model": args.model, "api": args.api, "cache": False if args.no_cache else None}
    if any(value is not None for value in settings.values()):
        from ..llm import configure

        configure(**{name: value for name, value in settings.items() if value is not None})
    params = scorer_params([args.judge], args.param)[args.judge]
    if args.swap:
        if not isinstance(registry.get(args.judge, **params), PairwiseJudge):
            raise ConfigError(f"--swap: {args.judge} is not a pairwise judge (kind: pairwise)")
        params["swap"] = True
    return registry.get(args.judge, **params)


def cmd_meta_eval(args: argparse.Namespace) -> int:
    from ..stats.metaeval import meta_evaluate

    judge = _judge(args)
    report = meta_evaluate(read_rows(args.data, args.format), judge, **options_of(args, FLAGS))
    text = json.dumps(report.to_dict(), indent=2, ensure_ascii=False, default=str)
    if args.output and args.output != "-":
        Path(args.output).write_text(text + "\n", encoding="utf-8")
    else:
        print(text)
    print(report.table(), file=sys.stderr)
    for problem in report.problems:
        print(f"error: {problem}", file=sys.stderr)
    return 3 if report.problems else 0


COMMANDS = {"meta-eval": Command(add_meta_eval, cmd_meta_eval)}
