"""The text-metric benchmark: our batch paths against the reference libraries' per-pair loops, in one run.

Cases: BLEU / chrF / chrF++ / TER (sacrebleu's ``sentence_*`` functions),
ROUGE-1/2/L with and without stemming (rouge-score's ``RougeScorer``),
Levenshtein (autoevals), plus every case listed by ``benchmarks/cases_meteor.py``
and ``benchmarks/cases_embedding.py`` when those files exist (each exposes
``cases() -> list[Case]``). Numbers are checked identical before timing
(``run_case``). Our side builds a fresh scorer for every timed run, so its
token caches start cold, as they would on new data.

    python benchmarks/bench_text.py                      # all cases, 10,000 seeded pairs
    python benchmarks/bench_text.py --n 2000 --only rouge --json /tmp/text.json

``--only`` (repeatable) keeps the cases whose name contains the value, ignoring case.
The exit status is 1 when a case failed (numbers differ or it raised).
"""

from __future__ import annotations

import argparse
import importlib
import os
import platform
import sys
import traceback
from pathlib import Path
from typing import Any, Callable, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import Case, make_pairs, make_short_pairs, print_table, run_case, versions, write_json  # noqa: E402

#: Other engineers' case lists, imported when their files exist.
EXTRA_CASE_MODULES = ("benchmarks.cases_meteor", "benchmarks.cases_embedding")
#: sacrebleu's TER runs ≈700 pairs/s; this many pairs keep the whole run short.
TER_PAIRS = 2000


def _ours(
    build: Callable[[], Any], value: Callable[[Any], float]
) -> Callable[[Sequence[str], Sequence[str]], list[float]]:
    def run(outputs: Sequence[str], expecteds: Sequence[str]) -> list[float]:
        return [
            value(s) for s in build().score_batch([{"output": o, "expected": e} for o, e in zip(outputs, expecteds)])
        ]

    return run


def _ours_columns(build: Callable[[], Any]) -> Callable[[Sequence[str], Sequence[str]], list[float]]:
    """Our batch's scores as a consumer of columns reads them: a ScoreColumn's ``scores()``, no Score made."""
    from scorers.score import ScoreColumn

    def run(outputs: Sequence[str], expecteds: Sequence[str]) -> list[float]:
        batch = build().score_batch([{"output": o, "expected": e} for o, e in zip(outputs, expecteds)])
        return batch.scores() if isinstance(batch, ScoreColumn) else [s.score for s in batch]  # type: ignore[return-value]

    return run


def _cpus() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def _ter_with_processes(
    ter: Callable[..., Any], processes: int
) -> Callable[[Sequence[str], Sequence[str]], list[float]]:
    """TER with its own worker processes, closed after each run (their start-up is part of the time)."""

    def run(outputs: Sequence[str], expecteds: Sequence[str]) -> list[float]:
        with ter(processes=processes) as scorer:
            return [
                s.metadata["ter"]
                for s in scorer.score_batch([{"output": o, "expected": e} for o, e in zip(outputs, expecteds)])
            ]

    return run


def text_cases() -> list[Case]:
    """The sacrebleu, rouge-score and Levenshtein cases."""
    import sacrebleu
    from rouge_score.rouge_scorer import RougeScorer

    import scorers
    from scorers.text.bleu import BLEU
    from scorers.text.chrf import ChrF
    from scorers.text.rouge import ROUGE
    from scorers.text.ter import TER

    def native(key: str) -> Callable[[Any], float]:
        return lambda score: score.metadata[key]

    cases = [
        Case(
            "BLEU",
            _ours(BLEU, native("bleu")),
            lambda o, e: [sacrebleu.sentence_bleu(h, [r]).score for h, r in zip(o, e)],
            "sacrebleu.sentence_bleu loop",
            target_ratio=2.0,
            note="sacrebleu's 0-100 figure compared",
        ),
        Case(
            "chrF",
            _ours(ChrF, native("chrf")),
            lambda o, e: [sacrebleu.sentence_chrf(h, [r]).score for h, r in zip(o, e)],
            "sacrebleu.sentence_chrf loop",
            target_ratio=1.0,
        ),
        Case(
            "chrF++",
            _ours(lambda: ChrF(word_order=2), native("chrf")),
            lambda o, e: [sacrebleu.sentence_chrf(h, [r], word_order=2).score for h, r in zip(o, e)],
            "sacrebleu.sentence_chrf(word_order=2) loop",
            target_ratio=1.0,
        ),
        Case(
            "TER",
            _ours(TER, native("ter")),
            lambda o, e: [sacrebleu.sentence_ter(h, [r]).score for h, r in zip(o, e)],
            "sacrebleu.sentence_ter loop",
            target_ratio=1.0,
            n=TER_PAIRS,
            note="sacrebleu's own edit search, in this process",
        ),
        Case(
            f"TER processes={_cpus()}",
            _ter_with_processes(TER, _cpus()),
            lambda o, e: [sacrebleu.sentence_ter(h, [r]).score for h, r in zip(o, e)],
            "sacrebleu.sentence_ter loop",
            target_ratio=1.0,
            n=TER_PAIRS,
            note="the scorer's worker processes, started (forkserver) and stopped in each timed run",
        ),
    ]
    for stem in (False, True):
        for label, rouge_type in (("ROUGE-1", "rouge1"), ("ROUGE-2", "rouge2"), ("ROUGE-L", "rougeL")):
            reference = RougeScorer([rouge_type], use_stemmer=stem)
            cases.append(
                Case(
                    f"{label}{' stem' if stem else ''}",
                    _ours(lambda t=rouge_type, s=stem: ROUGE(rouge_type=t, use_stemmer=s), native("fmeasure")),
                    lambda o, e, sc=reference, t=rouge_type: [sc.score(r, h)[t].fmeasure for h, r in zip(o, e)],
                    f"RougeScorer(['{rouge_type}'], use_stemmer={stem}).score loop",
                    target_ratio=3.0,
                )
            )
    cases += _levenshtein_cases(scorers)
    return cases


def _levenshtein_cases(scorers: Any) -> list[Case]:
    """Our batch against autoevals' per-call loop (goal 2×) and against rapidfuzz alone, the metric's own cost
    (goal: within 3×, a ratio of at least 0.33), on the run's pairs and on 20,000 unique short pairs."""
    from autoevals.string import Levenshtein as AutoevalsLevenshtein
    from rapidfuzz.distance import Levenshtein as rapidfuzz_levenshtein

    def autoevals_loop(outputs: Sequence[str], expecteds: Sequence[str]) -> list[float]:
        scorer = AutoevalsLevenshtein()
        return [scorer.eval(output=h, expected=r).score for h, r in zip(outputs, expecteds)]

    def rapidfuzz_loop(outputs: Sequence[str], expecteds: Sequence[str]) -> list[float]:
        similarity = rapidfuzz_levenshtein.normalized_similarity
        return [similarity(h, r) for h, r in zip(outputs, expecteds)]

    ours = _ours_columns(lambda: scorers.get("Levenshtein"))
    each_score = _ours(lambda: scorers.get("Levenshtein"), lambda s: s.score)
    short = make_short_pairs()
    columns = "score_batch's ScoreColumn read as columns (scores()), no Score made"
    return [
        Case("Levenshtein", ours, autoevals_loop, "autoevals Levenshtein().eval loop", target_ratio=2.0, note=columns),
        Case("Levenshtein, short", ours, autoevals_loop, "autoevals loop, short pairs", 2.0, pairs=short, note=columns),
        Case(
            "Levenshtein, short", ours, rapidfuzz_loop, "rapidfuzz alone, short pairs", 1 / 3, pairs=short, note=columns
        ),
        Case(
            "Levenshtein, short, each Score read",
            each_score,
            autoevals_loop,
            "autoevals loop, short pairs",
            2.0,
            pairs=short,
            note="every row's Score made and read (a caller that iterates the batch)",
        ),
    ]


def extra_cases(problems: list[dict[str, Any]]) -> list[Case]:
    """Cases from the other benchmark case files that exist; import failures are reported, not hidden."""
    found: list[Case] = []
    for module_name in EXTRA_CASE_MODULES:
        path = Path(__file__).resolve().parents[1] / (module_name.replace(".", "/") + ".py")
        if not path.exists():
            continue
        try:
            found.extend(importlib.import_module(module_name).cases())
        except Exception as exc:  # reported in the table and the exit status
            traceback.print_exc()
            problems.append({"case": module_name, "error": f"{type(exc).__name__}: {exc}"})
    return found


def _give_nltk_the_wordnet_copy() -> None:
    """nltk's own meteor_score (the METEOR reference) reads nltk.corpus.wordnet: this script, the caller, puts the
    copy scorers provides on nltk's path (scorers itself never changes nltk.data.path)."""
    try:
        import nltk

        from scorers.text.wordnet import ensure_wordnet

        root = str(ensure_wordnet().parents[1])
    except Exception:  # no nltk or no WordNet: the METEOR case reports it
        return
    if root not in [str(p) for p in nltk.data.path]:
        nltk.data.path.append(root)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=10_000, help="pairs to generate (default 10000)")
    parser.add_argument(
        "--only",
        action="append",
        default=[],
        metavar="NAME",
        help="run only cases whose name contains NAME (case-insensitive; repeatable)",
    )
    parser.add_argument("--repeats", type=int, default=3, help="timed runs per side; the median is reported")
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    args = parser.parse_args(argv)

    problems: list[dict[str, Any]] = []
    _give_nltk_the_wordnet_copy()
    cases = text_cases() + extra_cases(problems)
    if args.only:
        wanted = [w.lower() for w in args.only]
        cases = [c for c in cases if any(w in c.name.lower() for w in wanted)]
        if not cases:
            parser.error(f"no case matches {args.only}")
    pairs = make_pairs(args.n)
    outputs, expecteds = [p[0] for p in pairs], [p[1] for p in pairs]
    load_before = os.getloadavg()
    results = []
    for case in cases:
        if case.n is not None:
            case.n = min(case.n, args.n)
        print(f"running {case.name} ...", file=sys.stderr, flush=True)
        try:
            results.append(run_case(case, outputs, expecteds, repeats=args.repeats))
        except Exception as exc:  # a failed case must not hide the others; it fails the run
            traceback.print_exc()
            problems.append({"case": case.name, "error": f"{type(exc).__name__}: {exc}"})
    print_table(results)
    for problem in problems:
        print(f"FAILED {problem['case']}: {problem['error']}")
    load_after = os.getloadavg()
    print(f"load average before/after: {load_before[0]:.2f} / {load_after[0]:.2f} on {os.cpu_count()} CPUs")
    if args.json:
        write_json(
            args.json,
            results,
            {
                "pairs": args.n,
                "repeats": args.repeats,
                "failed": problems,
                "python": platform.python_version(),
                "machine": platform.platform(),
                "cpus": os.cpu_count(),
                "load_average_before": load_before,
                "load_average_after": load_after,
                "versions": versions("scorers", "sacrebleu", "rouge-score", "nltk", "rapidfuzz", "numpy", "autoevals"),
            },
        )
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
