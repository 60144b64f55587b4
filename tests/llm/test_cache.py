"""The SQLite reply cache: keys, storage, locations and several processes at once."""

from __future__ import annotations

import multiprocessing
import os
from pathlib import Path

import pytest

from scorers.errors import ConfigError
from scorers.llm import LLMCache, cache_key, default_cache_path
from scorers.llm.cache import cache_keys
from scorers.llm.config import resolve

BODY = {
    "model": "m",
    "messages": [{"role": "user", "content": "hi"}],
    "temperature": 0,
    "tools": [{"type": "function", "function": {"name": "select_choice"}}],
}


def test_key_ignores_dict_order_and_a_trailing_slash():
    reordered = {k: BODY[k] for k in reversed(list(BODY))}
    assert cache_key(BODY, base_url="http://h/v1") == cache_key(reordered, base_url="http://h/v1/")


@pytest.mark.parametrize(
    "change",
    [
        {"model": "other"},
        {"temperature": 1},
        {"messages": [{"role": "user", "content": "hi!"}]},
        {"seed": 3},
        {"tools": []},
        {"tool_choice": "auto"},
        {"max_tokens": 5},
        {"response_format": {"type": "json_object"}},
    ],
)
def test_key_changes_with_every_request_field(change):
    assert cache_key({**BODY, **change}, base_url="http://h/v1") != cache_key(BODY, base_url="http://h/v1")


@pytest.mark.parametrize("base_url, tag", [("http://other/v1", None), ("http://h/v1", "sample-1")])
def test_key_changes_with_endpoint_and_tag(base_url, tag):
    assert cache_key(BODY, base_url=base_url, tag=tag) != cache_key(BODY, base_url="http://h/v1")


SHARED_TOOLS = [{"type": "function", "function": {"name": "select_choice", "parameters": {"b": 1, "a": [2, None]}}}]
KEY_VECTORS = [
    BODY,
    {},
    {"model": "m", "messages": [{"role": "user", "content": 'caf\u00e9 \u2028 \x7f \x00 "quoted" \\ tab\t'}]},
    {"model": "m", "messages": [{"role": "user", "content": 'ASCII \x00 \x1f "quoted" \\ tab\t line\n ~'}]},
    {
        "model": "m",
        "messages": [{"role": "user", "content": "ASCII with DEL \x7f"}, {"role": "assistant", "content": ""}],
    },
    {"model": "m", "messages": [{"role": "user", "content": [{"type": "text", "text": "parts"}]}]},
    {"model": "m", "messages": [{"content": "x", "role": "system", "name": "n"}, {}]},
    {"model": "m", "messages": ({"role": "user", "content": "a tuple"},)},
    {"model": "m", "messages": [], "tools": SHARED_TOOLS, "tool_choice": "auto", "seed": 3},
    {"model": "m", "messages": [{"role": "user", "content": "same tools"}], "tools": list(SHARED_TOOLS)},
    {"model": "m", "top_p": 0.5, "temperature": 1e-7, "max_tokens": 9, "extra": {"z": [1.5, True, None]}},
    {"model": "m", "stop": ["\n"], "logit_bias": {"50256": -100}, "when": Path("/not/json")},
    {
        "model": "o3",
        "input": [{"role": "user", "content": "responses"}],
        "max_output_tokens": 9,
        "tools": [{"type": "function", "name": "select_choice", "parameters": {}, "strict": False}],
        "text": {"format": {"type": "json_object"}},
        "reasoning": {"effort": "low"},
        "include": ["message.output_text.logprobs"],
        "top_logprobs": 2,
    },
    {
        "model": "o3",
        "messages": [{"role": "user", "content": "responses"}],
        "max_completion_tokens": 9,
        "reasoning_effort": "low",
        "logprobs": True,
        "top_logprobs": 2,
    },
]


@pytest.mark.parametrize("tag", [None, "sample-1"])
def test_batch_keys_equal_single_keys(tag):
    tags = [tag] * len(KEY_VECTORS)
    expected = [cache_key(body, base_url="http://h/v1/", tag=tag) for body in KEY_VECTORS]
    assert cache_keys(KEY_VECTORS, base_url="http://h/v1/", tags=tags) == expected
    assert len(set(expected)) == len(expected)


def test_get_many_returns_the_present_entries_over_several_queries(tmp_path):
    cache = LLMCache(tmp_path / "c.sqlite")
    for i in range(0, 1200, 2):
        cache.put(f"k{i}", {"i": i}, model="m")
    wanted = [f"k{i}" for i in range(1200)] + ["k0", "k3"]
    assert cache.get_many(wanted) == {f"k{i}": {"i": i} for i in range(0, 1200, 2)}
    assert cache.get_many([]) == {}


def test_a_cache_file_of_an_older_version_gets_the_links_table(tmp_path):
    import sqlite3

    path = tmp_path / "old.sqlite"
    with sqlite3.connect(path) as connection:  # the file as versions before derived keys wrote it
        connection.execute(
            "CREATE TABLE replies (key TEXT PRIMARY KEY, model TEXT NOT NULL, reply TEXT NOT NULL, created REAL NOT NULL)"
        )
        connection.execute("INSERT INTO replies VALUES ('k', 'm', '{\"content\": \"A\"}', 0)")
    cache = LLMCache(path)
    assert cache.get("k") == {"content": "A"} and cache.get_linked(["d"]) == {}
    cache.link([("d", "k")])
    assert cache.get_linked(["d"]) == {"d": ("k", {"content": "A"})}


def test_put_get_replace_clear(tmp_path):
    cache = LLMCache(tmp_path / "sub" / "c.sqlite")
    assert cache.get("k") is None
    cache.put("k", {"content": "one", "n": [1, 2]}, model="m")
    cache.put("k", {"content": "two"}, model="m")
    assert cache.get("k") == {"content": "two"} and len(cache) == 1
    assert cache.clear() == 1 and len(cache) == 0


def test_unusable_location_is_a_config_error(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    with pytest.raises(ConfigError, match="cannot open the LLM reply cache"):
        LLMCache(blocker / "c.sqlite").get("k")


def _writer(path: str, worker: int, count: int) -> None:
    cache = LLMCache(path)
    for i in range(count):
        cache.put(f"{worker}-{i}", {"worker": worker, "i": i}, model="m")
        assert cache.get(f"{worker}-{i}") == {"worker": worker, "i": i}


def test_several_processes_share_one_file(tmp_path):
    path = str(tmp_path / "shared.sqlite")
    LLMCache(path).put("parent", {"ok": True}, model="m")
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_writer, args=(path, w, 40)) for w in range(3)]
    for process in workers:
        process.start()
    for process in workers:
        process.join(60)
    assert [p.exitcode for p in workers] == [0, 0, 0]
    cache = LLMCache(path)
    assert len(cache) == 1 + 3 * 40
    assert cache.get("2-39") == {"worker": 2, "i": 39}


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_connection_is_reopened_after_fork(tmp_path):
    cache = LLMCache(tmp_path / "c.sqlite")
    cache.put("before", {"v": 1}, model="m")
    context = multiprocessing.get_context("fork")
    child = context.Process(target=_writer, args=(str(cache.path), 9, 5))
    child.start()
    child.join(60)
    assert child.exitcode == 0 and cache.get("9-4") == {"worker": 9, "i": 4}


@pytest.mark.parametrize(
    "env, expected",
    [
        ({"SCORERS_CACHE_DIR": "/somewhere/dir"}, Path("/somewhere/dir/llm-cache.sqlite")),
        ({"XDG_CACHE_HOME": "/xdg"}, Path("/xdg/scorers/llm-cache.sqlite")),
        ({"SCORERS_CACHE": "/exact/file.db"}, Path("/exact/file.db")),
        ({"SCORERS_CACHE": "off"}, None),
        ({"SCORERS_CACHE": "0"}, None),
    ],
)
def test_cache_location_from_environment(monkeypatch, env, expected):
    for name in ("SCORERS_CACHE_DIR", "XDG_CACHE_HOME", "SCORERS_CACHE"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert resolve(api_key="k").cache == expected


def test_default_location_is_under_the_home_cache(monkeypatch):
    for name in ("SCORERS_CACHE_DIR", "XDG_CACHE_HOME", "LOCALAPPDATA"):
        monkeypatch.delenv(name, raising=False)
    assert default_cache_path() == Path.home() / ".cache" / "scorers" / "llm-cache.sqlite"


@pytest.mark.parametrize("option, expected", [(False, None), ("x/y.sqlite", Path("x/y.sqlite"))])
def test_cache_argument_wins_over_environment(monkeypatch, option, expected):
    monkeypatch.setenv("SCORERS_CACHE", "/env/file.db")
    assert resolve(api_key="k", cache=option).cache == expected


def test_a_cache_pickles_as_its_path_and_opens_its_own_connection(tmp_path):
    import pickle

    import cloudpickle

    cache = LLMCache(tmp_path / "c.sqlite", busy_timeout_s=5.0)
    cache.put("k", {"v": 1}, model="m")
    for dumps in (pickle.dumps, cloudpickle.dumps):
        copy = pickle.loads(dumps(cache))
        assert (copy.path, copy.busy_timeout_s, copy.get("k")) == (cache.path, 5.0, {"v": 1})
        assert copy._conn is not cache._conn and copy._lock is not cache._lock
        copy.put("k2", {"v": 2}, model="m")
    assert cache.get("k2") == {"v": 2}


def test_open_cache_is_one_instance_per_file(tmp_path, monkeypatch):
    from scorers.llm.cache import open_cache

    monkeypatch.chdir(tmp_path)
    assert open_cache("a.sqlite") is open_cache(tmp_path / "a.sqlite") is not open_cache("b.sqlite")
    own = LLMCache(tmp_path / "a.sqlite")
    assert open_cache(own) is own


def _open_and_write(path: str, barrier: object, index: int) -> None:
    from scorers.llm.cache import LLMCache

    barrier.wait()  # type: ignore[attr-defined]  # every process opens the new file at the same moment
    cache = LLMCache(path)
    cache.put(f"key-{index}", {"content": str(index)}, model="m")


@pytest.mark.slow
def test_processes_opening_a_new_cache_file_at_once_all_succeed(tmp_path: Path) -> None:
    import multiprocessing

    path = str(tmp_path / "shared.sqlite")
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(6)
    processes = [context.Process(target=_open_and_write, args=(path, barrier, i)) for i in range(6)]
    for process in processes:
        process.start()
    for process in processes:
        process.join(60)
    assert [p.exitcode for p in processes] == [0] * 6  # "database is locked" from the WAL switch is waited out
    assert len(LLMCache(path).get_many([f"key-{i}" for i in range(6)])) == 6


def _damaged_caches(folder: Path) -> dict[str, Path]:
    """Cache files a judge run may meet: not a database, a real one cut short, a real one with a page overwritten."""
    real = folder / "real.sqlite"
    cache = LLMCache(real)
    for i in range(300):
        cache.put(f"k{i}", {"content": "x" * 300}, model="m")
    cache.close()  # the last connection checkpoints the WAL into the file
    data = real.read_bytes()
    garbage, truncated, overwritten = folder / "garbage.sqlite", folder / "truncated.sqlite", folder / "page.sqlite"
    garbage.write_bytes(b"not a database, just bytes\n" * 200)
    truncated.write_bytes(data[: len(data) // 2])
    middle = (len(data) // 4096 // 2) * 4096  # the header and the schema stay intact
    overwritten.write_bytes(data[:middle] + b"\xff" * 4096 + data[middle + 4096 :])
    return {"garbage": garbage, "truncated": truncated, "overwritten-page": overwritten}


@pytest.mark.parametrize("damage", ["garbage", "truncated", "overwritten-page"])
def test_a_damaged_cache_stops_a_judge_run_before_any_request(tmp_path, fake_api_key, damage):
    import scorers
    from scorers import LLMClassifier
    from scorers.llm import LLMEngine
    from scorers.testing import LoopbackLLM, Reply

    path = _damaged_caches(tmp_path)[damage]
    with LoopbackLLM(default=Reply.choice("Y")) as server:
        engine = LLMEngine(base_url=server.base_url, api_key=fake_api_key, cache=path)
        judge = LLMClassifier("Polite", "Is {{output}} polite?", {"Y": 1.0, "N": 0.0}, engine=engine)
        rows = [{"output": f"reply {i}"} for i in range(40)]
        outcomes = judge.score_batch(rows)
        with pytest.raises(ConfigError) as info:
            list(scorers.evaluate(rows, [judge]))
        assert server.request_count == 0
    assert all(isinstance(outcome, ConfigError) for outcome in outcomes)
    for message in (str(outcomes[0]), str(info.value)):
        assert str(path) in message and "delete it" in message and "--no-cache" in message


def test_a_block_scored_again_counts_the_calls_its_first_attempt_paid_for_as_paid(
    tmp_path: Path, llm_server, fake_api_key: str
) -> None:
    """An engine's block of rows pays for its calls (paying): a later attempt at the same block of the same run
    (its worker lost) finds them in the cache with their figures, not as cached; any other hit is cached."""
    from scorers.llm import ChatRequest, LLMEngine
    from scorers.llm.cache import paying
    from scorers.llm.usage import call_usage

    engine = LLMEngine(base_url=llm_server.base_url, api_key=fake_api_key, cache=str(tmp_path / "c.sqlite"))
    request = ChatRequest(messages=[{"role": "user", "content": "Same?"}])
    with paying("run-1", 16):
        first = engine.complete_sync(request)
        repeated = engine.complete_sync(request)  # the same prompt again in this attempt: another row's, cached
    with paying("run-1", 16):  # the block scored again after its worker was lost
        again = engine.complete_sync(request)
        (looked_up,) = engine.lookup([request])
    with paying("run-1", 32):
        other_block = engine.complete_sync(request)
    with paying("run-2", 16):
        other_run = engine.complete_sync(request)
    outside = engine.complete_sync(request)
    assert llm_server.request_count == 1
    assert call_usage(first)["requests"] == 1 and not first.cached
    assert call_usage(again) == call_usage(first) and call_usage(looked_up) == call_usage(first)
    assert all(hit.cached and call_usage(hit) == {"cached": 1} for hit in (repeated, other_block, other_run, outside))
