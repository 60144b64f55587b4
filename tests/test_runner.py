"""The batch runner: streaming, order, per-row errors, concurrency, mapping."""

import asyncio
import itertools
import threading
import time

import pytest

import scorers
from scorers import Scorer, text_field
from scorers.errors import ConfigError, DataError
from scorers.runner import COLUMN_CHECK_ROWS, aevaluate, evaluate, reorder_rows
from scorers.testing import LoopbackLLM, Reply


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
    # the rows of the column check and a few chunks ahead, never the whole (infinite) input
    assert len(consumed) <= COLUMN_CHECK_ROWS + 2 * 10


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


@pytest.mark.parametrize(
    "bad,match",
    [
        (["ExactMatch", "exactmatch"], "share the name"),
        ([], "no scorers"),
        ([object()], "not a scorer"),
    ],
)
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
    results = evaluate(
        ({"output": str(i)} for i in range(100)),
        [counting, "Levenshtein"],
        chunk_size=5,
        prefetch=8,
        mapping={"expected": "output"},
    ).collect()
    assert len(results) == 100 and counting.peak == 1


# ----------------------------------------------------------------- failure policy
class NeedsKey(Scorer):
    """Raises a ConfigError the way a judge without an API key does."""

    fields = (text_field("output"),)

    def _score(self, *, output):
        raise ConfigError("NeedsKey: no API key; set OPENAI_API_KEY", scorer=self.name)


class Broken(Scorer):
    """Fails the way a broken environment does: an ImportError on every row."""

    fields = (text_field("output"),)

    def _score(self, *, output):
        raise ImportError("libfoo.so: cannot open shared object file")


def test_a_config_error_stops_the_run_at_once():
    consumed = []

    def rows():
        for i in range(10_000):
            consumed.append(i)
            yield {"output": str(i), "expected": str(i)}

    with pytest.raises(ConfigError, match="no API key"):
        for _ in evaluate(rows(), ["ExactMatch", NeedsKey()], chunk_size=10, prefetch=2):
            pass
    assert len(consumed) <= COLUMN_CHECK_ROWS + 2 * 10


def test_unexpected_errors_are_recorded_counted_and_named():
    run = evaluate([{"output": "a", "expected": "a"}, {"output": "b", "expected": "c"}], ["ExactMatch", Broken()])
    results = run.collect()
    assert results[0].errors["Broken"] == {
        "type": "ImportError",
        "message": "libfoo.so: cannot open shared object file",
        "unexpected": True,
    }
    assert results[1].scores["ExactMatch"] == 0.0
    summary = run.summary
    assert summary.scorers["Broken"]["unexpected_errors"] == 2 and summary.failed_scorers == ["Broken"]
    assert len(summary.problems) == 2 and all(p.startswith("Broken: ") for p in summary.problems)
    assert summary.to_dict()["problems"] == summary.problems


def test_a_scorer_failing_on_every_row_is_a_problem_even_with_typed_errors():
    run = evaluate([{"output": None, "expected": "a"}, {"output": None, "expected": "b"}], ["ExactMatch"])
    run.collect()
    assert run.summary.failed_scorers == ["ExactMatch"]
    assert run.summary.problems == ["ExactMatch: failed on every row (ScorerInputError ×2)"]


class Counted(Scorer):
    """ExactMatch's fields, counting the rows it scores."""

    fields = (text_field("output"), text_field("expected"))

    def __init__(self):
        super().__init__()
        self.scored = 0

    def _score(self, *, output, expected):
        self.scored += 1
        return self.make_score(float(output == expected))


WINDOW = [{"answer": str(i), "expected": str(i)} for i in range(COLUMN_CHECK_ROWS)]
MORE = [{"answer": "x", "expected": "x"}] * 1000


@pytest.mark.parametrize(
    "mapping,rows,message",
    [
        (
            {"output": "answr"},
            WINDOW + MORE,
            f"mapping output=answr: no column or path 'answr' in any of the first {COLUMN_CHECK_ROWS} rows",
        ),
        ({"output": "answr"}, WINDOW[:1], "mapping output=answr: no column or path 'answr' in the first row"),
        ({"outptu": "answer"}, WINDOW + MORE, "no scorer of this run reads a field 'outptu'"),
        (
            {},
            WINDOW + MORE,
            f"Counted needs the field 'output', and there is no column 'output' in any of the first "
            f"{COLUMN_CHECK_ROWS} rows",
        ),
        # the evidence is the first COLUMN_CHECK_ROWS rows: a column that only appears later is not seen
        ({"output": "answr"}, WINDOW + [{"answr": "a", "expected": "a"}] + MORE, "no column or path 'answr'"),
    ],
)
def test_a_column_absent_from_all_the_first_rows_is_a_usage_error_before_scoring(mapping, rows, message):
    consumed = []

    def stream():
        for row in rows:
            consumed.append(row)
            yield row

    counted = Counted()
    with pytest.raises(ConfigError, match=message):
        list(evaluate(stream(), [counted], mapping=mapping))
    assert counted.scored == 0 and len(consumed) <= COLUMN_CHECK_ROWS


@pytest.mark.parametrize("chunk_size", [1, 4, None])
def test_a_first_row_without_a_reference_is_that_rows_error_and_the_others_are_scored(chunk_size):
    rows = [{"response": "a"}] + [{"response": str(i), "ref": str(i % 3)} for i in range(1, 50)]
    results = evaluate(
        rows, ["ExactMatch"], mapping={"output": "response", "expected": "ref"}, chunk_size=chunk_size
    ).collect()
    assert results[0].errors["ExactMatch"]["type"] == "ScorerInputError"
    assert [r.scores["ExactMatch"] for r in results[1:]] == [float(str(i) == str(i % 3)) for i in range(1, 50)]


def test_a_field_present_in_some_of_the_first_rows_is_not_a_usage_error():
    rows = [{"output": "a"}] * 5 + [{"output": "a", "expected": "a"}]  # as a judge run reads it: chunks of one row
    results = evaluate(rows, ["ExactMatch"], chunk_size=1).collect()
    assert [sorted(r.errors) for r in results] == [["ExactMatch"]] * 5 + [[]]


def test_a_later_row_missing_a_field_is_that_rows_error():
    results = evaluate([{"output": "a", "expected": "a"}, {"output": "b"}], ["ExactMatch"]).collect()
    assert results[1].errors["ExactMatch"]["type"] == "ScorerInputError"


def test_summaries_of_shards_merge_into_the_summary_of_the_run():
    rows = [{"output": f"a{i % 7}", "expected": f"a{i % 5}"} for i in range(300)] + [{"output": None, "expected": "x"}]
    whole = evaluate(rows, ["Levenshtein", "ExactMatch"])
    whole.collect()
    shards = [evaluate(rows[a : a + 100], ["Levenshtein", "ExactMatch"]) for a in range(0, len(rows), 100)]
    for shard in shards:
        shard.collect()
    merged = shards[0].summary
    for shard in shards[1:]:
        merged.merge(shard.summary)
    assert merged.scorers == whole.summary.scorers and merged.rows == whole.summary.rows == 301


def test_aevaluate_returns_its_summary_like_evaluate():
    async def main():
        run = aevaluate([{"output": "a", "expected": "a"}, {"output": "a", "expected": "b"}], ["ExactMatch"])
        [r async for r in run]
        return run.summary

    assert asyncio.run(main()).scorers["ExactMatch"]["mean"] == 0.5


# ------------------------------------------------------------------------- workers
def test_workers_give_the_same_results_and_summary_as_one_process():
    rows = [{"id": i, "output": f"the cat {i % 13}", "expected": f"the cat {i % 11}"} for i in range(3000)]
    rows[17]["output"] = None  # a bad row travels back from a worker as its typed error
    one = evaluate(rows, ["Levenshtein", "ExactMatch"])
    many = evaluate(rows, ["Levenshtein", "ExactMatch"], workers=2, chunk_size=256)
    assert [r.to_record() for r in one] == [r.to_record() for r in many]
    assert one.summary.scorers == many.summary.scorers
    assert many.summary.scorers["Levenshtein"]["error_types"] == {"ScorerInputError": 1}


def test_a_config_error_in_a_worker_process_stops_the_run():
    with pytest.raises(ConfigError, match="normalize"):
        scorers.get("Levenshtein", normalize="XX")
    rows = [{"output": "a", "expected": "a"}] * 50
    with pytest.raises(ConfigError, match="no API key"):
        list(evaluate(rows, [scorers.get("ExactMatch"), NeedsKey()], workers=2))


@pytest.mark.parametrize("option", ["workers", "concurrency"])
def test_counts_below_one_are_refused(option):
    with pytest.raises(ConfigError, match=f"{option} must be at least 1"):
        evaluate([], ["ExactMatch"], **{option: 0})


def test_a_worker_process_that_dies_is_a_clear_error(tmp_path):
    import subprocess
    import sys

    script = tmp_path / "unguarded.py"  # no `if __name__ == "__main__":`: the workers cannot start
    script.write_text(
        "import os, scorers\n"
        "if os.environ.get('SCORERS_TEST_CHILD') is None:\n"
        "    os.environ['SCORERS_TEST_CHILD'] = '1'\n"
        "else:\n"
        "    raise SystemExit(1)  # what re-running an unguarded script does, made quick\n"
        "list(scorers.evaluate([{'output': 'a', 'expected': 'a'}] * 10, ['ExactMatch'], workers=2))\n"
    )
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert result.returncode != 0
    assert "ConfigError: workers=2: a worker process ended abruptly" in result.stderr
    assert "if __name__ == '__main__':" in result.stderr


def test_interrupt_stops_a_for_loop_after_the_rows_scored_and_cancels_the_work_in_flight():
    class Counting(Scorer):
        fields = (text_field("output"),)

        def __init__(self):
            super().__init__()
            self.started = self.running = 0

        async def _ascore(self, *, output):
            self.started += 1
            self.running += 1
            try:
                await asyncio.sleep(0.05)
            finally:
                self.running -= 1
            return self.make_score(1.0)

    scorer = Counting()
    run = evaluate(({"output": str(i)} for i in itertools.count()), [scorer], chunk_size=2, prefetch=2)
    taken = []
    with pytest.raises(KeyboardInterrupt):
        for result in run:
            taken.append(result.index)
            if len(taken) == 3:
                run.interrupt()  # e.g. from a signal handler: only sets a flag
    assert taken == [0, 1, 2, 3]  # the rest of the scored chunk (of 2) is given: a stop drops no finished row
    assert scorer.running == 0  # the calls in flight were cancelled, on the background loop
    started = scorer.started
    time.sleep(0.2)
    assert scorer.started == started  # and no new ones began


# ------------------------------------------------------------------- a slow row, a read error
@pytest.mark.slow
def test_a_hung_judge_request_does_not_stop_the_rows_after_it(llm_env: LoopbackLLM) -> None:
    from scorers.llm import configure

    configure(backoff_base=0)  # the hung request's retry goes out as soon as the hang ends
    llm_env.default = Reply.choice("C", reasons="same facts")
    llm_env.script(Reply.hang(3), match="HUNG", times=1)  # then a 504, retried
    rows = [{"input": "q", "output": f"answer {i}" + (" HUNG" if i == 1 else ""), "expected": "a"} for i in range(200)]
    results = evaluate(rows, [scorers.get("Factuality")], concurrency=4).collect()
    assert [r.index for r in results] == list(range(200)) and all(r.scores["Factuality"] == 1.0 for r in results)
    sent = [request.last_user_message for request in llm_env.chat_requests]
    hung, retried = [i for i, message in enumerate(sent) if "HUNG" in message]
    # while row 1 waited, the run went on: before, 4 slots of which one hung and at most 8 rows in flight
    assert retried - hung - 1 >= 100


def test_a_slow_row_holds_back_at_most_the_reorder_bound_of_scored_rows():
    consumed = []

    class HeadWaits(Scorer):
        """Row 0 finishes only once the run has stopped: no row read or scored over many loop turns."""

        fields = (text_field("output"),)
        scored = 0

        async def _ascore(self, *, output):
            if output == "0":
                while True:
                    seen = (len(consumed), self.scored)
                    for _ in range(200):
                        await asyncio.sleep(0)
                    if (len(consumed), self.scored) == seen:
                        self.read_while_waiting = len(consumed)
                        break
            self.scored += 1
            return self.make_score(1.0)

    def rows():
        for i in itertools.count():
            consumed.append(i)
            yield {"output": str(i)}

    scorer = HeadWaits()
    iterator = iter(evaluate(rows(), [scorer], concurrency=2, chunk_size=1, prefetch=4))
    assert next(iterator).index == 0
    # the scored rows held back for order filled the bound, and no more than the chunks then being scored
    assert reorder_rows(2) < scorer.read_while_waiting <= 1 + reorder_rows(2) + 4


@pytest.mark.parametrize("chunk_size", [1, 16, 1000])
def test_a_read_error_comes_after_every_row_read_before_it(chunk_size):
    def rows():
        for i in range(100):
            yield {"output": str(i), "expected": str(i % 2)}
        raise DataError("data.jsonl:101: invalid JSON (Unterminated string at the end of the line)")

    run = evaluate(rows(), ["ExactMatch", SlowAsync(delay=0)], chunk_size=chunk_size, prefetch=4)
    taken = []
    with pytest.raises(DataError, match="data.jsonl:101"):
        for result in run:
            taken.append(result.index)
    assert taken == list(range(100)) and run.summary.rows == 100
