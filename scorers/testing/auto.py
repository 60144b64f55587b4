"""Automatic answers: :func:`auto_reply` answers any judge request validly, read from the request alone."""

from __future__ import annotations

import dataclasses
import json
import math
import random
import re
from typing import Any, Mapping

from .protocols.base import Ask, content_text
from .recorded import RecordedRequest
from .replies import Reply

__all__ = ["auto_reply"]


def auto_reply(request: RecordedRequest) -> Reply:
    """A valid answer to any judge request, computed from the request alone: the same request, the same answer.

    It reads what the request asks for: a forced tool's parameters or a response format's JSON schema
    (also the schema a ``json_object`` prompt quotes), filled in by the schema (an ``enum`` value, an
    integer within ``minimum``/``maximum``, one array entry per item of the numbered list the prompt
    ends with, as the RAG judges' verdict steps need); in text mode, the choices the prompt lists
    ("exactly one of A, B, C") or its scale ("a whole number from 1 to 10"); else a plain sentence.
    Values are drawn from a random generator seeded with the prompt (and the request's ``seed``), so
    rows get different verdicts. A request for logprobs gets each number token with its neighbours as
    alternatives (for G-Eval).

    >>> from scorers.llm import LLMEngine
    >>> from scorers.testing import LoopbackLLM
    >>> import scorers
    >>> with LoopbackLLM(default=auto_reply) as server:
    ...     engine = LLMEngine(base_url=server.base_url, api_key="placeholder", cache=False)
    ...     score = scorers.get("Factuality", engine=engine)(input="2+2?", output="4", expected="4")
    >>> score.metadata["choice"] in "ABCDE"
    True
    """
    prompt = "\n\n".join(content_text(m.get("content")) for m in request.messages if isinstance(m, dict))
    ask = request.ask
    draw = random.Random(f"{prompt}\0{ask.seed}")
    items = _numbered_items(request.last_user_message)
    if ask.forced_tool is not None:
        name, schema = ask.forced_tool
        reply = Reply.tool_call(_instance(schema, draw, items, name), name=name)
        return _with_logprobs(reply, reply.arguments) if ask.logprobs else reply
    response_schema = _response_schema(ask, request.last_user_message)
    if response_schema is not None:
        text = json.dumps(_instance(response_schema, draw, items, "reply"))
    elif (choices := _listed_choices(request.last_user_message)) is not None:
        choice = draw.choice(choices)
        text = f"Loopback reply: {choice}, drawn from {', '.join(choices)} by the prompt's hash.\n{choice}"
    elif (scale := _listed_scale(request.last_user_message)) is not None:
        text = str(draw.randint(*scale))
    else:
        text = "This is a loopback reply, the same for the same prompt."
    reply = Reply.text(text)
    return _with_logprobs(reply, text) if ask.logprobs else reply


def _response_schema(ask: Ask, prompt: str) -> Mapping[str, Any] | None:
    """The JSON schema a JSON reply must follow (``{}`` when the request gives none, not even quoted in the
    prompt, as a ``json_object`` prompt does), or None for a text reply."""
    if not ask.json:
        return None
    if ask.schema is not None:
        return ask.schema
    quoted = prompt.rfind("JSON schema: {")
    if quoted >= 0:
        try:
            found, _ = json.JSONDecoder().raw_decode(prompt, quoted + len("JSON schema: "))
            return found if isinstance(found, dict) else {}
        except ValueError:
            pass
    return {}


def _instance(schema: Any, draw: random.Random, items: int, name: str) -> Any:
    """A value valid against ``schema``; arrays get ``items`` entries (else one or two), ``name`` fills texts."""
    if not isinstance(schema, dict):
        return _filler(name)
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list) and schema[key]:
            return _instance(schema[key][0], draw, items, name)
    if "const" in schema:
        return schema["const"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return draw.choice(schema["enum"])
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object" or "properties" in schema:
        properties = schema.get("properties") or {}
        return {key: _instance(sub, draw, items, key) for key, sub in properties.items()}
    if kind == "array":
        low = max(int(schema.get("minItems", 0)), 1)
        count = items or draw.randint(low, max(low, 2))
        return [_instance(schema.get("items"), draw, 0, f"{name} {i}") for i in range(1, count + 1)]
    return _scalar(kind, schema, draw, name)


def _scalar(kind: Any, schema: Mapping[str, Any], draw: random.Random, name: str) -> Any:
    """A value of the scalar JSON type ``kind`` within ``schema``'s bounds (a text for any other type)."""
    if kind == "integer":
        low = int(schema.get("minimum", 0))
        return draw.randint(low, max(low, int(schema.get("maximum", low + 10))))
    if kind == "number":
        least = float(schema.get("minimum", 0.0))
        return round(draw.uniform(least, max(least, float(schema.get("maximum", least + 1.0)))), 4)
    if kind == "boolean":
        return draw.random() < 0.5
    if kind == "null":
        return None
    return _filler(name)


def _filler(name: str) -> str:
    return f"{name} (loopback: drawn from the request, not judged)"


def _numbered_items(prompt: str) -> int:
    """How many items the numbered list of ``prompt`` has: the longest run of lines ``1. ``, ``2. ``, ... in
    order (other lines between them are an item's continuation); 0 if none. A run that an item's own
    numbered lines make longer miscounts: that row's verdicts are then re-asked, and fail.

    >>> _numbered_items("Claims:\\n1. Paris is in France.\\n2. It lists\\n1. one thing.\\n3. It is old.\\n\\nAnswer.")
    3
    """
    runs: list[int] = []
    for line in prompt.splitlines():
        number = re.match(r"\s*(\d+)\.\s", line)
        if number and number.group(1) == "1":
            runs.append(1)
        elif number:
            runs = [run + 1 if run == int(number.group(1)) - 1 else run for run in runs]
    return max(runs, default=0)


def _listed_choices(prompt: str) -> list[str] | None:
    """The choices a text-mode judge lists ("exactly one of A, B, C alone on the last line"), or None."""
    found = re.findall(r"exactly one of (.+?),? (?:alone on|and nothing else)", prompt)
    return found[-1].split(", ") if found else None


def _listed_scale(prompt: str) -> tuple[int, int] | None:
    """The scale a text-mode rating or G-Eval judge states ("a whole number from 1 to 10"), or None."""
    found = re.findall(r"whole number from (-?\d+)(?: \(worst\))? to (-?\d+)", prompt)
    return (int(found[-1][0]), int(found[-1][1])) if found else None


def _with_logprobs(reply: Reply, text: str) -> Reply:
    """``reply`` with scripted logprobs of ``text``: each whole number a token of probability 0.7, its
    neighbours the alternatives (0.2 and 0.1); the text between numbers as tokens of probability 1."""
    tokens: list[dict[str, float]] = []
    for piece in re.split(r"(-?\d+)", text):
        if re.fullmatch(r"-?\d+", piece):
            value = int(piece)
            tokens.append({piece: math.log(0.7), str(value + 1): math.log(0.2), str(value - 1): math.log(0.1)})
        elif piece:
            tokens.append({piece: 0.0})
    return dataclasses.replace(reply, top_logprobs=tuple(tokens))
