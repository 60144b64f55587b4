"""The Redis reply cache (scorers.llm.cache.RedisCache) against a real redis-server: the same keys, replies and
batch lookups as the SQLite cache, shared by processes, no secrets, TTL, and its two failure paths."""

from __future__ import annotations

import multiprocessing
import pickle
from pathlib import Path
from typing import Any

import cloudpickle
import pytest

import scorers
from scorers.errors import ConfigError, JudgeError
from scorers.llm import LLMCache, configure
from scorers.llm.cache import RedisCache, open_cache
from scorers.llm.config import resolve
from scorers.llm.engine import ChatRequest, LLMEngine
from scorers.testing import LoopbackLLM, RecordedRequest, Reply

from .conftest import RedisServer, free_port, start_redis

ROWS = [{"input": f"question {i}", "expected": f"answer {i}", "output": f"reply {i}"} for i in range(6)]
FAST = dict(max_retries=0, backoff_base=0.0)


def factuality(server: LoopbackLLM, api_key: str, cache: Any) -> Any:
    """The built-in Factuality judge on its own engine pointed at ``server`` with ``cache``."""
    engine = LLMEngine(base_url=server.base_url, api_key=api_key, cache=cache, **FAST)
    return scorers.get("Factuality", engine=engine)


def run(judge: Any, rows: list[dict[str, Any]] = ROWS) -> list[Any]:
    """Score ``rows`` with ``judge`` through :func:`scorers.evaluate`, one at a time, in order."""
    return [row.scores["Factuality"] for row in scorers.evaluate(rows, [judge], concurrency=1, chunk_size=2)]


def stored(server: RedisServer) -> dict[bytes, bytes]:
    """Every key and value on the server."""
    client = server.client()
    return {key: client.get(key) for key in client.scan_iter()}


def mget_calls(server: RedisServer) -> int:
    return int(server.client().info("commandstats").get("cmdstat_mget", {}).get("calls", 0))


# ------------------------------------------------------------------ the same behaviour as the SQLite cache
@pytest.fixture(params=["sqlite", "redis"])
def any_cache(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    if request.param == "sqlite":
        return LLMCache(tmp_path / "c.sqlite")
    return RedisCache(request.getfixturevalue("redis_url"))


def test_both_backends_store_and_look_up_alike(any_cache):
    for i in range(0, 1200, 2):
        any_cache.put(f"k{i}", {"i": i, "text": "caf\u00e9 \u2028"}, model="m")
    any_cache.put("k0", {"i": "replaced"}, model="m")
    wanted = [f"k{i}" for i in range(1200)] + ["k0", "k3"]
    expected = {f"k{i}": {"i": i, "text": "caf\u00e9 \u2028"} for i in range(2, 1200, 2)}
    assert any_cache.get_many(wanted) == {**expected, "k0": {"i": "replaced"}}
    assert any_cache.get_many([]) == {} and any_cache.get("k1") is None and any_cache.get("k2") == expected["k2"]
    assert len(any_cache) == 600 and any_cache.clear() == 600 and len(any_cache) == 0


def test_both_backends_link_derived_keys_alike(any_cache):
    for i in range(0, 1200, 2):
        any_cache.put(f"k{i}", {"i": i}, model="m")
    any_cache.link([(f"d{i}", f"k{i}") for i in range(1200)])  # odd links name no stored reply: misses
    any_cache.link([("d0", "k2")])  # a newer link replaces the older
    wanted = [f"d{i}" for i in range(1200)] + ["d0", "nothing"]
    expected = {f"d{i}": (f"k{i}", {"i": i}) for i in range(2, 1200, 2)}
    assert any_cache.get_linked(wanted) == {**expected, "d0": ("k2", {"i": 2})}
    assert any_cache.get_linked([]) == {} and any_cache.link([]) is None
    assert len(any_cache) == 600 and any_cache.clear() == 600 and any_cache.get_linked(wanted) == {}


def test_a_batch_lookup_is_one_round_trip_of_mgets(redis_server, redis_url, llm_server, fake_api_key):
    engine = LLMEngine(base_url=llm_server.base_url, api_key=fake_api_key, cache=redis_url)
    requests = [ChatRequest(messages=[{"role": "user", "content": f"row {i}"}]) for i in range(1100)]
    for request in requests[:40]:
        engine.complete_sync(request)
    found = engine.lookup(requests)
    assert [r is not None and r.cached for r in found] == [True] * 40 + [False] * 1060
    stats = redis_server.client().info("commandstats")
    # 1,100 keys: three MGETs of at most 500 keys, sent together in one pipeline; no GET per key
    assert (stats["cmdstat_mget"]["calls"], stats["cmdstat_get"]["calls"], stats["cmdstat_set"]["calls"]) == (3, 40, 40)


# ------------------------------------------------------------------ judges: requests only the first time
def test_a_judge_run_twice_asks_only_the_first_time(redis_server, redis_url, llm_server, fake_api_key):
    llm_server.default = Reply.choice("C", reasons="same facts")
    first = run(factuality(llm_server, fake_api_key, redis_url))
    assert llm_server.request_count == len(ROWS)
    again = run(factuality(llm_server, "sk-another-key", redis_url))  # the key is not part of the cache key
    assert first == again == [1.0] * len(ROWS)
    entries = stored(redis_server)
    replies = [key for key in entries if key.startswith(b"scorers:llm:")]
    links = [key for key in entries if key.startswith(b"scorers:derived:")]
    assert llm_server.request_count == len(ROWS) and len(replies) == len(links) == len(ROWS)
    assert {entries[key] for key in links} == {key[len(b"scorers:llm:") :] for key in replies}  # each row's reply


def test_a_cached_batch_reads_its_replies_by_derived_keys(redis_server, redis_url, llm_server, fake_api_key):
    llm_server.default = Reply.choice("C", reasons="same facts")
    run(factuality(llm_server, fake_api_key, redis_url))
    before = mget_calls(redis_server)
    judge = factuality(llm_server, fake_api_key, redis_url)
    results = judge.score_batch(ROWS) + judge.score_batch(ROWS)
    assert [(r.score, r.metadata["cached"]) for r in results] == [(1.0, True)] * 2 * len(ROWS)
    assert llm_server.request_count == len(ROWS)
    # each batch: the links, then their replies (no lookup by the rendered prompts' keys)
    assert mget_calls(redis_server) - before == 4


def _score_rows(base_url: str, api_key: str, cache_url: str, rows: list[dict[str, Any]]) -> list[Any]:
    """In a spawned process: score ``rows`` with Factuality against the parent's server and Redis."""
    engine = LLMEngine(base_url=base_url, api_key=api_key, cache=cache_url, **FAST)
    judge = scorers.get("Factuality", engine=engine)
    return [
        (row.scores["Factuality"], row.results["Factuality"].metadata["cached"])
        for row in scorers.evaluate(rows, [judge], concurrency=4)
    ]


def test_two_processes_share_hits(redis_url, llm_server, fake_api_key):
    """A retried piece of work in another process (another machine, to Redis) costs no request."""
    llm_server.default = Reply.choice("C", reasons="same facts")
    context = multiprocessing.get_context("spawn")
    with context.Pool(1) as first_worker, context.Pool(1) as second_worker:
        lost = first_worker.apply(_score_rows, (llm_server.base_url, fake_api_key, redis_url, ROWS[:4]))
        assert llm_server.request_count == 4
        retried = second_worker.apply(_score_rows, (llm_server.base_url, fake_api_key, redis_url, ROWS))
    assert lost == [(1.0, False)] * 4
    assert retried == [(1.0, True)] * 4 + [(1.0, False)] * 2
    assert llm_server.request_count == len(ROWS)


# ------------------------------------------------------------------ what is stored
def test_invalid_replies_are_never_stored(redis_server, redis_url, llm_server, fake_api_key):
    llm_server.default = Reply.choice("Z", reasons="not a choice of the judge")
    engine = LLMEngine(base_url=llm_server.base_url, api_key=fake_api_key, cache=redis_url, max_reasks=1, **FAST)
    judge = scorers.get("Factuality", engine=engine)
    with pytest.raises(JudgeError, match="unusable after 2 asks"):
        judge(**ROWS[0])
    assert llm_server.request_count == 2 and stored(redis_server) == {}
    llm_server.default = Reply.choice("C")
    assert judge(**ROWS[0]).score == 1.0 and len(stored(redis_server)) == 1


def test_keys_and_values_hold_no_api_key(redis_server, redis_url, llm_server, fake_api_key, monkeypatch):
    llm_server.default = Reply.choice("C", reasons="same facts")
    monkeypatch.setenv("OPENAI_API_KEY", fake_api_key)
    monkeypatch.setenv("OPENAI_BASE_URL", llm_server.base_url)
    monkeypatch.setenv("SCORERS_CACHE_URL", redis_url)
    judge = scorers.get("Factuality")
    assert [judge(**row).score for row in ROWS[:3]] == [1.0] * 3
    entries = stored(redis_server)
    assert len(entries) == 3 and all(key.startswith(b"scorers:llm:") for key in entries)
    canary = fake_api_key.encode()
    assert not any(canary in key or canary in value for key, value in entries.items())
    assert b"same facts" in b"".join(entries.values())  # the values are the replies


@pytest.mark.parametrize("query, ttl", [("", -1), ("?ttl=3600", 3600), ("?ttl=60&socket_timeout=2", 60)])
def test_ttl_is_set_on_every_entry(redis_server, redis_url, llm_server, fake_api_key, query, ttl):
    """Without ttl= entries never expire (TTL -1); with it, each SET carries it (read back, not waited for)."""
    engine = LLMEngine(base_url=llm_server.base_url, api_key=fake_api_key, cache=redis_url + query)
    for i in range(3):
        engine.complete_sync(ChatRequest(messages=[{"role": "user", "content": f"row {i}"}]))
    client = redis_server.client()
    ttls = [client.ttl(key) for key in client.scan_iter()]
    assert len(ttls) == 3 and all((t == -1) if ttl == -1 else (ttl - 5 < t <= ttl) for t in ttls)


@pytest.mark.parametrize("query", ["?ttl=0", "?ttl=1.5", "?ttl=soon", "?ttl=5&ttl=6"])
def test_a_bad_ttl_is_a_config_error_when_configured(redis_url, query):
    with pytest.raises(ConfigError, match="ttl="):
        configure(cache=redis_url + query)
    with pytest.raises(ConfigError, match="ttl="):
        LLMEngine(cache=redis_url + query)


# ------------------------------------------------------------------ settings
@pytest.mark.parametrize(
    "env, expected",
    [
        ({"SCORERS_CACHE_URL": "redis://cache.internal:6379/1"}, "redis://cache.internal:6379/1"),
        ({"SCORERS_CACHE_URL": "rediss://cache.internal:6380/0?ttl=60"}, "rediss://cache.internal:6380/0?ttl=60"),
        ({"SCORERS_CACHE_URL": "redis://cache.internal:6379/1", "SCORERS_CACHE": "off"}, None),
    ],
)
def test_cache_url_from_environment(monkeypatch, env, expected):
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert resolve(api_key="k").cache == expected


@pytest.mark.parametrize(
    "env, message",
    [
        ({"SCORERS_CACHE_URL": "redis://h:6379/0", "SCORERS_CACHE": "/exact/file.db"}, "not both"),
        ({"SCORERS_CACHE_URL": "http://:pw-secret@h:6379/0"}, r"not a redis:// or rediss:// URL"),
    ],
)
def test_cache_url_conflicts_are_config_errors(monkeypatch, env, message):
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(ConfigError, match=message) as error:
        resolve(api_key="k")
    assert "pw-secret" not in str(error.value)


def test_configure_and_engine_accept_the_url(monkeypatch, redis_url):
    monkeypatch.setenv("SCORERS_CACHE", "/env/file.db")
    configure(cache="redis://h:6379/2")
    assert resolve(api_key="k").cache == "redis://h:6379/2"
    assert LLMEngine(api_key="k", cache=f" {redis_url} ").settings().cache == redis_url
    other_db = redis_url.replace("/0", "/1")
    assert open_cache(redis_url) is open_cache(redis_url) is not open_cache(other_db)


# ------------------------------------------------------------------ failures
def test_redis_down_at_the_start_stops_the_run_with_a_config_error(llm_server, fake_api_key):
    url = f"redis://:pw-LEAKCANARY@127.0.0.1:{free_port()}/0"  # nothing listens there
    judge = factuality(llm_server, fake_api_key, url)
    with pytest.raises(
        ConfigError, match=r"cannot use the Redis reply cache 'redis://:\*\*\*@127\.0\.0\.1:\d+/0'"
    ) as error:
        run(judge)
    assert "pw-LEAKCANARY" not in str(error.value) and llm_server.request_count == 0


def test_redis_killed_mid_run_warns_and_the_run_completes(tmp_path, llm_server, fake_api_key):
    server = start_redis(tmp_path)
    try:

        def answer(request: RecordedRequest) -> Reply:
            if "question 2" in request.last_user_message:  # the third row: Redis goes away mid-run
                server.stop()
            return Reply.choice("C")

        llm_server.default = answer
        with pytest.warns(RuntimeWarning, match="the Redis reply cache 'redis://127.0.0.1:\\d+/0' failed") as caught:
            scores = run(factuality(llm_server, fake_api_key, server.url))
        assert server.process.poll() is not None  # it did go away during the run
    finally:
        server.stop()
    assert scores == [1.0] * len(ROWS) and llm_server.request_count == len(ROWS)
    assert all("going on without it" in str(w.message) for w in caught if w.category is RuntimeWarning)


# ------------------------------------------------------------------ pickling
@pytest.mark.parametrize("dumps", [pickle.dumps, cloudpickle.dumps], ids=["pickle", "cloudpickle"])
@pytest.mark.parametrize("own_cache", [False, True], ids=["url", "RedisCache"])
def test_a_judge_with_a_redis_cache_pickles_as_the_url(redis_url, llm_server, fake_api_key, dumps, own_cache):
    llm_server.default = Reply.choice("C")
    cache = RedisCache(redis_url + "?ttl=3600") if own_cache else redis_url
    judge = factuality(llm_server, fake_api_key, cache)
    first = judge(**ROWS[0])
    payload = dumps(judge)
    assert b"Redis(<" not in payload and b"ConnectionPool" not in payload  # no client travels, only the URL
    copy = pickle.loads(payload)
    again = copy(**ROWS[0])  # reconnects in the receiving process: the same reply, no request
    assert (again.score, again.metadata["cached"], first.metadata["cached"]) == (1.0, True, False)
    assert llm_server.request_count == 1
    if own_cache:
        clone = pickle.loads(dumps(cache))
        assert (clone.url, clone.ttl_s, clone._client) == (cache.url, 3600, None)


def _lookup_in_child(cache: RedisCache) -> Any:
    return cache.get("k")


def test_a_redis_cache_reconnects_in_a_spawned_process(redis_url):
    cache = RedisCache(redis_url)
    cache.put("k", {"v": 1}, model="m")
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        assert pool.apply(_lookup_in_child, (cache,)) == {"v": 1}
