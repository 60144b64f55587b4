"""METEOR benchmark case: our batch path against nltk's ``meteor_score`` in a loop.

Both sides tokenise with nltk's ``NLTKWordTokenizer`` (our default) and use the
same WordNet. Our side starts every timed run with empty word caches (stems,
synonym sets) and a fresh scorer; WordNet itself is loaded once beforehand for
both sides (nltk's corpus reader for nltk, our synonym index for ours).

    python benchmarks/cases_meteor.py            # 10,000 seeded pairs
    python benchmarks/cases_meteor.py --n 2000
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Sequence

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import Case, make_pairs, print_table, run_case  # noqa: E402


def cases() -> list[Case]:
    """The METEOR case (ours-batch vs nltk loop, target 3x, identical numbers)."""
    import nltk
    from nltk.tokenize import NLTKWordTokenizer
    from nltk.translate.meteor_score import meteor_score

    from scorers.text import meteor
    from scorers.text.wordnet import ensure_wordnet, synonym_index

    # nltk's side reads our WordNet copy: the caller adds it to nltk's path (scorers never changes nltk.data.path)
    nltk.data.path.append(str(ensure_wordnet().parents[1]))
    from nltk.corpus import wordnet

    wordnet.ensure_loaded()  # nltk's 2-3 s load is paid before timing
    synonym_index()  # and so is ours (tens of ms once built)
    tokenize = NLTKWordTokenizer().tokenize

    def ours(outputs: Sequence[str], expecteds: Sequence[str]) -> list[float]:
        meteor.clear_caches()
        rows = [{"output": o, "expected": e} for o, e in zip(outputs, expecteds)]
        return [s.score for s in meteor.METEOR().score_batch(rows)]

    def reference(outputs: Sequence[str], expecteds: Sequence[str]) -> list[float]:
        return [meteor_score([tokenize(r)], tokenize(h)) for h, r in zip(outputs, expecteds)]

    return [
        Case(
            "METEOR",
            ours,
            reference,
            "nltk meteor_score loop (NLTKWordTokenizer)",
            target_ratio=3.0,
            note="cold word caches per run",
        )
    ]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="METEOR: ours vs nltk")
    parser.add_argument("--n", type=int, default=10_000, help="pairs (default 10000)")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs per side (median reported)")
    args = parser.parse_args(argv)
    pairs = make_pairs(args.n)
    outputs, expecteds = [p[0] for p in pairs], [p[1] for p in pairs]
    results = [run_case(case, outputs, expecteds, repeats=args.repeats) for case in cases()]
    print_table(results)
    return 0 if all(r["met"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
