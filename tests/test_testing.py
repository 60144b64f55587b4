"""The loopback server, driven by the real openai client over real HTTP."""

from __future__ import annotations

import asyncio
import base64
import json
import re
import struct
import time

import openai
import pytest

from scorers.testing import LLAMA_CPP_JSON_SCHEMA_REJECTION, LoopbackLLM, RecordedRequest, Reply, fake_embedding

TOOL = {
    "type": "function",
    "function": {
        "name": "select_choice",
        "parameters": {
            "type": "object",
            "properties": {"choice": {"type": "string", "enum": ["A", "B"]}},
            "required": ["choice"],
        },
    },
}


def client(server: LoopbackLLM, **options) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0, **options)


def ask(server: LoopbackLLM, text: str, **options):
    return client(server).chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": text}], **options
    )


@pytest.mark.parametrize(
    "reply, content, tool",
    [
        (Reply.text("plain words"), "plain words", None),
        (Reply.json({"choice": "B"}), '{"choice": "B"}', None),
        (Reply.choice("A"), None, ("select_choice", {"choice": "A"})),
        (Reply.choice("Z", reasons="r"), None, ("select_choice", {"reasons": "r", "choice": "Z"})),
        (Reply.tool_call({"x": 1}, name="other_tool"), None, ("other_tool", {"x": 1})),
    ],
)
def test_reply_kinds(llm_server, reply, content, tool):
    llm_server.default = reply
    message = ask(llm_server, "hello").choices[0].message
    assert message.content == content
    if tool is None:
        assert not message.tool_calls
    else:
        call = message.tool_calls[0].function
        assert (call.name, json.loads(call.arguments)) == tool


def test_malformed_arguments_are_sent_verbatim(llm_server):
    llm_server.default = Reply.tool_call('{"choice": "A"')
    response = ask(llm_server, "hi")
    assert response.choices[0].message.tool_calls[0].function.arguments == '{"choice": "A"'
    assert response.choices[0].finish_reason == "tool_calls"


@pytest.mark.parametrize(
    "match, text, expected",
    [
        ("France", "The capital of France?", "rule"),
        ("France", "The capital of Spain?", "default"),
        (re.compile(r"^\d+$"), "12345", "rule"),
        (re.compile(r"^\d+$"), "12a45", "default"),
        (lambda req: req.model == "gpt-4o-mini", "anything", "rule"),
    ],
)
def test_matching(llm_server, match, text, expected):
    llm_server.default = Reply.text("default")
    llm_server.script(Reply.text("rule"), match=match)
    assert ask(llm_server, text).choices[0].message.content == expected


def test_rule_with_times_then_next_rule(llm_server):
    rule = llm_server.script(Reply.error(503), times=2)
    llm_server.default = Reply.text("fine")
    statuses = []
    for _ in range(3):
        try:
            ask(llm_server, "x")
            statuses.append(200)
        except openai.InternalServerError as exc:
            statuses.append(exc.status_code)
    assert statuses == [503, 503, 200]
    assert rule.used == 2
    assert [r.status for r in llm_server.chat_requests] == [503, 503, 200]


def test_callable_reply_sees_the_request(llm_server):
    llm_server.default = lambda req: Reply.text(req.last_user_message.upper())
    assert ask(llm_server, "shout").choices[0].message.content == "SHOUT"


def test_rate_limit_sends_retry_after(llm_server):
    llm_server.default = Reply.rate_limited(retry_after=7)
    with pytest.raises(openai.RateLimitError) as info:
        ask(llm_server, "x")
    assert info.value.response.headers["retry-after"] == "7"


@pytest.mark.parametrize(
    "reply, error",
    [
        (Reply.hang(60), openai.APITimeoutError),
        (Reply.drop(), openai.APIConnectionError),
        (Reply.error(500), openai.InternalServerError),
        (Reply.error(400, "bad"), openai.BadRequestError),
    ],
)
def test_faults(llm_server, reply, error):
    llm_server.default = reply
    with pytest.raises(error):
        # only the hang may time out: other replies get a timeout they never come near
        client(llm_server, timeout=1.0 if reply.kind == "hang" else 30.0).chat.completions.create(
            model="m", messages=[{"role": "user", "content": "x"}]
        )


def test_records_what_was_sent(llm_server):
    ask(
        llm_server,
        "judge this",
        tools=[TOOL],
        tool_choice={"type": "function", "function": {"name": "select_choice"}},
        temperature=0,
    )
    (request,) = llm_server.chat_requests
    assert isinstance(request, RecordedRequest)
    assert request.body["tools"] == [TOOL]
    assert request.body["tool_choice"]["function"]["name"] == "select_choice"
    assert request.body["temperature"] == 0
    assert request.model == "gpt-4o-mini"
    assert request.last_user_message == "judge this"
    assert request.headers["authorization"] == "Bearer k"


def test_usage_defaults_to_word_counts_and_can_be_scripted(llm_server):
    llm_server.default = Reply.text("one two three")
    assert (ask(llm_server, "a b").usage.prompt_tokens, ask(llm_server, "a b").usage.completion_tokens) == (2, 3)
    llm_server.default = Reply.text("x", usage=(100, 7))
    usage = ask(llm_server, "a b").usage
    assert (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens) == (100, 7, 107)


def test_server_api_key_rejects_others():
    with LoopbackLLM(api_key="right") as server:
        with pytest.raises(openai.AuthenticationError):
            ask(server, "x")
        assert server.chat_requests[0].status == 401


def _decode(embedding):
    if isinstance(embedding, str):  # an explicit encoding_format="base64" is handed back undecoded
        raw = base64.b64decode(embedding)
        return list(struct.unpack(f"<{len(raw) // 4}f", raw))
    return embedding


@pytest.mark.parametrize("encoding", [openai.omit, "float", "base64"])
def test_embeddings_are_deterministic(llm_server, encoding):
    result = client(llm_server).embeddings.create(
        model="text-embedding-3-small", input=["a", "b", "a"], encoding_format=encoding
    )
    vectors = [_decode(d.embedding) for d in result.data]
    assert vectors[0] == pytest.approx(vectors[2]) and vectors[0] != pytest.approx(vectors[1])
    assert vectors[0] == pytest.approx(fake_embedding("a", 16), abs=1e-6)
    assert sum(v * v for v in vectors[1]) == pytest.approx(1.0, abs=1e-5)


def test_models(llm_server):
    assert [m.id for m in client(llm_server).models.list()] == list(llm_server.models)


def test_latency_and_max_in_flight():
    with LoopbackLLM(latency=0.05, default=Reply.text("ok")) as server:

        async def burst() -> None:
            async with openai.AsyncOpenAI(base_url=server.base_url, api_key="k", max_retries=0) as aclient:
                await asyncio.gather(
                    *(
                        aclient.chat.completions.create(model="m", messages=[{"role": "user", "content": str(i)}])
                        for i in range(12)
                    )
                )

        started = time.perf_counter()
        asyncio.run(burst())
        assert time.perf_counter() - started >= 0.05
        assert server.max_in_flight > 1
        assert server.in_flight == 0
        assert server.request_count == 12


def test_reset_and_not_running():
    server = LoopbackLLM()
    with pytest.raises(RuntimeError):
        server.base_url
    with server:
        server.script(Reply.text("x"))
        ask(server, "x")
        server.reset()
        assert server.rules == [] and server.requests == []


def test_the_record_is_bounded_and_the_count_exact():
    """Every body was kept (300 requests of 1 MB: 51 -> 341 MB): now the newest, within a number and a size."""
    with LoopbackLLM(record_limit=3) as server:
        for i in range(10):
            ask(server, f"q{i}")
        assert server.request_count == 10
        assert [r.last_user_message for r in server.requests] == ["q7", "q8", "q9"]
    megabyte = "x" * 2**20
    with LoopbackLLM(record_bytes=3 * 2**20) as server:
        for i in range(12):
            ask(server, f"{i} {megabyte}")
        assert server.request_count == 12 and 1 <= len(server.requests) < 3
        assert sum(r.size for r in server.requests) <= 3 * 2**20 < 12 * 2**20
        assert server.requests[-1].last_user_message.startswith("11 ")
        ask(server, "y" * (4 * 2**20))  # one body over the whole budget: kept alone, the newest
        assert server.request_count == 13 and [r.last_user_message[0] for r in server.requests] == ["y"]
    assert (LoopbackLLM().record_limit, LoopbackLLM().record_bytes) == (1_000, 32 * 2**20)


def test_a_stopped_servers_port_is_never_given_to_a_new_one():
    ports = []
    for _ in range(25):
        with LoopbackLLM() as server:
            ports.append(server.port)
    assert len(set(ports)) == len(ports)


def test_records_the_query_string(llm_server):
    openai.OpenAI(
        base_url=llm_server.base_url, api_key="k", max_retries=0, default_query={"api-version": "2026-01-01"}
    ).chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
    assert llm_server.chat_requests[0].query == {"api-version": "2026-01-01"}


# ------------------------------------------------------------------------- the Responses API and logprobs
def respond(server: LoopbackLLM, text: str, **options):
    return client(server).responses.create(model="gpt-4o-mini", input=[{"role": "user", "content": text}], **options)


def test_responses_are_scripted_and_recorded_like_chat(llm_server):
    llm_server.script(Reply.choice("A"), match="tool")
    llm_server.default = Reply.text("plain words", usage=(5, 2))
    tool = respond(
        llm_server,
        "tool please",
        tools=[{"type": "function", "name": "select_choice", "parameters": TOOL["function"]["parameters"]}],
    )
    (call,) = tool.output
    assert (call.type, call.name, json.loads(call.arguments)) == ("function_call", "select_choice", {"choice": "A"})
    assert call.call_id.startswith("call_") and tool.status == "completed"
    text = respond(llm_server, "text please")
    assert (text.output_text, text.usage.input_tokens, text.usage.output_tokens) == ("plain words", 5, 2)
    ask(llm_server, "chat")
    assert [r.api for r in llm_server.requests] == ["responses", "responses", "chat"]
    assert [r.last_user_message for r in llm_server.responses_requests] == ["tool please", "text please"]
    assert [r.path for r in llm_server.chat_requests] == ["/v1/chat/completions"]


def test_responses_string_input_and_faults(llm_server):
    llm_server.script(Reply.error(503, "busy"), times=1)
    with pytest.raises(openai.InternalServerError):
        client(llm_server).responses.create(model="m", input="just a string")
    reply = client(llm_server).responses.create(model="m", input="just a string")
    assert reply.output_text == "OK" and llm_server.responses_requests[1].messages == [
        {"role": "user", "content": "just a string"}
    ]
    assert [r.status for r in llm_server.requests] == [503, 200]


def test_responses_cut_at_max_output_tokens_are_incomplete(llm_server):
    llm_server.default = Reply.text("cut", finish_reason="length")
    reply = respond(llm_server, "x", max_output_tokens=16)
    assert (reply.status, reply.incomplete_details.reason) == ("incomplete", "max_output_tokens")


def test_logprobs_are_served_only_when_asked_and_cut_to_top_logprobs(llm_server):
    llm_server.default = Reply.text("4", top_logprobs=[{"4": -0.1, "3": -2.5, "5": -3.0}])
    assert ask(llm_server, "2+2?").choices[0].logprobs is None
    (token,) = ask(llm_server, "2+2?", logprobs=True, top_logprobs=2).choices[0].logprobs.content
    assert (token.token, token.logprob, [(t.token, t.logprob) for t in token.top_logprobs]) == (
        "4",
        -0.1,
        [("4", -0.1), ("3", -2.5)],
    )
    assert ask(llm_server, "2+2?", logprobs=True).choices[0].logprobs.content[0].top_logprobs == []
    assert respond(llm_server, "2+2?").output[0].content[0].logprobs is None
    (token,) = (
        respond(llm_server, "2+2?", include=["message.output_text.logprobs"], top_logprobs=3)
        .output[0]
        .content[0]
        .logprobs
    )
    assert [(t.token, t.logprob) for t in token.top_logprobs] == [("4", -0.1), ("3", -2.5), ("5", -3.0)]


def test_unscripted_logprobs_are_one_certain_token(llm_server):
    llm_server.default = Reply.text("two words")
    (token,) = ask(llm_server, "x", logprobs=True, top_logprobs=1).choices[0].logprobs.content
    assert (token.token, token.logprob, len(token.top_logprobs)) == ("two words", 0.0, 1)


def test_a_server_without_logprobs_support():
    with LoopbackLLM(default=Reply.text("4", top_logprobs=[{"4": -0.1}]), logprobs=False) as server:
        assert ask(server, "x", logprobs=True, top_logprobs=1).choices[0].logprobs is None
        assert respond(server, "x", include=["message.output_text.logprobs"]).output[0].content[0].logprobs is None


def test_scripted_logprobs_need_a_token_per_entry():
    with pytest.raises(ValueError, match="top_logprobs"):
        Reply.text("4", top_logprobs=[{}])


def test_a_llama_cpp_validation_error(llm_server):
    llm_server.default = Reply.validation_error()
    with pytest.raises(openai.InternalServerError) as info:
        ask(llm_server, "x", response_format={"type": "json_schema", "json_schema": {"name": "n", "schema": {}}})
    assert info.value.status_code == 500
    assert info.value.body == {
        "message": LLAMA_CPP_JSON_SCHEMA_REJECTION,
        "type": "internal_server_error",
        "param": None,
        "code": None,
    }


# ------------------------------------------------------------------ automatic answers, replies files
#: Field values for any judge: ``context`` is a list of chunks, every other field a text.
JUDGE_FIELDS = {
    "input": "What is the capital of France, and how many people live there?",
    "output": "Paris is the capital of France. It has about 2 million people.",
    "expected": "Paris; about 2.1 million inhabitants.",
    "context": ["Paris is the capital of France.", "Paris has 2.1 million inhabitants.\n1. A list."],
    "conversation": [
        {"role": "user", "content": "What is the capital of France?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "search", "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "Paris"},
        {"role": "assistant", "content": "Paris."},
    ],
    "tools": [{"type": "function", "function": {"name": "search", "description": "Search the web."}}],
    "role": "A geography tutor.",
}


def _judge_cases():
    import scorers.judges  # noqa: F401  (registers the built-in judges)
    from scorers.registry import entries, registry

    for entry in entries():
        if entry.kind == "llm":
            for mode in type(registry.get(entry.name)).response_modes:
                for api in ("chat", "responses"):
                    yield pytest.param(entry.name, {"response_mode": mode, "api": api}, id=f"{entry.name}-{mode}-{api}")


def _kind_cases():
    """One judge of each kind the built-in templates do not cover, in every response mode it supports."""
    from scorers.judges import GEvalJudge, PairwiseJudge, RatingJudge

    for mode in RatingJudge.response_modes:
        for cot in (True, False):
            yield pytest.param(
                RatingJudge,
                {
                    "prompt_template": "Rate {{output}}",
                    "scale": {"min": 1, "max": 10},
                    "response_mode": mode,
                    "use_cot": cot,
                },
                id=f"rating-{mode}-cot{cot}",
            )
    for mode in PairwiseJudge.response_modes:
        yield pytest.param(
            PairwiseJudge,
            {"prompt_template": "A: {{output}}\nB: {{expected}}", "swap": True, "response_mode": mode},
            id=f"pairwise-swap-{mode}",
        )
    for mode in GEvalJudge.response_modes:
        for score_mode in ("logprobs", "top_token"):
            if (mode, score_mode) != ("tools", "logprobs"):
                yield pytest.param(
                    GEvalJudge,
                    {
                        "prompt_template": "Text: {{output}}",
                        "criteria": "Is it clear?",
                        "score_mode": score_mode,
                        "response_mode": mode,
                    },
                    id=f"geval-{score_mode}-{mode}",
                )


@pytest.fixture(scope="module")
def auto_server():
    from scorers.testing import auto_reply

    with LoopbackLLM(default=auto_reply) as server:
        yield server


def _engine(server):
    from scorers.llm import LLMEngine

    return LLMEngine(base_url=server.base_url, api_key="placeholder", cache=False, max_reasks=0)


def _fields(judge) -> dict:
    fields = {name: JUDGE_FIELDS.get(name, f"some {name}") for name in judge.required_fields()}
    # a field a judge's template declares a conversation holds one
    conversations = getattr(getattr(judge, "template", None), "conversations", ())
    return fields | {name: JUDGE_FIELDS["conversation"] for name, _ in conversations}


@pytest.mark.parametrize("name, settings", list(_judge_cases()))
def test_auto_reply_scores_every_builtin_judge_in_every_response_mode(auto_server, name, settings):
    from scorers.registry import registry

    judge = registry.get(name, engine=_engine(auto_server), **settings)
    score = judge(**_fields(judge))  # max_reasks=0: the first answer must be valid
    assert score.score is not None and 0.0 <= score.score <= 1.0
    assert score.metadata["usage"]["requests"] >= 1


@pytest.mark.parametrize("kind, settings", list(_kind_cases()))
def test_auto_reply_scores_every_judge_kind(auto_server, kind, settings):
    judge = kind(kind.__name__, engine=_engine(auto_server), **settings)
    score = judge(**_fields(judge))
    assert score.score is not None and 0.0 <= score.score <= 1.0


def test_auto_reply_is_deterministic_and_varies_with_the_prompt():
    import scorers
    from scorers.testing import auto_reply

    questions = [f"What is {i} + {i}?" for i in range(12)]

    def choices():
        with LoopbackLLM(default=auto_reply) as server:
            judge = scorers.get("Factuality", engine=_engine(server))
            return [judge(input=q, output="4", expected="4").metadata["choice"] for q in questions]

    first = choices()
    assert choices() == first  # another server, another process's port: the same answers
    assert len(set(first)) > 1  # rows get different verdicts


def test_auto_reply_counts_the_items_a_verdict_step_lists():
    from scorers.testing import auto_reply

    prompt = "Claims:\n1. Paris is in France.\n2. It has\n   2 million people.\n3. It is old.\n\nAnswer by calling."
    schema = {
        "type": "object",
        "properties": {
            "verdicts": {
                "type": "array",
                "items": {"type": "object", "properties": {"verdict": {"type": "string", "enum": ["yes", "no"]}}},
            }
        },
    }
    request = RecordedRequest(
        "POST",
        "/v1/chat/completions",
        {},
        {
            "messages": [{"role": "user", "content": prompt}],
            "tools": [{"type": "function", "function": {"name": "record_verdicts", "parameters": schema}}],
        },
        0.0,
    )
    reply = auto_reply(request)
    assert reply.tool_name == "record_verdicts"
    assert [v["verdict"] in ("yes", "no") for v in json.loads(reply.arguments)["verdicts"]] == [True] * 3


def test_replies_file_rules_and_their_errors(tmp_path):
    from scorers.errors import ConfigError
    from scorers.testing import load_rules

    path = tmp_path / "replies.jsonl"
    path.write_text(
        '{"match": "Venus", "reply": {"choice": "D", "reasons": "Mercury is"}, "times": 1}\n\n'
        '{"reply": {"tool": "grade_rubric", "arguments": {"tone": 4}}}\n'
        '{"reply": {"json": {"score": 3}}}\n{"reply": {"text": "C"}}\n'
        '{"reply": {"error": 429, "message": "slow down"}}\n'
    )
    rules = load_rules(path)
    assert [(r.match, r.times) for r in rules] == [("Venus", 1), (None, None), (None, None), (None, None), (None, None)]
    assert rules[0].reply == Reply.choice("D", reasons="Mercury is")
    assert (rules[1].reply.tool_name, json.loads(rules[1].reply.arguments)) == ("grade_rubric", {"tone": 4})
    assert (rules[2].reply.content, rules[3].reply.content) == ('{"score": 3}', "C")
    assert (rules[4].reply.status, rules[4].reply.error_message) == (429, "slow down")
    for line, message in [
        ('{"match": "x"}', "expected"),
        ('{"reply": {"choice": "A", "text": "B"}}', "one of"),
        ('{"reply": {"choice": 1}}', "choice: a text"),
        ('{"reply": {"error": 200}}', "400 to 599"),
        ('{"reply": {"tool": "t", "arguments": [1]}}', "arguments: a JSON object"),
        ('{"reply": {"text": "x"}, "times": 0}', "times"),
        ("{not json", "Expecting"),
    ]:
        path.write_text('{"reply": {"text": "ok"}}\n' + line + "\n")
        with pytest.raises(ConfigError, match=rf"replies.jsonl:2: .*{re.escape(message)}"):
            load_rules(path)


def test_a_server_on_a_given_port():
    with LoopbackLLM() as first:
        port = first.port
    with LoopbackLLM(port=port) as server:  # the port a stopped server had: free again at once
        assert server.base_url == f"http://127.0.0.1:{port}/v1"
        assert ask(server, "hi").choices[0].message.content == "OK"
        with pytest.raises(RuntimeError, match="failed to start"):
            LoopbackLLM(port=port).start()
