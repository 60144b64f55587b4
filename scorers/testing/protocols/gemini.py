"""Gemini's ``generateContent`` API (``POST /v1beta/models/{model}:generateContent``, ``/v1/`` too), as the loopback server answers
it: the key in ``x-goog-api-key``, ``systemInstruction`` apart, ``contents`` of ``user`` and ``model`` turns made of
parts; one candidate out, its tool call's ``args`` an object, errors in Google's shape.

What a request asks for is read from ``tools[].functionDeclarations`` with ``toolConfig.functionCallingConfig``
(a forced tool), ``generationConfig.responseMimeType`` (``application/json`` with ``responseJsonSchema`` or
``responseSchema``; ``text/x.enum`` with an enum schema, whose reply is the bare label) and
``generationConfig.responseLogprobs`` (``logprobsResult``: the chosen token and ``logprobs`` alternatives per step).
A reply's ``finish_reason`` in the chat vocabulary is translated (``length`` is ``MAX_TOKENS``, ``content_filter``
is ``SAFETY``); Gemini's own (``SAFETY``, ``RECITATION``, ...) are served as given. :func:`prompt_blocked` scripts a
prompt blocked before any candidate (``promptFeedback.blockReason``), :func:`resource_exhausted` Google's 429 whose
message and ``RetryInfo`` give the delay. A ``thinkingConfig`` (but ``thinkingBudget: 0``) makes the model think: its words are
billed as ``thoughtsTokenCount``, and shown as a ``thought`` part when ``includeThoughts`` asks.

The server checks bodies as strictly as the API: a field it does not know, an ``assistant`` role or a schema key
the OpenAPI ``Schema`` has not (``additionalProperties``, ``$schema``) in ``parameters`` or ``responseSchema`` is
a 400, as Google answers them, and so is an ``enum`` of another type than ``STRING`` there
(``parametersJsonSchema`` and ``responseJsonSchema`` take JSON Schema).

>>> from scorers.testing import Reply
>>> class Settings:
...     logprobs, embedding_dim, completions = True, 16, None
>>> api = GenerateContentAPI()
>>> body = {"contents": [{"role": "user", "parts": [{"text": "Which?"}]}]}
>>> reply = api.render(body, Reply.choice("A"), Settings())
>>> reply["candidates"][0]["content"]["parts"], reply["usageMetadata"]["totalTokenCount"]
([{'functionCall': {'name': 'select_choice', 'args': {'choice': 'A'}}}], 3)
>>> api.answers("/v1beta/models/gemini-2.5-flash:generateContent"), api.invalid({"contents": [{"role": "assistant"}]})
(True, "contents[0].role: 'user' or 'model', got 'assistant' (Please use a valid role: user, model.)")
"""

from __future__ import annotations

import json
import re
import uuid
from typing import Any, ClassVar, Mapping

from ..._util import is_int
from ..replies import Reply
from .base import Ask, ScriptedProtocol, ServerSettings, word_count

__all__ = ["GenerateContentAPI", "STATUS_NAMES", "prompt_blocked", "resource_exhausted"]

#: Google's canonical status name of an HTTP error status (``error.status`` of an error body).
STATUS_NAMES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    409: "ABORTED",
    429: "RESOURCE_EXHAUSTED",
    499: "CANCELLED",
    500: "INTERNAL",
    501: "UNIMPLEMENTED",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}

#: A reply's ``finish_reason`` of the chat vocabulary as Gemini's ``finishReason`` (others are served as given).
FINISH_REASONS = {
    None: "STOP",
    "stop": "STOP",
    "tool_calls": "STOP",
    "length": "MAX_TOKENS",
    "content_filter": "SAFETY",
}

#: The body's fields the API knows (camelCase; Google's JSON parser takes the snake_case names too).
BODY_FIELDS = frozenset(
    {"contents", "systemInstruction", "tools", "toolConfig", "generationConfig", "safetySettings", "cachedContent"}
)
GENERATION_FIELDS = frozenset(
    {
        "temperature",
        "topP",
        "topK",
        "candidateCount",
        "maxOutputTokens",
        "stopSequences",
        "seed",
        "presencePenalty",
        "frequencyPenalty",
        "responseMimeType",
        "responseSchema",
        "responseJsonSchema",
        "responseLogprobs",
        "logprobs",
        "thinkingConfig",
        "responseModalities",
        "mediaResolution",
    }
)
#: The keys of the OpenAPI ``Schema`` object of ``parameters`` and ``responseSchema`` (any other one is a 400).
SCHEMA_FIELDS = frozenset(
    {
        "type",
        "format",
        "title",
        "description",
        "nullable",
        "enum",
        "maxItems",
        "minItems",
        "properties",
        "required",
        "minProperties",
        "maxProperties",
        "minLength",
        "maxLength",
        "pattern",
        "example",
        "anyOf",
        "propertyOrdering",
        "default",
        "items",
        "minimum",
        "maximum",
    }
)
PART_FIELDS = frozenset(
    {"text", "inlineData", "fileData", "functionCall", "functionResponse", "thought", "thoughtSignature"}
)
#: The words a thinking model thinks before it answers (billed as ``thoughtsTokenCount``).
THOUGHT = "The loopback model considers the request before it answers."

_PATH = re.compile(r"/v1(beta)?/models/(?P<model>.+):generateContent")
_SNAKE = re.compile(r"(?<=[a-z0-9])_([a-z])")
_RETRY_IN = re.compile(r"retry in (\d+(?:\.\d+)?)s", re.IGNORECASE)


class GenerateContentAPI(ScriptedProtocol):
    """Gemini's ``generateContent`` (see the module docstring)."""

    name: ClassVar[str] = "gemini"
    #: The model is a path variable (``.+``: any name); ``v1beta`` (what the engine calls) and ``v1`` (the
    #: google-genai SDK's default in its 3.6 versions) alike.
    paths: ClassVar[tuple[str, ...]] = (
        "/v1beta/models/{model:.+}:generateContent",
        "/v1/models/{model:.+}:generateContent",
    )

    def answers(self, path: str) -> bool:
        return _PATH.fullmatch(path) is not None

    def presented_key(self, headers: Mapping[str, str]) -> str | None:
        return headers.get("x-goog-api-key")

    def messages(self, body: Mapping[str, Any]) -> list[dict[str, Any]]:
        """The system instruction as a ``system`` message, then each turn (``model`` as ``assistant``), its text
        parts as chat ``text`` parts and other parts under their own key."""
        body = _camelised(body)
        messages: list[dict[str, Any]] = []
        system = body.get("systemInstruction")
        if isinstance(system, dict):
            messages.append({"role": "system", "content": _chat_parts(system.get("parts"))})
        for turn in body.get("contents") or ():
            if isinstance(turn, dict):
                role = "assistant" if turn.get("role") == "model" else "user"
                messages.append({"role": role, "content": _chat_parts(turn.get("parts"))})
        return messages

    def ask(self, body: Mapping[str, Any]) -> Ask:
        body = _camelised(body)
        config = _mapping(body.get("generationConfig"))
        mime = config.get("responseMimeType")
        schema = config.get("responseJsonSchema", config.get("responseSchema"))
        return Ask(
            forced_tool=_forced_tool(body),
            json=mime in ("application/json", "text/x.enum"),
            schema=_json_schema(schema) if isinstance(schema, dict) else None,
            logprobs=config.get("responseLogprobs") is True,
            seed=config.get("seed"),
        )

    def invalid(self, body: Any) -> str | None:
        if not isinstance(body, dict) or not isinstance(body.get("contents"), list) or not body["contents"]:
            return "body must be JSON with a non-empty 'contents' list"
        body = _camelised(body)
        unknown = sorted(set(body) - BODY_FIELDS)
        if unknown:
            return f'Invalid JSON payload received. Unknown name "{unknown[0]}": Cannot find field.'
        for index, turn in enumerate(body["contents"]):
            problem = _invalid_turn(turn, f"contents[{index}]")
            if problem:
                return problem
        return _invalid_tools(body.get("tools")) or _invalid_config(_mapping(body.get("generationConfig")))

    def render(self, body: Mapping[str, Any], reply: Reply, server: ServerSettings) -> dict[str, Any]:
        body = _camelised(body)
        config = _mapping(body.get("generationConfig"))
        candidate: dict[str, Any] = {"content": {"role": "model", "parts": []}, "index": 0}
        parts = candidate["content"]["parts"]
        thinking = _mapping(config.get("thinkingConfig"))
        if thinking.get("includeThoughts") is True and thinking.get("thinkingBudget") != 0:
            parts.append({"text": THOUGHT, "thought": True})
        finish = FINISH_REASONS.get(reply.finish_reason, reply.finish_reason)
        if reply.kind == "tool":
            args = _object(reply.arguments)
            if args is None:  # Gemini never sends unreadable arguments: it reports the call malformed instead
                finish = "MALFORMED_FUNCTION_CALL"
            else:
                parts.append({"functionCall": {"name": reply.tool_name, "args": args}})
        elif reply.content or finish not in ("SAFETY", "RECITATION"):
            text = reply.content or ""
            parts.append({"text": _label(text) if config.get("responseMimeType") == "text/x.enum" else text})
        if not parts:  # a safety stop or a malformed call: no content at all
            del candidate["content"]
        candidate["finishReason"] = finish
        if finish == "SAFETY":
            candidate["safetyRatings"] = [
                {"category": "HARM_CATEGORY_DANGEROUS_CONTENT", "probability": "HIGH", "blocked": True}
            ]
        if server.logprobs and config.get("responseLogprobs") is True:
            candidate["logprobsResult"], candidate["avgLogprobs"] = _logprobs(reply, config.get("logprobs"))
        prompt_tokens, candidates_tokens = self.usage(body, reply)
        thoughts = word_count(THOUGHT) if thinking and thinking.get("thinkingBudget") != 0 else 0
        usage: dict[str, Any] = {"promptTokenCount": prompt_tokens, "candidatesTokenCount": candidates_tokens}
        if thoughts:
            usage["thoughtsTokenCount"] = thoughts
        if body.get("cachedContent"):
            usage["cachedContentTokenCount"] = prompt_tokens
        usage["totalTokenCount"] = prompt_tokens + candidates_tokens + thoughts
        return {
            "candidates": [candidate],
            "usageMetadata": usage,
            "modelVersion": "loopback",
            "responseId": uuid.uuid4().hex[:22],
        }

    def error(self, status: int, message: str, error_type: str, code: str | None) -> dict[str, Any]:
        """Google's error shape: ``{"error": {"code", "message", "status"}}``; a 429 whose message says when to
        retry (``retry in 7s``) carries it as a ``RetryInfo`` detail, as Google's do."""
        error: dict[str, Any] = {"code": status, "message": message, "status": STATUS_NAMES.get(status, "UNKNOWN")}
        delay = _RETRY_IN.search(message) if status == 429 else None
        if delay:
            error["details"] = [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": f"{delay[1]}s"}]
        return {"error": error}


def prompt_blocked(reason: str = "SAFETY", *, prompt_tokens: int = 8) -> Reply:
    """A prompt Gemini blocks before any candidate: no ``candidates``, ``promptFeedback.blockReason`` ``reason``.

    >>> json.loads(prompt_blocked().content)["promptFeedback"]["blockReason"]
    'SAFETY'
    """
    usage = {"promptTokenCount": prompt_tokens, "totalTokenCount": prompt_tokens}
    return Reply.raw({"promptFeedback": {"blockReason": reason}, "usageMetadata": usage, "modelVersion": "loopback"})


def resource_exhausted(retry_after: float = 1.0) -> Reply:
    """Google's 429: ``RESOURCE_EXHAUSTED`` whose message and ``RetryInfo`` detail give the delay in seconds, with
    no ``Retry-After`` header (Google sends none; :meth:`Reply.rate_limited` is a 429 with one).

    >>> GenerateContentAPI().error(429, resource_exhausted(7).error_message, "", None)["error"]["details"][0]["retryDelay"]
    '7s'
    """
    seconds = f"{retry_after:g}"
    message = f"You exceeded your current quota (loopback). Please retry in {seconds}s."
    return Reply.error(429, message)


# ------------------------------------------------------------------ reading requests
#: The fields whose values are free JSON (names of the user's, JSON Schema), not the API's messages.
_FREE_FIELDS = frozenset({"args", "response", "parametersJsonSchema", "responseJsonSchema", "example", "default"})


def _camelised(value: Any) -> Any:
    """A body with the API's field names in camelCase: Google's JSON parser takes ``mime_type`` for ``mimeType``
    (the google-genai SDK sends some of each); free JSON (:data:`_FREE_FIELDS`, the property names of a schema's
    ``properties``) is kept as sent.

    >>> _camelised({"inline_data": {"mime_type": "image/png"}, "properties": {"my_name": {"max_items": 1}}})
    {'inlineData': {'mimeType': 'image/png'}, 'properties': {'my_name': {'maxItems': 1}}}
    """
    if isinstance(value, list):
        return [_camelised(item) for item in value]
    if not isinstance(value, dict):
        return value
    converted: dict[str, Any] = {}
    for key, item in value.items():
        name = _SNAKE.sub(lambda match: match[1].upper(), key) if isinstance(key, str) else key
        if name == "properties" and isinstance(item, dict):
            converted[name] = {prop: _camelised(sub) for prop, sub in item.items()}
        else:
            converted[name] = item if name in _FREE_FIELDS else _camelised(item)
    return converted


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, dict) else {}


def _chat_parts(parts: Any) -> list[dict[str, Any]]:
    """Gemini parts as chat content parts: texts as ``{"type": "text"}``, others under their own key."""
    converted = []
    for part in parts if isinstance(parts, list) else ():
        if isinstance(part, dict) and isinstance(part.get("text"), str) and not part.get("thought"):
            converted.append({"type": "text", "text": part["text"]})
        elif isinstance(part, dict):
            kind = next(iter(part), "part")
            converted.append({"type": kind, kind: part[kind] if kind in part else None})
    return converted


def _forced_tool(body: Mapping[str, Any]) -> tuple[str, Mapping[str, Any]] | None:
    """``(name, parameters)`` of the function the request makes the model call: with mode ``ANY``, the first of
    ``allowedFunctionNames`` (else the first declared); with ``AUTO`` too, as chat's reading does; none with
    ``NONE``."""
    declared: dict[str, Mapping[str, Any]] = {}
    for tool in body.get("tools") or ():
        for function in _mapping(tool).get("functionDeclarations") or ():
            if isinstance(function, dict):
                schema = function.get("parametersJsonSchema", function.get("parameters"))
                declared[str(function.get("name"))] = _json_schema(schema) if isinstance(schema, dict) else {}
    config = _mapping(_mapping(body.get("toolConfig")).get("functionCallingConfig"))
    if not declared or config.get("mode") == "NONE":
        return None
    allowed = [name for name in config.get("allowedFunctionNames") or () if name in declared]
    name = allowed[0] if allowed else next(iter(declared))
    return name, declared[name]


def _json_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """An OpenAPI ``Schema`` (``"type": "STRING"``) as JSON Schema (``"type": "string"``), for :func:`auto_reply`."""
    converted: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "type" and isinstance(value, str):
            converted[key] = value.lower()
        elif key == "properties" and isinstance(value, dict):
            converted[key] = {k: _json_schema(v) if isinstance(v, dict) else v for k, v in value.items()}
        elif key == "items" and isinstance(value, dict):
            converted[key] = _json_schema(value)
        elif key == "anyOf" and isinstance(value, list):
            converted[key] = [_json_schema(v) if isinstance(v, dict) else v for v in value]
        else:
            converted[key] = value
    return converted


def _invalid_turn(turn: Any, where: str) -> str | None:
    if not isinstance(turn, dict):
        return f"{where}: an object with 'role' and 'parts'"
    if turn.get("role", "user") not in ("user", "model"):
        return f"{where}.role: 'user' or 'model', got {turn.get('role')!r} (Please use a valid role: user, model.)"
    parts = turn.get("parts")
    if not isinstance(parts, list) or not parts:
        return f"{where}.parts: a non-empty list (contents.parts must not be empty)"
    for index, part in enumerate(parts):
        if (
            not isinstance(part, dict)
            or not set(part) <= PART_FIELDS
            or not set(part) - {"thought", "thoughtSignature"}
        ):
            return f"{where}.parts[{index}]: one of text, inlineData, fileData, functionCall, functionResponse"
        data = part.get("inlineData")
        if data is not None and not (
            isinstance(data, dict) and data.get("mimeType") and isinstance(data.get("data"), str)
        ):
            return f"{where}.parts[{index}].inlineData: mimeType and base64 data"
    return None


def _invalid_tools(tools: Any) -> str | None:
    for index, tool in enumerate(tools or ()):
        for number, function in enumerate(_mapping(tool).get("functionDeclarations") or ()):
            where = f"tools[{index}].function_declarations[{number}]"
            if not isinstance(function, dict) or not function.get("name"):
                return f"{where}.name: required"
            if isinstance(function.get("parameters"), dict):
                problem = _invalid_schema(function["parameters"], f"{where}.parameters")
                if problem:
                    return problem
    return None


def _invalid_config(config: Mapping[str, Any]) -> str | None:
    unknown = sorted(set(config) - GENERATION_FIELDS)
    if unknown:
        return (
            f"Invalid JSON payload received. Unknown name \"{unknown[0]}\" at 'generation_config': Cannot find field."
        )
    if "responseSchema" in config and "responseJsonSchema" in config:
        return "generation_config: responseSchema and responseJsonSchema may not both be set"
    if isinstance(config.get("responseSchema"), dict):
        problem = _invalid_schema(config["responseSchema"], "generation_config.response_schema")
        if problem:
            return problem
    top = config.get("logprobs")
    if top is not None and not (is_int(top) and 0 <= top <= 20):
        return f"generation_config.logprobs: an integer in [0, 20], got {top!r}"
    if config.get("responseMimeType") == "text/x.enum":
        schema = _mapping(config.get("responseSchema", config.get("responseJsonSchema")))
        if not isinstance(schema.get("enum"), list):
            return "generation_config: responseMimeType text/x.enum needs a schema with an enum"
    return None


def _invalid_schema(schema: Any, where: str) -> str | None:
    """Why an OpenAPI ``Schema`` is refused: a key it has not (Google's words), in it or a sub-schema."""
    if not isinstance(schema, dict):
        return None
    unknown = sorted(set(schema) - SCHEMA_FIELDS)
    if unknown:
        return f"Invalid JSON payload received. Unknown name \"{unknown[0]}\" at '{where}': Cannot find field."
    if "enum" in schema and str(schema.get("type", "string")).lower() != "string":
        return f"{where}.enum: only allowed for STRING type"
    subs = [(f"{where}.properties[{k}]", v) for k, v in _mapping(schema.get("properties")).items()]
    subs += [(f"{where}.items", schema.get("items"))]
    subs += [(f"{where}.any_of[{i}]", v) for i, v in enumerate(schema.get("anyOf") or ())]
    return next((p for p in (_invalid_schema(sub, at) for at, sub in subs) if p), None)


# ------------------------------------------------------------------ writing replies
def _object(arguments: str) -> dict[str, Any] | None:
    try:
        value = json.loads(arguments)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _label(content: str) -> str:
    """An enum reply's text: the bare label (a JSON string's value, as a JSON reply would quote it)."""
    try:
        value = json.loads(content)
    except ValueError:
        return content
    return value if isinstance(value, str) else content


def _logprobs(reply: Reply, top: Any) -> tuple[dict[str, Any], float]:
    """``logprobsResult`` of the reply's scripted tokens (one certain token when none are scripted), ``top``
    alternatives per step, and the chosen tokens' mean log-probability (``avgLogprobs``)."""
    count = top if is_int(top) and top > 0 else 0
    text = (reply.arguments if reply.kind == "tool" else reply.content) or ""
    steps = reply.top_logprobs or ({text: 0.0},)
    chosen: list[dict[str, Any]] = []
    ranked: list[dict[str, Any]] = []
    total = 0.0
    for alternatives in steps:
        token = next(iter(alternatives))
        total += alternatives[token]
        chosen.append({"token": token, "logProbability": alternatives[token]})
        best = sorted(alternatives.items(), key=lambda pair: -pair[1])[:count]
        ranked.append({"candidates": [{"token": t, "logProbability": lp} for t, lp in best]})
    result: dict[str, Any] = {"chosenCandidates": chosen}
    if count:
        result["topCandidates"] = ranked
    return result, total / len(chosen)
