"""The batch runner: streaming, order, per-row errors, concurrency, mapping."""
import asyncio
import itertools
import threading

import pytest

import scorers
from scorers import Scorer
from scorers import text_field
from scorers.errors import ConfigError
from scorers.runner import aevaluate, evaluate


class SlowAsync(Scorer):
    """Async scorer that records how many calls are in flight at once."""

    name = "SlowAsync"
    fields = (text_field("output"),)

    def __init__(self, delay=0.01, name=None):
        super().__init__(name=name)
        self.delay = delay
        self.in_flight = 0
        self.peak = 0
        self.lock = threading.Lock()

    async def _ascore(self, *, output, **_):
        with self.lock:
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
        await asyncio.sleep(self.delay)
        with self.lock:
            self.in_flight -= 1
        if output == "boom":
            raise RuntimeError("judge exploded")
        return self.make_score(float(len(output) % 2))


def test_results_come_in_input_order_with_errors_recorded():
    rows = [{"output": o, "expected": e} for o, e in [("a", "a"), ("b", None), ("c", "d"), ("boom", "x")]]
    slow = SlowAsync()
    run = evaluate(rows, ["ExactMatch", slow], chunk_size=2)
    results = run.collect()
    assert [r.index for r in results] == [0, 1, 2, 3]
    assert [r.scores["ExactMatch"] for r in results] == [1.0, None, 0.0, 0.0]
    assert results[1].errors["ExactMatch"]["type"] == "ScorerInputError"
    assert results[3].errors["SlowAsync"] == {"type": "RuntimeError", "message": "judge exploded", "unexpected": True}
    summary = run.summary.scorers
    assert summary["ExactMatch"]["n"] == 3 and summary["ExactMatch"]["errors"] == 1
    assert summary["SlowAsync"]["errors"] == 1 and summary["SlowAsync"]["error_types"] == {"RuntimeError": 1}


def test_concurrency_is_bounded_for_the_whole_run():
    slow = SlowAsync(delay=0.02)
    list(evaluate(({"output": "x" * i} for i in range(200)), [slow], concurrency=5, chunk_size=16, prefetch=4))
    assert slow.peak == 5


def test_rows_are_streamed_not_materialised():
    consumed = []

    def rows():
        for i in itertools.count():
            consumed.append(i)
            yield {"output": str(i), "expected": str(i)}

    iterator = iter(evaluate(rows(), ["ExactMatch"], chunk_size=10, prefetch=2))
    first = [next(iterator) for _ in range(5)]
    assert [r.index for r in first] == list(range(5))
    assert len(consumed) <= 31  # a few chunks ahead, never the whole (infinite) input


def test_mapping_and_dotted_paths():
    rows = [{"response": "Paris", "meta": {"answer": "Paris"}}, {"response": "Lyon", "meta": {"answer": "Paris"}}]
    run = evaluate(rows, ["ExactMatch"], mapping={"output": "response", "expected": "meta.answer"})
    assert [r.scores["ExactMatch"] for r in run] == [1.0, 0.0]


def test_template_variables_come_from_row_columns_and_extra_columns_are_ignored():
    class NeedsCriteria(Scorer):
        name = "NeedsCriteria"
        fields = (text_field("output"), text_field("criteria"))

        def _score(self, *, output, criteria, **_):
            return self.make_score(float(criteria in output))

    rows = [{"id": 1, "output": "is polite", "criteria": "polite"}, {"id": 2, "output": "rude"}]
    results = evaluate(rows, [NeedsCriteria()]).collect()
    assert results[0].scores == {"NeedsCriteria": 1.0}
    assert "criteria" in results[1].errors["NeedsCriteria"]["message"]


def test_unexpected_exception_in_batch_path_isolated_to_its_row():
    class Fragile(Scorer):
        name = "Fragile"
        fields = (text_field("output"),)

        def _score(self, *, output, **_):
            if output == "bad":
                raise ZeroDivisionError("division by zero")
            return self.make_score(1.0)

    results = evaluate([{"output": "ok"}, {"output": "bad"}, {"output": "ok"}], [Fragile()]).collect()
    assert [r.scores["Fragile"] for r in results] == [1.0, None, 1.0]
    assert results[1].errors["Fragile"]["type"] == "ZeroDivisionError"


def test_async_generator_form():
    async def main():
        return [r.scores async for r in aevaluate([{"output": "a", "expected": "a"}], ["Levenshtein"])]

    assert asyncio.run(main()) == [{"Levenshtein": 1.0}]


@pytest.mark.parametrize("bad,match", [
    (["ExactMatch", "exactmatch"], "share the name"),
    ([], "no scorers"),
    ([object()], "not a scorer"),
])
def test_bad_scorer_lists(bad, match):
    with pytest.raises(ConfigError, match=match):
        evaluate([], bad)


def test_non_mapping_row_is_reported():
    with pytest.raises(ConfigError, match="row 1 is a list"):
        list(evaluate([{"output": "a", "expected": "a"}, ["x"]], ["Levenshtein"]))


def test_record_shape():
    (result,) = evaluate([{"id": 7, "output": "a", "expected": "b"}], [scorers.get("Levenshtein")]).collect()
    record = result.to_record(with_metadata=True)
    assert record["id"] == 7 and record["scores"] == {"Levenshtein": 0.0} and "errors" not in record
    assert record["metadata_scores"]["Levenshtein"]["signature"]["scorer"] == "Levenshtein"


def test_a_sync_scorer_scores_one_chunk_at_a_time():
    class Counting(Scorer):
        name = "Counting"
        fields = (text_field("output"),)

        def __init__(self):
            super().__init__()
            self.active = 0
            self.peak = 0
            self.lock = threading.Lock()

        def _score_batch(self, rows):
            with self.lock:
                self.active += 1
                self.peak = max(self.peak, self.active)
            import time
            time.sleep(0.01)
            with self.lock:
                self.active -= 1
            return [self.make_score(1.0) for _ in rows]

    counting = Counting()
    results = evaluate(({"output": str(i)} for i in range(100)), [counting, "Levenshtein"], chunk_size=5,
                       prefetch=8, mapping={"expected": "output"}).collect()
    assert len(results) == 100 and counting.peak == 1
