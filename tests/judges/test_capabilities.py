"""Every judge kind on every wire protocol: refused at construction, before any request, where the protocol cannot
do what the kind needs (a ConfigError naming the judge, the protocol, what is missing and what to use instead).

The protocols are those registered (:data:`scorers.llm.protocols.PROTOCOLS`, so each one that lands is covered)
plus two declared here with fewer capabilities, as a provider without log-probabilities or JSON modes has.
"""

from __future__ import annotations

from typing import Any, Callable, Iterator

import pytest

import scorers
from scorers.errors import ConfigError
from scorers.judges import GEvalJudge, LLMClassifier, PairwiseJudge, RatingJudge, RubricJudge
from scorers.judges.base import LLMJudge
from scorers.judges.needs import CAPABILITY_WORDS, SETTING_NEEDS, serves
from scorers.judges.rag import Faithfulness
from scorers.llm import LLMEngine
from scorers.llm.protocols import PROTOCOLS, Capabilities, Endpoint, HTTPReply, Tokens, WireProtocol
from scorers.testing import LoopbackLLM


class _Declared(WireProtocol):
    """A protocol of this test: it declares capabilities and never sends (every judge here is only built)."""

    endpoint = Endpoint(key_env=(), url_env=(), default_url="http://127.0.0.1:9")
    client_family = "declared-in-test"

    def body(self, request: Any, model: str, thinks: bool) -> dict[str, Any]:
        raise AssertionError("a refused judge built a request")

    def parse(self, data: Any, *, model: str) -> Any:
        raise AssertionError("no reply is read")

    def tokens(self, data: Any) -> Tokens:
        return Tokens()

    async def client(self, settings: Any) -> Any:
        raise AssertionError("no client is made")

    async def post(self, client: Any, path: str, body: Any, timeout: float) -> HTTPReply:
        raise AssertionError("no request is sent")


class ToolsOnly(_Declared):
    """Like Anthropic's Messages API: forced tools and JSON-schema output, no log-probabilities, no forced tool with
    extended thinking, no JSON-object mode."""

    name = "tools-only-test"
    capabilities = Capabilities(forced_tool_with_thinking=False, json_object=False)


class TextOnly(_Declared):
    """A provider with plain text replies only."""

    name = "text-only-test"
    capabilities = Capabilities(
        forced_tool=False, forced_tool_with_thinking=False, json_schema=False, json_object=False
    )


DECLARED = (ToolsOnly(), TextOnly())
PROTOCOL_NAMES = [*PROTOCOLS.names(), *(protocol.name for protocol in DECLARED)]


@pytest.fixture(scope="module", autouse=True)
def declared_protocols() -> Iterator[None]:
    for protocol in DECLARED:
        PROTOCOLS.register(protocol.name, protocol)
    yield
    for protocol in DECLARED:
        PROTOCOLS.remove(protocol.name)


class Engine(LLMEngine):
    """An engine whose requests go to ``api`` (any registered protocol, those of this test included)."""

    def __init__(self, api: str, **options: Any) -> None:
        super().__init__(**options)
        self._api = api

    @property
    def api(self) -> str:
        return self._api


STEPS = ["Read it.", "Grade it."]
#: What each kind is built from, besides its settings.
BUILD: dict[str, Callable[..., LLMJudge]] = {
    "classifier": lambda **s: LLMClassifier("Polite", "Is {{output}} polite?", {"Yes": 1, "No": 0}, **s),
    "rubric": lambda **s: RubricJudge("Brief", "Rate {{output}}", criteria=[{"name": "b", "description": "B."}], **s),
    "rating": lambda **s: RatingJudge("Clear", "Rate {{output}}", scale={"min": 1, "max": 5}, **s),
    "pairwise": lambda **s: PairwiseJudge("Pref", "A: {{output}}\nB: {{expected}}", **s),
    "geval": lambda **s: GEvalJudge(
        "Coherent", "Grade {{output}}", criteria="Coherence.", scale={"min": 1, "max": 5}, **s
    ),
    "multistep": lambda **s: Faithfulness(**s),
    "gptscore": lambda **s: scorers.get("GPTScore", **s),
}

#: (kind, settings, what it needs from its protocol), written out here rather than derived from the code.
CASES: list[tuple[str, dict[str, Any], set[str]]] = [
    *(
        (kind, settings, needs)
        for kind in ("classifier", "rubric", "rating", "pairwise", "multistep")
        for settings, needs in [
            ({"response_mode": "tools"}, {"forced_tool"}),
            ({"response_mode": "tools", "reasoning_effort": "low"}, {"forced_tool", "forced_tool_with_thinking"}),
            ({"response_mode": "json"}, {"json_schema"}),
            ({"response_mode": "json", "reasoning_effort": "low"}, {"json_schema"}),
            ({"response_mode": "json_object"}, {"json_object"}),
            ({"response_mode": "text"}, set()),
        ]
        if not (kind in ("rubric", "multistep") and settings["response_mode"] == "text")
    ),
    ("geval", {}, {"logprobs", "json_object"}),  # text mode: the steps are written as a JSON object
    ("geval", {"steps": STEPS}, {"logprobs"}),
    ("geval", {"steps": STEPS, "score_mode": "top_token"}, set()),
    ("geval", {"score_mode": "top_token"}, {"json_object"}),
    ("geval", {"response_mode": "json", "score_mode": "logprobs"}, {"json_schema", "logprobs"}),
    ("geval", {"response_mode": "tools", "score_mode": "top_token"}, {"forced_tool"}),
    ("gptscore", {}, {"prompt_logprobs"}),
]


def _lacking(protocol: WireProtocol, needs: set[str]) -> set[str]:
    return {need for need in needs if not getattr(protocol.capabilities, need)}


@pytest.mark.parametrize("api", PROTOCOL_NAMES)
@pytest.mark.parametrize(
    "kind, settings, needs",
    CASES,
    ids=[f"{kind}-{'-'.join(map(str, s.values())) or 'default'}" for kind, s, _ in CASES],
)
def test_a_judge_is_refused_before_any_request_where_its_protocol_lacks_what_it_needs(
    llm_server: LoopbackLLM, api: str, kind: str, settings: dict[str, Any], needs: set[str]
) -> None:
    protocol = PROTOCOLS.get(api)
    engine = Engine(api, base_url=llm_server.base_url, api_key="placeholder", cache=False)
    lacking = _lacking(protocol, needs)
    if not lacking:
        judge = BUILD[kind](engine=engine, **settings)
        assert set(judge.needs()) == needs
        return
    with pytest.raises(ConfigError) as caught:
        BUILD[kind](engine=engine, **settings)
    message = str(caught.value)
    name = {"multistep": "Faithfulness", "gptscore": "GPTScore"}.get(kind)
    assert message.startswith(f"{name or BUILD[kind](engine=Engine('chat')).name}: a ")
    assert f"cannot run on the {api} protocol" in message
    assert all(CAPABILITY_WORDS[need] in message for need in lacking), message
    assert " Use " in message, message  # what to use instead
    assert llm_server.request_count == 0


def test_the_alternatives_named_are_ones_that_work() -> None:
    """Anthropic's case: a forced tool with extended thinking is refused and response_mode='json' offered, which
    the same protocol then accepts; G-Eval's weighted score offers score_mode='top_token'."""
    engine = Engine("tools-only-test", api_key="placeholder", cache=False)
    with pytest.raises(ConfigError) as caught:
        BUILD["classifier"](engine=engine, response_mode="tools", reasoning_effort="high")
    assert "response_mode='json'" in str(caught.value) and "json_object" not in str(caught.value).split("Use ")[1]
    assert BUILD["classifier"](engine=engine, response_mode="json", reasoning_effort="high").needs()
    with pytest.raises(ConfigError, match="score_mode='top_token'"):
        BUILD["geval"](engine=engine, steps=STEPS, response_mode="json")
    assert BUILD["geval"](engine=engine, steps=STEPS, response_mode="json", score_mode="top_token")


@pytest.mark.parametrize("name", scorers.names())
def test_every_registered_judge_states_needs_its_protocol_is_checked_against(name: str) -> None:
    """Each registered judge, as built by name, on a protocol with no structured mode and no log-probabilities:
    refused exactly when it needs something, built otherwise."""
    entry_judge = scorers.get(name)
    if not isinstance(entry_judge, LLMJudge):
        return
    needs = set(entry_judge.needs())
    engine = Engine("text-only-test", api_key="placeholder", cache=False)
    if not needs:
        assert isinstance(scorers.get(name, engine=engine), LLMJudge)
        return
    with pytest.raises(ConfigError, match=f"^{name}: a .* cannot run on the text-only-test protocol"):
        scorers.get(name, engine=engine)


def test_the_engine_names_its_protocol_without_an_api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert LLMEngine().api == "chat" and LLMEngine(api="responses").api == "responses"
    scorers.configure(api="responses")
    try:
        assert LLMEngine().api == "responses" and LLMEngine(api="chat").api == "chat"
    finally:
        scorers.configure(api=None)


def test_the_capability_tables_rows_are_what_the_judges_need() -> None:
    """Each row of SETTING_NEEDS (the table docs/providers/index.md renders) is the need of a case above, and every
    need of a case is a row."""
    assert {capability for _, capability in SETTING_NEEDS} == {need for _, _, needs in CASES for need in needs}
    for _, capability in SETTING_NEEDS:
        assert capability in CAPABILITY_WORDS and hasattr(Capabilities(), capability)
    for name in PROTOCOL_NAMES:
        protocol = PROTOCOLS.get(name)
        assert [serves(protocol, c) for _, c in SETTING_NEEDS] == [
            getattr(protocol.capabilities, c) for _, c in SETTING_NEEDS
        ]
