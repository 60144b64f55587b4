"""A published table reproduced: summary-level correlation of ROUGE and BERTScore with SummEval's expert ratings.

SummEval (Fabbri et al., 2021) has 100 CNN/DailyMail documents, each summarised by 16
systems, every summary rated by 3 experts for coherence, consistency, fluency and
relevance (1-5; we use the mean of the 3, as the papers do), with 11 reference summaries
per document. This script scores every summary through ``scorers`` (ROUGE-1/2/L,
rouge-score's F-measure without stemming; BERTScore F1 on the bundled offline MiniLM),
then computes the summary-level Spearman ρ and Kendall τ(-b) with
:func:`scorers.stats.correlate` and prints them next to the published values of
**G-Eval (Liu et al., 2023), Table 1** (summary-level ρ and τ on SummEval; its ROUGE,
BERTScore and MoverScore rows are the baselines' numbers as BARTScore's repository
computes them: ROUGE-1.5.5 F-measure and BERTScore with roberta-large, each averaged
over the 11 references).

The data are not shipped (third-party text). Put one of these in ``.cache/summeval/``
(or pass ``--data PATH``):

- ``data.pkl``: ``SUM/SummEval/data.pkl`` of the BARTScore repository (neulab/BARTScore;
  its ``final_p.pkl`` has the same layout plus its metric scores and is read too);
- ``model_annotations.aligned.paired.jsonl``: SummEval's expert annotations paired with
  the source articles (Yale-LILY/SummEval, after its ``pair_data.py``).

The pickle is read by an unpickler that refuses every class and function: plain dicts,
lists, strings and numbers load, anything else stops with an error, so a tampered file
cannot run code.

Each reference is scored apart and the 11 scores averaged (``--references average``, the
papers' setting); ``--references best`` takes the best of the 11, which is what the
scorers do when given a list of references. Both come from the same per-reference scores.

    python benchmarks/summeval.py                       # all 4 metrics, 1,600 summaries × 11 references
    python benchmarks/summeval.py --metrics ROUGE-1 --docs 20 --references best

Without the data it prints where to put them and exits 0 (skipped).
"""

from __future__ import annotations

import argparse
import json
import pickle
import re
import sys
import time
from pathlib import Path
from typing import Any, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import scorers  # noqa: E402
from scorers.stats import correlate  # noqa: E402

CACHE = Path(__file__).resolve().parents[1] / ".cache" / "summeval"
FILES = ("data.pkl", "final_p.pkl", "model_annotations.aligned.paired.jsonl")
DIMENSIONS = ("coherence", "consistency", "fluency", "relevance")
METRICS = ("ROUGE-1", "ROUGE-2", "ROUGE-L", "ROUGE-Lsum", "BERTScore")
#: The published row each metric is compared with: ROUGE-1.5.5's ROUGE-L of a multi-sentence summary is the
#: union LCS over its sentences, which is rouge-score's rougeLsum on sentences split one per line.
PUBLISHED_ROW = {"ROUGE-Lsum": "ROUGE-L"}
#: G-Eval (Liu et al., 2023), Table 1: summary-level (Spearman ρ, Kendall τ) on SummEval, per dimension.
PUBLISHED = {
    "ROUGE-1": {"coherence": (0.167, 0.126), "consistency": (0.160, 0.130), "fluency": (0.115, 0.094), "relevance": (0.326, 0.252)},
    "ROUGE-2": {"coherence": (0.184, 0.139), "consistency": (0.187, 0.155), "fluency": (0.159, 0.128), "relevance": (0.290, 0.219)},
    "ROUGE-L": {"coherence": (0.128, 0.099), "consistency": (0.115, 0.092), "fluency": (0.105, 0.084), "relevance": (0.311, 0.237)},
    "BERTScore": {"coherence": (0.284, 0.211), "consistency": (0.110, 0.090), "fluency": (0.193, 0.158), "relevance": (0.312, 0.243)},
}  # fmt: skip
SOURCE = "G-Eval (Liu et al., 2023), Table 1"


class _PlainUnpickler(pickle.Unpickler):
    """Loads only what pickle builds without looking up a global: dict, list, tuple, str, bytes, numbers."""

    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"refusing {module}.{name}: the SummEval pickle holds only plain data")


def find_data(given: str | None) -> Path | None:
    if given:
        path = Path(given)
        if path.is_dir():
            return next((path / f for f in FILES if (path / f).exists()), None)
        return path if path.exists() else None
    return next((CACHE / f for f in FILES if (CACHE / f).exists()), None)


def load(path: Path) -> list[dict[str, Any]]:
    """One record per (document, system): ``doc_id``, ``system``, ``summary``, ``references`` and the 4 ratings."""
    if path.suffix == ".pkl":
        with path.open("rb") as fh:
            data = _PlainUnpickler(fh).load()
        return [
            {
                "doc_id": doc_id,
                "system": system,
                "summary": entry["sys_summ"],
                "references": list(doc["ref_summs"]),
                **{d: float(entry["scores"][d]) for d in DIMENSIONS},
            }
            for doc_id, doc in data.items()
            for system, entry in doc["sys_summs"].items()
        ]
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        item = json.loads(line)
        experts = item["expert_annotations"]
        rows.append(
            {
                "doc_id": item["id"],
                "system": item["model_id"],
                "summary": item["decoded"],
                "references": list(item["references"]),
                **{d: sum(e[d] for e in experts) / len(experts) for d in DIMENSIONS},
            }
        )
    return rows


def sentences(text: str) -> str:
    """A tokenized text (``... with burnley . Andros ...``) one sentence per line, as rougeLsum reads sentences."""
    return re.sub(r"(?<= [.!?]) +", "\n", text.strip())


def score(rows: list[dict[str, Any]], metrics: Sequence[str]) -> list[list[dict[str, float | None]]]:
    """Every summary against each of its references, through scorers.evaluate: [row][reference] -> {metric: F}.

    ROUGE-Lsum gets the texts one sentence per line; the other metrics get them as they are.
    """
    per_row: list[list[dict[str, float | None]]] = [[{} for _ in row["references"]] for row in rows]
    for split, names in (
        (False, [m for m in metrics if m != "ROUGE-Lsum"]),
        (True, [m for m in metrics if m == "ROUGE-Lsum"]),
    ):
        if not names:
            continue
        shape = sentences if split else str.strip
        flat = [
            {"output": shape(row["summary"]), "expected": shape(reference), "row": i, "ref": k}
            for i, row in enumerate(rows)
            for k, reference in enumerate(row["references"])
        ]
        for result in scorers.evaluate(flat, names):
            record = result.to_record()
            per_row[record["row"]][record["ref"]].update({m: record["scores"].get(m) for m in names})
    return per_row


def combined(per_reference: list[dict[str, float | None]], metric: str, how: str) -> float | None:
    values = [s[metric] for s in per_reference]
    if any(v is None for v in values):
        return None
    return sum(values) / len(values) if how == "average" else max(values)  # type: ignore[type-var, arg-type]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", help=f"the data file or folder (default: {CACHE})")
    parser.add_argument("--metrics", nargs="+", default=list(METRICS), choices=METRICS)
    parser.add_argument("--references", nargs="+", default=["average", "best"], choices=["average", "best"])
    parser.add_argument("--docs", type=int, help="only the first N documents (a quick run)")
    parser.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples of the documents")
    parser.add_argument("--results", help="also write the scored rows as a results file (for `scorers correlate`)")
    parser.add_argument("--json", help="write the figures as JSON")
    args = parser.parse_args(argv)
    path = find_data(args.data)
    if path is None:
        print(
            f"skipped: no SummEval data. Put BARTScore's SUM/SummEval/data.pkl (the neulab/BARTScore repository) or "
            f"SummEval's model_annotations.aligned.paired.jsonl (Yale-LILY/SummEval) in {CACHE}/ "
            "or pass --data PATH."
        )
        return 0
    rows = load(path)
    documents = list(dict.fromkeys(r["doc_id"] for r in rows))
    if args.docs:
        keep = set(documents[: args.docs])
        rows = [r for r in rows if r["doc_id"] in keep]
    systems = len({r["system"] for r in rows})
    references = sum(len(r["references"]) for r in rows)
    print(
        f"{path}: {len({r['doc_id'] for r in rows})} documents, {systems} systems, {len(rows)} summaries, "
        f"{references} summary-reference pairs"
    )
    started = time.perf_counter()
    per_row = score(rows, args.metrics)
    print(f"scored {references} pairs × {len(args.metrics)} metrics in {time.perf_counter() - started:.0f} s")
    figures: dict[str, Any] = {}
    for how in args.references:
        records = [
            {
                "doc_id": row["doc_id"],
                "system": row["system"],
                **{d: row[d] for d in DIMENSIONS},
                "scores": {m: combined(scored, m, how) for m in args.metrics},
            }
            for row, scored in zip(rows, per_row)
        ]
        if args.results:
            out = Path(args.results).with_suffix(f".{how}.jsonl")
            out.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
            print(f"wrote {out}")
        result = correlate(
            records,
            human=list(DIMENSIONS),
            group_by="doc_id",
            system_key="system",
            coefficients=["spearman", "kendall_b"],
            levels=["summary"],
            compare=False,
            resamples=args.resamples,
        )
        figures[how] = result.to_dict()
    print_table(figures, args.metrics)
    if args.json:
        Path(args.json).write_text(json.dumps({"source": SOURCE, "published": PUBLISHED, **figures}, indent=2) + "\n")
    return 0


def print_table(figures: dict[str, Any], metrics: Sequence[str]) -> None:
    print(f"\nsummary-level correlation with the experts' mean rating; published: {SOURCE}")
    header = ["dimension", "metric", "ρ published"]
    for how in figures:
        header += [f"ρ {how}", "Δ"]
    header += ["τ published"]
    for how in figures:
        header += [f"τ {how}", "Δ"]
    body = []
    found = {
        (how, f["scorer"], f["human"], f["coefficient"]): f["value"]
        for how, data in figures.items()
        for f in data["figures"]
    }
    for dimension in DIMENSIONS:
        for metric in metrics:
            rho, tau = PUBLISHED[PUBLISHED_ROW.get(metric, metric)][dimension]
            line = [dimension, metric, f"{rho:.3f}"]
            for how in figures:
                value = found[(how, metric, dimension, "spearman")]
                line += [f"{value:.3f}", f"{value - rho:+.3f}"]
            line.append(f"{tau:.3f}")
            for how in figures:
                value = found[(how, metric, dimension, "kendall_b")]
                line += [f"{value:.3f}", f"{value - tau:+.3f}"]
            body.append(line)
    widths = [max(len(row[i]) for row in [header, *body]) for i in range(len(header))]
    for row in [header, *body]:
        print(
            "  ".join(
                cell.rjust(width) if i > 1 else cell.ljust(width) for i, (cell, width) in enumerate(zip(row, widths))
            )
        )
    first = next(iter(figures.values()))
    skipped = {
        (f["scorer"], f["human"]): f["skipped"]
        for f in first["figures"]
        if f["skipped"] and f["coefficient"] == "spearman"
    }
    if skipped:
        print("documents skipped (a side constant): " + ", ".join(f"{m}/{d} {n}" for (m, d), n in skipped.items()))
    print(
        "ROUGE-Lsum (sentences one per line) is compared with the published ROUGE-L: ROUGE-1.5.5's ROUGE-L of a "
        "multi-sentence summary is the union LCS over sentences. The published BERTScore used roberta-large, "
        "this run the bundled MiniLM. docs/correlation.md explains each gap."
    )


if __name__ == "__main__":
    sys.exit(main())
