"""The Gemini API's ``generateContent`` (``POST /v1beta/models/{model}:generateContent``), natively.

The request is converted from the chat shape: system messages become ``systemInstruction``, ``assistant`` turns
``model`` turns (other roles ``user`` turns), content parts ``text`` and ``inlineData`` parts (``image_url`` data URIs, ``input_audio``,
``file``; an ``http(s)`` URL is a ``fileData`` part), function tools ``functionDeclarations`` (their JSON Schema
as ``parametersJsonSchema``, less ``$schema``), a forced ``tool_choice``
``functionCallingConfig`` mode ``ANY`` with ``allowedFunctionNames``, a ``json_schema`` response format
``responseMimeType: application/json`` with ``responseJsonSchema`` (``json_object``: the MIME type alone),
``logprobs``/``top_logprobs`` ``responseLogprobs``/``logprobs``, ``max_tokens`` ``maxOutputTokens`` and
``reasoning_effort`` ``thinkingConfig`` (:func:`thinking_config`). The body keeps ``"model"`` (the cache key reads
it); :meth:`GeminiProtocol.post` sends it in the path instead.

The reply's ``functionCall`` parts are the tool calls (``args``, an object, kept as its JSON text), its text parts
the content, thought parts (``thought: true``) the reasoning, kept apart; ``finishReason`` is given in chat's
vocabulary (``STOP`` is ``stop`` or ``tool_calls``, ``MAX_TOKENS`` ``length``). A safety stop (``SAFETY``,
``RECITATION``, ... or a prompt blocked: ``promptFeedback.blockReason``) raises :class:`ReplyRefused`;
``logprobsResult`` gives the tokens' log-probabilities. Tokens: thoughts are billed as output
(``completion = candidatesTokenCount + thoughtsTokenCount``).

The client is the engine's own HTTP client (aiohttp or httpx, as for chat), not the ``google-genai`` SDK: see
``docs/providers/gemini.md`` for why; the SDK's conventions are followed (``GOOGLE_API_KEY`` before
``GEMINI_API_KEY``, ``GOOGLE_GEMINI_BASE_URL``, the key in ``x-goog-api-key``).

>>> from scorers.llm.protocol import ChatRequest
>>> request = ChatRequest(
...     messages=[{"role": "system", "content": "Judge."}, {"role": "user", "content": "Is it so?"}],
...     tools=[{"type": "function", "function": {"name": "pick", "parameters": {
...         "type": "object", "properties": {"choice": {"type": "string", "enum": ["Y", "N"]}},
...         "additionalProperties": False}}}],
...     tool_choice={"type": "function", "function": {"name": "pick"}}, temperature=0, max_tokens=64)
>>> body = GeminiProtocol().body(request, "gemini-2.5-flash", thinks=False)
>>> body["systemInstruction"], body["contents"], body["toolConfig"]
({'parts': [{'text': 'Judge.'}]}, [{'role': 'user', 'parts': [{'text': 'Is it so?'}]}], {'functionCallingConfig': {'mode': 'ANY', 'allowedFunctionNames': ['pick']}})
>>> body["tools"][0]["functionDeclarations"][0]["parametersJsonSchema"]["additionalProperties"], body["generationConfig"]
(False, {'temperature': 0, 'maxOutputTokens': 64})
>>> reply = {"candidates": [{"content": {"role": "model", "parts": [{"functionCall": {"name": "pick", "args": {"choice": "Y"}}}]},
...          "finishReason": "STOP"}], "usageMetadata": {"promptTokenCount": 9, "candidatesTokenCount": 4, "thoughtsTokenCount": 20}}
>>> result = GeminiProtocol().parse(reply, model="gemini-2.5-flash")
>>> result.tool_calls[0].arguments, result.finish_reason, result.completion_tokens, result.reasoning_tokens
('{"choice": "Y"}', 'tool_calls', 24, 20)
"""

from __future__ import annotations

import base64
import json
import mimetypes
import re
import urllib.parse
from typing import Any, ClassVar, Mapping, Sequence

from ...errors import ConfigError
from .base import Capabilities, Endpoint, HTTPReply, ReplyRefused, Request, Settings, Tokens, WireProtocol
from .result import ChatResult, InvalidReply, ToolCall, arguments_text, put, reply_result, usage_count

__all__ = ["GeminiProtocol", "thinking_config"]

#: The API version the protocol posts to (the one whose features it uses: ``responseJsonSchema``, logprobs, thinking).
API_VERSION = "v1beta"

#: ``finishReason`` values that are a refusal or a safety stop (:class:`ReplyRefused`), not an unreadable reply.
REFUSALS = frozenset(
    {
        "SAFETY",
        "RECITATION",
        "BLOCKLIST",
        "PROHIBITED_CONTENT",
        "SPII",
        "LANGUAGE",
        "IMAGE_SAFETY",
        "IMAGE_PROHIBITED_CONTENT",
        "IMAGE_RECITATION",
    }
)
#: ``finishReason`` values of a function call the model botched (the reply is unreadable: re-asked).
MALFORMED = frozenset({"MALFORMED_FUNCTION_CALL", "UNEXPECTED_TOOL_CALL"})

#: Gemini 2.x thinking budgets (tokens) by ``reasoning_effort``, as Google's OpenAI-compatible endpoint maps them.
THINKING_BUDGETS = {"none": 0, "minimal": 0, "low": 1024, "medium": 8192, "high": 24576}

#: ``input_audio`` formats as MIME types.
_AUDIO_TYPES = {"mp3": "audio/mp3", "wav": "audio/wav", "flac": "audio/flac", "aac": "audio/aac", "ogg": "audio/ogg"}
_DATA_URI = re.compile(r"data:(?P<type>[^;,]*)(?P<params>(?:;[^;,]*)*),(?P<data>.*)", re.DOTALL)
_RETRY_DELAY = re.compile(r"(\d+(?:\.\d+)?)s")


class GeminiProtocol(WireProtocol):
    """The Gemini API's ``generateContent`` (see the module docstring)."""

    name: ClassVar[str] = "gemini"
    capabilities: ClassVar[Capabilities] = Capabilities(
        logprobs=True,
        batch=True,
        # the image, audio and document types the API documents for inline data, all of a request's within its
        # 20 MB request limit (counted as the body carries them: base64)
        attachments=frozenset(
            {"image/png", "image/jpeg", "image/webp", "image/heic", "image/heif", "audio", "application/pdf"}
        ),
        attachment_total_bytes=20_000_000,
    )
    endpoint: ClassVar[Endpoint] = Endpoint(
        key_env=("GOOGLE_API_KEY", "GEMINI_API_KEY"),
        url_env=("GOOGLE_GEMINI_BASE_URL",),
        default_url="https://generativelanguage.googleapis.com",
        key_hint="GEMINI_API_KEY (or GOOGLE_API_KEY, which the google-genai SDK reads first)",
    )
    client_family: ClassVar[str] = "gemini"
    content_keys: ClassVar[frozenset[str]] = frozenset(
        {"model", "contents", "systemInstruction", "tools", "toolConfig"}
    )

    def path(self, model: str) -> str:
        """``/v1beta/models/{model}:generateContent`` (a ``models/`` or ``tunedModels/`` prefix kept as given)."""
        name = model if "/" in model else f"models/{model}"
        return f"/{API_VERSION}/{urllib.parse.quote(name, safe='/-_.')}:generateContent"

    def body(self, request: Request, model: str, thinks: bool) -> dict[str, Any]:
        system, contents = _contents(request.messages)
        body: dict[str, Any] = {"model": model, "contents": contents}
        put(body, "systemInstruction", {"parts": system} if system else None)
        put(body, "tools", _tools(request.tools))
        put(body, "toolConfig", _tool_config(request.tool_choice))
        config: dict[str, Any] = {}
        put(config, "temperature", request.temperature)
        put(config, "maxOutputTokens", request.max_tokens)
        put(config, "seed", request.seed)
        config.update(_response_format(request.response_format))
        if request.logprobs:
            config["responseLogprobs"] = True
            put(config, "logprobs", request.top_logprobs)
        put(config, "thinkingConfig", thinking_config(request.reasoning_effort, model))
        put(body, "generationConfig", config or None)
        return body

    def parse(self, data: Any, *, model: str) -> ChatResult:
        """Read the first candidate (see the module docstring); :class:`InvalidReply` on an odd shape,
        :class:`ReplyRefused` on a safety stop or a blocked prompt."""
        if not isinstance(data, Mapping):
            raise InvalidReply(f"the reply is not a JSON object: {str(data)[:200]!r}")
        candidates = data.get("candidates")
        if not isinstance(candidates, list) or not candidates or not isinstance(candidates[0], Mapping):
            feedback = data.get("promptFeedback")
            blocked = feedback.get("blockReason") if isinstance(feedback, Mapping) else None
            if blocked:
                raise ReplyRefused(f"Gemini blocked the prompt (promptFeedback.blockReason {blocked})")
            raise InvalidReply("the reply has no candidates")
        candidate = candidates[0]
        finish = str(candidate.get("finishReason") or "STOP")
        if finish in REFUSALS:
            raise ReplyRefused(f"Gemini stopped the reply (finishReason {finish})")
        if finish in MALFORMED:
            raise InvalidReply(f"Gemini could not make the function call (finishReason {finish})")
        calls, texts, thoughts = _parts(candidate.get("content"))
        return reply_result(
            {"model": data.get("modelVersion")},
            self.tokens(data),
            model=model,
            content="".join(texts) if texts else None,
            calls=calls,
            finish_reason=_finish_reason(finish, calls),
            logprobs=_logprobs(candidate.get("logprobsResult")),
            reasoning="".join(thoughts) if thoughts else None,
        )

    def tokens(self, data: Any) -> Tokens:
        """``usageMetadata``: ``promptTokenCount`` (cached ones included), ``candidatesTokenCount`` plus
        ``thoughtsTokenCount`` (thoughts are billed as output), of which ``cachedContentTokenCount`` and
        ``thoughtsTokenCount``.

        >>> GeminiProtocol().tokens({"usageMetadata": {"promptTokenCount": 90, "candidatesTokenCount": 4,
        ...     "thoughtsTokenCount": 30, "cachedContentTokenCount": 64}})
        Tokens(prompt=90, completion=34, cached_prompt=64, reasoning=30)
        """
        usage = data.get("usageMetadata") if isinstance(data, Mapping) else None
        thoughts = usage_count(usage, "thoughtsTokenCount")
        return Tokens(
            usage_count(usage, "promptTokenCount"),
            usage_count(usage, "candidatesTokenCount") + thoughts,
            usage_count(usage, "cachedContentTokenCount"),
            thoughts,
        )

    # ---------------------------------------------------------------- transport
    async def client(self, settings: Settings) -> Any:
        """The engine's HTTP client (its transport setting: aiohttp or httpx) with the endpoint's root as base URL
        (a base URL ending in ``/v1`` or ``/v1beta``, as the loopback server's ``base_url``, is taken without it)
        and the key in ``x-goog-api-key``; it never retries."""
        from ..http import credentials_apart, http_client

        client = http_client(settings.transport)
        base_url, auth = credentials_apart(re.sub(r"/v1(beta)?/?$", "", settings.base_url.rstrip("/")))
        client.base_url = base_url
        if auth is not None:  # the URL's credentials as HTTP Basic auth, never in a logged URL
            client.auth = auth
        if settings.api_key:
            client.headers["x-goog-api-key"] = settings.api_key
        return client

    async def post(self, client: Any, path: str, body: Mapping[str, Any], timeout: float) -> HTTPReply:
        """POST ``body`` (less its ``model``, which is in ``path``). A 429 whose body says when to retry
        (``RetryInfo.retryDelay``) and no ``Retry-After`` header gets that header; a 400 for an invalid API key
        (``API_KEY_INVALID``, Google's status for it) is given as the 401 it means."""
        sent = json.dumps({key: value for key, value in body.items() if key != "model"}).encode()
        response = await client.post(path, content=sent, headers={"content-type": "application/json"}, timeout=timeout)
        headers = {name.lower(): value for name, value in response.headers.items()}
        status, content = response.status_code, response.content
        if status in (400, 429):
            status, headers = _status_meant(status, headers, content)
        return HTTPReply(status, headers, content)

    def connection_errors(self) -> tuple[type[BaseException], ...]:
        from ..http import httpx_module

        return (httpx_module().TransportError,)


# ------------------------------------------------------------------ the request
def _contents(messages: Sequence[Mapping[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The system instruction's parts (of every ``system``/``developer`` message) and the ``contents``: ``assistant``
    turns as ``model``, any other role as ``user``, in order (a turn without content left out)."""
    system: list[dict[str, Any]] = []
    contents: list[dict[str, Any]] = []
    for message in messages:
        role = message.get("role")
        parts = _parts_of(message)
        if role in ("system", "developer"):
            system.extend(parts)
        elif parts:
            contents.append({"role": "model" if role == "assistant" else "user", "parts": parts})
    return system, contents


def _parts_of(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A chat message's content as Gemini parts, and an assistant's tool calls as ``functionCall`` parts."""
    content = message.get("content")
    parts: list[dict[str, Any]]
    if isinstance(content, str):
        parts = [{"text": content}] if content else []
    else:
        parts = [_part(part) for part in content or ()]
    for call in message.get("tool_calls") or ():
        function = call.get("function") or {}
        arguments = function.get("arguments") or "{}"
        args = json.loads(arguments) if isinstance(arguments, str) else arguments
        parts.append({"functionCall": {"name": function.get("name"), "args": args}})
    return parts


def _part(part: Mapping[str, Any]) -> dict[str, Any]:
    """One chat content part as a Gemini part: ``text``; ``image_url``, ``input_audio`` and ``file`` as
    ``inlineData`` (a data URI or base64 data) or ``fileData`` (a URL or a file id)."""
    kind = part.get("type")
    if kind == "text":
        return {"text": part.get("text", "")}
    if kind == "image_url":
        image = part.get("image_url")
        url = image.get("url") if isinstance(image, Mapping) else image
        return _media(str(url or ""), "image")
    if kind == "input_audio":
        audio = part.get("input_audio") or {}
        audio_format = str(audio.get("format") or "wav")
        return {
            "inlineData": {
                "mimeType": _AUDIO_TYPES.get(audio_format, f"audio/{audio_format}"),
                "data": audio.get("data"),
            }
        }
    if kind == "file":
        file = part.get("file") or {}
        if file.get("file_data"):
            return _media(str(file["file_data"]), "document", file.get("filename"))
        if file.get("file_url"):
            return _media(str(file["file_url"]), "document", file.get("filename"))
        if file.get("file_id"):
            return {"fileData": {"fileUri": file["file_id"]}}
    raise ConfigError(
        f"a {kind!r} content part has no Gemini form (the gemini protocol sends text, image_url, input_audio and "
        f"file parts)"
    )


def _media(url: str, what: str, filename: str | None = None) -> dict[str, Any]:
    """A data URI as ``inlineData`` (its media type and base64 data), a URL as ``fileData`` (its type guessed)."""
    found = _DATA_URI.fullmatch(url)
    if found:
        mime = found["type"] or "application/octet-stream"
        data = found["data"]
        if ";base64" not in found["params"]:
            data = base64.b64encode(urllib.parse.unquote_to_bytes(data)).decode("ascii")
        return {"inlineData": {"mimeType": mime, "data": data}}
    if not url:
        raise ConfigError(f"an {what} content part has no URL or data")
    guessed, _ = mimetypes.guess_type(filename or urllib.parse.urlparse(url).path)
    file: dict[str, Any] = {"fileUri": url}
    put(file, "mimeType", guessed)
    return {"fileData": file}


def _tools(tools: Sequence[Mapping[str, Any]] | None) -> list[dict[str, Any]] | None:
    """Chat function tools as one ``functionDeclarations`` tool, their parameters as ``parametersJsonSchema``."""
    if tools is None:
        return None
    declarations = []
    for tool in tools:
        function = tool.get("function")
        if tool.get("type") != "function" or not isinstance(function, Mapping):
            raise ConfigError(f"the gemini protocol sends function tools only, got {dict(tool)!r:.200}")
        declaration: dict[str, Any] = {"name": function.get("name")}
        put(declaration, "description", function.get("description"))
        put(declaration, "parametersJsonSchema", _json_schema(function.get("parameters")))
        declarations.append(declaration)
    return [{"functionDeclarations": declarations}] if declarations else None


def _tool_config(choice: str | Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A named ``tool_choice`` as mode ``ANY`` with ``allowedFunctionNames``; ``required``, ``auto``, ``none`` as
    ``ANY``, ``AUTO``, ``NONE``."""
    if isinstance(choice, Mapping):
        function = choice.get("function")
        name = function.get("name") if isinstance(function, Mapping) else choice.get("name")
        return {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": [name]}}
    modes = {"required": "ANY", "auto": "AUTO", "none": "NONE"}
    return None if choice is None else {"functionCallingConfig": {"mode": modes.get(choice, str(choice).upper())}}


def _response_format(response_format: Mapping[str, Any] | None) -> dict[str, Any]:
    """``json_schema``: ``application/json`` with ``responseJsonSchema`` (``$schema`` left out); ``json_object``:
    ``application/json``; ``text``: nothing."""
    if response_format is None or response_format.get("type") == "text":
        return {}
    config: dict[str, Any] = {"responseMimeType": "application/json"}
    nested = response_format.get("json_schema")
    schema = nested.get("schema") if isinstance(nested, Mapping) else None
    if response_format.get("type") == "json_schema" and isinstance(schema, Mapping):
        config["responseJsonSchema"] = _json_schema(schema)
    return config


def _json_schema(schema: Any) -> Any:
    """A judge's JSON Schema as sent to the API: as given, less ``$schema`` (which the API refuses); ``None``
    stays ``None``. Sent as JSON Schema (``parametersJsonSchema``, ``responseJsonSchema``), not in the OpenAPI
    subset of ``parameters``/``responseSchema``, which refuses ``additionalProperties`` and an integer ``enum``
    (a rating scale's) that JSON Schema takes: the schema is the one chat sends, constraints and all."""
    if not isinstance(schema, Mapping):
        return schema
    return {key: value for key, value in schema.items() if key != "$schema"}


def thinking_config(effort: str | None, model: str) -> dict[str, Any] | None:
    """``reasoning_effort`` as ``thinkingConfig``: on Gemini 2.x a ``thinkingBudget`` (``none``/``minimal`` 0,
    ``low`` 1,024, ``medium`` 8,192, ``high`` 24,576 tokens, as Google's OpenAI-compatible endpoint maps them);
    on later models (Gemini 3) a ``thinkingLevel`` of the effort's name; ``None``: the model's default.

    >>> thinking_config("low", "gemini-2.5-flash"), thinking_config("high", "gemini-3-pro-preview")
    ({'thinkingBudget': 1024}, {'thinkingLevel': 'high'})
    """
    if effort is None:
        return None
    if re.search(r"gemini-(1|2)\.", model):
        if effort not in THINKING_BUDGETS:
            raise ConfigError(
                f"reasoning_effort {effort!r}: Gemini 2 models take one of {', '.join(THINKING_BUDGETS)} (sent as "
                f"a thinkingBudget)"
            )
        return {"thinkingBudget": THINKING_BUDGETS[effort]}
    return {"thinkingLevel": "minimal" if effort == "none" else effort}


# ------------------------------------------------------------------ the reply
def _parts(content: Any) -> tuple[list[ToolCall], list[str], list[str]]:
    """The function calls, the texts and the thoughts of a candidate's ``content.parts``, in order."""
    calls: list[ToolCall] = []
    texts: list[str] = []
    thoughts: list[str] = []
    parts = content.get("parts") if isinstance(content, Mapping) else None
    for part in parts if isinstance(parts, list) else ():
        if not isinstance(part, Mapping):
            raise InvalidReply(f"a part of the reply is not an object: {str(part)[:200]!r}")
        call = part.get("functionCall")
        if isinstance(call, Mapping):
            calls.append(ToolCall(str(call.get("name") or ""), arguments_text(call.get("args") or {}), call.get("id")))
        elif isinstance(part.get("text"), str):
            (thoughts if part.get("thought") else texts).append(part["text"])
    return calls, texts, thoughts


def _finish_reason(finish: str, calls: Sequence[ToolCall]) -> str:
    if finish == "STOP":
        return "tool_calls" if calls else "stop"
    return "length" if finish == "MAX_TOKENS" else finish.lower()


def _logprobs(result: Any) -> list[dict[str, Any]] | None:
    """``logprobsResult`` in the chat shape: each chosen token with the step's top candidates (a value left out,
    as proto JSON leaves out zeros, is 0); ``None`` when the reply has none."""
    if not isinstance(result, Mapping):
        return None
    chosen = result.get("chosenCandidates")
    steps = result.get("topCandidates")
    if not isinstance(chosen, list):
        raise InvalidReply(f"the reply's logprobsResult has no chosenCandidates: {str(result)[:200]!r}")
    tops = steps if isinstance(steps, list) else []
    tokens = []
    for index, token in enumerate(chosen):
        step = tops[index] if index < len(tops) and isinstance(tops[index], Mapping) else {}
        tokens.append(
            {
                **_token(token),
                "top_logprobs": [_token(alternative) for alternative in step.get("candidates") or ()],
            }
        )
    return tokens


def _token(candidate: Any) -> dict[str, Any]:
    if not isinstance(candidate, Mapping):
        return {"token": candidate}  # refused as malformed where it is read
    return {"token": candidate.get("token", ""), "logprob": candidate.get("logProbability", 0.0)}


def _status_meant(status: int, headers: dict[str, str], content: bytes) -> tuple[int, dict[str, str]]:
    """The status and headers a Google error means (see :meth:`GeminiProtocol.post`)."""
    try:
        error = json.loads(content).get("error")
        details = [detail for detail in error.get("details") or () if isinstance(detail, Mapping)]
    except (ValueError, AttributeError, TypeError):
        return status, headers
    if status == 400 and any(detail.get("reason") == "API_KEY_INVALID" for detail in details):
        return 401, headers
    if status == 429 and "retry-after" not in headers:
        for detail in details:
            delay = _RETRY_DELAY.fullmatch(str(detail.get("retryDelay") or ""))
            if delay:
                return status, {**headers, "retry-after": delay[1]}
    return status, headers
