"""Amazon Bedrock's Converse API (``POST /model/{modelId}/converse``), as the loopback server answers it, with the
SigV4 signature of every request checked against known test credentials (:data:`LOOPBACK_AWS_ACCESS_KEY_ID`,
:data:`LOOPBACK_AWS_SECRET_ACCESS_KEY`).

>>> from scorers.testing import Reply
>>> body = {"messages": [{"role": "user", "content": [{"text": "Is it so?"}]}]}
>>> reply = BedrockConverseAPI().render(body, Reply.choice("Y"), None)
>>> reply["output"]["message"]["content"][0]["toolUse"]["input"], reply["stopReason"], reply["usage"]["totalTokens"]
({'choice': 'Y'}, 'tool_use', 5)

The signature is recomputed with botocore's own SigV4 signer (the ``bedrock`` extra); a request signed with another
secret, or by an unknown access key, or not signed, is answered HTTP 403 as Bedrock answers it. Errors have
Bedrock's shape: ``{"message": ...}`` and the exception's name in the ``x-amzn-ErrorType`` header.
"""

from __future__ import annotations

import datetime
import hmac
import json
import re
import uuid
from typing import Any, ClassVar, Mapping

from ..._util import optional_import
from ..replies import Reply
from .base import Ask, ScriptedProtocol, ServerSettings

__all__ = ["BedrockConverseAPI", "LOOPBACK_AWS_ACCESS_KEY_ID", "LOOPBACK_AWS_SECRET_ACCESS_KEY"]

#: The access key id the loopback server knows (test credentials: they open nothing anywhere else).
LOOPBACK_AWS_ACCESS_KEY_ID = "AKIALOOPBACKEXAMPLE0"
#: Its secret access key.
LOOPBACK_AWS_SECRET_ACCESS_KEY = "loopback+sigv4/test/secret/key/00000000"

#: The exception Bedrock names in ``x-amzn-ErrorType`` for an HTTP status (others: by their class, 4xx or 5xx).
ERROR_TYPES = {
    400: "ValidationException",
    401: "UnrecognizedClientException",
    403: "AccessDeniedException",
    404: "ResourceNotFoundException",
    408: "ModelTimeoutException",
    424: "ModelErrorException",
    429: "ThrottlingException",
    500: "InternalServerException",
    503: "ServiceUnavailableException",
}

#: Converse's ``stopReason`` of a scripted reply's chat ``finish_reason`` (Converse's own values pass as they are).
STOP_REASONS = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "length": "max_tokens",
    "content_filter": "content_filtered",
}

#: The forced tool that carries a JSON response format's schema in scorers' bedrock protocol
#: (:data:`scorers.llm.protocols.bedrock.JSON_TOOL`): a request forcing it asks for JSON, and a JSON reply
#: (:meth:`~scorers.testing.Reply.json`) is answered as its input.
JSON_TOOL = "json_answer"

#: How far a request's ``X-Amz-Date`` may be from the server's clock, as AWS allows.
CLOCK_SKEW = datetime.timedelta(minutes=5)

_AUTHORIZATION = re.compile(
    r"AWS4-HMAC-SHA256 Credential=(?P<key>[^/]+)/(?P<date>\d{8})/(?P<region>[^/]+)/(?P<service>[^/]+)/aws4_request,"
    r"\s*SignedHeaders=(?P<signed>[a-z0-9;-]+),\s*Signature=(?P<signature>[0-9a-f]{64})$"
)
_AMZ_DATE = "%Y%m%dT%H%M%SZ"
_CONTENT_BLOCKS = frozenset(
    {"text", "image", "document", "video", "audio", "toolUse", "toolResult", "guardContent", "cachePoint",
     "reasoningContent"}
)  # fmt: skip
_IMAGE_FORMATS = frozenset({"png", "jpeg", "gif", "webp"})


class BedrockConverseAPI(ScriptedProtocol):
    """Converse: ``system`` and ``messages`` (content blocks) in, the model id in the path; one assistant message
    out (a ``text`` block, or a ``toolUse`` whose ``input`` is an object), its ``stopReason`` and ``usage``.

    Every request must carry a valid SigV4 signature (service ``bedrock``, any region) by one of ``credentials``
    (access key id → secret access key; default: the loopback's test pair), dated within five minutes of now.
    A scripted tool call whose arguments are not a JSON object is answered without the ``toolUse`` block, stopped
    as ``malformed_tool_use`` (``max_tokens`` for a reply with ``finish_reason="length"``). A request forcing
    :data:`JSON_TOOL` gets a scripted text reply as that tool's input, so :meth:`~scorers.testing.Reply.json`
    answers a ``json`` mode judge here as on chat.
    """

    name: ClassVar[str] = "bedrock"
    paths: ClassVar[tuple[str, ...]] = ("/model/{model_id}/converse",)

    def __init__(self, credentials: Mapping[str, str] | None = None) -> None:
        self.credentials = dict(credentials or {LOOPBACK_AWS_ACCESS_KEY_ID: LOOPBACK_AWS_SECRET_ACCESS_KEY})

    def answers(self, path: str) -> bool:
        return re.fullmatch(r"/model/.+/converse", path) is not None

    def model(self, path: str, body: Any) -> str | None:
        found = re.fullmatch(r"/model/(.+)/converse", path)
        return found.group(1) if found else None

    # ------------------------------------------------------------------ reading
    def messages(self, body: Mapping[str, Any]) -> list[dict[str, Any]]:
        system = body.get("system")
        messages = body.get("messages")
        conversation = [m for m in messages if isinstance(m, dict)] if isinstance(messages, list) else []
        if isinstance(system, list) and system:
            return [{"role": "system", "content": system}, *conversation]
        return conversation

    def ask(self, body: Mapping[str, Any]) -> Ask:
        """The forced tool; a forced :data:`JSON_TOOL` (a JSON response format, as scorers sends it) or an
        ``outputConfig.textFormat`` asks for JSON with its schema (none for the bare ``{"type": "object"}`` of a
        ``json_object`` format)."""
        forced = _forced_tool(body.get("toolConfig"))
        if forced is not None and _chosen_tool(body.get("toolConfig")) == JSON_TOOL:
            return Ask(json=True, schema=None if forced[1] == {"type": "object"} else forced[1])
        return Ask(forced_tool=forced, **_text_format(body.get("outputConfig")))

    def presented_key(self, headers: Mapping[str, str]) -> str | None:
        """The access key id of the request's SigV4 ``Authorization`` header."""
        found = _AUTHORIZATION.match(headers.get("authorization", ""))
        return found.group("key") if found else None

    def client_env(self) -> dict[str, str]:
        """The credentials the server knows (the first pair) and a region, as the AWS chain reads them.

        >>> sorted(BedrockConverseAPI().client_env())
        ['AWS_ACCESS_KEY_ID', 'AWS_REGION', 'AWS_SECRET_ACCESS_KEY']
        """
        key, secret = next(iter(self.credentials.items()))
        return {"AWS_ACCESS_KEY_ID": key, "AWS_SECRET_ACCESS_KEY": secret, "AWS_REGION": "us-east-1"}

    def invalid(self, body: Any) -> str | None:
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list) or not body["messages"]:
            return "The request body must be a JSON object with a non-empty 'messages' list."
        roles = [m.get("role") if isinstance(m, dict) else None for m in body["messages"]]
        if roles[0] != "user":
            return (
                "A conversation must start with a user message. Try again with a conversation that starts with a "
                "user message."
            )
        if any(role not in ("user", "assistant") for role in roles) or any(a == b for a, b in zip(roles, roles[1:])):
            return (
                "A conversation must alternate between user and assistant roles. Make sure the conversation "
                "alternates between user and assistant roles and try again."
            )
        for message in body["messages"]:
            problem = _content_problem(message.get("content"))
            if problem:
                return problem
        return _tool_config_problem(body.get("toolConfig"))

    # ------------------------------------------------------------------ answering
    def render(self, body: Mapping[str, Any], reply: Reply, server: ServerSettings | None) -> dict[str, Any]:
        content: list[dict[str, Any]] = []
        stop = STOP_REASONS.get(reply.finish_reason or "", reply.finish_reason)
        tool = (reply.tool_name, reply.arguments) if reply.kind == "tool" else None
        if tool is None and _chosen_tool(body.get("toolConfig")) == JSON_TOOL:
            tool = (JSON_TOOL, reply.content or "")  # a JSON answer is the forced JSON tool's input
        if tool is not None:
            arguments = _json_object(tool[1])
            if arguments is not None:
                tool_id = f"tooluse_{uuid.uuid4().hex[:22]}"
                content.append({"toolUse": {"toolUseId": tool_id, "name": tool[0], "input": arguments}})
            stop = stop or ("tool_use" if arguments is not None else "malformed_tool_use")
        else:
            content.append({"text": reply.content or ""})
        prompt_tokens, completion_tokens = self.usage(body, reply)
        return {
            "output": {"message": {"role": "assistant", "content": content}},
            "stopReason": stop or "end_turn",
            "usage": {
                "inputTokens": prompt_tokens,
                "outputTokens": completion_tokens,
                "totalTokens": prompt_tokens + completion_tokens,
                "cacheReadInputTokens": 0,
                "cacheWriteInputTokens": 0,
            },
            "metrics": {"latencyMs": int(1000 * (reply.latency or 0))},
        }

    def error(self, status: int, message: str, error_type: str, code: str | None) -> dict[str, Any]:
        return {"message": message}

    def error_headers(self, status: int, error_type: str) -> dict[str, str]:
        """``x-amzn-ErrorType``: ``error_type`` when it names an exception (``"ThrottlingException"``), else the
        one Bedrock sends with ``status``."""
        if not error_type.endswith("Exception"):
            error_type = ERROR_TYPES.get(status, "ValidationException" if status < 500 else "InternalServerException")
        return {"x-amzn-ErrorType": f"{error_type}:http://internal.amazon.com/coral/com.amazon.bedrock/"}

    # ------------------------------------------------------------------ signatures
    def denied(self, method: str, url: str, headers: Mapping[str, str], body: bytes) -> tuple[int, str, str] | None:
        """Why the request's SigV4 signature is refused (HTTP 403, Bedrock's message), or None when it is valid."""
        authorization = headers.get("authorization")
        if not authorization:
            return 403, "Missing Authentication Token", "MissingAuthenticationTokenException"
        found = _AUTHORIZATION.match(authorization)
        if found is None:
            return (
                403,
                f"Authorization header requires a valid AWS4-HMAC-SHA256 signature: {authorization[:40]}",
                "IncompleteSignatureException",
            )
        secret = self.credentials.get(found.group("key"))
        if secret is None:
            return 403, "The security token included in the request is invalid.", "UnrecognizedClientException"
        if found.group("service") != "bedrock":
            return 403, "Credential should be scoped to correct service: 'bedrock'.", "InvalidSignatureException"
        stale = _stale(headers.get("x-amz-date", ""), found.group("date"), found.group("signed"))
        if stale:
            return 403, stale, "InvalidSignatureException"
        expected = _signature(method, url, headers, body, found, secret)
        if not hmac.compare_digest(expected, found.group("signature")):
            return 403, _SIGNATURE_MISMATCH, "InvalidSignatureException"
        return None


_SIGNATURE_MISMATCH = (
    "The request signature we calculated does not match the signature you provided. Check your AWS Secret Access "
    "Key and signing method. Consult the service documentation for details."
)


def _stale(amz_date: str, scope_date: str, signed: str) -> str | None:
    """Why a request's date makes its signature unusable (absent, unsigned, outside the scope's day, more than
    :data:`CLOCK_SKEW` from now), or None."""
    if "x-amz-date" not in signed.split(";"):
        return "Authorization header requires existence of either a 'X-Amz-Date' or a 'Date' header."
    try:
        when = datetime.datetime.strptime(amz_date, _AMZ_DATE).replace(tzinfo=datetime.timezone.utc)
    except ValueError:
        return f"Date must be in ISO-8601 'basic format'. Got '{amz_date}'."
    if amz_date[:8] != scope_date:
        return (
            "Date in Credential scope does not match YYYYMMDD from ISO-8601 version of date from HTTP: "
            f"'{scope_date}' != '{amz_date[:8]}'"
        )
    now = datetime.datetime.now(datetime.timezone.utc)
    shown, earliest, latest = (moment.strftime(_AMZ_DATE) for moment in (now, now - CLOCK_SKEW, now + CLOCK_SKEW))
    if when < now - CLOCK_SKEW:
        return f"Signature expired: {amz_date} is now earlier than {earliest} ({shown} - 5 min.)"
    if when > now + CLOCK_SKEW:
        return f"Signature not yet current: {amz_date} is still later than {latest} ({shown} + 5 min.)"
    return None


def _signature(
    method: str, url: str, headers: Mapping[str, str], body: bytes, found: re.Match[str], secret: str
) -> str:
    """The SigV4 signature of the request as received, recomputed by botocore's signer over exactly the headers
    it says it signed, with ``secret``, the scope's region and the request's own date."""
    user = "The loopback server's Bedrock API"
    auth = optional_import("botocore.auth", scorer=user, extra="bedrock")
    awsrequest = optional_import("botocore.awsrequest", scorer=user, extra="bedrock")
    credentials = optional_import("botocore.credentials", scorer=user, extra="bedrock")
    names = found.group("signed").split(";")
    signed = awsrequest.HTTPHeaders()
    for name in names:
        signed[name] = headers.get(name, "")
    request = awsrequest.AWSRequest(method=method, url=url, headers=dict(signed.items()), data=body)
    request.context["timestamp"] = headers.get("x-amz-date", "")
    key = credentials.Credentials(found.group("key"), secret, headers.get("x-amz-security-token"))
    signer = auth.SigV4Auth(key, found.group("service"), found.group("region"))
    signer.headers_to_sign = lambda _: signed  # exactly the headers the request says it signed
    canonical = signer.canonical_request(request)
    return str(signer.signature(signer.string_to_sign(request, canonical), request))


# ---------------------------------------------------------------------- request checks
def _content_problem(content: Any) -> str | None:
    """Why a message's ``content`` is not a list of Converse content blocks, or None."""
    if not isinstance(content, list) or not content:
        return "A message's content must be a non-empty list of content blocks."
    for block in content:
        if not isinstance(block, dict) or len(block) != 1 or next(iter(block)) not in _CONTENT_BLOCKS:
            return f"A content block must have exactly one of {', '.join(sorted(_CONTENT_BLOCKS))}: {str(block)[:100]}"
        image = block.get("image")
        if image is not None and (not isinstance(image, dict) or image.get("format") not in _IMAGE_FORMATS):
            return f"An image block's format must be one of {', '.join(sorted(_IMAGE_FORMATS))}."
    return None


def _tool_config_problem(config: Any) -> str | None:
    """Why a ``toolConfig`` cannot be used (no tools, a ``toolChoice`` naming none of them), or None."""
    if config is None:
        return None
    tools = config.get("tools") if isinstance(config, dict) else None
    if not isinstance(tools, list) or not tools:
        return "The toolConfig field must be defined with at least one tool."
    names = {t["toolSpec"].get("name") for t in tools if isinstance(t, dict) and isinstance(t.get("toolSpec"), dict)}
    choice = config.get("toolChoice")
    wanted = choice.get("tool") if isinstance(choice, dict) else None
    if isinstance(wanted, dict) and wanted.get("name") not in names:
        return f"The tool {wanted.get('name')!r} of toolChoice is not among the tools of toolConfig."
    return None


def _forced_tool(config: Any) -> tuple[str, Mapping[str, Any]] | None:
    """``(name, input schema)`` of the tool a ``toolConfig`` makes the model call (the one ``toolChoice.tool``
    names, else the first), or None without tools."""
    tools = config.get("tools") if isinstance(config, dict) else None
    specs = [t["toolSpec"] for t in tools or () if isinstance(t, dict) and isinstance(t.get("toolSpec"), dict)]
    by_name = {str(spec.get("name")): _input_schema(spec) for spec in specs}
    if not by_name:
        return None
    named = _chosen_tool(config)
    name = named if named in by_name else next(iter(by_name))
    return name, by_name[name]


def _chosen_tool(config: Any) -> str | None:
    """The name of the tool a ``toolConfig``'s ``toolChoice.tool`` forces, or None."""
    choice = config.get("toolChoice") if isinstance(config, dict) else None
    wanted = choice.get("tool") if isinstance(choice, dict) else None
    return str(wanted.get("name")) if isinstance(wanted, dict) else None


def _input_schema(spec: Mapping[str, Any]) -> Mapping[str, Any]:
    schema = spec.get("inputSchema")
    found = schema.get("json") if isinstance(schema, dict) else None
    return found if isinstance(found, dict) else {}


def _text_format(config: Any) -> dict[str, Any]:
    """What an ``outputConfig.textFormat`` of type ``json_schema`` asks for: JSON, and its schema (sent as text)."""
    text_format = config.get("textFormat") if isinstance(config, dict) else None
    if not isinstance(text_format, dict) or text_format.get("type") != "json_schema":
        return {}
    structure = text_format.get("structure")
    found = structure.get("jsonSchema") if isinstance(structure, dict) else None
    schema = _json_object(found.get("schema")) if isinstance(found, dict) else None
    return {"json": True, "schema": schema}


def _json_object(text: Any) -> dict[str, Any] | None:
    """``text`` parsed as a JSON object, or None."""
    try:
        value = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        return None
    return value if isinstance(value, dict) else None
