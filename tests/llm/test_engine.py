"""The LLM engine against the loopback server, through the real openai client over HTTP."""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import pickle
import re

import cloudpickle
import openai
import pytest

from scorers._aio import run_sync
from scorers.errors import ConfigError, JudgeError
from scorers.llm import (
    ChatRequest,
    ChatResult,
    EndpointConfigError,
    InvalidReply,
    LLMCache,
    LLMEngine,
    RequestRejected,
    ToolCall,
    Usage,
    aclose,
    configure,
)
from scorers.llm.config import ENGINE_OPTIONS, LLMSettings, resolve
from scorers.llm.transport import _backoff, _retry_after
from scorers.testing import LoopbackLLM, Reply

TOOL = {
    "type": "function",
    "function": {
        "name": "select_choice",
        "description": "Pick one.",
        "parameters": {
            "type": "object",
            "properties": {"choice": {"type": "string", "enum": ["A", "B"]}},
            "required": ["choice"],
        },
    },
}
FORCED = {"type": "function", "function": {"name": "select_choice"}}
#: Short backoffs; a timeout no reply of the loopback server comes near, so that only scripted hangs time out.
FAST = dict(timeout=30.0, backoff_base=0.001, backoff_max=0.01, retry_after_max=0.5)
#: For tests of hangs: the hang lasts until the server stops; a reply still has 1 s, some 300 times its usual time.
HANGS = dict(FAST, timeout=1.0)


def req(text: str = "Judge this", **fields) -> ChatRequest:
    return ChatRequest(messages=[{"role": "user", "content": text}], **fields)


def choice_of(result: ChatResult) -> str:
    """A validate callable: the select_choice choice, which must be A or B."""
    if not result.tool_calls:
        raise InvalidReply("no tool call")
    if result.tool_calls[0].name != "select_choice":
        raise InvalidReply(f"wrong tool {result.tool_calls[0].name!r}")
    choice = result.tool_calls[0].parse_arguments().get("choice")
    if choice not in ("A", "B"):
        raise InvalidReply(f"choice {choice!r} is not one of A, B")
    return choice


@pytest.fixture
def engine(llm_server: LoopbackLLM, fake_api_key: str, tmp_path) -> LLMEngine:
    return LLMEngine(base_url=llm_server.base_url, api_key=fake_api_key, cache=tmp_path / "cache.sqlite", **FAST)


# ------------------------------------------------------------------------- request and reply
def test_request_is_sent_as_given_and_reply_is_parsed(engine, llm_server):
    llm_server.default = Reply.choice("B", usage=(11, 3))
    request = req(
        tools=[TOOL],
        tool_choice=FORCED,
        temperature=0,
        max_tokens=50,
        seed=7,
        response_format=None,
        extra={"top_p": 1},
        model="judge-model",
    )
    result = engine.complete_sync(request, validate=choice_of)
    (sent,) = llm_server.chat_requests
    assert sent.body == {
        "model": "judge-model",
        "messages": [{"role": "user", "content": "Judge this"}],
        "tools": [TOOL],
        "tool_choice": FORCED,
        "temperature": 0,
        "max_tokens": 50,
        "seed": 7,
        "top_p": 1,
    }
    assert result.tool_calls == (ToolCall("select_choice", '{"choice": "B"}', result.tool_calls[0].id),)
    assert (result.parsed, result.finish_reason, result.model, result.response_model) == (
        "B",
        "tool_calls",
        "judge-model",
        "judge-model",
    )
    assert (result.prompt_tokens, result.completion_tokens, result.attempts, result.reasks, result.cached) == (
        11,
        3,
        1,
        0,
        False,
    )
    assert result.latency_s > 0


def test_text_and_json_content(engine, llm_server):
    llm_server.script(Reply.json({"choice": "A"}), match="json")
    llm_server.script(Reply.text("Answer: B"), match="text")
    assert json.loads(engine.complete_sync(req("json please")).content) == {"choice": "A"}
    text = engine.complete_sync(req("text please"))
    assert (text.content, text.tool_calls, text.finish_reason) == ("Answer: B", (), "stop")


def test_model_precedence(llm_server, fake_api_key, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", fake_api_key)
    monkeypatch.setenv("OPENAI_BASE_URL", llm_server.base_url)
    plain = LLMEngine(cache=False)
    assert plain.model == "gpt-4o-mini"
    monkeypatch.setenv("SCORERS_MODEL", "env-model")
    assert plain.model == "env-model"
    configure(model="configured-model")
    plain.complete_sync(req())
    LLMEngine(model="own-model", cache=False).complete_sync(req())
    plain.complete_sync(req(model="request-model"))
    assert [r.model for r in llm_server.chat_requests] == ["configured-model", "own-model", "request-model"]


# ------------------------------------------------------------------------- faults and retries
@pytest.mark.slow
@pytest.mark.parametrize(
    "fault",
    [
        Reply.rate_limited(retry_after=0),
        Reply.rate_limited(retry_after=None),
        Reply.error(500),
        Reply.error(503),
        Reply.hang(60),
        Reply.drop(),
        Reply.raw("<html>bad gateway</html>"),
    ],
    ids=["429", "429-no-retry-after", "500", "503", "hang", "drop", "not-json"],
)
def test_transient_fault_then_success(llm_server, fake_api_key, tmp_path, fault):
    llm_server.script(fault, times=2)
    llm_server.default = Reply.choice("A")
    engine = LLMEngine(
        base_url=llm_server.base_url,
        api_key=fake_api_key,
        cache=tmp_path / "cache.sqlite",
        **(HANGS if fault.kind == "hang" else FAST),
    )
    result = engine.complete_sync(req(), validate=choice_of)
    assert (result.parsed, result.attempts) == ("A", 3)
    assert len(llm_server.chat_requests) == 3


@pytest.mark.slow
@pytest.mark.parametrize(
    "fault, cause",
    [
        (Reply.error(500, "overloaded"), "HTTP 500: overloaded"),
        (Reply.rate_limited(retry_after=0), "HTTP 429"),
        (Reply.hang(60), "timeout"),
        (Reply.drop(), "connection failed"),
    ],
    ids=["500", "429", "hang", "drop"],
)
def test_persistent_fault_raises_judge_error_after_bounded_attempts(llm_server, fake_api_key, tmp_path, fault, cause):
    llm_server.default = fault
    engine = LLMEngine(
        base_url=llm_server.base_url, api_key=fake_api_key, max_retries=2, **(HANGS if fault.kind == "hang" else FAST)
    )
    with pytest.raises(JudgeError) as info:
        engine.complete_sync(req(), scorer="Factuality")
    assert cause in str(info.value) and str(info.value).startswith("Factuality: ")
    assert "after 3 attempts" in str(info.value)
    assert info.value.attempts == 3 and info.value.scorer == "Factuality"
    assert len(llm_server.chat_requests) == 3


def test_retry_after_is_honoured(engine, llm_server):
    llm_server.script(Reply.rate_limited(retry_after=0.2), times=1)
    engine.complete_sync(req())
    first, second = llm_server.chat_requests
    assert second.received_at - first.received_at >= 0.2  # backoff alone would be ~0.001 s


@pytest.mark.parametrize(
    "status, words",
    [
        (400, "rejected the request (HTTP 400): nope"),
        (422, "rejected the request (HTTP 422): nope"),
        (404, "rejected the request (HTTP 404): nope"),
        (401, "authentication failed (HTTP 401)"),
        (403, "authentication failed (HTTP 403)"),
    ],
)
def test_non_retryable_errors_fail_at_once(engine, llm_server, status, words):
    llm_server.default = Reply.error(status, "nope")
    with pytest.raises(JudgeError) as info:
        engine.complete_sync(req())
    assert words in str(info.value)
    assert info.value.attempts == 1 and len(llm_server.chat_requests) == 1
    # a refused key, model or endpoint is the run's configuration (a run stops on it); a 400 is the row's
    rejected = status in (400, 422)
    assert isinstance(info.value, EndpointConfigError) == isinstance(info.value, ConfigError) == (not rejected)
    assert isinstance(info.value, RequestRejected) == rejected
    if rejected:
        assert (info.value.status, info.value.detail) == (status, "nope")


def test_wrong_key_is_an_authentication_error(llm_server, fake_api_key):
    with LoopbackLLM(api_key="the-right-key") as server:
        with pytest.raises(JudgeError, match="authentication failed"):
            LLMEngine(base_url=server.base_url, api_key=fake_api_key, cache=False).complete_sync(req())


@pytest.mark.parametrize(
    "headers, seconds",
    [
        ({"retry-after": "2"}, 2.0),
        ({"retry-after": "0.25"}, 0.25),
        ({"retry-after-ms": "150", "retry-after": "9"}, 0.15),
        ({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}, 0.0),  # a date in the past
        ({"retry-after": "soon"}, None),
        ({}, None),
    ],
)
def test_retry_after_parsing(headers, seconds):
    assert _retry_after(headers) == (pytest.approx(seconds) if seconds is not None else None)


@pytest.mark.parametrize(
    "attempt, retry_after, low, high",
    [
        (1, None, 0.25, 0.5),
        (3, None, 1.0, 2.0),
        (30, None, 10.0, 20.0),  # capped by backoff_max
        (1, 3.0, 3.0, 3.05),  # Retry-After wins
        (1, 1000.0, 60.0, 60.05),  # capped by retry_after_max
    ],
)
def test_backoff_bounds(attempt, retry_after, low, high):
    settings = resolve(api_key="k")
    for _ in range(50):
        assert low <= _backoff(attempt, retry_after, settings) <= high


# ------------------------------------------------------------------------- re-asks
@pytest.mark.parametrize(
    "bad",
    [
        Reply.text("I think A"),
        Reply.tool_call({"choice": "A"}, name="other_tool"),
        Reply.tool_call('{"choice": "A"'),
        Reply.choice("Z"),
        Reply.raw({"object": "chat.completion", "choices": []}),
    ],
    ids=["no-tool-call", "wrong-tool", "malformed-arguments", "out-of-enum", "no-choices"],
)
def test_unusable_reply_is_reasked(engine, llm_server, bad):
    llm_server.script(bad, times=1)
    llm_server.default = Reply.choice("B", usage=(10, 2))
    result = engine.complete_sync(req(), validate=choice_of)
    assert (result.parsed, result.reasks, result.attempts) == ("B", 1, 2)
    assert len(llm_server.chat_requests) == 2


def test_reasks_are_bounded_and_carry_the_raw_reply(llm_server, fake_api_key):
    llm_server.default = Reply.choice("Z", reasons="because")
    engine = LLMEngine(base_url=llm_server.base_url, api_key=fake_api_key, max_reasks=1, cache=False, **FAST)
    with pytest.raises(JudgeError) as info:
        engine.complete_sync(req(), validate=choice_of, scorer="Humor")
    error = info.value
    assert "Humor: the judge's reply was unusable after 2 asks: choice 'Z' is not one of A, B" == str(error)
    assert error.raw["tool_calls"][0]["arguments"] == '{"reasons": "because", "choice": "Z"}'
    assert error.attempts == 2 and len(llm_server.chat_requests) == 2


def test_usage_sums_over_reasks(engine, llm_server):
    llm_server.script(Reply.choice("Z", usage=(100, 10)), times=1)
    llm_server.default = Reply.choice("A", usage=(100, 5))
    result = engine.complete_sync(req(), validate=choice_of)
    assert (result.prompt_tokens, result.completion_tokens) == (200, 15)
    usage = Usage()
    usage.add(result)
    usage.add(engine.complete_sync(req(), validate=choice_of))  # now cached
    assert usage.to_dict(prices={"gpt-4o-mini": (1.0, 2.0)})["cost_usd"] == pytest.approx((200 + 15 * 2) / 1e6)
    assert usage.to_dict()["cached"] == 1


# ------------------------------------------------------------------------- cache
def test_cached_rerun_makes_zero_requests(llm_server, fake_api_key, tmp_path):
    llm_server.default = lambda r: Reply.choice("A" if "even" in r.last_user_message else "B")
    requests = [req(f"{'even' if i % 2 == 0 else 'odd'} row {i}", tools=[TOOL], tool_choice=FORCED) for i in range(6)]

    async def run(engine):
        return await asyncio.gather(*(engine.complete(r, validate=choice_of) for r in requests))

    def make(key):
        return LLMEngine(base_url=llm_server.base_url, api_key=key, cache=tmp_path / "c.sqlite")

    first = asyncio.run(run(make(fake_api_key)))
    assert len(llm_server.chat_requests) == 6
    second = asyncio.run(run(make("sk-a-different-key")))  # the key is not part of the cache key
    assert len(llm_server.chat_requests) == 6
    assert [r.parsed for r in second] == [r.parsed for r in first] == ["A", "B"] * 3
    assert all(r.cached and r.attempts == 0 for r in second) and not any(r.cached for r in first)
    assert [r.prompt_tokens for r in second] == [r.prompt_tokens for r in first]


@pytest.mark.parametrize(
    "change",
    [
        dict(temperature=0.5),
        dict(model="other"),
        dict(seed=1),
        dict(max_tokens=9),
        dict(cache_tag="sample-2"),
        dict(tools=[TOOL]),
        dict(response_format={"type": "json_object"}),
        dict(extra={"top_p": 0.5}),
        dict(reasoning_effort="low"),
        dict(logprobs=True),
        dict(logprobs=True, top_logprobs=2),
        dict(api="responses"),
    ],
)
def test_changed_request_misses_the_cache(engine, llm_server, change):
    engine.complete_sync(req())
    engine.complete_sync(req(**change))
    engine.complete_sync(req())
    assert llm_server.request_count == 2


def test_cache_stores_only_valid_replies(engine, llm_server, tmp_path):
    llm_server.script(Reply.choice("Z"), times=1)
    llm_server.default = Reply.choice("A")
    engine.complete_sync(req(), validate=choice_of)
    stored = LLMCache(tmp_path / "cache.sqlite")
    assert len(stored) == 1
    assert engine.complete_sync(req(), validate=choice_of).cached
    llm_server.default = Reply.error(500)
    with pytest.raises(JudgeError):
        engine.complete_sync(req("a failing prompt"))
    assert len(stored) == 1


def test_cached_reply_that_fails_validation_is_asked_again(engine, llm_server):
    llm_server.default = Reply.choice("Z")
    engine.complete_sync(req())  # no validation: cached as is
    llm_server.default = Reply.choice("A")
    result = engine.complete_sync(req(), validate=choice_of)
    assert (result.parsed, result.cached, len(llm_server.chat_requests)) == ("A", False, 2)


def test_lookup_answers_many_requests_from_the_cache_in_order(engine, llm_server):
    llm_server.default = lambda r: Reply.choice("A" if "even" in r.last_user_message else "B")
    requests = [req(f"{'even' if i % 2 == 0 else 'odd'} row {i}", tools=[TOOL], tool_choice=FORCED) for i in range(8)]
    assert engine.lookup(requests, validate=choice_of) == [None] * 8
    for request in requests[1::3]:
        engine.complete_sync(request, validate=choice_of)
    found = engine.lookup(requests, validate=choice_of)
    assert [r is not None for r in found] == [i % 3 == 1 for i in range(8)]
    assert [r.parsed for r in found if r is not None] == ["B", "A", "B"]
    assert all(r.cached and r.attempts == 0 for r in found if r is not None)
    assert len(llm_server.chat_requests) == 3


def test_lookup_misses_invalid_entries_and_without_a_cache(engine, llm_server, fake_api_key):
    llm_server.default = Reply.choice("Z")
    engine.complete_sync(req())  # stored without validation
    assert engine.lookup([req()], validate=choice_of) == [None]
    assert engine.lookup([req()])[0].tool_calls[0].arguments == '{"choice": "Z"}'
    uncached = LLMEngine(base_url=llm_server.base_url, api_key=fake_api_key, cache=False)
    assert uncached.lookup([req()]) == [None]
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        LLMEngine(base_url=llm_server.base_url).lookup([req()])


def test_read_cache_false_asks_and_stores(engine, llm_server):
    llm_server.default = Reply.choice("A")
    engine.complete_sync(req(), validate=choice_of)
    llm_server.default = Reply.choice("B")
    fresh = run_sync(engine.complete(req(), validate=choice_of, read_cache=False))
    assert (fresh.parsed, fresh.cached, len(llm_server.chat_requests)) == ("B", False, 2)
    assert engine.complete_sync(req(), validate=choice_of).parsed == "B"


def test_memoised_settings_follow_configure_and_the_environment(llm_server, fake_api_key, monkeypatch, tmp_path):
    monkeypatch.setenv("OPENAI_API_KEY", fake_api_key)
    engine = LLMEngine(base_url=llm_server.base_url)
    assert engine.settings() is engine.settings()  # memoised
    assert engine.settings().model == "gpt-4o-mini"
    configure(model="configured-model", max_concurrency=3)
    assert (engine.settings().model, engine.settings().max_concurrency) == ("configured-model", 3)
    monkeypatch.setenv("SCORERS_CACHE", str(tmp_path / "env.sqlite"))
    assert engine.settings().cache == tmp_path / "env.sqlite"
    monkeypatch.delenv("OPENAI_API_KEY")
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        engine.settings()
    configure(reset=True)
    monkeypatch.setenv("OPENAI_API_KEY", fake_api_key)
    monkeypatch.chdir(tmp_path)
    relative = LLMEngine(base_url=llm_server.base_url, cache="rel.sqlite")
    assert relative._resolved()[1].path == tmp_path / "rel.sqlite"
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    assert relative._resolved()[1].path == tmp_path / "elsewhere" / "rel.sqlite"


@pytest.mark.parametrize("dumps", [pickle.dumps, cloudpickle.dumps], ids=["pickle", "cloudpickle"])
@pytest.mark.parametrize("own_cache", [False, True], ids=["path", "LLMCache"])
def test_pickled_engine_leaves_its_memo_behind(llm_server, fake_api_key, tmp_path, dumps, own_cache):
    path = tmp_path / "c.sqlite"
    engine = LLMEngine(base_url=llm_server.base_url, api_key=fake_api_key, cache=LLMCache(path) if own_cache else path)
    first = engine.complete_sync(req())  # opens the cache and this loop's client
    clone = pickle.loads(dumps(engine))
    assert clone._memo == {} and clone.settings().cache == (clone._options["cache"] if own_cache else path)
    again = clone.complete_sync(req())
    assert (again.cached, again.content) == (True, first.content) and len(llm_server.chat_requests) == 1


@pytest.mark.parametrize("setting", ["argument", "env"])
def test_cache_can_be_disabled(llm_server, fake_api_key, monkeypatch, setting):
    options = {"cache": False} if setting == "argument" else {}
    if setting == "env":
        monkeypatch.setenv("SCORERS_CACHE", "off")
    engine = LLMEngine(base_url=llm_server.base_url, api_key=fake_api_key, **options)
    engine.complete_sync(req())
    engine.complete_sync(req())
    assert len(llm_server.chat_requests) == 2


# ------------------------------------------------------------------------- concurrency
@pytest.mark.slow
def test_concurrency_cap_is_honoured():
    with LoopbackLLM(latency=0.2) as server:  # long enough that the first four are in flight together
        engine = LLMEngine(base_url=server.base_url, api_key="k", max_concurrency=4, cache=False)

        async def run():
            await asyncio.gather(*(engine.complete(req(f"row {i}")) for i in range(24)))

        asyncio.run(run())
        assert server.max_in_flight == 4
        assert len(server.chat_requests) == 24


@pytest.mark.slow
def test_cap_is_shared_by_engines_on_one_endpoint():
    with LoopbackLLM(latency=0.2) as server:
        engines = [
            LLMEngine(base_url=server.base_url, api_key=f"key-{i}", max_concurrency=3, cache=False) for i in range(3)
        ]

        async def run():
            await asyncio.gather(*(engines[i % 3].complete(req(f"row {i}")) for i in range(24)))

        asyncio.run(run())
        assert server.max_in_flight == 3


def test_cancelled_waiters_do_not_leak_slots():
    with LoopbackLLM(latency=0.05) as server:
        engine = LLMEngine(base_url=server.base_url, api_key="k", max_concurrency=2, cache=False)

        async def run():
            tasks = [asyncio.ensure_future(engine.complete(req(f"row {i}"))) for i in range(8)]
            await asyncio.sleep(0.01)
            for task in tasks[4:]:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await asyncio.gather(*(engine.complete(req(f"again {i}")) for i in range(4)))

        asyncio.run(run())
        assert server.max_in_flight == 2 and server.in_flight == 0


# ------------------------------------------------------------------------- configuration
def test_missing_key_raises_config_error_before_any_request(llm_server):
    engine = LLMEngine(base_url=llm_server.base_url)
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        engine.complete_sync(req())
    assert llm_server.request_count == 0


def test_environment_configuration(llm_env, fake_api_key):
    result = LLMEngine().complete_sync(req())
    assert result.content == "OK"
    assert llm_env.chat_requests[0].headers["authorization"] == f"Bearer {fake_api_key}"


def test_configure_sets_process_defaults(llm_server, fake_api_key):
    configure(base_url=llm_server.base_url, api_key=fake_api_key, max_concurrency=5, cache=False)
    settings = LLMEngine().settings()
    assert (settings.base_url, settings.max_concurrency, settings.cache) == (llm_server.base_url, 5, None)
    assert LLMEngine().complete_sync(req()).content == "OK"
    assert fake_api_key not in repr(settings)


def test_the_options_are_the_settings_fields():
    parameters = inspect.signature(LLMEngine).parameters
    assert list(parameters) == [name for name in LLMSettings.model_fields if name != "prices"] == list(ENGINE_OPTIONS)
    assert all(p.kind is p.KEYWORD_ONLY and p.default is None for p in parameters.values())
    assert str(parameters["max_retries"]) == "max_retries: 'int | None' = None"
    assert "- ``max_retries``: an integer in [0, 50]" in inspect.getdoc(LLMEngine.__init__)
    for unknown in ("modle", "prices"):  # prices is configure()'s alone
        message = f"LLMEngine.__init__() got an unexpected keyword argument '{unknown}'"
        with pytest.raises(TypeError, match=re.escape(message)):
            LLMEngine(**{unknown: None})


@pytest.mark.parametrize(
    "options",
    [
        dict(max_concurrency=0),
        dict(timeout=-1),
        dict(max_retries=-1),
        dict(max_reasks=1.5),
        dict(transport="curl"),
        dict(cache=3),
        dict(model=""),
        dict(client=object()),
        dict(client=openai.AsyncOpenAI(api_key="k"), api_key="k"),
    ],
)
def test_bad_options_raise_config_error(options):
    with pytest.raises(ConfigError):
        LLMEngine(**options)
    with pytest.raises(ConfigError):
        configure(**options)


def test_user_clients_are_used(llm_server, fake_api_key):
    llm_server.script(Reply.error(500), times=1)
    async_client = openai.AsyncOpenAI(base_url=llm_server.base_url, api_key=fake_api_key, max_retries=5)
    result = LLMEngine(client=async_client, cache=False, **FAST).complete_sync(req())
    assert result.attempts == 2 and len(llm_server.chat_requests) == 2  # the SDK's own retries are off
    sync_client = openai.OpenAI(base_url=llm_server.base_url, api_key="sync-key")
    assert LLMEngine(client=sync_client, cache=False).complete_sync(req()).content == "OK"
    assert llm_server.chat_requests[-1].headers["authorization"] == "Bearer sync-key"


SYNC_OPTIONS = dict(
    api_key="sync-key",
    organization="org-1",
    project="proj-1",
    default_headers={"X-Team": "evals", "User-Agent": "my-app/1.0"},
    default_query={"api-version": "2026-01-01"},
)


def test_a_sync_client_is_copied_through_the_public_api(llm_server, recwarn):
    """The engine's async copy of a sync client sends exactly what an AsyncOpenAI built by hand with the
    same options sends, and the user's headers, query, key, organization and project as the client itself."""
    sync_client = openai.OpenAI(base_url=llm_server.base_url, **SYNC_OPTIONS)
    by_hand = openai.AsyncOpenAI(
        base_url=llm_server.base_url, **SYNC_OPTIONS, max_retries=0, http_client=openai.DefaultAsyncHttpxClient()
    )
    LLMEngine(client=sync_client, cache=False, transport="httpx").complete_sync(req())
    LLMEngine(client=by_hand, cache=False).complete_sync(req())
    sync_client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "Judge this"}])
    twin, hand, direct = llm_server.chat_requests
    assert twin.headers == hand.headers and twin.query == hand.query == direct.query == SYNC_OPTIONS["default_query"]
    given = {
        "authorization": "Bearer sync-key",
        "openai-organization": "org-1",
        "openai-project": "proj-1",
        "x-team": "evals",
        "user-agent": "my-app/1.0",
    }
    assert {k: twin.headers.get(k) for k in given} == {k: direct.headers.get(k) for k in given} == given
    assert not [w for w in recwarn if "custom headers" in str(w.message)]


def test_a_sync_client_without_custom_options_gets_none(llm_server):
    sync_client = openai.OpenAI(base_url=llm_server.base_url, api_key="plain-key")
    by_hand = openai.AsyncOpenAI(
        base_url=llm_server.base_url, api_key="plain-key", max_retries=0, http_client=openai.DefaultAsyncHttpxClient()
    )
    LLMEngine(client=sync_client, cache=False, transport="httpx").complete_sync(req())
    LLMEngine(client=by_hand, cache=False).complete_sync(req())
    twin, hand = llm_server.chat_requests
    assert twin.headers == hand.headers and twin.query == hand.query == {}


def test_without_the_public_api_the_copy_warns_and_sends_no_custom_headers(llm_server, monkeypatch):
    def copy(self, **options):  # an openai release without set_default_headers=
        raise TypeError("copy() got an unexpected keyword argument 'set_default_headers'")

    monkeypatch.setattr(openai.OpenAI, "copy", copy)
    sync_client = openai.OpenAI(base_url=llm_server.base_url, **SYNC_OPTIONS)
    with pytest.warns(RuntimeWarning, match="custom headers and query parameters .* sends none"):
        assert LLMEngine(client=sync_client, cache=False).complete_sync(req()).content == "OK"
    (sent,) = llm_server.chat_requests
    assert (sent.headers["authorization"], sent.headers["openai-organization"], sent.headers["openai-project"]) == (
        "Bearer sync-key",
        "org-1",
        "proj-1",
    )
    assert "x-team" not in sent.headers and sent.query == {}


def test_a_new_sync_client_at_a_reused_address_gets_its_own_copy(llm_server):
    for i in range(3):  # each client is garbage once used: CPython may give the next one the same id
        client = openai.OpenAI(base_url=llm_server.base_url, api_key=f"key-{i}")
        LLMEngine(client=client, cache=False).complete_sync(req())
        del client
    assert [r.headers["authorization"] for r in llm_server.chat_requests] == [f"Bearer key-{i}" for i in range(3)]


@pytest.mark.parametrize("transport", ["aiohttp", "httpx"])
def test_transports(llm_server, transport):
    engine = LLMEngine(base_url=llm_server.base_url, api_key="k", transport=transport, cache=False, **FAST)
    llm_server.script(Reply.drop(), times=1)
    assert engine.complete_sync(req()).attempts == 2


def test_engine_pickles_without_its_key_in_repr(fake_api_key):
    engine = LLMEngine(api_key=fake_api_key, model="m")
    assert pickle.loads(pickle.dumps(engine)).settings().api_key == fake_api_key
    assert fake_api_key not in repr(engine)


# ------------------------------------------------------------------------- event loops
def test_sync_call_inside_a_running_event_loop(engine, llm_server):
    async def notebook_cell():
        return engine.complete_sync(req())

    assert asyncio.run(notebook_cell()).content == "OK"


def test_one_engine_across_several_event_loops(engine, llm_server):
    async def call_and_close():
        result = await engine.complete(req(f"loop {id(asyncio.get_running_loop())}"))
        await aclose()
        return result

    assert [asyncio.run(call_and_close()).content for _ in range(3)] == ["OK"] * 3


# ------------------------------------------------------------------------- the key never leaks
@pytest.mark.slow
def test_api_key_appears_nowhere(llm_server, fake_api_key, tmp_path, caplog):
    caplog.set_level(logging.DEBUG)
    cache_file = tmp_path / "leak.sqlite"
    engine = LLMEngine(
        base_url=llm_server.base_url, api_key=fake_api_key, cache=cache_file, max_retries=1, max_reasks=1, **HANGS
    )

    # A server that echoes the key in its error messages must not get it into ours.
    def echo(r):
        return Reply.error(500, f"bad key {r.headers['authorization']}")

    faults = [
        echo,
        Reply.error(401, f"Incorrect API key provided: {fake_api_key}"),
        Reply.drop(),
        Reply.hang(60),
        Reply.choice("Z"),
    ]
    seen: list[str] = []
    for i, fault in enumerate(faults):
        llm_server.script(fault, match=f"fault {i}")
        with pytest.raises(JudgeError) as info:
            engine.complete_sync(req(f"fault {i}"), validate=choice_of)
        seen += [str(info.value), repr(info.value), json.dumps(info.value.raw), json.dumps(info.value.to_dict())]
    llm_server.default = Reply.choice("A")
    result = engine.complete_sync(req("fine"), validate=choice_of)
    seen += [repr(result), json.dumps(result.to_dict()), repr(engine), repr(engine.settings())]
    seen += [record.getMessage() for record in caplog.records]
    assert any("HTTP 500: bad key Bearer [API key]" in text for text in seen)
    assert all(fake_api_key not in text for text in seen)
    assert fake_api_key.encode() not in b"".join(p.read_bytes() for p in tmp_path.glob("leak.sqlite*"))
