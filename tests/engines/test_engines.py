"""scorers.engines: Ray Data and Spark runs give the local run's records and summary, each row exactly once, also
when a worker is killed mid-run, and a killed worker's rows do not pay their judge calls again (shared cache)."""

from __future__ import annotations

import json
import sys
import textwrap
import threading
import time
import warnings
from pathlib import Path
from typing import Any, ClassVar, Generator

import psutil
import pytest

import scorers
from scorers.batch import RESULT_COLUMN, BatchScorer
from scorers.cli import main
from scorers.engines import Engine, EngineError, EngineRegistry, Local, Ray, Spark
from scorers.engines.cluster import (
    INDEX_COLUMN,
    ClusterEngine,
    encoded_columns,
    rows_table,
    score_rows,
    split,
    table_rows,
    worker_settings,
)
from scorers.errors import ConfigError, MissingExtraError
from scorers.judges import LLMClassifier
from scorers.testing import LoopbackLLM, Reply

from .conftest import WORKERS

pytest.importorskip("pyarrow", reason="the engines need pyarrow: pip install 'scorers[ray]' or 'scorers[spark]'")
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
    # the running cluster, named by an option (Ray joins the cluster this process joined; Spark uses the session)
    option = {"ray": "address=auto", "spark": "master=local[2,3]"}[engine]
    engine_run = ["--engine", engine, "--engine-option", option, "--workers", str(WORKERS), "--ordered"]
    assert main([*base, "-o", str(tmp_path / "engine.jsonl"), *engine_run]) == 0
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
    port = server.port
    assert port is not None

    def kill_one_worker() -> None:  # once a third of the rows were asked, SIGKILL a worker waiting on a reply
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and not killed:
            victim = busy_worker(port) if server.request_count >= len(rows) // 3 else None
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
    """Every socket the processes of the local cluster listen on is on 127.0.0.1 (Ray was imported before the
    engine started it: Ray would rewrite 127.0.0.1 to the machine's routed address and listen on every interface)."""
    assert {node["NodeManagerAddress"] for node in ray_cluster.nodes()} == {"127.0.0.1"}
    listening = set()
    for process in psutil.Process().children(recursive=True):
        try:
            if not any("ray" in part for part in [process.name(), *process.cmdline()]):
                continue  # not Ray's (a Spark session's JVM)
            listening |= {
                (process.name(), c.laddr.ip)
                for c in process.net_connections(kind="inet")
                if c.status == psutil.CONN_LISTEN
            }
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    assert {name for name, _ in listening} >= {"gcs_server", "raylet"}
    assert {ip for _, ip in listening} <= {"127.0.0.1", "::ffff:127.0.0.1"}, listening


def test_a_ray_client_address_is_refused_naming_what_works() -> None:
    """Ray Data cannot run through Ray Client (tried with grpcio installed: an AttributeError in its executor)."""
    with pytest.raises(ConfigError, match=r"cannot run through Ray Client .*give the head's host:port"):
        list(scorers.evaluate(ROWS[:2], SCORERS, engine=Ray(address="ray://127.0.0.1:10001")))


# ---------------------------------------------------------------- the driver, without an engine
class Returning(ClusterEngine):
    """A fake cluster: scores every row here, returns them in the order (and with the repeats) of ``indices``."""

    name: ClassVar[str] = "returning"
    indices: list[int]

    def score_table(self, table: Any, unit: BatchScorer, *, workers: int, ordered: bool) -> Generator[Any, None, None]:
        import asyncio

        import pyarrow as pa

        texts = asyncio.run(score_rows(unit, table_rows(table)))
        scored = pa.table({INDEX_COLUMN: table.column(INDEX_COLUMN), RESULT_COLUMN: pa.array(texts, pa.string())})
        yield scored.take(self.indices)


class Unstarted(ClusterEngine):
    """A cluster that must not be reached."""

    name: ClassVar[str] = "unstarted"

    def score_table(self, table: Any, unit: BatchScorer, *, workers: int, ordered: bool) -> Generator[Any, None, None]:
        raise AssertionError("the engine was started")


def returning_run(indices: list[int], *, ordered: bool) -> scorers.Evaluation:
    rows = [{"output": str(i), "expected": "1"} for i in range(4)]
    return scorers.evaluate(rows, ["ExactMatch"], engine=Returning(indices=indices), concurrency=4, ordered=ordered)


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
    run = returning_run(returned, ordered=ordered)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        results = list(run)
    assert [r.index for r in results] == given
    assert [r.scores["ExactMatch"] for r in results] == [float(i == 1) for i in given]
    assert len(caught) == len(returned) - 4 and run.summary.rows == 4


def test_a_row_the_engine_lost_is_an_error() -> None:
    with pytest.raises(EngineError, match="returned 3 of 4 rows; missing: rows 2"):
        list(returning_run([0, 1, 3], ordered=False))


def test_the_driver_finds_a_mapping_typo_in_the_first_rows_before_the_engine_starts() -> None:
    rows = [{"output": str(i), "answer": None if i == 0 else "1"} for i in range(150)]
    run = scorers.evaluate(rows, ["ExactMatch"], engine=Unstarted(), mapping={"expected": "answr"}, ordered=True)
    with pytest.raises(ConfigError, match="no column or path 'answr' in any of the first 100 rows"):
        list(run)


def test_a_reference_the_first_row_lacks_is_that_rows_error_on_an_engine_too() -> None:
    rows = [{"output": str(i), "answer": None if i == 0 else "1"} for i in range(4)]
    run = scorers.evaluate(
        rows, ["ExactMatch"], engine=Returning(indices=[0, 1, 2, 3]), mapping={"expected": "answer"}, ordered=True
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
def test_rows_arrow_would_change_travel_as_json_text(rows: list[dict[str, Any]]) -> None:
    table = rows_table(rows)
    assert encoded_columns(table.schema) == ["expected"] and table_rows(table) == rows


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

    from scorers.engines.cluster import score_rows

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


# ---------------------------------------------------------------- engines as objects
def test_every_engine_gives_the_same_run_type_without_starting() -> None:
    for engine in ("local", "ray", "spark", Ray(address="auto"), Spark(master="local[1]"), Local()):
        run = scorers.evaluate(ROWS[:2], SCORERS, engine=engine)
        assert type(run) is scorers.Evaluation and isinstance(run.engine, Engine)
    assert scorers.evaluate(ROWS[:2], SCORERS, engine="RAY").engine == Ray()


def test_a_cluster_run_is_iterated_with_for_not_async_for() -> None:
    import asyncio

    async def consume() -> None:
        async for _ in scorers.aevaluate(ROWS[:2], SCORERS, engine=Unstarted()):
            pass

    with pytest.raises(ConfigError, match="the unstarted engine is iterated with for, not async for"):
        asyncio.run(consume())


@pytest.mark.parametrize(
    ("engine", "message"),
    [
        ("dask", r"unknown engine 'dask'; expected local, ray, spark"),
        (3, r"engine= takes an engine's name \(local, ray, spark\) or an Engine, got 3"),
    ],
)
def test_an_unknown_engine_is_a_config_error(engine: Any, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        scorers.evaluate(ROWS[:2], SCORERS, engine=engine)


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (
            lambda: Ray(adress="auto"),  # type: ignore[call-arg]
            r"the ray engine has no option 'adress'; did you mean 'address'\? \(its options: address\)",
        ),
        (
            lambda: Spark(master=2),  # type: ignore[arg-type]
            r"the spark engine's option master=2: Input should be a valid string \(its options: master, conf\)",
        ),
        (
            lambda: Local(workers=2),  # type: ignore[call-arg]
            r"the local engine has no option 'workers' \(it takes none\)",
        ),
    ],
    ids=["typo", "type", "none"],
)
def test_engine_options_are_checked_naming_the_engine_and_its_options(build: Any, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        build()


def test_spark_settings_are_options_named_spark_dot_key() -> None:
    engine = EngineRegistry([Spark]).get("spark", master="local[1]", **{"spark.executor.memory": "2g"})  # the CLI's
    assert engine == Spark(master="local[1]", conf={"spark.executor.memory": "2g"})
    assert "spark.KEY=VALUE" in Spark.options()["conf"]
    with pytest.raises(ConfigError, match=r"option conf=.*a Spark setting's name starts with 'spark.', got 'memory'"):
        Spark(conf={"memory": "2g"})


def test_spark_settings_are_refused_where_a_session_is_already_active(spark_session: Any) -> None:
    run = scorers.evaluate(ROWS[:2], SCORERS, engine=Spark(conf={"spark.executor.memory": "2g"}))
    with pytest.raises(ConfigError, match=r"\(spark.executor.memory\) apply to a session it starts"):
        list(run)


def test_the_engine_keywords_of_evaluate_are_gone() -> None:
    with pytest.raises(TypeError, match="address"):
        scorers.evaluate(ROWS[:2], SCORERS, engine="ray", address="auto")  # type: ignore[call-arg]


def test_cli_engine_options_are_checked_before_anything_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in ROWS[:4]), encoding="utf-8")
    base = ["run", str(data), "-s", "ExactMatch", "--no-progress"]
    assert main([*base, "--engine", "ray", "--engine-option", "adress=auto"]) == 2
    err = capsys.readouterr().err
    assert "the ray engine has no option 'adress'; did you mean 'address'? (its options: address)" in err
    assert "scorer " not in err  # nothing was scored
    assert main([*base, "--engine", "local", "--engine-option", "workers=2"]) == 2
    assert "the local engine has no option 'workers' (it takes none)" in capsys.readouterr().err
    assert main([*base, "--engine", "dask"]) == 2
    assert "unknown engine 'dask'; expected local, ray, spark" in capsys.readouterr().err
    assert main([*base, "--engine", "ray", "--engine-option", "auto"]) == 2
    assert "--engine-option expects KEY=VALUE, got 'auto'" in capsys.readouterr().err
    with pytest.raises(SystemExit):  # the engine-specific options are gone
        main([*base, "--engine", "ray", "--address", "auto"])
    assert "unrecognized arguments: --address auto" in capsys.readouterr().err


def install_engine_plugin(folder: Path, monkeypatch: pytest.MonkeyPatch, entry_points: str) -> None:
    """Make ``folder`` an installed distribution declaring ``entry_points`` in the ``scorers.engines`` group."""
    dist = folder / "engineplugin-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: engineplugin\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(f"[scorers.engines]\n{entry_points}\n")
    monkeypatch.syspath_prepend(str(folder))


def test_a_plugin_engine_registers_and_a_broken_one_fails_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "engineplugin.py").write_text(
        textwrap.dedent('''
        from typing import ClassVar
        from scorers.engines import Local

        class Careful(Local):
            """The local engine, under another name, with an option."""
            name: ClassVar[str] = "careful"
            patience: int = 1
        ''')
    )
    install_engine_plugin(
        tmp_path, monkeypatch, "careful = engineplugin:Careful\nbroken = no_such_module_xyz:Engine\nodd = json:dumps"
    )
    registry = EngineRegistry([Local])
    with pytest.warns(RuntimeWarning) as caught:
        names = registry.names()
    assert names == ["local", "careful", "broken", "odd"]
    messages = sorted(str(warning.message) for warning in caught)
    assert len(messages) == 2 and "'broken'" in messages[0] and "'odd'" in messages[1]
    assert "failed to load" in messages[0] and "not a subclass of scorers.engines.Engine" in messages[1]
    engine = registry.get("careful", patience="3")  # validated (and converted) by the declaration
    assert repr(engine) == "Careful(patience=3)"
    run = scorers.evaluate([{"output": "a", "expected": "a"}], ["ExactMatch"], engine=engine)
    assert [r.scores for r in run] == [{"ExactMatch": 1.0}]
    with pytest.raises(ConfigError, match="No module named 'no_such_module_xyz'"):
        registry.get("broken")
    sys.modules.pop("engineplugin", None)
