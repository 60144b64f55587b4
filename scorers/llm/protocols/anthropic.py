"""Anthropic's Messages API (``api="anthropic"``): ``POST /v1/messages`` through the official ``anthropic`` SDK.

The request, built in the chat shape, becomes the Messages API's body (:func:`messages_body`):

- system and developer messages are folded into the top-level ``system`` text; consecutive messages of one role
  are merged (the API alternates user and assistant turns); assistant tool calls become ``tool_use`` blocks and
  ``tool`` messages ``tool_result`` blocks of a user turn;
- content parts become content blocks: ``image_url`` (a data URI or an http(s) URL) an ``image`` block, ``file``
  (a data URI) a ``document`` block (PDF as base64, plain text as text); audio has no block here (a ConfigError);
- ``max_tokens`` is always sent (the API requires it): the request's, else :data:`DEFAULT_MAX_TOKENS`;
- ``temperature`` is capped at 1 (Anthropic's range) and not sent with thinking on, nor to the models that took
  sampling settings away (Claude 4.7 and later answer HTTP 400 "temperature is deprecated for this model");
- function tools become ``{name, description, input_schema}``; a named ``tool_choice`` becomes ``{type: tool,
  name, disable_parallel_tool_use: true}``, ``"required"`` ``{type: any}``, ``"auto"``/``"none"`` theirs;
- a ``json_schema`` response format becomes structured output, ``output_config: {format: {type: json_schema,
  schema}}``, its schema cut to the subset the API takes (:func:`structured_schema`); a ``json_object`` format
  with a schema is sent as that schema, one without is a ConfigError (the API has no schema-less JSON mode);
- ``reasoning_effort`` turns extended thinking on, ``thinking: {type: enabled, budget_tokens}`` with
  :data:`THINKING_BUDGETS`' budget, added to ``max_tokens`` (thinking counts within it); ``"none"`` leaves it off.
  A forced tool with thinking on is a ConfigError (the API refuses it: use ``json`` mode);
- ``seed`` is not sent (the API has none); ``logprobs`` is a ConfigError (it has none either).

The reply (:meth:`AnthropicProtocol.parse`): ``tool_use`` blocks are the tool calls (their ``input`` object kept as
its JSON text, so the result equals chat's for the same verdict), ``text`` blocks the content, ``thinking`` blocks
are kept apart from it; ``stop_reason`` is given in the chat vocabulary (:data:`FINISH_REASONS`), and ``refusal``
raises :class:`~scorers.llm.protocols.ReplyRefused`.

>>> from scorers.llm.protocol import ChatRequest
>>> verdict = {"type": "function", "function": {"name": "verdict", "parameters": {"type": "object"}}}
>>> body = messages_body(ChatRequest(
...     messages=[{"role": "developer", "content": "Judge."}, {"role": "user", "content": "Is it so?"},
...               {"role": "user", "content": "Y or N?"}],
...     tools=[verdict], tool_choice={"type": "function", "function": {"name": "verdict"}}), "claude-haiku-4-5", thinks=False)
>>> body["system"], [[block["text"] for block in turn["content"]] for turn in body["messages"]], body["max_tokens"]
('Judge.', [['Is it so?', 'Y or N?']], 4096)
>>> body["tools"], body["tool_choice"]
([{'name': 'verdict', 'input_schema': {'type': 'object'}}], {'type': 'tool', 'name': 'verdict', 'disable_parallel_tool_use': True})
"""

from __future__ import annotations

import base64
import binascii
import functools
import json
import re
from typing import Any, ClassVar, Mapping, Sequence

from ..._util import optional_import
from ...errors import ConfigError
from .base import Capabilities, Endpoint, HTTPReply, ReplyRefused, Request, Settings, Tokens, WireProtocol
from .result import ChatResult, InvalidReply, ToolCall, arguments_text, reply_result, usage_count

__all__ = [
    "AnthropicProtocol",
    "DEFAULT_MAX_TOKENS",
    "FINISH_REASONS",
    "THINKING_BUDGETS",
    "messages_body",
    "structured_schema",
]

#: ``max_tokens`` when a request gives none (the API requires one; every built-in judge gives its own).
DEFAULT_MAX_TOKENS = 4096

#: The thinking budget (tokens) of each ``reasoning_effort``; the API's least is 1,024.
THINKING_BUDGETS = {"minimal": 1024, "low": 2048, "medium": 8192, "high": 16384, "xhigh": 32768}

#: ``finish_reason`` (the chat vocabulary) by ``stop_reason``; ``refusal`` raises instead.
FINISH_REASONS = {
    **dict.fromkeys(("end_turn", "stop_sequence"), "stop"),
    **dict.fromkeys(("max_tokens", "model_context_window_exceeded"), "length"),
    "tool_use": "tool_calls",
}

#: The media types of the content blocks a prompt may carry (images, PDF and plain-text documents).
MEDIA_TYPES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp", "application/pdf", "text/plain"})

#: Claude models from 4.7 on take no sampling settings (``claude-opus-4-7``, ``claude-fable-5``...): family, major,
#: minor. Older names (``claude-3-5-sonnet-...``, ``claude-sonnet-4-5``) take a temperature.
_CLAUDE_VERSION = re.compile(r"(?:^|[/.:])claude-[a-z]+-(\d+)(?:-(\d{1,2}))?(?!\d)")

#: Schema keywords Anthropic's structured output refuses; their values are appended to the description instead.
_UNSUPPORTED_KEYWORDS = (
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minLength",
    "maxLength",
    "pattern",
    "maxItems",
    "uniqueItems",
    "minProperties",
    "maxProperties",
    "if",
    "then",
    "else",
    "not",
)


class AnthropicProtocol(WireProtocol):
    """Anthropic's Messages API (see the module docstring)."""

    name: ClassVar[str] = "anthropic"
    #: No log-probabilities (of the reply or the prompt), no forced tool with thinking on, no schema-less JSON mode.
    capabilities: ClassVar[Capabilities] = Capabilities(
        forced_tool_with_thinking=False,
        json_object=False,
        batch=True,
        attachments=frozenset({"image", "document"}),
        attachment_bytes=(("image", 5_000_000), ("document", 32_000_000)),  # per image; a PDF within a request's
        attachment_total_bytes=32_000_000,  # the Messages API's request size
        attachment_urls=frozenset({"image"}),  # an image_url's http(s) URL is a url source
    )
    endpoint: ClassVar[Endpoint] = Endpoint(
        key_env=("ANTHROPIC_API_KEY",),
        url_env=("ANTHROPIC_BASE_URL",),
        default_url="https://api.anthropic.com",
        key_hint="ANTHROPIC_API_KEY or api_key=",
    )
    extra: ClassVar[str | None] = "anthropic"
    client_family: ClassVar[str] = "anthropic"
    content_keys: ClassVar[frozenset[str]] = frozenset(
        {"model", "messages", "system", "tools", "tool_choice", "output_config"}
    )

    def path(self, model: str) -> str:
        return "/v1/messages"

    def body(self, request: Request, model: str, thinks: bool) -> dict[str, Any]:
        return messages_body(request, model, thinks=thinks)

    def parse(self, data: Any, *, model: str) -> ChatResult:
        if not isinstance(data, Mapping):
            raise InvalidReply(f"the message is not a JSON object: {str(data)[:200]!r}")
        content = data.get("content")
        if not isinstance(content, list):
            raise InvalidReply("the message has no content list")
        calls: list[ToolCall] = []
        texts: list[str] = []
        thoughts: list[str] = []
        for block in content:
            kind = block.get("type") if isinstance(block, Mapping) else None
            if kind == "tool_use":
                arguments = arguments_text(block.get("input") if block.get("input") is not None else {})
                calls.append(ToolCall(name=str(block.get("name") or ""), arguments=arguments, id=block.get("id")))
            elif kind == "text":
                texts.append(str(block.get("text") or ""))
            elif kind == "thinking" and str(block.get("thinking") or "").strip():
                thoughts.append(str(block["thinking"]).strip())
        stop_reason = data.get("stop_reason")
        if stop_reason == "refusal":
            raise ReplyRefused(_refusal_reason(data, texts))
        return reply_result(
            data,
            self.tokens(data),
            model=model,
            calls=calls,
            content="".join(texts) if texts else None,
            finish_reason=FINISH_REASONS.get(str(stop_reason), None if stop_reason is None else str(stop_reason)),
            reasoning="\n\n".join(thoughts) if thoughts else None,
        )

    def tokens(self, data: Any) -> Tokens:
        """``prompt``: input plus cache-read plus cache-creation tokens (all billed), ``cached_prompt`` the cache
        reads, ``completion`` the output (thinking included), ``reasoning`` its thinking tokens where stated."""
        usage = data.get("usage") if isinstance(data, Mapping) else None
        details = usage.get("output_tokens_details") if isinstance(usage, Mapping) else None
        read, written = usage_count(usage, "cache_read_input_tokens"), usage_count(usage, "cache_creation_input_tokens")
        return Tokens(
            usage_count(usage, "input_tokens") + read + written,
            usage_count(usage, "output_tokens"),
            read,
            usage_count(details, "thinking_tokens"),
        )

    def sent(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """The generation settings: all but the content, and ``output_config`` less its ``format``."""
        sent = super().sent(body)
        config = body.get("output_config")
        settings = {k: v for k, v in config.items() if k != "format"} if isinstance(config, Mapping) else {}
        if settings:
            sent["output_config"] = settings
        return sent

    # ---------------------------------------------------------------- transport
    async def client(self, settings: Settings) -> Any:
        """An ``anthropic.AsyncAnthropic`` for the settings' endpoint and key, its retries off (the engine's are
        the only ones). A base URL ending in ``/v1`` (an OpenAI-style one, as the loopback server's
        ``base_url``) is taken without it: the API's paths start with ``/v1``."""
        sdk = _sdk()
        base_url = settings.base_url.rstrip("/").removesuffix("/v1")
        return sdk.AsyncAnthropic(
            api_key=settings.api_key, base_url=base_url, max_retries=0, http_client=_http_client(sdk, settings)
        )

    async def post(self, client: Any, path: str, body: Mapping[str, Any], timeout: float) -> HTTPReply:
        sdk = _sdk()
        try:
            response = await client.post(
                path, body=dict(body), cast_to=_response_class(sdk), options={"max_retries": 0, "timeout": timeout}
            )
        except sdk.APIStatusError as exc:
            response = exc.response
        return HTTPReply(response.status_code, dict(response.headers.items()), response.content)

    def connection_errors(self) -> tuple[type[BaseException], ...]:
        return (_sdk().APIConnectionError,)


# ------------------------------------------------------------------------ the body
def messages_body(request: Request, model: str, *, thinks: bool) -> dict[str, Any]:
    """The Messages API body of ``request`` for ``model`` (see the module docstring); usable on its own, e.g. for
    the requests of a Message Batch. ``thinks``: thinking on even without a ``reasoning_effort``.

    >>> from scorers.llm.protocol import ChatRequest
    >>> request = ChatRequest(messages=[{"role": "user", "content": "Rate it."}], reasoning_effort="low", max_tokens=100)
    >>> body = messages_body(request, "claude-sonnet-4-5", thinks=False)
    >>> body["thinking"], body["max_tokens"]
    ({'type': 'enabled', 'budget_tokens': 2048}, 2148)
    """
    if request.logprobs:
        raise ConfigError(
            f"the anthropic protocol has no log-probabilities (model {model}); use a judge mode that does not need them"
        )
    effort = request.reasoning_effort
    budget = None if effort == "none" or not (effort or thinks) else THINKING_BUDGETS.get(effort or "medium")
    if effort not in (None, "none") and budget is None:
        raise ConfigError(
            f"reasoning_effort {effort!r} has no thinking budget on anthropic: one of {', '.join(THINKING_BUDGETS)}"
        )
    system, messages = _conversation(request.messages)
    body: dict[str, Any] = {"model": model, "max_tokens": (request.max_tokens or DEFAULT_MAX_TOKENS) + (budget or 0)}
    if system:
        body["system"] = system
    body["messages"] = messages
    if request.tools is not None:
        body["tools"] = [_tool(tool) for tool in request.tools]
    choice = _tool_choice(request.tool_choice)
    if choice is not None:
        body["tool_choice"] = choice
    if budget is not None and choice is not None and choice.get("type") in ("tool", "any"):
        raise ConfigError(
            f"anthropic refuses a forced tool call with extended thinking on (model {model}, reasoning_effort "
            f"{effort!r}): use response_mode='json' (structured output) or no reasoning_effort"
        )
    if request.temperature is not None and budget is None and _takes_temperature(model):
        body["temperature"] = min(float(request.temperature), 1.0)
    if budget is not None:
        body["thinking"] = {"type": "enabled", "budget_tokens": budget}
    if request.response_format is not None:
        body["output_config"] = {"format": _output_format(request.response_format, model)}
    return body


def _conversation(messages: Sequence[Mapping[str, Any]]) -> tuple[str, list[dict[str, Any]]]:
    """The ``system`` text (system and developer messages) and the user/assistant turns, merged by role."""
    system: list[str] = []
    turns: list[dict[str, Any]] = []
    for message in messages:
        role = message.get("role")
        content: str | list[dict[str, Any]]
        if role in ("system", "developer"):
            system.append(_text_of(message.get("content")))
            continue
        if role == "tool":
            role, content = "user", [_tool_result(message)]
        elif role == "assistant":
            content = _assistant_content(message)
        elif role == "user":
            content = _content(message.get("content"))
        else:
            raise ConfigError(f"a message's role must be system, developer, user, assistant or tool, got {role!r}")
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"] = _blocks(turns[-1]["content"]) + _blocks(content)
        else:
            turns.append({"role": role, "content": content})
    return "\n\n".join(text for text in system if text), turns


def _text_of(content: Any) -> str:
    """A system message's text: the content, or its text parts joined by newlines."""
    if isinstance(content, str):
        return content
    parts = content if isinstance(content, list) else []
    return "\n".join(str(part.get("text", "")) for part in parts if isinstance(part, Mapping) and "text" in part)


def _blocks(content: str | list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"type": "text", "text": content}] if isinstance(content, str) else content


def _content(content: Any) -> str | list[dict[str, Any]]:
    """A user message's content: a text as it is, chat content parts as content blocks."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return [_block(part) for part in content]


def _block(part: Mapping[str, Any]) -> dict[str, Any]:
    """One chat content part as a content block (one of Anthropic's own is sent as given)."""
    kind = part.get("type")
    if kind == "text":
        return {"type": "text", "text": str(part.get("text", ""))}
    if kind == "image_url":
        image = part.get("image_url")
        url = image.get("url") if isinstance(image, Mapping) else image
        if isinstance(url, str) and url.startswith(("http://", "https://")):
            return {"type": "image", "source": {"type": "url", "url": url}}
        media_type, data = _data_uri(url, "an image_url part")
        return {"type": "image", "source": {"type": "base64", "media_type": media_type, "data": data}}
    if kind == "file":
        file = part.get("file")
        media_type, data = _data_uri(file.get("file_data") if isinstance(file, Mapping) else None, "a file part")
        if media_type == "text/plain":
            text = base64.b64decode(data).decode("utf-8", "replace")
            return {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": text}}
        return {"type": "document", "source": {"type": "base64", "media_type": media_type, "data": data}}
    if kind == "input_audio":
        raise ConfigError("anthropic's Messages API takes no audio: judge audio with api='chat' or api='gemini'")
    return dict(part)


def _data_uri(uri: Any, what: str) -> tuple[str, str]:
    """``(media type, base64 data)`` of a ``data:<type>;base64,<data>`` URI; a ConfigError for anything else."""
    found = re.fullmatch(r"data:([\w.+-]+/[\w.+-]+);base64,(.*)", uri, re.DOTALL) if isinstance(uri, str) else None
    if found is None:
        raise ConfigError(f"{what} for anthropic must be a base64 data URI (data:TYPE;base64,...) or an http(s) URL")
    media_type, data = found.group(1), found.group(2)
    if media_type not in MEDIA_TYPES:
        raise ConfigError(f"anthropic takes {', '.join(sorted(MEDIA_TYPES))} content, not {media_type} ({what})")
    try:
        base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise ConfigError(f"{what} for anthropic: its data is not valid base64") from None
    return media_type, data


def _assistant_content(message: Mapping[str, Any]) -> str | list[dict[str, Any]]:
    """An assistant message's content, its tool calls as ``tool_use`` blocks after it."""
    content = _content(message.get("content"))
    calls = message.get("tool_calls") or ()
    if not calls:
        return content
    uses = []
    for call in calls:
        function = call.get("function") or {}
        try:
            arguments = json.loads(function.get("arguments") or "{}")
        except ValueError:
            arguments = {}
        uses.append({"type": "tool_use", "id": call.get("id"), "name": function.get("name"), "input": arguments})
    return [block for block in _blocks(content) if block.get("text") != ""] + uses


def _tool_result(message: Mapping[str, Any]) -> dict[str, Any]:
    content = message.get("content")
    return {
        "type": "tool_result",
        "tool_use_id": message.get("tool_call_id"),
        "content": content if isinstance(content, str) else _text_of(content),
    }


def _tool(tool: Mapping[str, Any]) -> dict[str, Any]:
    """A chat function tool as ``{name, description, input_schema}`` (any other tool is sent as given)."""
    function = tool.get("function")
    if tool.get("type") != "function" or not isinstance(function, Mapping):
        return dict(tool)
    converted: dict[str, Any] = {"name": function.get("name")}
    if function.get("description"):
        converted["description"] = function["description"]
    converted["input_schema"] = function.get("parameters") or {"type": "object", "properties": {}}
    return converted


def _tool_choice(choice: Any) -> dict[str, Any] | None:
    """A chat ``tool_choice`` as Anthropic's (see the module docstring)."""
    if choice is None:
        return None
    if isinstance(choice, Mapping):
        function = choice.get("function")
        name = function.get("name") if isinstance(function, Mapping) else choice.get("name")
        return {"type": "tool", "name": name, "disable_parallel_tool_use": True}
    kinds = {"auto": "auto", "none": "none", "required": "any"}
    if choice not in kinds:
        raise ConfigError(f"tool_choice {choice!r} has no anthropic counterpart: auto, none, required or a named tool")
    return {"type": kinds[choice]}


def _takes_temperature(model: str) -> bool:
    """Whether ``model`` takes a temperature: not the Claude models from 4.7 on (see :data:`_CLAUDE_VERSION`)."""
    found = _CLAUDE_VERSION.search(model)
    if found is None:
        return True
    major, minor = int(found.group(1)), int(found.group(2) or 0)
    return (major, minor) < (4, 7)


def _output_format(response_format: Mapping[str, Any], model: str) -> dict[str, Any]:
    """A chat ``response_format`` as ``output_config.format`` (structured output)."""
    kind = response_format.get("type")
    nested = response_format.get("json_schema")
    schema = nested.get("schema") if kind == "json_schema" and isinstance(nested, Mapping) else None
    if kind == "json_object":
        schema = response_format.get("schema")
    if not isinstance(schema, Mapping):
        raise ConfigError(
            f"anthropic's structured output needs a JSON schema (response_format {kind!r} without one, model "
            f"{model}); use response_mode='json' or 'tools'"
        )
    return {"type": "json_schema", "schema": structured_schema(schema)}


def structured_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """``schema`` within the subset Anthropic's structured output takes: ``additionalProperties: false`` on every
    object, ``oneOf`` as ``anyOf``, ``minItems`` above 1 dropped, and the keywords it refuses (bounds, lengths,
    patterns, ``if``/``then``/``else``, ``not``) taken out and stated in the description, so the model still reads
    them (the judge validates the reply against the whole schema).

    >>> structured_schema({"type": "object", "properties": {"score": {"type": "integer", "minimum": 1, "maximum": 5}}})
    {'type': 'object', 'properties': {'score': {'type': 'integer', 'description': '(minimum: 1, maximum: 5)'}}, 'additionalProperties': False}
    """
    out: dict[str, Any] = {}
    moved: list[str] = []
    for key, value in schema.items():
        if key in _UNSUPPORTED_KEYWORDS or (key == "minItems" and value not in (0, 1)):
            moved.append(f"{key}: {json.dumps(value)}")
        elif key in ("properties", "$defs", "definitions") and isinstance(value, Mapping):
            out[key] = {
                name: structured_schema(sub) if isinstance(sub, Mapping) else sub for name, sub in value.items()
            }
        elif key in ("items", "additionalItems") and isinstance(value, Mapping):
            out[key] = structured_schema(value)
        elif key in ("anyOf", "oneOf", "allOf") and isinstance(value, list):
            out["anyOf" if key == "oneOf" else key] = [
                structured_schema(s) if isinstance(s, Mapping) else s for s in value
            ]
        elif key != "additionalProperties":
            out[key] = value
    if out.get("type") == "object" or "properties" in out:
        out["additionalProperties"] = False
    if moved:
        described = out.get("description")
        out["description"] = f"{described} ({', '.join(moved)})" if described else f"({', '.join(moved)})"
    return out


# ------------------------------------------------------------------------ the reply
def _refusal_reason(data: Mapping[str, Any], texts: list[str]) -> str:
    """What a refusal says: its ``stop_details`` category and explanation, and any text the model wrote."""
    details = data.get("stop_details")
    said = ["stop_reason refusal"]
    if isinstance(details, Mapping):
        said += [f"{key} {details[key]}" for key in ("category", "explanation") if details.get(key)]
    text = "".join(texts).strip()
    if text:
        said.append(f"text {text[:300]!r}")
    return "anthropic refused to answer (" + "; ".join(said) + ")"


# ------------------------------------------------------------------------ the SDK
def _sdk() -> Any:
    return optional_import("anthropic", scorer="The anthropic protocol (api='anthropic')", extra="anthropic")


@functools.cache
def _response_class(sdk: Any) -> Any:
    """The HTTP response class of the httpx flavour the SDK sends with (``cast_to``: the raw response)."""
    import importlib

    for base in sdk.DefaultAsyncHttpxClient.__mro__:
        if base.__name__ == "AsyncClient":
            return importlib.import_module(base.__module__.split(".")[0]).Response
    raise ConfigError(f"anthropic {sdk.__version__}: cannot find the HTTP client it sends with")


def _http_client(sdk: Any, settings: Settings) -> Any:
    """The SDK's aiohttp client where the transport asks for it and it is installed, else its httpx one."""
    if settings.transport in ("auto", "aiohttp"):
        try:
            optional_import("aiohttp", scorer="The anthropic protocol's aiohttp transport", extra="aiohttp")
            return sdk.DefaultAioHttpClient()
        except (ImportError, RuntimeError) as exc:  # aiohttp missing, or an SDK without its aiohttp client
            if settings.transport == "aiohttp":
                raise ConfigError(f"transport='aiohttp' needs aiohttp and anthropic's aiohttp client ({exc})") from exc
    return sdk.DefaultAsyncHttpxClient()
