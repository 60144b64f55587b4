"""scorers.engines: Ray Data and Spark runs give the local run's records and summary, each row exactly once, also
when a worker is killed mid-run, and a killed worker's rows do not pay their judge calls again (shared cache)."""

from __future__ import annotations

import json
import threading
import time
import warnings
from pathlib import Path
from typing import Any, Iterator

import psutil
import pytest

import scorers
from scorers.batch import BatchScorer
from scorers.cli import main
from scorers.engines import INDEX_COLUMN, EngineError, EngineRun, rows_table, split, worker_settings
from scorers.errors import ConfigError, DataError, MissingExtraError
from scorers.judges import LLMClassifier
from scorers.testing import LoopbackLLM, Reply

from .conftest import WORKERS

WORDS = "the a cat dog sat ran on under mat log quick brown fox jumps over lazy".split()
#: 240 pairs of short sentences (no two alike), and a row whose output is missing: every scorer records an error.
ROWS = [
    {
        "id": i,
        "output": " ".join(WORDS[(i * k) % len(WORDS)] for k in range(1, 4 + i % 5)),
        "expected": " ".join(WORDS[(i + k) % len(WORDS)] for k in range(1, 4 + i % 3)),
    }
    for i in range(240)
]
ROWS[17]["output"] = None
SCORERS = ["ExactMatch", "ROUGE-L", "BLEU"]


def local(rows: list[dict[str, Any]], names: list[Any]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    run = scorers.evaluate(rows, names)
    return [r.to_record() for r in run], run.summary.to_dict()["scorers"]


# ---------------------------------------------------------------- on the engines
@pytest.mark.parametrize("ordered", [True, False], ids=["ordered", "as-finished"])
def test_records_and_summary_equal_the_local_run(engine: str, ordered: bool) -> None:
    expected, summary = local(ROWS, SCORERS)
    run = scorers.evaluate(ROWS, SCORERS, engine=engine, workers=WORKERS, ordered=ordered)
    results = list(run)
    indices = [r.index for r in results]
    assert sorted(indices) == list(range(len(ROWS)))  # every row once
    if ordered:
        assert indices == list(range(len(ROWS)))
    assert [r.to_record() for r in sorted(results, key=lambda r: r.index)] == expected
    assert run.summary.to_dict()["scorers"] == summary  # means, corpus BLEU, errors: equal, not close
    assert run.summary.rows == len(ROWS) and run.summary.problems == []


def summary_table(stderr: str) -> list[str]:
    """The summary table the CLI prints, without its timing line and the engines' own log lines."""
    lines = stderr.splitlines()
    start = max(i for i, line in enumerate(lines) if line.startswith("scorer "))
    return [line for line in lines[start:] if " rows in " not in line]


def test_cli_writes_the_local_run_file_from_csv(
    engine: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "rows.csv"
    data.write_text(
        "id,output,expected\n" + "".join(f"{r['id']},{r['output'] or ''},{r['expected']}\n" for r in ROWS[:60]),
        encoding="utf-8",
    )
    base = ["run", str(data), *[f"-s{name}" for name in SCORERS], "--no-progress"]
    assert main([*base, "-o", str(tmp_path / "local.jsonl")]) == 0
    local_table = summary_table(capsys.readouterr().err)
    assert (
        main([*base, "-o", str(tmp_path / "engine.jsonl"), "--engine", engine, "--workers", str(WORKERS), "--ordered"])
        == 0
    )
    assert summary_table(capsys.readouterr().err) == local_table
    assert (tmp_path / "engine.jsonl").read_bytes() == (tmp_path / "local.jsonl").read_bytes()


def test_cli_resumes_a_local_run_on_an_engine(engine: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data, out = tmp_path / "rows.jsonl", tmp_path / "out.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in ROWS[:50]), encoding="utf-8")
    base = ["run", str(data), *[f"-s{name}" for name in SCORERS], "--no-progress", "-o", str(out)]
    assert main(base) == 0
    whole = out.read_bytes()
    out.write_bytes(b"".join(whole.splitlines(keepends=True)[:20]))  # a run stopped after 20 rows
    assert main([*base, "--resume", "--engine", engine]) == 2  # an engine continues in order only when asked
    assert "needs --ordered" in capsys.readouterr().err
    assert main([*base, "--resume", "--engine", engine, "--workers", str(WORKERS), "--ordered"]) == 0
    assert out.read_bytes() == whole


def test_cli_parquet_in_and_out(engine: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import pyarrow.parquet as pq

    pq.write_table(rows_table(ROWS).drop_columns([INDEX_COLUMN]), tmp_path / "rows.parquet")
    assert (
        main(
            [
                "run",
                str(tmp_path / "rows.parquet"),
                *[f"-s{name}" for name in SCORERS],
                "-o",
                str(tmp_path / "out.parquet"),
                "--engine",
                engine,
                "--workers",
                str(WORKERS),
                "--no-progress",
            ]
        )
        == 0
    )
    capsys.readouterr()
    written = pq.read_table(tmp_path / "out.parquet").to_pylist()
    expected, _ = local(ROWS, SCORERS)
    decoded = []
    for record in written:
        for key in ("errors", "stats", "metadata_scores"):
            if record[key] is None:
                del record[key]
            else:
                record[key] = json.loads(record[key])
        decoded.append(record)
    assert sorted(decoded, key=lambda r: r["id"]) == expected


def test_a_config_error_in_a_worker_stops_the_run(engine: str) -> None:
    judge = LLMClassifier("Same", "Is {{output}} {{expected}}? Y or N.", {"Y": 1.0, "N": 0.0})  # no API key anywhere
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        list(scorers.evaluate(ROWS[:8], [judge], engine=engine, workers=WORKERS))


def busy_worker(port: int) -> psutil.Process | None:
    """A process started under this one (an engine's worker) with a connection open to the judge server."""
    for process in psutil.Process().children(recursive=True):
        try:
            if any(c.raddr and c.raddr.port == port for c in process.net_connections(kind="tcp")):
                return process
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return None


def test_a_killed_worker_loses_no_row_and_repays_no_judge_call(engine: str, llm_env: LoopbackLLM) -> None:
    server = llm_env
    server.default = Reply.choice("Y")
    server.latency = 0.05
    rows = [{"output": f"answer {i}", "expected": f"reference {i}"} for i in range(400)]
    judge = LLMClassifier("Same", "Is {{output}} the same as {{expected}}? Y or N.", {"Y": 1.0, "N": 0.0})
    killed: dict[str, int] = {}

    def kill_one_worker() -> None:  # once a third of the rows were asked, SIGKILL a worker waiting on a reply
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and not killed:
            victim = busy_worker(server.port) if server.request_count >= len(rows) // 3 else None
            if victim is not None:
                killed.update(in_flight=server.in_flight, requests=server.request_count, pid=victim.pid)
                victim.kill()
            time.sleep(0.02)

    killer = threading.Thread(target=kill_one_worker, daemon=True)
    killer.start()
    concurrency = 4  # a worker has at most this many judge calls in flight
    results = list(
        scorers.evaluate(
            rows, [judge, "ExactMatch"], engine=engine, workers=WORKERS, concurrency=concurrency, ordered=True
        )
    )
    killer.join()
    assert killed, "no worker was killed: the run ended first"
    assert [r.index for r in results] == list(range(len(rows)))
    prompts = [request.last_user_message for request in server.chat_requests]
    repeats = len(prompts) - len(set(prompts))
    print(
        f"\n{engine}: killed pid {killed['pid']} after {killed['requests']} requests with {killed['in_flight']} in "
        f"flight; {len(prompts)} requests for {len(rows)} rows ({repeats} repeated)"
    )
    assert len(set(prompts)) == len(rows)
    # only calls whose reply the dead worker never received are made again: at most its calls in flight (the
    # server's in_flight snapshot just before the kill races with the worker's next sends, so it is not the bound)
    assert repeats <= concurrency
    server.reset()  # the local run finds every reply in the cache the workers wrote
    expected, _ = local(rows, [judge, "ExactMatch"])
    assert server.request_count == 0
    assert [r.to_record() for r in results] == expected


def test_a_local_ray_cluster_stays_on_loopback(ray_cluster: Any) -> None:
    assert {node["NodeManagerAddress"] for node in ray_cluster.nodes()} == {"127.0.0.1"}


# ---------------------------------------------------------------- the driver, without an engine
def backend_returning(indices: list[int]) -> Any:
    """A fake engine that scores every row, returns them in the order (and with the repeats) of ``indices``."""

    def backend(table: Any, unit: BatchScorer, **options: Any) -> Iterator[Any]:
        scored = unit(table.drop_columns([INDEX_COLUMN]))
        yield scored.append_column(INDEX_COLUMN, table.column(INDEX_COLUMN)).take(indices)

    return backend


def engine_run(indices: list[int], *, ordered: bool) -> EngineRun:
    rows = [{"output": str(i), "expected": "1"} for i in range(4)]
    return EngineRun(
        rows,
        scorers.batch.resolve_scorers(["ExactMatch"]),
        engine="fake",
        backend=backend_returning(indices),
        options={},
        mapping=None,
        concurrency=4,
        workers=1,
        start=0,
        ordered=ordered,
    )


@pytest.mark.parametrize(
    ("returned", "ordered", "given"),
    [
        ([3, 1, 0, 2], True, [0, 1, 2, 3]),
        ([3, 1, 0, 2], False, [3, 1, 0, 2]),
        ([1, 1, 0, 3, 2, 3], True, [0, 1, 2, 3]),
    ],
)
def test_the_driver_gives_each_row_once_in_order_when_asked(
    returned: list[int], ordered: bool, given: list[int]
) -> None:
    run = engine_run(returned, ordered=ordered)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        results = list(run)
    assert [r.index for r in results] == given
    assert [r.scores["ExactMatch"] for r in results] == [float(i == 1) for i in given]
    assert len(caught) == len(returned) - 4 and run.summary.rows == 4


def test_a_row_the_engine_lost_is_an_error() -> None:
    with pytest.raises(EngineError, match="returned 3 of 4 rows; missing: rows 2"):
        list(engine_run([0, 1, 3], ordered=False))


def test_the_driver_finds_a_mapping_typo_in_the_first_rows_before_the_engine_starts() -> None:
    def backend(table: Any, unit: BatchScorer, **options: Any) -> Iterator[Any]:
        raise AssertionError("the engine was started")

    rows = [{"output": str(i), "answer": None if i == 0 else "1"} for i in range(150)]
    run = EngineRun(
        rows,
        scorers.batch.resolve_scorers(["ExactMatch"]),
        engine="fake",
        backend=backend,
        options={},
        mapping={"expected": "answr"},
        concurrency=4,
        workers=1,
        start=0,
        ordered=True,
    )
    with pytest.raises(ConfigError, match="no column or path 'answr' in any of the first 100 rows"):
        list(run)


def test_a_reference_the_first_row_lacks_is_that_rows_error_on_an_engine_too() -> None:
    rows = [{"output": str(i), "answer": None if i == 0 else "1"} for i in range(4)]
    run = EngineRun(
        rows,
        scorers.batch.resolve_scorers(["ExactMatch"]),
        engine="fake",
        backend=backend_returning([0, 1, 2, 3]),
        options={},
        mapping={"expected": "answer"},
        concurrency=4,
        workers=1,
        start=0,
        ordered=True,
    )
    results = list(run)
    assert results[0].errors["ExactMatch"]["type"] == "ScorerInputError"
    assert [r.scores["ExactMatch"] for r in results[1:]] == [1.0, 0.0, 0.0]


@pytest.mark.parametrize(
    "rows",
    [
        [{"output": "a", "expected": "b"}, {"output": "c"}],  # a field some rows lack
        [{"output": "a", "expected": "b"}, {"output": "c", "expected": ["d", "e"]}],  # two types in one column
    ],
)
def test_rows_arrow_would_change_are_refused(rows: list[dict[str, Any]]) -> None:
    with pytest.raises(DataError, match="row 1|Arrow"):
        rows_table(rows)


def test_blocks_give_every_worker_several() -> None:
    table = rows_table([{"output": "x"}] * 1000)
    assert [block.num_rows for block in split(table, workers=2, size=100)] == [200] * 5
    assert [block.num_rows for block in split(table, workers=2, size=512)] == [125] * 8  # less than a batch each
    assert sum(block.num_rows for block in split(table, workers=8, size=16)) == 1000


def test_workers_get_the_drivers_cache_path_and_settings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SCORERS_CACHE", "judges.sqlite")  # relative: resolved here, not in the worker's folder
    scorers.configure(model="gpt-4o")
    settings = worker_settings()
    assert settings["configured"] == {"model": "gpt-4o", "cache": str(tmp_path / "judges.sqlite")}
    assert settings["env"]["SCORERS_CACHE"] == "judges.sqlite" and settings["env"]["OPENAI_API_KEY"] is None
    scorers.configure(cache=False)
    assert worker_settings()["configured"]["cache"] is False
    import openai

    scorers.configure(client=openai.AsyncOpenAI(api_key="sk-x", base_url="http://127.0.0.1:9/v1"))
    # a live client cannot reach the workers: an error only where judges run
    with pytest.raises(ConfigError, match="base_url=/api_key="):
        worker_settings()
    assert "client" not in worker_settings(judges=False)["configured"]


def test_a_worker_judges_with_the_drivers_settings_without_touching_its_process(
    llm_server: LoopbackLLM, fake_api_key: str
) -> None:
    """What a worker does with the payload, here: the driver's settings hold while its rows are scored, and the
    worker's environment and configure() state are as before afterwards."""
    import asyncio
    import os

    from scorers.engines import score_rows

    scorers.configure(base_url=llm_server.base_url, api_key=fake_api_key, cache=False)
    llm_server.default = Reply.choice("Y")
    settings = worker_settings()
    scorers.configure(reset=True)  # the worker: nothing configured, no key in its environment
    environ = dict(os.environ)
    judge = LLMClassifier("Same", "Is {{output}} {{expected}}? Y or N.", {"Y": 1.0, "N": 0.0})
    unit = BatchScorer([judge])
    texts = asyncio.run(score_rows(unit, [{"output": "a", "expected": "a"}], settings=settings))
    assert json.loads(texts[0])["scores"] == {"Same": 1.0} and llm_server.request_count == 1
    assert dict(os.environ) == environ and scorers.llm.config.configured_values() == {}
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):  # without the payload: the worker's own settings
        judge.engine.settings()


def test_engines_set_process_wide_variables_only_while_they_need_them(engine: str) -> None:
    import os

    assert "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER" not in os.environ  # Ray was imported by the session's cluster
    assert "SPARK_LOCAL_IP" not in os.environ and "PYSPARK_PYTHON" not in os.environ


@pytest.mark.parametrize(("engine", "module", "extra"), [("ray", "ray", "ray"), ("spark", "pyspark.sql", "spark")])
def test_a_missing_engine_names_its_extra(
    engine: str, module: str, extra: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(__import__("sys").modules, module, None)
    with pytest.raises(MissingExtraError, match=rf"pip install 'scorers\[{extra}\]'"):
        list(scorers.evaluate(ROWS[:2], SCORERS, engine=engine))


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"engine": "dask"}, "unknown engine 'dask'"),
        ({"engine": "ray", "master": "local[2]"}, "master= is Spark's"),
        ({"engine": "spark", "address": "auto"}, "address= is Ray's"),
        ({"address": "auto"}, "pass engine='ray' or 'spark'"),
    ],
)
def test_engine_options_are_checked(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        scorers.evaluate(ROWS[:2], SCORERS, **options)
