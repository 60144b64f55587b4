"""The interface of one wire protocol the engine speaks: :class:`WireProtocol`.

A protocol turns a :class:`~scorers.llm.protocol.ChatRequest` (always given in the chat-completions shape:
messages with text or content parts, function tools, a ``tool_choice``, a ``response_format``) into the JSON
body its API takes (:meth:`WireProtocol.body`), reads the reply's JSON into a
:class:`~scorers.llm.protocol.ChatResult` (:meth:`WireProtocol.parse`) and its token counts
(:meth:`WireProtocol.tokens`), and says how a request reaches the endpoint: the client it sends with, the path,
the credentials (:class:`Endpoint`, :meth:`WireProtocol.client`, :meth:`WireProtocol.post`). Nothing above this
layer knows which protocol it spoke: the engine's cache, retries, re-asks, usage and errors are the same for all.

A protocol module imports only this package's modules (:mod:`~scorers.llm.protocols.result` for the reply types,
:mod:`scorers.llm.http` for HTTP clients), never the engine's (the import graph has no circle).

Adding a protocol is one module with a subclass and its registration in :data:`scorers.llm.protocols.PROTOCOLS`
(or an entry point in the ``scorers.protocols`` group), plus its counterpart in :mod:`scorers.testing.protocols`.

>>> endpoint = Endpoint(key_env=("ANTHROPIC_API_KEY",), url_env=("ANTHROPIC_BASE_URL",), default_url="https://api.anthropic.com")
>>> endpoint.base_url({}), endpoint.api_key({"ANTHROPIC_API_KEY": " sk-ant "})
('https://api.anthropic.com', 'sk-ant')
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Callable, ClassVar, Mapping, NamedTuple, Protocol, Sequence

from .result import ChatResult, Tokens

__all__ = [
    "Capabilities",
    "Endpoint",
    "Environ",
    "HTTPReply",
    "Request",
    "Settings",
    "Tokens",
    "WireProtocol",
    "ReplyRefused",
]


class Environ(Protocol):
    """Where endpoints read environment variables: ``os.environ`` or a scoped view of it."""

    def get(self, name: str, /) -> str | None: ...


class Settings(Protocol):
    """The resolved settings a protocol's client reads (:class:`~scorers.llm.config.LLMSettings` has them)."""

    @property
    def base_url(self) -> str: ...

    @property
    def api_key(self) -> str | None: ...

    @property
    def transport(self) -> str: ...

    @property
    def timeout(self) -> float: ...

    @property
    def environ(self) -> Environ:
        """The environment the settings were resolved in (an engine's worker: the driver's variables)."""
        ...


class Request(Protocol):
    """What a protocol reads of a request (:class:`~scorers.llm.protocol.ChatRequest` has it), in the chat shape."""

    @property
    def messages(self) -> Sequence[Mapping[str, Any]]: ...

    @property
    def tools(self) -> Sequence[Mapping[str, Any]] | None: ...

    @property
    def tool_choice(self) -> str | Mapping[str, Any] | None: ...

    @property
    def temperature(self) -> float | None: ...

    @property
    def max_tokens(self) -> int | None: ...

    @property
    def response_format(self) -> Mapping[str, Any] | None: ...

    @property
    def seed(self) -> int | None: ...

    @property
    def reasoning_effort(self) -> str | None: ...

    @property
    def logprobs(self) -> bool: ...

    @property
    def top_logprobs(self) -> int | None: ...


@dataclass(frozen=True)
class Capabilities:
    """What a protocol's provider can do for a judge; a judge kind that needs what its protocol lacks is refused at
    construction (:meth:`WireProtocol.refusal`), before any request.

    - ``logprobs``: the reply's content tokens with their log-probabilities and top alternatives (G-Eval's weighted
      score, a classifier's choice probabilities);
    - ``prompt_logprobs``: the log-probabilities of the prompt's own tokens (GPTScore);
    - ``forced_tool``: a named tool the model must call (a classifier's ``tools`` mode);
    - ``forced_tool_with_thinking``: that, with extended thinking on (Anthropic refuses it);
    - ``json_schema``: a structured-output mode constrained by a JSON schema (``json`` mode);
    - ``json_object``: a JSON-only mode without a schema (``json_object`` mode);
    - ``batch``: a batch API at a discount (``run --batch``);
    - ``attachments``: the media types a prompt may carry as content parts (``image/png``; a family ``image/*`` or
      a kind ``image``, ``audio``, ``document`` for all of them); ``attachment_bytes``: the most bytes one
      attachment may hold, as ``(media type, family or kind, bytes)`` pairs, the first that names it applying;
      ``attachment_total_bytes``: the most all of one request's may take in its body (as base64, 4 bytes for every
      3: a provider's limit of a request's size); ``attachment_urls``: the types it may
      send as a URL the provider fetches (the others go as data) (:func:`scorers.attachments.attachment_problem`).
    """

    logprobs: bool = False
    prompt_logprobs: bool = False
    forced_tool: bool = True
    forced_tool_with_thinking: bool = True
    json_schema: bool = True
    json_object: bool = True
    batch: bool = False
    attachments: frozenset[str] = frozenset()
    attachment_bytes: tuple[tuple[str, int], ...] = ()
    attachment_total_bytes: int | None = None
    attachment_urls: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Endpoint:
    """Where a protocol's requests go and the credentials they carry, when the settings name neither.

    ``key_env``: the environment variables of the API key, in order (empty: the protocol signs requests another
    way, e.g. Bedrock's AWS credential chain, and needs no key); ``url_env``: those of the base URL (the SDK's own
    override, e.g. ``ANTHROPIC_BASE_URL``); ``default_url``: the base URL otherwise (a callable of the environment
    where it depends on it, e.g. Bedrock's region). ``key_hint`` completes "set ..." in the error of a missing key
    (and names the credentials where there is no key). ``env``: further variables the protocol reads (e.g. the AWS
    credential chain's), which an engine's workers take from the driver as they take the others.
    """

    key_env: tuple[str, ...]
    url_env: tuple[str, ...]
    default_url: str | Callable[[Environ], str]
    key_hint: str = ""
    env: tuple[str, ...] = ()

    def env_names(self) -> tuple[str, ...]:
        """Every environment variable the protocol reads."""
        return (*self.key_env, *self.url_env, *self.env)

    def base_url(self, environ: Environ) -> str:
        """The base URL the environment gives (the first of ``url_env`` set), else the default."""
        for name in self.url_env:
            value = (environ.get(name) or "").strip()
            if value:
                return value
        return self.default_url(environ) if callable(self.default_url) else self.default_url

    def api_key(self, environ: Environ) -> str | None:
        """The API key the environment gives (the first of ``key_env`` set), else ``None``."""
        for name in self.key_env:
            value = (environ.get(name) or "").strip()
            if value:
                return value
        return None


class HTTPReply(NamedTuple):
    """What one HTTP attempt got back, whatever the client: its status, headers (lower-case names) and body."""

    status: int
    headers: Mapping[str, str]
    content: bytes


class ReplyRefused(Exception):
    """Raised by :meth:`WireProtocol.parse` when the provider refused to answer or stopped for safety (Anthropic
    ``stop_reason: refusal``, Gemini ``finishReason: SAFETY``/``RECITATION``): not an unreadable reply, so it is
    neither re-asked nor retried; the engine raises :class:`~scorers.errors.JudgeRefused`."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class WireProtocol(ABC):
    """One wire protocol (see the module docstring). Subclasses set the class attributes and implement
    :meth:`body`, :meth:`parse`, :meth:`tokens`, :meth:`client` and :meth:`post`."""

    #: The ``api`` setting's value that selects it (``"chat"``, ``"anthropic"``, ...).
    name: ClassVar[str]
    capabilities: ClassVar[Capabilities]
    endpoint: ClassVar[Endpoint]
    #: The optional extra that installs its client (``None``: the core install has it).
    extra: ClassVar[str | None] = None

    def path(self, model: str) -> str:
        """The path a request for ``model`` is posted to, under the base URL."""
        raise NotImplementedError

    @abstractmethod
    def body(self, request: Request, model: str, thinks: bool) -> dict[str, Any]:
        """The JSON body of ``request`` for ``model`` (``thinks``: a reasoning model or thinking on). ``extra`` is
        merged in by the caller. Content parts of the chat shape (``text``, ``image_url``, ``input_audio``,
        ``file``) become this protocol's. The body always holds ``"model"`` (the cache key, usage and messages read
        it); a protocol whose model goes in the path (Gemini, Bedrock) leaves it out of what :meth:`post` sends."""

    @abstractmethod
    def parse(self, data: Any, *, model: str) -> ChatResult:
        """Read a reply body; raise :class:`~scorers.llm.protocol.InvalidReply` on a shape that cannot be used
        (re-asked) and :class:`ReplyRefused` on a refusal or a safety stop. Tool-call arguments that arrive as
        objects are kept as their JSON text (``json.dumps``), so the result equals chat's for the same verdict."""

    @abstractmethod
    def tokens(self, data: Any) -> Tokens:
        """The token counts a reply body states (:class:`Tokens`); zeros where it states none or is malformed."""

    def sent(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """The generation settings of ``body`` (``ChatResult.sent``): all but its content (messages, tools, ...)."""
        return {"api": self.name, **{k: v for k, v in body.items() if k not in self.content_keys}}

    #: The body keys that are the request's content, not its generation settings (left out of :meth:`sent`).
    content_keys: ClassVar[frozenset[str]] = frozenset()

    def refusal(self, needs: "Capabilities") -> str | None:
        """Why a judge needing ``needs`` (its fields set ``True``) cannot run on this protocol, or ``None``."""
        lacking = [
            name
            for name in (
                "logprobs",
                "prompt_logprobs",
                "forced_tool",
                "forced_tool_with_thinking",
                "json_schema",
                "json_object",
            )
            if getattr(needs, name) and not getattr(self.capabilities, name)
        ]
        return f"the {self.name} protocol has no {', no '.join(lacking)}" if lacking else None

    # ---------------------------------------------------------------- transport
    #: The clients of protocols with the same family are shared (e.g. chat and responses: one openai client).
    client_family: ClassVar[str]

    @abstractmethod
    async def client(self, settings: Settings) -> Any:
        """A new client for ``settings`` (its endpoint, key and transport), its own retries off. The engine keeps
        one per family, endpoint and event loop, and closes it with ``await client.close()`` (or ``aclose()``)."""

    @abstractmethod
    async def post(self, client: Any, path: str, body: Mapping[str, Any], timeout: float) -> HTTPReply:
        """POST ``body`` to ``path``: the reply whatever its HTTP status. A connection that fails or times out
        raises (the engine retries it); :meth:`connection_errors` are the exceptions that mean that."""

    def connection_errors(self) -> tuple[type[BaseException], ...]:
        """The exceptions :meth:`post` raises for a connection that failed (refused, dropped, timed out)."""
        return ()

    def retry_after(self, reply: HTTPReply) -> float | None:
        """Seconds a failed reply asks to wait before a retry that its body states (e.g. Gemini's ``RetryInfo``);
        ``None`` where it states none. The engine reads ``Retry-After`` headers itself, and prefers them."""
        return None

    def redacted(self, settings: Settings) -> tuple[str, ...]:
        """Secrets no message may show besides the API key (e.g. AWS secret keys)."""
        return ()
