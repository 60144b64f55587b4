"""Every built-in judge, and every judge kind in every response mode, through every registered wire protocol
(:data:`scorers.llm.protocols.PROTOCOLS`: chat, responses, anthropic, gemini, bedrock, any protocol added) against
the loopback server over real HTTP, each protocol through its own client:

- a judge its protocol can serve makes the requests per row that ``show`` states, and its score and verdicts are
  those the same replies give on ``chat`` (whose formulas the judges' own tests check), the replies being the same;
  a classifier's score is its ``choice_scores`` value of the choice the server sent, a rubric's the weighted mean of
  the grades sent;
- a judge its protocol cannot serve (GPTScore's prompt logprobs, G-Eval's weighting without logprobs, a forced tool
  with thinking on Anthropic, a response mode the provider lacks) is refused when it is built, a ``ConfigError``,
  before any request;
- a judge that samples (a classifier's ``samples``, G-Eval's ``score_mode: sampling``) needs nothing more: it makes
  its k requests on every protocol, whether the protocol's body carries a seed or not.

Each protocol's endpoint and credentials come from its provider's variables (``Endpoint``), the loopback server's
root standing in for the provider's host."""

from __future__ import annotations

import dataclasses
import json
import re
import threading
from collections import Counter
from typing import Any, Callable
from urllib.parse import urlsplit

import pytest
from test_every_scorer import JUDGES, REQUESTS_ON_THE_CONTRACT_ROW, _row

import scorers
from scorers.cli.catalog import describe
from scorers.errors import ConfigError
from scorers.judges import GEvalJudge, LLMClassifier, PairwiseJudge, RatingJudge, RubricJudge
from scorers.llm import LLMEngine
from scorers.llm.protocols import PROTOCOLS, Capabilities, WireProtocol
from scorers.testing import LoopbackLLM, RecordedRequest, Reply, auto_reply

APIS = PROTOCOLS.names()
#: Result metadata that says how a verdict travelled, not what it was (the protocol, its token counts, timing).
TRANSPORT_METADATA = {"sent", "signature", "usage", "latency_s", "cached"}
#: Nothing at all: every capability a judge may need, off (a judge's needs are set on it).
NOTHING = Capabilities(
    forced_tool=False, forced_tool_with_thinking=False, json_schema=False, json_object=False, logprobs=False
)
MODE_NEEDS = {"tools": "forced_tool", "json": "json_schema", "json_object": "json_object", "text": None}


# ---------------------------------------------------------------- the server's side
def aws_test_credentials(secret: str | None = None) -> dict[str, str]:
    """The AWS credentials (and region) the loopback server checks Bedrock's SigV4 signatures with: its test
    pair, or its access key id with ``secret`` (for a server given that pair)."""
    from scorers.testing.protocols import LOOPBACK_AWS_ACCESS_KEY_ID, LOOPBACK_AWS_SECRET_ACCESS_KEY

    return {
        "AWS_ACCESS_KEY_ID": LOOPBACK_AWS_ACCESS_KEY_ID,
        "AWS_SECRET_ACCESS_KEY": secret or LOOPBACK_AWS_SECRET_ACCESS_KEY,
        "AWS_REGION": "us-east-1",
        "AWS_DEFAULT_REGION": "us-east-1",
    }


def environment(protocol: WireProtocol, server: LoopbackLLM, key: str, aws_secret: str | None = None) -> dict[str, str]:
    """The variables that point ``protocol`` at ``server`` and give it credentials, as its provider's users set them:
    the base URL (the server's root and the path of the provider's default URL) and the key, or AWS's credentials
    (with ``aws_secret``, when the server was given that secret)."""
    endpoint = protocol.endpoint
    default = endpoint.default_url(aws_test_credentials()) if callable(endpoint.default_url) else endpoint.default_url
    root = server.base_url.removesuffix("/v1")
    variables = {endpoint.url_env[0]: root + urlsplit(default).path.rstrip("/")}
    if endpoint.key_env:
        variables[endpoint.key_env[0]] = key
    else:
        variables.update(aws_test_credentials(aws_secret))
    return variables


def varied(request: RecordedRequest) -> Reply:
    """Any judge's main path, whatever the protocol (read from the request's forced tool): the enum values and
    grades taken in turn from an offset the user message sets, so verdicts differ between items and judges; an
    extraction step gets one item (a verdict step one verdict per numbered item); a sample gets text."""
    forced = request.ask.forced_tool
    if forced is None:
        return Reply.text("the cat sat on the mat")
    name, schema = forced
    properties = schema.get("properties", {})
    offset = len(request.last_user_message)
    verdicts = properties.get("verdicts")
    if verdicts is not None:
        numbered = [part for part in request.last_user_message.split("\n\n") if re.search(r"(?m)^1\. ", part)]
        items = len(re.findall(r"(?m)^\d+\. ", numbered[-1])) if numbered else 1
        enum = verdicts["items"]["properties"]["verdict"]["enum"]
        return Reply.tool_call(
            {"verdicts": [{"verdict": enum[(offset + i) % len(enum)]} for i in range(items)]}, name=name
        )
    if "choice" in properties or any(p.get("type") == "integer" for p in properties.values()):
        return Reply.tool_call({key: _pick(p, offset + i) for i, (key, p) in enumerate(properties.items())}, name=name)
    return Reply.tool_call({key: [_item(p.get("items", {}), offset)] for key, p in properties.items()}, name=name)


def seedless(request: RecordedRequest) -> Reply:
    """:func:`auto_reply` as if the request carried no seed: every sample of a row gets the same answer, on a
    protocol whose body carries the seed (chat, responses, gemini's ``generationConfig``) as on one whose does not."""
    body = {key: value for key, value in request.body.items() if key != "seed"}
    if isinstance(body.get("generationConfig"), dict):
        body["generationConfig"] = {key: value for key, value in body["generationConfig"].items() if key != "seed"}
    return auto_reply(dataclasses.replace(request, body=body))


def _pick(schema: dict, offset: int) -> Any:
    if "enum" in schema:
        return schema["enum"][offset % len(schema["enum"])]
    if schema.get("type") == "integer":
        low = int(schema.get("minimum", 1))
        return low + offset % (int(schema.get("maximum", low + 4)) - low + 1)
    return "reasons"


def _item(schema: dict, offset: int) -> Any:
    if schema.get("type") == "object":
        return {key: _item(p, offset) for key, p in schema.get("properties", {}).items()}
    if "enum" in schema:
        return schema["enum"][offset % len(schema["enum"])]
    return 1 if schema.get("type") == "integer" else "the cat sat on the mat"


class Recorder:
    """A server's default reply that keeps what it sent (the server answers from its own thread)."""

    def __init__(self, answer: Callable[[RecordedRequest], Reply]) -> None:
        self.answer, self.sent, self._lock = answer, [], threading.Lock()

    def __call__(self, request: RecordedRequest) -> Reply:
        reply = self.answer(request)
        with self._lock:
            self.sent.append(reply)
        return reply


def run(build: Callable[[LLMEngine], Any], row: dict, api: str, answer, monkeypatch, key: str) -> dict[str, Any]:
    """Build a judge on ``api`` against a fresh loopback server and score ``row``: the score (or the ConfigError
    that refused the judge), the requests made and the replies sent."""
    recorder = Recorder(answer)
    with LoopbackLLM(default=recorder) as server, monkeypatch.context() as patch:
        for name, value in environment(PROTOCOLS.get(api), server, key).items():
            patch.setenv(name, value)
        engine = LLMEngine(api=api, cache=False, max_reasks=0)
        try:
            judge = build(engine)
        except ConfigError as refused:
            return {"refused": refused, "requests": server.request_count}
        score = judge(**row)
        requests = [r for r in server.requests if r.api is not None]
        return {
            "judge": judge,
            "score": score,
            "requests": requests,
            "count": server.request_count,
            "sent": recorder.sent,
        }


def verdict(score: scorers.Score) -> tuple[Any, dict[str, Any]]:
    """A score's number and what the judge read, without how it travelled."""
    return score.score, {k: v for k, v in score.metadata.items() if k not in TRANSPORT_METADATA}


def same_replies(a: list[Reply], b: list[Reply]) -> bool:
    """The same replies, in any order (a judge's parallel steps arrive in any order)."""
    return Counter(map(repr, a)) == Counter(map(repr, b))


# ---------------------------------------------------------------- what a judge needs
def needs(judge: Any) -> Capabilities:
    """What a judge needs of its protocol, read from its settings as a user reads them (thinking is on with a
    ``reasoning_effort``): the contract, not the code that refuses."""
    if type(judge).__name__ == "GPTScore":
        return Capabilities(**{**NOTHING.__dict__, "prompt_logprobs": True})
    wanted = {name: False for name in NOTHING.__dict__ if isinstance(getattr(NOTHING, name), bool)}
    mode = MODE_NEEDS[judge.response_mode]
    if mode is not None:
        wanted[mode] = True
    if judge.response_mode == "tools" and judge.reasoning_effort is not None:
        wanted["forced_tool_with_thinking"] = True
    if getattr(judge, "score_mode", None) == "logprobs":
        wanted["logprobs"] = True
    return Capabilities(**wanted)


# ---------------------------------------------------------------- every built-in judge
@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("name", JUDGES)
def test_every_judge_on_every_protocol(name, api, monkeypatch, fake_api_key):
    """A built-in judge on ``api``: the requests ``show`` states and chat's verdicts, or refused before a request."""
    row = _row(name)
    got = run(lambda engine: scorers.get(name, engine=engine), row, api, varied, monkeypatch, fake_api_key)
    if "refused" in got:
        assert got["requests"] == 0
        judge = scorers.get(name, engine=LLMEngine(api="chat"))
        assert PROTOCOLS.get(api).refusal(needs(judge)), f"{name} was refused on {api}: {got['refused']}"
        return
    judge, score = got["judge"], got["score"]
    assert PROTOCOLS.get(api).refusal(needs(judge)) is None, f"{name} was not refused on {api}"
    assert score.score is not None, score.metadata
    stated = judge.describe()["requests_per_row"]
    assert f"requests per row: {stated}" in describe(judge)  # what `python -m scorers show` prints
    expected = REQUESTS_ON_THE_CONTRACT_ROW.get(name) or int(re.match(r"\d+", stated).group())
    if stated.startswith("1, and 1 more once"):
        expected += 1  # the evaluation steps, written on the first row
    assert got["count"] == expected, (stated, [r.last_user_message[:80] for r in got["requests"]])
    if name != "GPTScore":
        assert {r.api for r in got["requests"]} == {api}
    if "choice" in score.metadata and getattr(judge, "choice_scores", None):
        sent = json.loads(got["sent"][-1].arguments)["choice"]
        assert (score.metadata["choice"], score.score) == (sent, judge.choice_scores[sent])
    if isinstance(judge, RubricJudge):  # the weighted mean of the grades sent, each mapped onto [0, 1]
        grades, (low, high) = json.loads(got["sent"][-1].arguments), (judge.scale.min, judge.scale.max)
        weighted = sum(c.weight * (grades[c.name] - low) / (high - low) for c in judge.criteria)
        assert score.score == pytest.approx(weighted / sum(c.weight for c in judge.criteria))
    if api != "chat":
        on_chat = run(lambda engine: scorers.get(name, engine=engine), row, "chat", varied, monkeypatch, fake_api_key)
        assert same_replies(got["sent"], on_chat["sent"]), "the server was asked other things than on chat"
        assert verdict(score) == verdict(on_chat["score"])
        assert score.metadata["sent"]["api"] == api


# ---------------------------------------------------------------- every kind in every mode
ROW = {"input": "What is the capital of France?", "output": "Paris.", "expected": "Paris is the capital."}
PROMPT = "Question: {{input}}\nAnswer: {{output}}\nReference: {{expected}}"
CRITERIA = [
    {"name": "accurate", "description": "Agrees with the reference.", "weight": 2},
    {"name": "brief", "description": "Says it briefly."},
]

GEVAL = {"criteria": "Coherence of the answer.", "steps": ["Read it.", "Rate it."], "scale": {"min": 1, "max": 5}}
#: Each kind: its class and settings; the response modes it takes are its class's.
KINDS: dict[str, tuple[type, dict[str, Any]]] = {
    "classifier": (LLMClassifier, {"choice_scores": {"Y": 1.0, "N": 0.0}}),
    "rubric": (RubricJudge, {"criteria": CRITERIA, "scale": {"min": 1, "max": 5}}),
    "rating": (RatingJudge, {"scale": {"min": 1, "max": 10}}),
    "pairwise": (PairwiseJudge, {}),
    "geval-logprobs": (GEvalJudge, GEVAL),
    "geval-top_token": (GEvalJudge, {**GEVAL, "score_mode": "top_token"}),
    "geval-sampling": (GEvalJudge, {**GEVAL, "score_mode": "sampling", "samples": 3, "temperature": 0.7}),
    "classifier-samples": (LLMClassifier, {"choice_scores": {"Y": 1.0, "N": 0.0}, "samples": 3, "temperature": 0.7}),
}
#: The response modes of each kind (G-Eval's weighting reads the score token of a text reply).
MODES = {kind: ("text",) if kind == "geval-logprobs" else cls.response_modes for kind, (cls, _) in KINDS.items()}


def kind_judge(kind: str, mode: str, engine: LLMEngine) -> Any:
    cls, settings = KINDS[kind]
    return cls(kind.title(), PROMPT + "\nJudge the answer.", **settings, response_mode=mode, engine=engine)


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("kind, mode", [(kind, mode) for kind in KINDS for mode in MODES[kind]])
def test_every_kind_and_mode_on_every_protocol(kind, mode, api, monkeypatch, fake_api_key):
    """A judge of ``kind`` in ``mode`` on ``api`` scores as on chat, from the same replies, or is refused before a
    request when the protocol lacks what it needs (the capability table of docs/providers/index.md)."""
    build = lambda engine: kind_judge(kind, mode, engine)  # noqa: E731
    samples = KINDS[kind][1].get("samples", 1)
    answer = seedless if samples > 1 else auto_reply  # the same replies on every protocol, seed or none
    got = run(build, ROW, api, answer, monkeypatch, fake_api_key)
    lacking = PROTOCOLS.get(api).refusal(needs(build(LLMEngine(api="chat"))))
    if "refused" in got:
        assert lacking and got["requests"] == 0, got["refused"]
        return
    assert lacking is None, f"{kind} in {mode} mode was not refused on {api} ({lacking})"
    on_chat = run(build, ROW, "chat", answer, monkeypatch, fake_api_key)
    assert same_replies(got["sent"], on_chat["sent"]), "the server was asked other things than on chat"
    assert got["count"] == on_chat["count"]
    if samples > 1:  # one request per sample, each its own seed where the body carries one
        assert got["count"] == samples and got["judge"].requests_per_row == f"{samples} (independent samples)"
        seeds = [r.body.get("seed", r.body.get("generationConfig", {}).get("seed")) for r in got["requests"]]
        assert sorted(seeds, key=str) in ([0, 1, 2], [None] * samples), seeds
    assert got["score"].score is not None and verdict(got["score"]) == verdict(on_chat["score"])


@pytest.mark.parametrize("api", APIS)
def test_a_forced_tool_with_thinking_runs_or_is_refused_before_any_request(api, monkeypatch, fake_api_key):
    def build(engine: LLMEngine) -> LLMClassifier:
        question = PROMPT + "\nDoes the answer agree with the reference?"
        return LLMClassifier("Agrees", question, {"Y": 1.0, "N": 0.0}, reasoning_effort="low", engine=engine)

    got = run(build, ROW, api, auto_reply, monkeypatch, fake_api_key)
    lacking = PROTOCOLS.get(api).refusal(needs(build(LLMEngine(api="chat"))))
    if "refused" in got:
        assert lacking and got["requests"] == 0 and "json" in str(got["refused"]), got["refused"]
    else:
        assert lacking is None and got["score"].score is not None
