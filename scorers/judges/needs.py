"""What a judge needs from its wire protocol, and the refusal of a judge whose protocol cannot give it.

A judge states its needs from its settings (:meth:`LLMJudge.needs <scorers.judges.LLMJudge.needs>`): each is a
capability of :class:`~scorers.llm.protocols.Capabilities` with the setting that needs it and, where the kind has
one, the setting to use instead. At construction the judge is checked against the protocol it will speak (its
``api``, else its engine's): one it cannot run on is a :class:`~scorers.errors.ConfigError` naming the judge, the
protocol, what is missing and what to use instead, before any request.

>>> needs = {"logprobs": Need("score_mode='logprobs' (the probability-weighted score)", "score_mode='top_token'")}
>>> print(refusal_message("Coherence", "geval", "anthropic", "the anthropic protocol has no logprobs", needs,
...                       serving=["chat"]))
Coherence: a geval judge cannot run on the anthropic protocol: score_mode='logprobs' (the probability-weighted score) \
needs the reply tokens' log-probabilities, and the anthropic protocol has no logprobs. Use score_mode='top_token', or \
an api that serves it: 'chat'.
"""

from __future__ import annotations

from dataclasses import fields
from typing import TYPE_CHECKING, Any, Iterable, Mapping, NamedTuple, Protocol, Sequence

from ..llm.protocols import PROTOCOLS, Capabilities, wire

if TYPE_CHECKING:
    from ..llm.protocols import WireProtocol

__all__ = [
    "CAPABILITY_WORDS",
    "SETTING_NEEDS",
    "Need",
    "serves",
    "capabilities_of",
    "protocol_refusal",
    "refusal_message",
    "response_mode_needs",
]

#: Each capability a judge may need, in words ("... needs <words>").
CAPABILITY_WORDS: Mapping[str, str] = {
    "logprobs": "the reply tokens' log-probabilities",
    "prompt_logprobs": "the prompt tokens' log-probabilities (a completions endpoint's echo)",
    "forced_tool": "a forced tool call",
    "forced_tool_with_thinking": "a forced tool call with extended thinking on",
    "json_schema": "a JSON-schema structured output",
    "json_object": "a JSON-object response format",
}


#: The judge settings that need something of their protocol, each with the capability it needs: the rows of the
#: capability table (docs/providers/index.md renders them against :data:`~scorers.llm.protocols.PROTOCOLS`;
#: tests/judges/test_capabilities checks them against the judges' :meth:`~scorers.judges.LLMJudge.needs`).
SETTING_NEEDS: tuple[tuple[str, str], ...] = (
    ("response_mode='tools' (a forced tool call: every kind's default but G-Eval's)", "forced_tool"),
    ("response_mode='tools' with reasoning_effort set (a forced tool with thinking)", "forced_tool_with_thinking"),
    ("response_mode='json' (structured output)", "json_schema"),
    ("response_mode='json_object' (G-Eval's steps in text mode too, when not given)", "json_object"),
    ("G-Eval's score_mode='logprobs' (its default: the probability-weighted score)", "logprobs"),
    ("GPTScore (the output's log-probabilities given the prompt)", "prompt_logprobs"),
)


def serves(protocol: "WireProtocol", capability: str) -> bool:
    """Whether ``protocol`` gives ``capability`` (:meth:`WireProtocol.refusal` of that need alone).

    >>> from scorers.llm.protocols import wire
    >>> serves(wire("chat"), "logprobs"), serves(wire("responses"), "prompt_logprobs")
    (True, False)
    """
    return protocol.refusal(capabilities_of([capability])) is None


class Need(NamedTuple):
    """Why a judge needs a capability (the setting, in words) and what to use instead (``None``: another of the
    kind's response modes, found by trying them)."""

    why: str
    instead: str | None = None


def response_mode_needs(mode: str | None, thinking: bool) -> dict[str, Need]:
    """What asking for the verdict in response ``mode`` needs (``thinking``: ``reasoning_effort`` is set).

    >>> list(response_mode_needs("tools", thinking=True)), response_mode_needs("text", thinking=True)
    (['forced_tool', 'forced_tool_with_thinking'], {})
    """
    if mode == "tools":
        needs = {"forced_tool": Need("response_mode='tools'")}
        if thinking:
            needs["forced_tool_with_thinking"] = Need("response_mode='tools' with reasoning_effort set")
        return needs
    if mode == "json":
        return {"json_schema": Need("response_mode='json'")}
    if mode == "json_object":
        return {"json_object": Need("response_mode='json_object'")}
    return {}


def capabilities_of(needs: Iterable[str]) -> Capabilities:
    """The :class:`Capabilities` holding exactly ``needs`` (the form :meth:`WireProtocol.refusal` takes).

    >>> capabilities_of(["logprobs"]).forced_tool, capabilities_of(["logprobs"]).logprobs
    (False, True)
    """
    wanted = set(needs)
    flags: dict[str, Any] = {f.name: f.name in wanted for f in fields(Capabilities) if f.type in (bool, "bool")}
    return Capabilities(**flags)


def refusal_message(
    judge: str,
    kind: str,
    protocol: str,
    refusal: str,
    needs: Mapping[str, Need],
    *,
    lacking: Iterable[str] = (),
    modes: Iterable[str] = (),
    serving: Iterable[str] = (),
) -> str:
    """The error of judge ``judge`` (of ``kind``) that cannot run on ``protocol``: why (the ``lacking`` needs, all
    of ``needs`` when none is named; ``refusal``: the protocol's own words), then each way out: the kind's
    alternatives when they cover every lacking need, the response ``modes`` that would work, the protocols
    ``serving`` the judge as it is."""
    named = [name for name in lacking if name in needs] or list(needs)
    why = "; ".join(f"{needs[name].why} needs {CAPABILITY_WORDS.get(name, name)}" for name in named)
    ways = []
    if all(needs[name].instead for name in named):
        ways.append(" and ".join(dict.fromkeys(str(needs[name].instead) for name in named)))
    ways += [f"response_mode={mode!r}" for mode in modes]
    serving = list(serving)
    if serving:
        ways.append(f"an api that serves it: {', '.join(map(repr, serving))}")
    use = f" Use {', or '.join(ways)}." if ways else ""
    return f"{judge}: a {kind} judge cannot run on the {protocol} protocol: {why}, and {refusal}.{use}"


class Judge(Protocol):
    """What :func:`protocol_refusal` reads of a judge (an :class:`~scorers.judges.LLMJudge` has it; typed by its
    shape, so this module does not import the judges' base, which imports it)."""

    name: str
    api: str | None
    response_mode: str

    @property
    def judge_kind(self) -> str: ...

    @property
    def response_modes(self) -> Sequence[str]: ...

    @property
    def engine(self) -> Any: ...

    def needs(self, response_mode: str | None = None) -> Mapping[str, "Need"]: ...


def protocol_refusal(judge: Judge) -> str | None:
    """Why ``judge`` cannot run on its protocol (its ``api``, else its engine's), or ``None`` when it can: the
    message of :func:`refusal_message`, with the kind's other response modes and the registered protocols that
    would serve it."""
    needs = judge.needs()
    if not needs:
        return None
    protocol = wire(judge.api or judge.engine.api)
    refusal = protocol.refusal(capabilities_of(needs))
    if refusal is None:
        return None
    modes = [
        mode
        for mode in judge.response_modes
        if mode != judge.response_mode and protocol.refusal(capabilities_of(judge.needs(mode))) is None
    ]
    serving = [name for name, other in PROTOCOLS.items() if other.refusal(capabilities_of(needs)) is None]
    lacking = [name for name in needs if not getattr(protocol.capabilities, name, True)]
    return refusal_message(
        judge.name, judge.judge_kind, protocol.name, refusal, needs, lacking=lacking, modes=modes, serving=serving
    )
