"""Amazon Bedrock's Converse API (``api="bedrock"``): ``POST /model/{modelId}/converse``, signed with SigV4.

``botocore`` (the ``bedrock`` extra) finds the credentials (the AWS chain: ``AWS_ACCESS_KEY_ID`` and
``AWS_SECRET_ACCESS_KEY`` with ``AWS_SESSION_TOKEN``, a profile, SSO, a role...) and signs each request; the engine's
own HTTP stack sends it (aiohttp, else httpx, as ``transport`` says), so no synchronous client and no second retry
policy sit under the engine. The request, built in the chat shape, becomes Converse's body (:func:`converse_body`):

- system and developer messages become ``system`` text blocks; consecutive messages of one role are merged (Converse
  alternates user and assistant turns); assistant tool calls become ``toolUse`` blocks and ``tool`` messages
  ``toolResult`` blocks of a user turn;
- content parts become content blocks: text ``text``, an ``image_url`` data URI an ``image`` (its format from the
  media type), a ``file`` data URI a ``document``; Converse fetches no URL (an ``s3://`` one aside), so an
  ``http(s)`` image is a ConfigError;
- function tools become ``toolSpec`` with ``inputSchema.json``; a named ``tool_choice`` ``toolChoice.tool``,
  ``"required"`` ``any``, ``"auto"`` ``auto``, ``"none"`` sends no tools;
- a ``json_schema`` response format becomes a forced tool, :data:`JSON_TOOL`, whose input schema is the format's
  (Converse's own ``outputConfig.textFormat`` serves only some models); a ``json_object`` format the same tool with
  the schema ``{"type": "object"}``. Its input comes back as the reply's content, the JSON text chat would give;
- ``temperature`` and ``max_tokens`` go in ``inferenceConfig`` (no temperature for a reasoning model); ``seed`` is
  not sent (Converse has none); ``logprobs`` and ``reasoning_effort`` are ConfigErrors: Converse has no
  log-probabilities, and thinking is a model's own field (send it with ``extra={"additionalModelRequestFields":
  {...}}``).

The reply (:meth:`BedrockProtocol.parse`): ``toolUse`` blocks are the tool calls (their ``input`` object kept as its
JSON text, so the result equals chat's for the same verdict), ``text`` blocks the content, ``reasoningContent``
blocks are kept apart as the reasoning; ``stopReason`` is given in the chat vocabulary (:data:`FINISH_REASONS`);
``guardrail_intervened`` and ``content_filtered`` raise :class:`~scorers.llm.protocols.ReplyRefused`.

>>> from scorers.llm.protocol import ChatRequest
>>> request = ChatRequest(
...     messages=[{"role": "system", "content": "Judge."}, {"role": "user", "content": "Is it so?"}],
...     tools=[{"type": "function", "function": {"name": "pick", "parameters": {"type": "object"}}}],
...     tool_choice={"type": "function", "function": {"name": "pick"}}, temperature=0, max_tokens=64)
>>> body = converse_body(request, "anthropic.claude-3-5-haiku-20241022-v1:0", thinks=False)
>>> body["system"], body["messages"]
([{'text': 'Judge.'}], [{'role': 'user', 'content': [{'text': 'Is it so?'}]}])
>>> body["toolConfig"]["toolChoice"], body["inferenceConfig"]
({'tool': {'name': 'pick'}}, {'maxTokens': 64, 'temperature': 0})
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import re
from typing import Any, ClassVar, Mapping, Sequence
from urllib.parse import quote

from ..._util import memoize, optional_import
from ...errors import ConfigError
from .base import Capabilities, Endpoint, Environ, HTTPReply, ReplyRefused, Request, Settings, WireProtocol
from .result import ChatResult, InvalidReply, Tokens, ToolCall, arguments_text, reply_result, usage_count

__all__ = ["BedrockProtocol", "FINISH_REASONS", "JSON_TOOL", "REFUSALS", "converse_body"]

#: The forced tool that carries a JSON response format's schema; its input is the reply's content.
JSON_TOOL = "json_answer"
_JSON_TOOL_DESCRIPTION = "Give your whole answer as this tool's input, which follows the answer's JSON schema."

#: ``finish_reason`` (the chat vocabulary) by ``stopReason``.
FINISH_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
}
#: The ``stopReason`` values of a reply the provider withheld (:class:`~scorers.llm.protocols.ReplyRefused`).
REFUSALS = {
    "guardrail_intervened": "a Bedrock guardrail intervened",
    "content_filtered": "Bedrock's content filter stopped the reply",
}
#: Those of an unusable reply (re-asked).
_MALFORMED = {
    "malformed_model_output": "the model's output was malformed",
    "malformed_tool_use": "the model's tool call was malformed",
}

#: Converse's image formats and document formats by media type.
IMAGE_FORMATS = {"image/png": "png", "image/jpeg": "jpeg", "image/gif": "gif", "image/webp": "webp"}
DOCUMENT_FORMATS = {
    "application/pdf": "pdf",
    "text/csv": "csv",
    "application/msword": "doc",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "docx",
    "application/vnd.ms-excel": "xls",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": "xlsx",
    "text/html": "html",
    "text/plain": "txt",
    "text/markdown": "md",
}

#: The AWS credential chain's variables (besides the base URL's): an engine's workers take them from the driver.
CHAIN_ENV = (
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_PROFILE",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
    "AWS_CONFIG_FILE",
    "AWS_SHARED_CREDENTIALS_FILE",
)
_CREDENTIALS_HINT = (
    "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (with AWS_SESSION_TOKEN for temporary ones), or AWS_PROFILE, or "
    "any other source of the AWS credential chain"
)
_AWS_HOST = re.compile(r"^https?://bedrock-runtime(?:-fips)?\.([a-z0-9-]+)\.amazonaws\.com(?:\.cn)?(?::\d+)?(?:/|$)")
_DATA_URI = re.compile(r"^data:([\w.+-]+/[\w.+-]+)(?:;[\w=.+-]+)*?;base64,(.*)$", re.S)


def _regional_url(environ: Environ) -> str:
    """``https://bedrock-runtime.{region}.amazonaws.com``, the region the environment's (a ConfigError without)."""
    region = _region(environ)
    if region is None:
        raise ConfigError(
            "no AWS region for the bedrock protocol: set AWS_REGION (or AWS_DEFAULT_REGION, or a region in the AWS "
            "profile), or the endpoint itself (AWS_ENDPOINT_URL_BEDROCK_RUNTIME or base_url=)"
        )
    return f"https://bedrock-runtime.{region}.amazonaws.com"


class BedrockProtocol(WireProtocol):
    """Amazon Bedrock's Converse API (see the module docstring)."""

    name: ClassVar[str] = "bedrock"
    capabilities: ClassVar[Capabilities] = Capabilities(
        logprobs=False,
        prompt_logprobs=False,
        forced_tool=True,
        forced_tool_with_thinking=False,
        json_schema=True,
        json_object=True,
        batch=False,
        attachments=frozenset({*IMAGE_FORMATS, *DOCUMENT_FORMATS}),
        attachment_bytes=(("image", 3_750_000), ("document", 4_500_000)),  # Converse's limits per image and document
    )
    endpoint: ClassVar[Endpoint] = Endpoint(
        key_env=(),
        url_env=("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", "AWS_ENDPOINT_URL"),
        default_url=_regional_url,
        key_hint=_CREDENTIALS_HINT,
        env=CHAIN_ENV,
    )
    extra: ClassVar[str | None] = "bedrock"
    client_family: ClassVar[str] = "bedrock"
    content_keys: ClassVar[frozenset[str]] = frozenset({"model", "system", "messages", "toolConfig"})

    def path(self, model: str) -> str:
        """``/model/{modelId}/converse``, the model id percent-encoded as botocore does (``:`` is ``%3A``, the
        ``/`` of an ARN ``%2F``)."""
        return f"/model/{quote(model, safe='')}/converse"

    def body(self, request: Request, model: str, thinks: bool) -> dict[str, Any]:
        return converse_body(request, model, thinks=thinks)

    def parse(self, data: Any, *, model: str) -> ChatResult:
        output = data.get("output") if isinstance(data, Mapping) else None
        message = output.get("message") if isinstance(output, Mapping) else None
        content = message.get("content") if isinstance(message, Mapping) else None
        if not isinstance(content, list):
            raise InvalidReply(f"the reply has no output message with content: {str(data)[:200]!r}")
        stop_reason = str(data.get("stopReason"))
        texts, calls, reasoning = _read_blocks(content)
        if stop_reason in REFUSALS:
            raise ReplyRefused(f"{REFUSALS[stop_reason]} (stopReason {stop_reason}): {''.join(texts)[:300]!r}")
        if stop_reason in _MALFORMED:
            raise InvalidReply(f"{_MALFORMED[stop_reason]} (stopReason {stop_reason})")
        answers = [call for call in calls if call.name == JSON_TOOL]
        if answers:  # a JSON response format's answer: the content chat would give
            texts, calls = [answers[0].arguments], [call for call in calls if call.name != JSON_TOOL]
        finish = FINISH_REASONS.get(stop_reason, stop_reason)
        return reply_result(
            data,
            self.tokens(data),
            model=model,
            content="".join(texts) if texts else None,
            calls=calls,
            finish_reason="stop" if answers and finish == "tool_calls" else finish,
            reasoning="\n".join(reasoning) if reasoning else None,
        )

    def tokens(self, data: Any) -> Tokens:
        """``prompt``: ``inputTokens`` plus the prompt-cache reads and writes (Bedrock counts them apart; all are
        billed), ``cached_prompt`` the reads, ``completion`` ``outputTokens``.

        >>> BedrockProtocol().tokens({"usage": {"inputTokens": 9, "outputTokens": 40, "cacheReadInputTokens": 1900}})
        Tokens(prompt=1909, completion=40, cached_prompt=1900, reasoning=0)
        """
        usage = data.get("usage") if isinstance(data, Mapping) else None
        if not isinstance(usage, Mapping):
            return Tokens()
        read = usage_count(usage, "cacheReadInputTokens")
        return Tokens(
            prompt=usage_count(usage, "inputTokens") + read + usage_count(usage, "cacheWriteInputTokens"),
            completion=usage_count(usage, "outputTokens"),
            cached_prompt=read,
        )

    # ---------------------------------------------------------------- transport
    async def client(self, settings: Settings) -> Any:
        """A :class:`ConverseClient` for the settings' endpoint: the credentials of the AWS chain and the region (the
        endpoint's own, else the environment's), over the engine's HTTP stack (``settings.transport``). A base URL
        ending in ``/v1`` (an OpenAI-style one, as the loopback server's ``base_url``) is taken without it.

        Nothing here awaits: the engine makes one client per endpoint and loop, and a client made while another
        request's was awaiting would be a second one, its HTTP session never closed (32 requests in flight at the
        start made 32). So the chain is read at once (a profile's SSO or role may take a network call, once)."""
        base_url = settings.base_url.rstrip("/").removesuffix("/v1")
        region = _url_region(base_url) or _region(settings.environ)
        if region is None:
            raise ConfigError(
                f"no AWS region to sign the bedrock requests to {base_url} with: set AWS_REGION (or "
                "AWS_DEFAULT_REGION, or a region in the AWS profile)"
            )
        environ = settings.environ
        return ConverseClient(base_url, region, _credentials(environ), _sender(settings.transport), environ)

    async def post(self, client: Any, path: str, body: Mapping[str, Any], timeout: float) -> HTTPReply:
        """Sign the body (without its ``model``, which is in the path) and send it; the reply whatever its status."""
        payload = json.dumps({key: value for key, value in body.items() if key != "model"}).encode()
        url = client.base_url + path
        return await client.send(url, payload, client.signed_headers(url, payload), timeout)

    def connection_errors(self) -> tuple[type[BaseException], ...]:
        return _connection_errors()

    def redacted(self, settings: Settings) -> tuple[str, ...]:
        """The environment's AWS secret access key and session token (SigV4 never sends the secret; the token goes
        in a header no message shows, but neither may appear anywhere)."""
        environ = settings.environ
        secrets = (environ.get("AWS_SECRET_ACCESS_KEY"), environ.get("AWS_SESSION_TOKEN"))
        return tuple(value.strip() for value in secrets if value and value.strip())


# ------------------------------------------------------------------------ the body
def converse_body(request: Request, model: str, *, thinks: bool) -> dict[str, Any]:
    """The Converse body of ``request`` for ``model`` (see the module docstring), ``"model"`` included (the engine's
    cache key and usage read it; :meth:`BedrockProtocol.post` sends it in the path). ``thinks``: a reasoning model,
    sent no temperature.

    >>> from scorers.llm.protocol import ChatRequest
    >>> schema = {"type": "object", "properties": {"score": {"type": "integer"}}}
    >>> request = ChatRequest(messages=[{"role": "user", "content": "Rate it."}],
    ...                       response_format={"type": "json_schema", "json_schema": {"name": "r", "schema": schema}})
    >>> tools = converse_body(request, "amazon.nova-pro-v1:0", thinks=False)["toolConfig"]
    >>> tools["tools"][0]["toolSpec"]["name"], tools["tools"][0]["toolSpec"]["inputSchema"]["json"] == schema
    ('json_answer', True)
    """
    name = model
    if request.logprobs:
        raise ConfigError(
            f"the bedrock protocol has no log-probabilities (model {name}); use a judge mode that does not need them"
        )
    if request.reasoning_effort not in (None, "none"):
        raise ConfigError(
            f"the bedrock protocol has no reasoning_effort (model {name}): each model turns thinking on with its "
            "own field; send it with extra={'additionalModelRequestFields': {...}}"
        )
    system, messages = _conversation(request.messages)
    body: dict[str, Any] = {"model": name}
    if system:
        body["system"] = system
    body["messages"] = messages
    inference: dict[str, Any] = {}
    if request.max_tokens is not None:
        inference["maxTokens"] = request.max_tokens
    if request.temperature is not None and not thinks:
        inference["temperature"] = request.temperature
    if inference:
        body["inferenceConfig"] = inference
    tool_config = _tool_config(request, name)
    if tool_config is not None:
        body["toolConfig"] = tool_config
    return body


def _tool_config(request: Request, model: str) -> dict[str, Any] | None:
    """``toolConfig``: the function tools and ``toolChoice``, or the forced :data:`JSON_TOOL` of a JSON response
    format; None without tools (or with ``tool_choice="none"``)."""
    schema = _response_schema(request.response_format)
    if schema is not None:
        if request.tools:
            raise ConfigError(
                f"the bedrock protocol sends a JSON response format as a forced tool, which cannot go with other "
                f"tools (model {model}): ask for one or the other"
            )
        spec = {"name": JSON_TOOL, "description": _JSON_TOOL_DESCRIPTION, "inputSchema": {"json": schema}}
        return {"tools": [{"toolSpec": spec}], "toolChoice": {"tool": {"name": JSON_TOOL}}}
    if not request.tools or request.tool_choice == "none":
        return None
    config: dict[str, Any] = {"tools": [_tool(tool) for tool in request.tools]}
    choice = request.tool_choice
    if isinstance(choice, Mapping) and isinstance(choice.get("function"), Mapping):
        config["toolChoice"] = {"tool": {"name": choice["function"].get("name")}}
    elif choice in ("required", "auto"):
        config["toolChoice"] = {"any": {}} if choice == "required" else {"auto": {}}
    elif choice is not None:
        raise ConfigError(f"tool_choice {choice!r} has no Converse equivalent (model {model})")
    return config


def _response_schema(response_format: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """The schema a JSON response format asks for (``{"type": "object"}`` for ``json_object``), or None."""
    kind = response_format.get("type") if response_format is not None else None
    if kind == "json_object":
        return {"type": "object"}
    if kind != "json_schema":
        return None
    assert response_format is not None
    nested = response_format.get("json_schema")
    schema = nested.get("schema") if isinstance(nested, Mapping) else None
    return schema if isinstance(schema, Mapping) else {"type": "object"}


def _tool(tool: Mapping[str, Any]) -> dict[str, Any]:
    """A chat function tool as a Converse ``toolSpec``."""
    function = tool.get("function")
    if tool.get("type") != "function" or not isinstance(function, Mapping):
        raise ConfigError(f"the bedrock protocol takes function tools only, got {str(dict(tool))[:200]}")
    spec: dict[str, Any] = {"name": function.get("name")}
    if function.get("description"):
        spec["description"] = function["description"]
    spec["inputSchema"] = {"json": function.get("parameters") or {"type": "object", "properties": {}}}
    return {"toolSpec": spec}


def _conversation(messages: Sequence[Mapping[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``(system blocks, messages)``: system and developer texts apart, each turn's content as blocks, consecutive
    turns of one role merged."""
    system: list[dict[str, Any]] = []
    turns: list[dict[str, Any]] = []
    for message in messages:
        role = message.get("role")
        if role in ("system", "developer"):
            system.extend(block for block in _blocks(message.get("content")) if "text" in block)
            continue
        blocks = _turn_blocks(message)
        converse_role = "assistant" if role == "assistant" else "user"
        if turns and turns[-1]["role"] == converse_role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": converse_role, "content": blocks})
    return system, turns


def _turn_blocks(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The content blocks of one user, assistant or tool message."""
    if message.get("role") == "tool":
        result = {
            "toolUseId": message.get("tool_call_id"),
            "content": _blocks(message.get("content")) or [{"text": ""}],
        }
        return [{"toolResult": result}]
    blocks = _blocks(message.get("content"))
    for call in message.get("tool_calls") or ():
        function = call.get("function") or {}
        use = {"toolUseId": call.get("id"), "name": function.get("name"), "input": _tool_input(function)}
        blocks.append({"toolUse": use})
    return blocks


def _tool_input(function: Mapping[str, Any]) -> Any:
    """A chat tool call's arguments (JSON text) as the object Converse's ``toolUse.input`` is."""
    arguments = function.get("arguments")
    if not isinstance(arguments, str):
        return arguments or {}
    try:
        return json.loads(arguments) if arguments else {}
    except ValueError:
        raise ConfigError(f"a tool call's arguments are not JSON, which Converse needs: {arguments[:100]!r}") from None


def _blocks(content: Any) -> list[dict[str, Any]]:
    """A chat message's content (a text or a list of parts) as Converse content blocks."""
    if content is None:
        return []
    if isinstance(content, str):
        return [{"text": content}] if content else []
    return [_block(part) for part in content]


def _block(part: Mapping[str, Any]) -> dict[str, Any]:
    """One chat content part as a Converse block: text, an image, a document."""
    kind = part.get("type")
    if kind == "text":
        return {"text": part.get("text") or ""}
    if kind == "image_url":
        image = part.get("image_url")
        url = str(image.get("url") if isinstance(image, Mapping) else image)
        if url.startswith("s3://"):
            return {"image": {"format": _s3_format(url, IMAGE_FORMATS), "source": {"s3Location": {"uri": url}}}}
        media_type, data = _data_uri(url, "an image")
        return {"image": {"format": _format(media_type, IMAGE_FORMATS, "image"), "source": {"bytes": data}}}
    if kind == "file":
        file = part.get("file") or {}
        media_type, data = _data_uri(str(file.get("file_data") or ""), "a file")
        document = {
            "format": _format(media_type, DOCUMENT_FORMATS, "document"),
            "name": _document_name(str(file.get("filename") or "document")),
            "source": {"bytes": data},
        }
        return {"document": document}
    raise ConfigError(f"the bedrock protocol cannot send a {kind!r} content part: it takes text, images and documents")


def _data_uri(url: str, what: str) -> tuple[str, str]:
    """``(media type, base64 data)`` of a ``data:`` URI; a ConfigError for anything else (Converse fetches no URL)."""
    found = _DATA_URI.match(url)
    if found is None:
        shown = url if len(url) <= 60 else url[:60] + "..."
        raise ConfigError(
            f"the bedrock protocol sends {what} as its bytes (a base64 data: URI) or from S3 (s3://), not {shown!r}: "
            "Converse fetches no URL"
        )
    media_type, data = found.group(1).lower(), re.sub(r"\s", "", found.group(2))
    try:
        base64.b64decode(data, validate=True)
    except binascii.Error as exc:
        raise ConfigError(f"{what}'s data URI ({media_type}) is not valid base64: {exc}") from None
    return media_type, data


def _format(media_type: str, formats: Mapping[str, str], what: str) -> str:
    found = formats.get("image/jpeg" if media_type == "image/jpg" else media_type)
    if found is None:
        raise ConfigError(f"Converse takes no {media_type} {what}: it takes {', '.join(formats)}")
    return found


def _s3_format(uri: str, formats: Mapping[str, str]) -> str:
    extension = uri.rsplit(".", 1)[-1].lower()
    known = set(formats.values()) | {"jpg"}
    if extension not in known:
        raise ConfigError(f"cannot tell the image format of {uri!r} from its extension ({', '.join(sorted(known))})")
    return "jpeg" if extension == "jpg" else extension


def _document_name(filename: str) -> str:
    """A document's name as Converse takes it: letters, digits, single spaces, hyphens, parentheses and square
    brackets (the file name without its extension, other characters as spaces).

    >>> _document_name("Q3 report_final.v2.pdf")
    'Q3 report final v2'
    """
    stem = filename.rsplit(".", 1)[0] if "." in filename else filename
    return " ".join(re.sub(r"[^\w\s()\[\]-]|_", " ", stem).split())[:200] or "document"


# ------------------------------------------------------------------------ the reply
def _read_blocks(content: list[Any]) -> tuple[list[str], list[ToolCall], list[str]]:
    """The texts, the tool calls and the reasoning texts of a reply's content blocks, in order."""
    texts: list[str] = []
    calls: list[ToolCall] = []
    reasoning: list[str] = []
    for block in content:
        if not isinstance(block, Mapping):
            continue
        if isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif isinstance(block.get("toolUse"), Mapping):
            use = block["toolUse"]
            arguments = arguments_text(use.get("input") if isinstance(use.get("input"), Mapping) else {})
            calls.append(ToolCall(name=str(use.get("name") or ""), arguments=arguments, id=use.get("toolUseId")))
        elif isinstance(block.get("reasoningContent"), Mapping):
            text = (block["reasoningContent"].get("reasoningText") or {}).get("text")
            if isinstance(text, str) and text:
                reasoning.append(text)
    return texts, calls, reasoning


# ------------------------------------------------------------------------ credentials and sending
def _botocore(module: str) -> Any:
    return optional_import(module, scorer="The bedrock protocol", extra="bedrock")


def _region(environ: Environ) -> str | None:
    """The region of ``AWS_REGION``, ``AWS_DEFAULT_REGION`` or the AWS profile (when botocore is installed)."""
    for name in ("AWS_REGION", "AWS_DEFAULT_REGION"):
        value = (environ.get(name) or "").strip()
        if value:
            return value
    try:
        session = _session(environ)
    except ImportError:
        return None
    region = session.get_config_variable("region")
    return str(region) if region else None


def _url_region(base_url: str) -> str | None:
    """The region of a Bedrock runtime URL (``https://bedrock-runtime.eu-west-1.amazonaws.com``), else None."""
    found = _AWS_HOST.match(base_url)
    return found.group(1) if found else None


def _session(environ: Environ) -> Any:
    """A botocore session of the environment's profile (a ConfigError naming one that does not exist)."""
    session_module = _botocore("botocore.session")
    exceptions = _botocore("botocore.exceptions")
    profile = (environ.get("AWS_PROFILE") or "").strip() or None
    try:
        session = session_module.Session(profile=profile)
        session.get_scoped_config()
    except exceptions.ProfileNotFound as exc:
        raise ConfigError(f"the AWS profile of AWS_PROFILE does not exist: {exc}") from None
    return session


def _chain_values(environ: Environ) -> tuple[str | None, ...]:
    """The values of the AWS chain's variables (:data:`CHAIN_ENV`), to tell when they change."""
    return tuple(environ.get(name) for name in CHAIN_ENV)


def _credentials(environ: Environ) -> Any:
    """The AWS credentials to sign with: the environment's key pair, else the rest of botocore's chain (profiles,
    SSO, containers, instance roles); a ConfigError when none is found."""
    credentials_module = _botocore("botocore.credentials")
    key, secret = (environ.get("AWS_ACCESS_KEY_ID") or "").strip(), (environ.get("AWS_SECRET_ACCESS_KEY") or "").strip()
    if key and secret:
        return credentials_module.Credentials(key, secret, (environ.get("AWS_SESSION_TOKEN") or "").strip() or None)
    found = _session(environ).get_credentials()
    if found is None:
        api_key = " (a Bedrock API key, AWS_BEARER_TOKEN_BEDROCK, is not one: it signs nothing)"
        raise ConfigError(
            f"no AWS credentials for the bedrock protocol{api_key if environ.get('AWS_BEARER_TOKEN_BEDROCK') else ''}: "
            f"set {_CREDENTIALS_HINT}"
        )
    return found


class ConverseClient:
    """What :meth:`BedrockProtocol.post` sends with: the endpoint, the region and credentials it signs with, and
    the HTTP sender (the engine closes it with :meth:`aclose`)."""

    def __init__(self, base_url: str, region: str, credentials: Any, sender: "_Sender", environ: Environ) -> None:
        self.base_url, self.region, self.credentials, self.sender = base_url, region, credentials, sender
        self.environ = environ  # the process's, or an engine worker's scoped view of the driver's variables
        self._chain = _chain_values(environ)
        _mask_session_tokens()
        self._auth = _botocore("botocore.auth")
        self._request = _botocore("botocore.awsrequest").AWSRequest

    def signed_headers(self, url: str, payload: bytes) -> dict[str, str]:
        """The headers of a SigV4-signed ``POST`` of ``payload`` to ``url`` (service ``bedrock``), signed now with
        the credentials as they are now: found again when the chain's variables changed (new keys, another
        profile), refreshed by botocore where they expire."""
        chain = _chain_values(self.environ)
        if chain != self._chain:
            self.credentials, self._chain = _credentials(self.environ), chain
        request = self._request(method="POST", url=url, data=payload, headers={"Content-Type": "application/json"})
        frozen = self.credentials.get_frozen_credentials()
        self._auth.SigV4Auth(frozen, "bedrock", self.region).add_auth(request)
        return dict(request.headers.items())

    async def send(self, url: str, payload: bytes, headers: Mapping[str, str], timeout: float) -> HTTPReply:
        return await self.sender.post(url, payload, headers, timeout)

    async def aclose(self) -> None:
        await self.sender.aclose()


class _MaskedSessionToken(logging.Filter):
    """Masks the session token in what botocore's signer logs at DEBUG (the canonical request, every signed header
    with its value)."""

    _HEADER = re.compile(r"(?im)^(x-amz-security-token:).*$")

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(self._HEADER.sub(r"\1***", arg) if isinstance(arg, str) else arg for arg in record.args)
        return True


@memoize
def _mask_session_tokens() -> None:
    """Install :class:`_MaskedSessionToken` on botocore's signer's logger, once."""
    logging.getLogger("botocore.auth").addFilter(_MaskedSessionToken())


class _Sender:
    """POSTs bytes with an HTTP client and returns the reply whatever its status."""

    async def post(self, url: str, payload: bytes, headers: Mapping[str, str], timeout: float) -> HTTPReply:
        raise NotImplementedError

    async def aclose(self) -> None:
        raise NotImplementedError


class _AiohttpSender(_Sender):
    """aiohttp, the URL sent as it was signed (``encoded=True``: yarl would otherwise decode the model id's
    ``%3A``, and the signature would no longer match the path)."""

    def __init__(self) -> None:
        import aiohttp

        self.session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))
        #: The environment's proxy and its credentials (HTTPS_PROXY, NO_PROXY, ~/.netrc) per origin, read on its first
        #: request: ``trust_env=True`` would read them in a thread on every request (two thread hops, about 0.4 ms of
        #: CPU a request in benchmarks/judge_protocols.py).
        self._proxies: dict[Any, tuple[Any, Any]] = {}

    def _proxy(self, url: Any) -> tuple[Any, Any]:
        from aiohttp.helpers import get_env_proxy_for_url

        origin = url.origin()
        if origin not in self._proxies:
            try:
                self._proxies[origin] = get_env_proxy_for_url(url)
            except LookupError:  # no proxy for this host
                self._proxies[origin] = (None, None)
        return self._proxies[origin]

    async def post(self, url: str, payload: bytes, headers: Mapping[str, str], timeout: float) -> HTTPReply:
        import aiohttp
        from yarl import URL

        limit = aiohttp.ClientTimeout(total=timeout)
        target = URL(url, encoded=True)
        proxy, proxy_auth = self._proxy(target)
        sent = self.session.post(
            target, data=payload, headers=headers, timeout=limit, proxy=proxy, proxy_auth=proxy_auth
        )
        async with sent as reply:
            content = await reply.read()
            return HTTPReply(reply.status, {name.lower(): value for name, value in reply.headers.items()}, content)

    async def aclose(self) -> None:
        await self.session.close()


class _HttpxSender(_Sender):
    """httpx (the flavour the engine's ``openai`` sends with), which sends a URL's percent-escapes as given."""

    def __init__(self) -> None:
        from ..http import httpx_module

        self.client = httpx_module().AsyncClient()

    async def post(self, url: str, payload: bytes, headers: Mapping[str, str], timeout: float) -> HTTPReply:
        reply = await self.client.post(url, content=payload, headers=dict(headers), timeout=timeout)
        return HTTPReply(
            reply.status_code, {name.lower(): value for name, value in reply.headers.items()}, reply.content
        )

    async def aclose(self) -> None:
        await self.client.aclose()


def _sender(transport: str) -> _Sender:
    """The HTTP client of ``transport``: aiohttp for ``"aiohttp"``, and for ``"auto"`` where installed; else httpx."""
    if transport in ("auto", "aiohttp"):
        try:
            optional_import("aiohttp", scorer="The bedrock protocol's aiohttp transport", extra="aiohttp")
        except ImportError:
            if transport == "aiohttp":
                raise
        else:
            return _AiohttpSender()
    return _HttpxSender()


@memoize
def _connection_errors() -> tuple[type[BaseException], ...]:
    """aiohttp's and httpx's errors of a connection that failed (each where installed)."""
    from ..http import httpx_module

    errors: list[type[BaseException]] = [httpx_module().TransportError]
    try:
        import aiohttp
    except ImportError:
        pass
    else:
        errors.append(aiohttp.ClientError)
    return tuple(errors)
