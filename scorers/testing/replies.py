"""The server's scripted answers: :class:`Reply` and its builders, the same for every protocol it speaks.

>>> Reply.choice("B", reasons="adds a fact").arguments
'{"reasons": "adds a fact", "choice": "B"}'
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Mapping

from .._util import is_int

__all__ = ["LLAMA_CPP_JSON_SCHEMA_REJECTION", "Reply"]

#: The error message llama-cpp-python's server (0.3.36) sends, with HTTP 500 and ``"type":
#: "internal_server_error"``, for ``response_format`` type ``json_schema`` (its request schema allows only
#: ``text`` and ``json_object``): FastAPI's validation error, then where it was raised (the path is the venv's).
LLAMA_CPP_JSON_SCHEMA_REJECTION = (
    "1 validation error:\n  {'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), "
    "'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema', "
    "'ctx': {'expected': \"'text' or 'json_object'\"}}\n\n"
    '  File "/venv/lib/python3.11/site-packages/llama_cpp/server/app.py", line 376, in create_chat_completion\n'
    "    POST /v1/chat/completions"
)


@dataclass(frozen=True)
class Reply:
    """One scripted answer of the server: a text, JSON or tool call (in the shape of the protocol asked) or a fault.

    Build replies with the class methods (:meth:`choice`, :meth:`tool_call`,
    :meth:`text`, :meth:`json`, :meth:`rate_limited`, :meth:`error`,
    :meth:`validation_error`, :meth:`hang`, :meth:`drop`). ``latency`` (seconds)
    overrides the server's global latency. ``usage`` is ``(prompt_tokens,
    completion_tokens)``; by default both are word counts. ``top_logprobs`` scripts
    the log-probabilities served when a request asks for them: one ``{token:
    logprob}`` mapping per content token, the first entry being the token chosen.
    """

    kind: str = "text"  # "text" | "tool" | "error" | "hang" | "drop" | "raw"
    content: str | None = None
    tool_name: str = "select_choice"
    arguments: str = "{}"
    status: int = 200
    retry_after: float | None = None
    error_message: str = ""
    latency: float | None = None
    usage: tuple[int, int] | None = None
    finish_reason: str | None = None
    #: Per content token, its alternatives ``{token: logprob}``; the first entry is the token chosen.
    top_logprobs: tuple[Mapping[str, float], ...] | None = None
    #: The ``error.type`` of an error body, whose ``code`` is then ``null`` as llama.cpp sends it (default:
    #: ``rate_limit_exceeded`` for 429, else ``server_error``, the ``code`` too).
    error_type: str | None = None

    def __post_init__(self) -> None:
        if self.top_logprobs is not None:
            tokens = tuple(dict(alternatives) for alternatives in self.top_logprobs)
            if not all(tokens):
                raise ValueError("Reply top_logprobs: every token needs at least one {token: logprob} entry")
            object.__setattr__(self, "top_logprobs", tokens)

    # ---------------------------------------------------------------- builders
    @classmethod
    def text(cls, content: str, **options: Any) -> "Reply":
        """A plain assistant message, no tool call.

        >>> Reply.text("The answer is C").content
        'The answer is C'
        """
        return cls(kind="text", content=content, **options)

    @classmethod
    def json(cls, value: Any, **options: Any) -> "Reply":
        """An assistant message whose content is ``value`` as JSON (for ``response_format`` modes)."""
        return cls(kind="text", content=json.dumps(value), **options)

    @classmethod
    def tool_call(cls, arguments: Mapping[str, Any] | str, *, name: str = "select_choice", **options: Any) -> "Reply":
        """A tool call; a ``str`` ``arguments`` is sent verbatim (use it for malformed JSON).

        >>> Reply.tool_call("{not json", name="select_choice").arguments
        '{not json'
        """
        raw = arguments if isinstance(arguments, str) else json.dumps(dict(arguments))
        return cls(kind="tool", tool_name=name, arguments=raw, **options)

    @classmethod
    def choice(cls, choice: str, *, reasons: str | None = None, name: str = "select_choice", **options: Any) -> "Reply":
        """A ``select_choice`` tool call choosing ``choice`` (with ``reasons`` first when given)."""
        args: dict[str, Any] = {} if reasons is None else {"reasons": reasons}
        args["choice"] = choice
        return cls.tool_call(args, name=name, **options)

    @classmethod
    def error(
        cls,
        status: int = 500,
        message: str = "scripted server error",
        *,
        retry_after: float | None = None,
        **options: Any,
    ) -> "Reply":
        """An HTTP error with an OpenAI-shaped error body (and ``Retry-After`` when given)."""
        return cls(kind="error", status=status, error_message=message, retry_after=retry_after, **options)

    @classmethod
    def validation_error(cls, message: str = LLAMA_CPP_JSON_SCHEMA_REJECTION, **options: Any) -> "Reply":
        """HTTP 500 with a request-validation message, as llama-cpp-python's server answers a request its
        schema refuses (by default its exact reply to ``response_format`` type ``json_schema``)."""
        return cls(kind="error", status=500, error_message=message, error_type="internal_server_error", **options)

    @classmethod
    def rate_limited(cls, retry_after: float | None = 1.0, **options: Any) -> "Reply":
        """HTTP 429 with a ``Retry-After`` header in seconds (omitted when ``None``)."""
        return cls.error(429, "Rate limit reached (scripted)", retry_after=retry_after, **options)

    @classmethod
    def hang(cls, seconds: float = 30.0) -> "Reply":
        """Answer nothing for ``seconds`` (past the client's timeout), then a 504."""
        return cls(kind="hang", latency=seconds, status=504, error_message="scripted hang ended")

    @classmethod
    def raw(cls, body: Any, *, status: int = 200, **options: Any) -> "Reply":
        """Send ``body`` as is: a ``str`` verbatim, anything else as JSON (for malformed completions)."""
        return cls(kind="raw", content=body if isinstance(body, str) else json.dumps(body), status=status, **options)

    @classmethod
    def drop(cls, **options: Any) -> "Reply":
        """Close the connection without sending a response."""
        return cls(kind="drop", **options)

    @classmethod
    def from_dict(cls, spec: Mapping[str, Any]) -> "Reply":
        """A reply written as data, one of the forms of :data:`~scorers.testing.REPLIES_FORMAT` (raises ``ValueError`` otherwise).

        >>> Reply.from_dict({"choice": "B", "reasons": "adds a fact"}) == Reply.choice("B", reasons="adds a fact")
        True
        >>> Reply.from_dict({"error": 400, "message": "no"}).status
        400
        """
        forms = {"choice": {"reasons"}, "text": set(), "json": set(), "tool": {"arguments"}, "error": {"message"}}
        kinds = [key for key in forms if key in spec]
        unknown = set(spec) - set(kinds) - set().union(*(forms[k] for k in kinds))
        if len(kinds) != 1 or unknown:
            raise ValueError(
                f'a reply is one of {{"choice": ...}}, {{"text": ...}}, {{"json": ...}}, '
                f'{{"tool": NAME, "arguments": {{...}}}} or {{"error": STATUS}}, got {dict(spec)}'
            )
        kind, value = kinds[0], spec[kinds[0]]
        if kind == "json":
            return cls.json(value)
        if kind == "tool":
            arguments = spec.get("arguments", {})
            if not isinstance(arguments, dict):
                raise ValueError(f"arguments: a JSON object, got {arguments!r}")
            return cls.tool_call(arguments, name=_text_value(value, "tool"))
        if kind == "error":
            if not is_int(value) or not 400 <= value <= 599:
                raise ValueError(f"error: an HTTP status from 400 to 599, got {value!r}")
            return cls.error(value, _text_value(spec.get("message", "scripted error"), "message"))
        if kind == "choice":
            reasons = spec.get("reasons")
            return cls.choice(
                _text_value(value, "choice"), reasons=None if reasons is None else _text_value(reasons, "reasons")
            )
        return cls.text(_text_value(value, "text"))


def _text_value(value: Any, key: str) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{key}: a text, got {value!r}")
    return value
