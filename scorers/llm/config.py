"""Settings of the LLM engine: arguments, then :func:`configure`, then the environment, then defaults.

Environment variables (read when a request is made, not at import):

``OPENAI_API_KEY``
    The API key. Missing (and no ``client=``) → :class:`~scorers.errors.ConfigError` before any request.
    Local servers that ignore keys still need one set; any placeholder will do.
``OPENAI_BASE_URL``
    An OpenAI-compatible endpoint (default ``https://api.openai.com/v1``). Credentials in it
    (``http://user:password@host/v1``) are sent as HTTP Basic auth in place of the API key with the httpx
    transport (``SCORERS_HTTP_TRANSPORT=httpx``; the aiohttp transport, the default when installed, refuses
    them: an :class:`~scorers.llm.transport.EndpointConfigError`),
    and are never shown: messages, results and logs mask them, and the HTTP client the engine makes is given
    the URL without them, so its own log lines (httpx's ``HTTP Request: POST ...``) hold none either. A
    ``client=`` of yours is used as it is and logs what it logs.
``SCORERS_MODEL``
    The default judge model (default :data:`DEFAULT_MODEL`, ``gpt-4o-mini``).
``SCORERS_CACHE``
    Path of the SQLite reply cache, or ``0``/``off``/``false`` to disable it.
``SCORERS_CACHE_DIR``
    Folder of the cache file (``llm-cache.sqlite``); default ``$XDG_CACHE_HOME/scorers`` or ``~/.cache/scorers``.
``SCORERS_CACHE_URL``
    A Redis server to cache replies on instead, shared by every machine of a run
    (``redis://[:password@]host:port/db``, ``?ttl=<seconds>`` to expire entries; see
    :class:`~scorers.llm.cache.RedisCache`). ``SCORERS_CACHE=off`` still disables the cache; a
    ``SCORERS_CACHE`` path as well is a :class:`~scorers.errors.ConfigError`.
``SCORERS_HTTP_TRANSPORT``
    ``auto`` (default: aiohttp when installed, else httpx), ``aiohttp`` or ``httpx``.
``SCORERS_API``
    The wire protocol of the judges (the ``api`` setting below; default ``chat``).

The key and base URL of a protocol other than OpenAI's are read from its provider's own variables
(``ANTHROPIC_API_KEY``/``ANTHROPIC_BASE_URL``, ...: each protocol's :class:`~scorers.llm.protocols.Endpoint`).

Settings without an environment variable (``configure()``, ``LLMEngine(...)``):

``api``
    The wire protocol (:mod:`scorers.llm.protocols`): ``"chat"`` (default: ``POST /chat/completions``),
    ``"responses"`` (``POST /responses``, OpenAI's Responses API), ``"anthropic"``, ``"gemini"``, ``"bedrock"``
    (each provider's native API) or a plugin's. Also ``SCORERS_API``. A :class:`~scorers.llm.engine.ChatRequest`
    and a judge may name their own (``api=``).
``reasoning``
    ``None`` (default): derived from the model name by :func:`is_reasoning_model` (OpenAI's o-series and
    the gpt-5 family and later). ``True``/``False`` overrides it for every model. A reasoning model is sent
    no ``temperature`` or ``top_p`` and ``max_completion_tokens`` instead of ``max_tokens``.
``deadline``
    Seconds one ``complete()`` call may take over all its retries and re-asks (default
    :data:`DEFAULT_DEADLINE`, 600); past it the call raises :class:`~scorers.errors.JudgeError`. The clock
    starts when the first attempt gets its concurrency slot, so queueing behind other rows does not count.

>>> configure(model="gpt-4o", max_concurrency=8)
>>> resolve(api_key="sk-example").model
'gpt-4o'
>>> configure(reset=True)
>>> configure(api="responses", reasoning=True, deadline=120)
>>> settings = resolve(api_key="sk-example")
>>> settings.api, settings.reasoning, settings.deadline
('responses', True, 120.0)
>>> configure(reset=True)
>>> is_reasoning_model("o4-mini"), is_reasoning_model("gpt-5.1"), is_reasoning_model("gpt-4o")
(True, True, False)
"""

from __future__ import annotations

import contextlib
import contextvars
import inspect
import math
import os
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Callable, ClassVar, Iterator, Literal, Mapping, Protocol

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, Strict, ValidationError

from .._util import memoize
from ..errors import ConfigError
from .redaction import mask_urls

__all__ = [
    "DEFAULT_MODEL",
    "DEFAULT_BASE_URL",
    "LLMSettings",
    "Setting",
    "configure",
    "resolve",
    "configured_prices",
    "default_model",
    "default_api",
    "default_cache_path",
    "settings_state",
    "is_reasoning_model",
    "DEFAULT_DEADLINE",
    "APIS",
    "configured_values",
    "cache_target",
    "check_options",
    "ENGINE_OPTIONS",
    "FORWARDED_ENV",
    "ENV_NAMES",
    "forwarded_env",
    "scoped",
]

#: The judge model used when neither an argument, :func:`configure` nor ``SCORERS_MODEL`` names one.
DEFAULT_MODEL = "gpt-4o-mini"
DEFAULT_BASE_URL = "https://api.openai.com/v1"
#: Seconds one ``complete()`` call may take, retries and re-asks included, unless ``deadline=`` says otherwise.
DEFAULT_DEADLINE = 600.0
#: The wire protocols built in (:mod:`scorers.llm.protocols`; a plugin package may add more).
APIS: tuple[str, ...] = ("chat", "responses", "anthropic", "gemini", "bedrock")

#: Reasoning model names: ``o`` + a digit (o1, o3-mini, o4-mini) or ``gpt-`` + a major version >= 5 (gpt-5,
#: gpt-5.1, gpt-5-mini, gpt-6), optionally after a provider prefix (``openai/o3``).
_REASONING_MODEL = re.compile(r"(?:^|/)(?:o[1-9]\d*|gpt-(?:[5-9]|[1-9]\d+))(?:[-.:]|$)", re.IGNORECASE)


def is_reasoning_model(model: str) -> bool:
    """Whether ``model`` names a reasoning model (no ``temperature``; ``max_completion_tokens``).

    >>> [is_reasoning_model(m) for m in ("o1", "o3-mini", "openai/o3", "gpt-5", "gpt-5-mini", "gpt-10")]
    [True, True, True, True, True, True]
    >>> [is_reasoning_model(m) for m in ("gpt-4o-mini", "gpt-4.1", "omni-judge", "gemma", "gpt-50x")]
    [False, False, False, False, False]

    Override it with ``configure(reasoning=True/False)`` or ``LLMEngine(reasoning=...)``.
    """
    return _REASONING_MODEL.search(model) is not None


_OFF = {"0", "off", "false", "no", "none", ""}


class _Unset:
    """The default of :func:`configure`'s parameters: leave the setting as it is."""

    def __repr__(self) -> str:
        return "<unchanged>"


_UNSET: Any = _Unset()


# ------------------------------------------------------------ the declaration
class Environ(Protocol):
    """Where settings read environment variables: ``os.environ``, or its :func:`scoped` view."""

    def get(self, name: str, /) -> str | None: ...


def _env_text(environ: Environ, name: str) -> str | None:
    value = environ.get(name)
    return value.strip() if value and value.strip() else None


@dataclass(frozen=True)
class Setting:
    """Field metadata of an :class:`LLMSettings` field: how it is described, masked and read from the environment.

    ``expected`` completes "must be ..." in the :class:`ConfigError` of a bad value. ``env`` are the
    environment variables it is read from (an engine's workers get them from the driver); ``local_env``
    further ones of this machine only (the default cache folder), never forwarded. The environment
    decides when the value is unset or ``from_env`` (``transport="auto"``, ``cache=True``); ``read``
    turns the environment into a value (default: the first variable's stripped text), ``None`` when
    it sets none. ``secret``: never shown (not in ``repr``, not in messages); ``url``: shown with its
    credentials masked. ``configure_only``: set by :func:`configure` alone, not an option of an engine
    (:data:`ENGINE_OPTIONS`).
    """

    expected: str
    env: tuple[str, ...] = ()
    local_env: tuple[str, ...] = ()
    from_env: Any = None
    read: Callable[[Environ], Any] | None = None
    secret: bool = False
    url: bool = False
    configure_only: bool = False

    def from_environment(self, environ: Environ) -> Any:
        """The value the environment sets, or ``None``."""
        if self.read is not None:
            return self.read(environ)
        return _env_text(environ, self.env[0]) if self.env else None


def _text(value: Any) -> Any:
    if not isinstance(value, str) or not value.strip():
        raise ValueError("empty")
    return value.strip()


def _api(value: Any) -> Any:
    from .protocols import PROTOCOLS

    if not isinstance(value, str) or value.strip() not in PROTOCOLS:
        raise ValueError("not a wire protocol")
    return PROTOCOLS.get(value.strip()).name


def _client(value: Any) -> Any:
    if value is not None and (not hasattr(value, "post") or not hasattr(value, "base_url")):
        raise ValueError("not a client")
    return value


def _cache(value: Any) -> Any:
    from .cache import LLMCache, RedisCache, is_redis_url

    if value is None:
        return None
    if is_redis_url(value):
        RedisCache(value)  # a ConfigError now for a malformed ttl=, not at the first request
        return value.strip()
    if isinstance(value, (bool, str, os.PathLike, LLMCache, RedisCache)):
        return value
    raise ValueError("not a cache")


def _prices(prices: Any) -> dict[str, tuple[float, ...]]:
    if not isinstance(prices, Mapping):
        raise ConfigError(
            "prices must map model names to (input, output) or (input, output, cached input) USD per 1M tokens"
        )
    out: dict[str, tuple[float, ...]] = {}
    for model, given in prices.items():
        try:
            price = tuple(float(p) for p in given)
        except (TypeError, ValueError):
            price = ()
        if len(price) not in (2, 3):
            raise ConfigError(
                f"prices[{model!r}] must be (input, output) or (input, output, cached input) USD per 1M tokens, "
                f"got {given!r}"
            )
        if not all(0 <= p < math.inf for p in price):
            raise ConfigError(f"prices[{model!r}] must be finite and not negative, got {given!r}")
        out[str(model)] = price
    return out


def _env_transport(environ: Environ) -> str | None:
    value = _env_text(environ, "SCORERS_HTTP_TRANSPORT")
    return None if value is None else value.lower()


def _env_cache(environ: Environ) -> Any:
    """``SCORERS_CACHE`` (a path, or ``0``/``off``/... or empty: no cache) or ``SCORERS_CACHE_URL`` (Redis), or
    ``None`` (the default file, under ``SCORERS_CACHE_DIR``: see :func:`default_cache_path`)."""
    from .cache import is_redis_url

    env = _env_text(environ, "SCORERS_CACHE")
    url = _env_text(environ, "SCORERS_CACHE_URL")
    if env is not None:
        if env.lower() in _OFF:
            return False
        if url is not None:
            raise ConfigError(
                f"SCORERS_CACHE={env!r} and SCORERS_CACHE_URL are both set: keep the file path "
                f"(one machine) or the Redis URL (shared), not both"
            )
        return Path(env).expanduser()
    if environ.get("SCORERS_CACHE") is not None:  # set but empty: off
        return False
    if url is not None:
        if not is_redis_url(url):
            raise ConfigError(
                f"SCORERS_CACHE_URL={mask_urls(url)!r} is not a redis:// or rediss:// URL "
                f"(for a file, set SCORERS_CACHE to its path)"
            )
        return url
    return None


_Seconds = Annotated[float, Strict(), Field(ge=0, allow_inf_nan=False), Setting("a finite number of seconds >= 0")]
_PositiveSeconds = Annotated[
    float, Strict(), Field(gt=0, allow_inf_nan=False), Setting("a finite number of seconds > 0")
]
_Tries = Annotated[int, Strict(), Field(ge=0, le=50), Setting("an integer in [0, 50]")]


class LLMSettings(BaseModel):
    """The settings of the LLM engine, declared once: what :func:`configure` and ``LLMEngine(...)`` take (each
    validated as its field), the environment variables each is read from (:class:`Setting`), the defaults,
    and, resolved by :func:`resolve`, the settings of one engine call. ``api_key`` is kept out of ``repr``
    and the credentials of URLs are masked in it.

    >>> LLMSettings(model="gpt-4o", base_url="http://user:pw@localhost:8000/v1", api_key="sk-secret")
    ... # doctest: +ELLIPSIS
    LLMSettings(model='gpt-4o', base_url='http://user:***@localhost:8000/v1', max_concurrency=32, ...)
    >>> LLMSettings.settings["cache"].env
    ('SCORERS_CACHE', 'SCORERS_CACHE_URL', 'SCORERS_CACHE_DIR')
    >>> LLMSettings.check("max_concurrency", 0)
    Traceback (most recent call last):
    ...
    scorers.errors.ConfigError: LLM setting 'max_concurrency' must be an integer >= 1, got 0
    """

    model_config = ConfigDict(frozen=True, extra="forbid", validate_default=False)

    model: Annotated[str, BeforeValidator(_text), Setting("a non-empty string", env=("SCORERS_MODEL",))] = DEFAULT_MODEL
    base_url: Annotated[
        str, BeforeValidator(_text), Setting("a non-empty string", env=("OPENAI_BASE_URL",), url=True)
    ] = DEFAULT_BASE_URL
    api_key: Annotated[
        str | None, BeforeValidator(_text), Setting("a non-empty string", env=("OPENAI_API_KEY",), secret=True)
    ] = Field(None, repr=False)
    #: An ``openai.AsyncOpenAI`` or ``openai.OpenAI`` client (instead of ``base_url``/``api_key``).
    client: Annotated[Any, AfterValidator(_client), Setting("an openai.AsyncOpenAI or openai.OpenAI client")] = Field(
        None, repr=False
    )
    #: Requests in flight per endpoint and event loop.
    max_concurrency: Annotated[int, Strict(), Field(ge=1), Setting("an integer >= 1")] = 32
    #: Seconds per HTTP attempt.
    timeout: _PositiveSeconds = 60.0
    #: Retries of 429/5xx/timeouts/connection errors (so at most 5 attempts by default).
    max_retries: _Tries = 4
    #: Re-asks of an unusable reply (so at most 3 replies by default).
    max_reasks: _Tries = 2
    #: First backoff delay, doubled per retry, with jitter.
    backoff_base: _Seconds = 0.5
    #: Cap of one backoff delay.
    backoff_max: _Seconds = 20.0
    #: Cap of a server's Retry-After.
    retry_after_max: _Seconds = 60.0
    #: ``auto``: ``SCORERS_HTTP_TRANSPORT``, else aiohttp when installed, else httpx.
    transport: Annotated[
        Literal["auto", "aiohttp", "httpx"],
        Setting("one of auto, aiohttp, httpx", env=("SCORERS_HTTP_TRANSPORT",), from_env="auto", read=_env_transport),
    ] = "auto"
    #: The wire protocol (:mod:`scorers.llm.protocols`); it decides the endpoint and key variables read.
    api: Annotated[
        str,
        BeforeValidator(_api),
        Setting(f"the name of a wire protocol ({', '.join(APIS)} or a plugin's)", env=("SCORERS_API",)),
    ] = "chat"
    #: ``None``: derived per request from the model name (:func:`is_reasoning_model`).
    reasoning: Annotated[bool | None, Strict(), Setting("True, False or None (derive from the model)")] = None
    deadline: _PositiveSeconds = DEFAULT_DEADLINE
    #: As an option: ``True`` (the environment's cache, else the default file), ``False``, a file path, a Redis
    #: URL, an ``LLMCache``/``RedisCache``. Resolved: ``None`` (no cache), a path, a Redis URL or a cache object.
    cache: Annotated[
        Any,
        BeforeValidator(_cache),
        Setting(
            "True/False, a file path, a redis:// URL, an LLMCache or a RedisCache",
            env=("SCORERS_CACHE", "SCORERS_CACHE_URL", "SCORERS_CACHE_DIR"),
            local_env=("XDG_CACHE_HOME", "LOCALAPPDATA", "HOME"),
            from_env=True,
            read=_env_cache,
            url=True,
        ),
    ] = True
    #: Model name → (input, output) or (input, output, cached input) USD per 1M tokens, for cost estimates
    #: (:func:`configure` only); without a cached-input price, cached prompt tokens cost the input price.
    prices: Annotated[
        Any, BeforeValidator(_prices), Setting("a mapping of model names to prices", configure_only=True)
    ] = Field(default_factory=dict, repr=False)

    #: The :class:`Setting` of each field.
    settings: ClassVar[dict[str, Setting]]

    @property
    def shown_url(self) -> str:
        """``base_url`` with its credentials masked (:func:`~scorers.llm.redaction.mask_urls`): the endpoint as
        messages, logs, cache keys and ``repr`` show it."""
        return mask_urls(self.base_url)

    @property
    def environ(self) -> Environ:
        """The environment in effect where these settings are used: the process's, or within :func:`scoped` (an
        engine's worker) the driver's variables over it, which a protocol reads its own credentials from (e.g.
        Bedrock's AWS key pair)."""
        return _environ()

    def __repr_args__(self) -> Any:  # repr() and str(): URLs' credentials masked, secrets left out (repr=False)
        for name, info in type(self).model_fields.items():
            if info.repr:
                value = getattr(self, name)
                yield name, mask_urls(value) if self.settings[name].url and isinstance(value, str) else value

    @classmethod
    def check(cls, name: str, value: Any) -> Any:
        """``value`` of setting ``name`` validated (``None``: unset); a :class:`ConfigError` naming it otherwise."""
        if value is None:
            return None
        if name not in cls.model_fields:
            raise ConfigError(f"unknown LLM setting {name!r}")
        try:
            return getattr(cls.model_validate({name: value}), name)
        except ValidationError as exc:
            cause = (exc.errors()[0].get("ctx") or {}).get("error")
            setting = cls.settings[name]
            got = "" if setting.secret else f", got {_shown_value(setting, value)}"
            raise ConfigError(f"LLM setting {name!r} must be {setting.expected}{got}") from cause

    @classmethod
    def env_value(cls, name: str, environ: Environ | None = None) -> Any:
        """Setting ``name`` as the environment sets it (its :class:`Setting` reads its variables), validated;
        ``None`` when the environment sets none."""
        setting = cls.settings[name]
        value = setting.from_environment(_environ() if environ is None else environ)
        try:
            return cls.check(name, value)
        except ConfigError as exc:
            raise ConfigError(f"{exc} (read from {' or '.join(setting.env)})", scorer=exc.scorer) from exc

    @classmethod
    def from_environment(cls, environ: Environ | None = None) -> dict[str, Any]:
        """The settings the environment sets, validated (unset ones are absent)."""
        values = {name: cls.env_value(name, environ) for name, setting in cls.settings.items() if setting.env}
        return {name: value for name, value in values.items() if value is not None}


def _shown_value(setting: Setting, value: Any) -> str:
    """``value`` as a message about it shows it: a secret not at all, a URL masked, an object by its type."""
    if setting.secret:
        return "'***'"
    if not isinstance(value, (str, int, float, bool, type(None), os.PathLike, Mapping, list, tuple)):
        return type(value).__name__
    return repr(mask_urls(value)) if setting.url and isinstance(value, str) else repr(value)


LLMSettings.settings = {
    name: next(m for m in info.metadata if isinstance(m, Setting)) for name, info in LLMSettings.model_fields.items()
}
#: The options of ``LLMEngine(...)``: every setting but the :func:`configure`-only ones.
ENGINE_OPTIONS: tuple[str, ...] = tuple(name for name, s in LLMSettings.settings.items() if not s.configure_only)
#: The environment variables that decide settings, which an engine's workers take from the driver; with those of
#: the wire protocols' endpoints (:func:`forwarded_env`).
FORWARDED_ENV: tuple[str, ...] = tuple(dict.fromkeys(v for s in LLMSettings.settings.values() for v in s.env))
#: Every environment variable :func:`resolve` reads besides the protocols' (also this machine's, which locate the
#: default cache folder).
ENV_NAMES: tuple[str, ...] = FORWARDED_ENV + tuple(
    dict.fromkeys(v for s in LLMSettings.settings.values() for v in s.local_env)
)


@memoize
def forwarded_env() -> tuple[str, ...]:
    """:data:`FORWARDED_ENV` and the variables of every registered wire protocol's endpoint (keys, base URLs, and
    e.g. the AWS credential chain's), read once: an engine's workers take them from the driver.

    >>> {"OPENAI_API_KEY", "SCORERS_MODEL"} <= set(forwarded_env())
    True
    """
    from .protocols import PROTOCOLS

    names = [name for api in PROTOCOLS.names() for name in PROTOCOLS.get(api).endpoint.env_names()]
    return tuple(dict.fromkeys([*FORWARDED_ENV, *names]))


@memoize
def _env_names() -> tuple[str, ...]:
    """Every environment variable :func:`resolve` reads: :data:`ENV_NAMES` and the protocols' (:func:`forwarded_env`)."""
    return tuple(dict.fromkeys([*ENV_NAMES, *forwarded_env()]))


# ---------------------------------------------------------------- configure
class _Configured:
    """What :func:`configure` set in this process, under a lock; ``version`` is bumped by every call,
    so that memoised settings know when they are stale."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.values: dict[str, Any] = {}
        self.version = 0


@memoize
def _configured() -> _Configured:
    """The process-wide :func:`configure` state (created on first use)."""
    return _Configured()


@dataclass(frozen=True)
class _Scope:
    """Settings that stand in for :func:`configure`'s and the LLM environment variables' within :func:`scoped`."""

    configured: dict[str, Any]
    environ: dict[str, str | None]

    def get(self, name: str, default: Any = None) -> Any:
        """The environment variable ``name`` as the scope has it (the process's, for one it does not name)."""
        if name in self.environ:
            value = self.environ[name]
            return default if value is None else value
        return os.environ.get(name, default)


_SCOPE: contextvars.ContextVar[_Scope | None] = contextvars.ContextVar("scorers_llm_scope", default=None)


@contextlib.contextmanager
def scoped(configured: Mapping[str, Any], environ: Mapping[str, str | None] | None = None) -> Iterator[None]:
    """Within the block, resolve settings as if :func:`configure` had set ``configured`` (in place of this
    process's values) and the environment held ``environ`` for the variables it names (``None``: unset);
    :data:`FORWARDED_ENV` are the ones that matter. It holds for this thread and the asyncio tasks started in
    the block (a context variable): nothing process-wide changes, and the previous settings are back after it.
    An engine's workers judge with the driver's settings this way.

    >>> configure(model="process-model")
    >>> with scoped({"model": "scoped-model"}, {"OPENAI_API_KEY": "sk-scoped"}):
    ...     resolve().model, resolve().api_key
    ('scoped-model', 'sk-scoped')
    >>> default_model()
    'process-model'
    >>> configure(reset=True)
    """
    unknown = sorted(set(configured) - set(LLMSettings.model_fields))
    if unknown:
        raise ConfigError(f"unknown LLM settings {unknown}")
    scope = _Scope(
        {name: _check(name, value) for name, value in configured.items() if value is not None}, dict(environ or {})
    )
    token = _SCOPE.set(scope)
    try:
        yield
    finally:
        _SCOPE.reset(token)


def _values() -> dict[str, Any]:
    """The configured values in effect: the scope's, else a copy of what :func:`configure` set."""
    scope = _SCOPE.get()
    if scope is not None:
        return dict(scope.configured)
    state = _configured()
    with state.lock:
        return dict(state.values)


def _environ() -> Environ:
    """The environment in effect: the scope's variables over the process's."""
    scope = _SCOPE.get()
    return os.environ if scope is None else scope


def _check(name: str, value: Any) -> Any:
    """Validate one option; raise :class:`ConfigError` naming it."""
    return LLMSettings.check(name, value)


def check_options(options: Mapping[str, Any], *, owner: str) -> dict[str, Any]:
    """Validate per-engine options (:data:`ENGINE_OPTIONS`; ``None`` values mean "not set"); another name is the
    ``TypeError`` Python raises for an unexpected keyword argument of ``owner``.

    >>> check_options({"model": " gpt-4o ", "timeout": None}, owner="LLMEngine.__init__()")
    {'model': 'gpt-4o'}
    >>> check_options({"prices": {}}, owner="LLMEngine.__init__()")
    Traceback (most recent call last):
    ...
    TypeError: LLMEngine.__init__() got an unexpected keyword argument 'prices'
    """
    unknown = next((name for name in options if name not in ENGINE_OPTIONS), None)
    if unknown is not None:
        raise TypeError(f"{owner} got an unexpected keyword argument {unknown!r}")
    return {name: _check(name, value) for name, value in options.items() if value is not None}


def configure(*, reset: bool = False, **options: Any) -> None:
    """Set process-wide defaults of every LLM judge (arguments given to a scorer still win).

    The options are the fields of :class:`LLMSettings` (see the signature). Passing ``None`` clears one
    setting; ``reset=True`` clears all first. ``cache`` is ``True``/``False``, a file path, a ``redis://``
    URL (:class:`~scorers.llm.cache.RedisCache`) or an :class:`~scorers.llm.cache.LLMCache`;
    ``prices`` maps model names to ``(input, output)`` or ``(input, output, cached input)`` USD per 1M tokens
    for cost estimates (and ``Run(max_cost=...)``).
    Retries wait ``backoff_base * 2**k`` seconds (jittered, at most ``backoff_max``), or the
    server's ``Retry-After`` (at most ``retry_after_max``). ``api``, ``reasoning`` and ``deadline`` are
    described in the module docstring.
    """
    unknown = next((name for name in options if name not in LLMSettings.model_fields), None)
    if unknown is not None:
        raise TypeError(f"configure() got an unexpected keyword argument {unknown!r}")
    checked = {name: _check(name, value) for name, value in options.items()}
    if checked.get("client") is not None and (
        checked.get("api_key") is not None or checked.get("base_url") is not None
    ):
        raise ConfigError("configure(): pass either client= or api_key=/base_url=, not both")
    state = _configured()
    with state.lock:
        state.version += 1
        if reset:
            state.values.clear()
        for name, value in checked.items():
            if value is None:
                state.values.pop(name, None)
            else:
                state.values[name] = value


# inspect.signature reads __signature__, which a function's declared type does not list
configure.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
    [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=_UNSET) for name in LLMSettings.model_fields]
    + [inspect.Parameter("reset", inspect.Parameter.KEYWORD_ONLY, default=False, annotation="bool")],
    return_annotation="None",
)


def configured_values() -> dict[str, Any]:
    """A copy of what :func:`configure` set in this process, or the :func:`scoped` values within one (e.g. to
    hand to an engine's workers)."""
    return _values()


def settings_state() -> tuple[Any, ...]:
    """What :func:`resolve` depends on besides its arguments: the :func:`configure` version, the
    environment variables it reads and the working folder (relative cache paths). Equal states
    resolve to equal settings, so a caller may memoise :func:`resolve` under this key.
    """
    try:
        folder: str | None = os.getcwd()
    except OSError:  # the working folder was deleted
        folder = None
    environ = _environ()
    return (_configured().version, _SCOPE.get(), folder, *[environ.get(name) for name in _env_names()])


def configured_prices() -> dict[str, tuple[float, ...]]:
    """Prices set with ``configure(prices=...)`` (empty when none)."""
    return dict(_values().get("prices", {}))


# ------------------------------------------------------------------ resolve
def _chosen(name: str, value: Any, environ: Environ) -> Any:
    """Setting ``name``: ``value`` (an argument or configured), unless it leaves it to the environment
    (unset, or the field's ``from_env``), else the default."""
    setting = LLMSettings.settings[name]
    if setting.env and (value is None or value == setting.from_env):
        from_env = LLMSettings.env_value(name, environ)
        if from_env is not None:
            value = from_env
    if value is None:
        field = LLMSettings.model_fields[name]
        value = field.get_default(call_default_factory=True)
    return value


def default_model(override: str | None = None) -> str:
    """``override``, else the configured model, else ``SCORERS_MODEL``, else :data:`DEFAULT_MODEL`."""
    return _chosen("model", override or _values().get("model"), _environ())


def default_api(override: str | None = None) -> str:
    """``override``, else the configured wire protocol, else ``"chat"``."""
    return _chosen("api", override or _values().get("api"), _environ())


def default_cache_path() -> Path:
    """``$SCORERS_CACHE_DIR/llm-cache.sqlite``, else under ``$XDG_CACHE_HOME/scorers`` or ``~/.cache/scorers``."""
    environ = _environ()
    folder = _env_text(environ, "SCORERS_CACHE_DIR")
    if folder is None:
        base = _env_text(environ, "XDG_CACHE_HOME") or _env_text(environ, "LOCALAPPDATA") or str(Path.home() / ".cache")
        folder = str(Path(base) / "scorers")
    return Path(folder).expanduser() / "llm-cache.sqlite"


def cache_target(value: Any) -> Any:
    """Turn a cache option into ``None`` (off), a path, a Redis URL, or an ``LLMCache``/``RedisCache``."""
    from .cache import is_redis_url

    value = _chosen("cache", value, _environ())  # True: the environment's cache, else the default file
    if value is False:
        return None
    if value is True:
        return default_cache_path()
    if is_redis_url(value):
        return value
    if isinstance(value, (str, os.PathLike)):
        return Path(value).expanduser()
    return value


def _endpoint(api: str) -> Any:
    """The :class:`~scorers.llm.protocols.Endpoint` of the wire protocol ``api``."""
    from .protocols import wire

    return wire(api).endpoint


def resolve(*, scorer: str | None = None, **overrides: Any) -> LLMSettings:
    """Merge per-engine ``overrides`` (already checked; ``None`` = unset), :func:`configure`, the environment and
    the defaults, in that order, field by field (:class:`LLMSettings` declares them). No API key (and no client)
    is a :class:`~scorers.errors.ConfigError` naming ``scorer``, the judge that needs it."""
    configured = _values()
    explicit_client = overrides.get("client")
    explicit_endpoint = overrides.get("api_key") is not None or overrides.get("base_url") is not None
    # A per-engine endpoint (api_key/base_url) replaces a configured client, and vice versa.
    client = (
        explicit_client if explicit_client is not None else (None if explicit_endpoint else configured.get("client"))
    )
    chosen = {**configured, **{k: v for k, v in overrides.items() if v is not None}}
    environ = _environ()
    endpoint = _endpoint(_chosen("api", chosen.get("api"), environ))
    values: dict[str, Any] = {}
    for name in LLMSettings.model_fields:
        if name == "client":
            values[name] = client
        elif name in ("base_url", "api_key") and client is not None:
            values[name] = str(client.base_url) if name == "base_url" else None
        elif name == "base_url":
            values[name] = chosen.get(name) or endpoint.base_url(environ)
        elif name == "api_key":
            values[name] = chosen.get(name) or endpoint.api_key(environ)
        elif name == "cache":
            values[name] = cache_target(chosen.get("cache", True))
        elif name == "prices":
            values[name] = configured.get("prices", {})
        else:
            values[name] = _chosen(name, chosen.get(name), environ)
    if client is None and values["api_key"] is None and endpoint.key_env:
        raise ConfigError(
            f"no API key for the LLM judge{f' {scorer}' if scorer else ''}: set {endpoint.key_hint}; to try it "
            "offline, run `python -m scorers loopback` in another shell and export the lines it prints. In Python: "
            "scorers.configure(api_key=...) or client=/api_key= on the scorer (a local server that ignores keys still "
            "needs a placeholder)",
            scorer=scorer,
        )
    values["base_url"] = values["base_url"].rstrip("/")
    return LLMSettings.model_construct(**values)
