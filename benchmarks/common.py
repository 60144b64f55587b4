"""Shared pieces of the benchmark scripts: a seeded pair generator, timing and the report table.

Each benchmark compares our batch path with the reference library's per-pair
loop *in one run*, checks that the numbers are identical first, and reports
pairs/s and the ratio ours/reference.
"""

from __future__ import annotations

import gc
import itertools
import json
import random
import statistics
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

WORDS = """the of and to a in is it you that he was for on are with as his they be at one have this from or had by
hot word but what some we can out other were all there when up use your how said an each she which do their time if will
way about many then them write would like so these her long make thing see him two has look more day could go come did
number sound no most people my over know water than call first who may down side been now find any new work part take
get place made live where after back little only round man year came show every good me give our under name very through
just form sentence great think say help low line differ turn cause much mean before move right boy old too same tell does
set three want air well also play small end put home read hand port large spell add even land here must big high such
follow act why ask men change went light kind off need house picture try us again animal point mother world near build
self earth father head stand own page should country found answer school grow study still learn plant cover food sun four
between state keep eye never last let thought city tree cross farm hard start might story saw far sea draw left late run
while press close night real life few north open seem together next white children begin got walk example ease paper
group always music those both mark often letter until mile river car feet care second book carry took science eat room
friend began idea fish mountain stop once base hear horse cut sure watch color face wood main enough plain girl usual
young ready above ever red list though feel talk bird soon body dog family direct pose leave song measure door product
black short numeral class wind question happen complete ship area half rock order fire south problem piece told knew pass
since top whole king space heard best hour better true during hundred five remember step early hold west ground interest
reach fast verb sing listen six table travel less morning ten simple several vowel toward war lay against pattern slow
center love person money serve appear road map rain rule govern pull cold notice voice unit power town fine certain fly
fall lead cry dark machine note wait plan figure star box noun field rest correct able pound done beauty drive stood
contain front teach week final gave green quick develop ocean warm free minute strong special mind behind clear tail
produce fact street inch multiply nothing course stay wheel full force blue object decide surface deep moon island foot
system busy test record boat common gold possible plane stead dry wonder laugh thousand ago ran check game shape equate
miss brought heat snow tire bring yes distant fill east paint language among model report""".split()

SYNONYMS = {
    "big": "large",
    "large": "big",
    "small": "little",
    "little": "small",
    "quick": "fast",
    "fast": "quick",
    "begin": "start",
    "start": "begin",
    "car": "automobile",
    "happy": "glad",
    "house": "home",
    "home": "house",
    "road": "street",
    "street": "road",
    "answer": "reply",
    "talk": "speak",
    "speak": "talk",
    "close": "shut",
    "shut": "close",
    "hard": "difficult",
    "end": "finish",
    "finish": "end",
    "look": "see",
    "see": "look",
    "story": "tale",
    "children": "kids",
    "hear": "listen",
    "listen": "hear",
    "correct": "right",
    "right": "correct",
    "rock": "stone",
    "ocean": "sea",
    "sea": "ocean",
    "fall": "drop",
    "buy": "purchase",
    "build": "construct",
    "study": "learn",
    "learn": "study",
    "money": "cash",
    "work": "job",
    "father": "dad",
    "mother": "mom",
    "dog": "hound",
    "idea": "thought",
    "thought": "idea",
}

_CUMULATIVE = list(itertools.accumulate(1.0 / (k + 25) for k in range(len(WORDS))))  # mild Zipf weights


def _word(rng: random.Random) -> str:
    return WORDS[rng.choices(range(len(WORDS)), cum_weights=_CUMULATIVE)[0]]


def _sentence(rng: random.Random, n: int) -> list[str]:
    return [_word(rng) for _ in range(n)]


def _render(tokens: list[str], rng: random.Random) -> str:
    text = " ".join(tokens)
    text = text[0].upper() + text[1:]
    if rng.random() < 0.3 and len(tokens) > 8:
        i = text.find(" ", len(text) // 2)
        text = text[:i] + "," + text[i:]
    return text + rng.choice([".", ".", ".", "!", "?"])


def make_short_pairs(n: int = 20_000, seed: int = 7) -> list[tuple[str, str]]:
    """``n`` unique short (output, expected) pairs of one to six words, the second an edit of the first."""
    rng = random.Random(seed)
    seen: set[tuple[str, str]] = set()
    while len(seen) < n:
        words = _sentence(rng, rng.randint(1, 6))
        edited = [w if rng.random() < 0.7 else _word(rng) for w in words]
        seen.add((" ".join(words), " ".join(edited)))
    return sorted(seen, key=lambda pair: rng.random())


def make_pairs(n: int = 10_000, seed: int = 20240611) -> list[tuple[str, str]]:
    """``n`` deterministic English (output, expected) pairs: edits, synonyms, swaps, unrelated and identical."""
    rng = random.Random(seed)
    pairs = []
    for _ in range(n):
        ref = _sentence(rng, rng.randint(10, 40))
        u = rng.random()
        if u < 0.08:
            hyp = _sentence(rng, rng.randint(10, 40))
        elif u < 0.12:
            hyp = list(ref)
        else:
            hyp, rate = [], rng.uniform(0.05, 0.6)
            for w in ref:
                r = rng.random()
                if r < rate * 0.25:
                    continue
                elif r < rate * 0.5:
                    hyp.append(_word(rng))
                elif r < rate * 0.7:
                    hyp.append(SYNONYMS.get(w, w))
                elif r < rate * 0.85:
                    hyp += [w, _word(rng)]
                else:
                    hyp.append(w)
            for _ in range(int(len(hyp) * rate * 0.2)):
                i = rng.randrange(max(1, len(hyp) - 1))
                hyp[i : i + 2] = hyp[i : i + 2][::-1]
            hyp = hyp[:40] if len(hyp) >= 10 else hyp + _sentence(rng, 10 - len(hyp))
        pairs.append((_render(hyp, rng), _render(ref, rng)))
    return pairs


@dataclass
class Case:
    """One side-by-side comparison: our batch path against the reference library's loop."""

    name: str
    ours: Callable[[Sequence[str], Sequence[str]], list[float]]
    reference: Callable[[Sequence[str], Sequence[str]], list[float]]
    reference_name: str
    target_ratio: float
    tolerance: float = 0.0
    n: int | None = None  # pairs to use (default: all)
    note: str = ""
    pairs: Sequence[tuple[str, str]] | None = None  # the case's own pairs (default: the run's)
    result: dict[str, Any] = field(default_factory=dict)


def median_times(fns: Sequence[Callable[[], Any]], repeats: int) -> list[tuple[float, Any]]:
    """Median wall time of ``repeats`` runs of each function, and its last result.

    The functions take turns (ours, reference, ours, ...), so a slow spell of a
    shared machine hits both sides alike instead of one.
    """
    times: list[list[float]] = [[] for _ in fns]
    outs: list[Any] = [None] * len(fns)
    for _ in range(repeats):
        for i, fn in enumerate(fns):
            gc.collect()
            t0 = time.perf_counter()
            outs[i] = fn()
            times[i].append(time.perf_counter() - t0)
    return [(statistics.median(t), out) for t, out in zip(times, outs)]


def run_case(case: Case, outputs: Sequence[str], expecteds: Sequence[str], repeats: int = 3) -> dict[str, Any]:
    if case.pairs is not None:
        outputs, expecteds = [o for o, _ in case.pairs], [e for _, e in case.pairs]
    n = case.n or len(outputs)
    outs, exps = list(outputs[:n]), list(expecteds[:n])
    (ours_t, ours), (ref_t, ref) = median_times(
        [lambda: case.ours(outs, exps), lambda: case.reference(outs, exps)], repeats
    )
    max_diff = max((abs(a - b) for a, b in zip(ours, ref)), default=0.0)
    if len(ours) != len(ref) or max_diff > case.tolerance:
        raise AssertionError(f"{case.name}: numbers differ from {case.reference_name} (max diff {max_diff})")
    ratio = ref_t / ours_t if ours_t else float("inf")
    case.result = {
        "case": case.name,
        "pairs": n,
        "reference": case.reference_name,
        "ours_pairs_per_s": n / ours_t,
        "reference_pairs_per_s": n / ref_t,
        "ratio": ratio,
        "target": case.target_ratio,
        "met": ratio >= case.target_ratio,
        "max_abs_diff": max_diff,
        "note": case.note,
    }
    return case.result


def print_table(results: list[dict[str, Any]]) -> None:
    head = f"{'case':<28} {'pairs':>6} {'ours/s':>10} {'ref/s':>10} {'ratio':>7} {'target':>7}  met  reference"
    print(head)
    print("-" * len(head))
    for r in results:
        print(
            f"{r['case']:<28} {r['pairs']:>6} {r['ours_pairs_per_s']:>10.0f} {r['reference_pairs_per_s']:>10.0f} "
            f"{r['ratio']:>6.2f}x {r['target']:>6.1f}x  {'yes' if r['met'] else 'NO ':<4} {r['reference']}"
            + (f"  ({r['note']})" if r["note"] else "")
        )


def write_json(path: str, results: list[dict[str, Any]], extra: dict[str, Any] | None = None) -> None:
    with open(path, "w") as fh:
        json.dump({"results": results, **(extra or {})}, fh, indent=2)


def versions(*packages: str) -> dict[str, str]:
    """Each package's installed version ("not installed" when absent), for a benchmark's JSON.

    >>> versions("no-such-package-here")
    {'no-such-package-here': 'not installed'}
    """
    from importlib import metadata

    out = {}
    for package in packages:
        try:
            out[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            out[package] = "not installed"
    return out
