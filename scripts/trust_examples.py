"""Write the synthetic example files of docs/trust/index.md ("Trusting a judge"), seeded, so they can be made again.

- ``examples/calibration_labels.jsonl``: 200 sums, each answer right or wrong, labelled with the Factuality
  choice a person would give (C: the same facts, D: a conflicting one);
- ``examples/calibration_replies.jsonl``: the loopback server's scripted Factuality verdicts on those rows, from
  a judge that is too harsh on right answers (it often says A or B, 0.4 or 0.6, where people say C);
- ``examples/factuality_replies_second.jsonl``: a second judge's verdicts on ``examples/factuality_labels.jsonl``
  (a jury's second juror), which differs from ``examples/factuality_replies.jsonl`` on a few rows;
- ``examples/preferences.jsonl``: pairwise votes between four systems (``winner``: a, b or tie), drawn from a
  Bradley-Terry model with ties.

Run from the clone's top folder: ``python scripts/trust_examples.py``.
"""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"

#: the harsh judge's verdicts: for a right answer (label C) and a wrong one (label D), each choice's odds
HARSH = {"C": {"C": 0.45, "A": 0.45, "B": 0.1}, "D": {"D": 0.6, "C": 0.25, "A": 0.15}}
#: where the second juror differs from the first (examples/factuality_replies.jsonl), by row id
SECOND = {"f02": "A", "f07": "C", "f08": "A", "f12": "B", "f16": "D", "f17": "E", "f19": "C"}
#: the systems' strengths (natural log-odds) and the chance that a vote is a tie
SYSTEMS = {"atlas": 0.8, "birch": 0.3, "cedar": 0.0, "dune": -1.1}
TIE = 0.15


def _lines(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")


def calibration(draw: random.Random) -> tuple[list[dict], list[dict]]:
    rows, replies, seen = [], [], set()
    while len(rows) < 200:
        a, b = draw.randint(10, 99), draw.randint(10, 99)
        if (a, b) in seen:
            continue
        seen.add((a, b))
        right = draw.random() < 0.6
        answer = a + b if right else a + b + draw.choice([-10, -2, -1, 1, 2, 10])
        label = "C" if right else "D"
        question = f"What is {a} + {b}?"
        rows.append(
            {
                "id": f"c{len(rows):03d}",
                "input": question,
                "expected": f"{a + b}.",
                "output": f"{answer}.",
                "label": label,
            }
        )
        choices, weights = zip(*HARSH[label].items())
        verdict = draw.choices(choices, weights)[0]
        replies.append({"match": question, "reply": {"choice": verdict, "reasons": f"scripted (label {label})"}})
    return rows, replies


def second_juror() -> list[dict]:
    labels = [json.loads(line) for line in (EXAMPLES / "factuality_labels.jsonl").read_text().splitlines()]
    first = [json.loads(line) for line in (EXAMPLES / "factuality_replies.jsonl").read_text().splitlines()]
    replies = []
    for row, rule in zip(labels, first):
        verdict = SECOND.get(row["id"], rule["reply"].get("choice"))
        replies.append({"match": rule["match"], "reply": {"choice": verdict, "reasons": "scripted: the second juror"}})
    return replies


def preferences(draw: random.Random) -> list[dict]:
    rows = []
    for question in range(120):
        a, b = draw.sample(sorted(SYSTEMS), 2)
        p_a = (1 - TIE) / (1 + math.exp(SYSTEMS[b] - SYSTEMS[a]))
        u = draw.random()
        winner = "a" if u < p_a else "tie" if u < p_a + TIE else "b"
        rows.append({"question_id": f"q{question:03d}", "model_a": a, "model_b": b, "winner": winner})
    return rows


def main() -> None:
    draw = random.Random(27)
    rows, replies = calibration(draw)
    _lines(EXAMPLES / "calibration_labels.jsonl", rows)
    _lines(EXAMPLES / "calibration_replies.jsonl", replies)
    _lines(EXAMPLES / "factuality_replies_second.jsonl", second_juror())
    _lines(EXAMPLES / "preferences.jsonl", preferences(draw))


if __name__ == "__main__":
    main()
