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

Settings without an environment variable (``configure()``, ``LLMEngine(...)``):

``api``
    ``"chat"`` (default: ``POST /chat/completions``) or ``"responses"`` (``POST /responses``, OpenAI's
    Responses API). A :class:`~scorers.llm.engine.ChatRequest` may name its own (``api=``).
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

import os
import re
import threading
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Mapping

from .._util import memoize
from ..errors import ConfigError
from .redaction import mask_urls

__all__ = ["DEFAULT_MODEL", "DEFAULT_BASE_URL", "LLMSettings", "configure", "resolve", "configured_prices", "default_model",
           "default_cache_path", "settings_state", "is_reasoning_model", "DEFAULT_DEADLINE", "APIS",
           "configured_values", "cache_target"]

#: The judge model used when neither an argument, :func:`configure` nor ``SCORERS_MODEL`` names one.
DEFAULT_MODEL = "gpt-4o-mini"
DEFAULT_BASE_URL = "https://api.openai.com/v1"
#: Seconds one ``complete()`` call may take, retries and re-asks included, unless ``deadline=`` says otherwise.
DEFAULT_DEADLINE = 600.0
#: The request shapes the engine speaks: chat completions and OpenAI's Responses API.
APIS = ("chat", "responses")

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

_DEFAULTS: dict[str, Any] = {
    "max_concurrency": 32,   # requests in flight per endpoint and event loop
    "timeout": 60.0,         # seconds per HTTP attempt
    "max_retries": 4,        # retries of 429/5xx/timeouts/connection errors (so at most 5 attempts)
    "max_reasks": 2,         # re-asks of an unusable reply (so at most 3 replies)
    "backoff_base": 0.5,     # first backoff delay, doubled per retry, with jitter
    "backoff_max": 20.0,     # cap of one backoff delay
    "retry_after_max": 60.0,  # cap of a server's Retry-After
    "transport": "auto",
    "cache": True,
    "api": "chat",
    "deadline": DEFAULT_DEADLINE,
}
_TRANSPORTS = ("auto", "aiohttp", "httpx")
_OFF = {"0", "off", "false", "no", "none", ""}

_UNSET: Any = object()


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

#: Environment variables that :func:`resolve` reads (``HOME`` locates the default cache folder).
_ENV_NAMES = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "SCORERS_MODEL", "SCORERS_CACHE", "SCORERS_CACHE_DIR",
              "SCORERS_CACHE_URL", "XDG_CACHE_HOME", "LOCALAPPDATA", "SCORERS_HTTP_TRANSPORT", "HOME")


@dataclass(frozen=True)
class LLMSettings:
    """Resolved settings of one engine call. ``api_key`` is kept out of ``repr``."""

    model: str
    base_url: str
    api_key: str | None = field(repr=False)
    client: Any = field(default=None, repr=False, compare=False)
    max_concurrency: int = 32
    timeout: float = 60.0
    max_retries: int = 4
    max_reasks: int = 2
    backoff_base: float = 0.5
    backoff_max: float = 20.0
    retry_after_max: float = 60.0
    transport: str = "auto"
    api: str = "chat"
    #: ``None``: derived per request from the model name (:func:`is_reasoning_model`).
    reasoning: bool | None = None
    deadline: float = DEFAULT_DEADLINE
    #: ``None`` (no cache), the path of the SQLite cache file, a Redis URL, or an ``LLMCache``/``RedisCache``.
    cache: Any = None

    @property
    def shown_url(self) -> str:
        """``base_url`` with its credentials masked (:func:`~scorers.llm.redaction.mask_urls`): the endpoint as
        messages, logs, cache keys and ``repr`` show it."""
        return mask_urls(self.base_url)

    def __repr__(self) -> str:
        shown = {f.name: self.shown_url if f.name == "base_url" else getattr(self, f.name)
                 for f in fields(self) if f.repr}
        return f"LLMSettings({', '.join(f'{name}={value!r}' for name, value in shown.items())})"


def _check(name: str, value: Any) -> Any:
    """Validate one option; raise :class:`ConfigError` naming it."""
    if value is None:
        return None
    if name in ("model", "base_url", "api_key"):
        if not isinstance(value, str) or not value.strip():
            raise ConfigError(f"LLM setting {name!r} must be a non-empty string")
        return value.strip()
    if name in ("max_concurrency",):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ConfigError(f"LLM setting 'max_concurrency' must be an integer >= 1, got {value!r}")
        return value
    if name in ("max_retries", "max_reasks"):
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 50:
            raise ConfigError(f"LLM setting {name!r} must be an integer in [0, 50], got {value!r}")
        return value
    if name in ("timeout", "backoff_base", "backoff_max", "retry_after_max", "deadline"):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0 or value == float("inf"):
            raise ConfigError(f"LLM setting {name!r} must be a finite number of seconds >= 0, got {value!r}")
        if name in ("timeout", "deadline") and value == 0:
            raise ConfigError(f"LLM setting {name!r} must be > 0")
        return float(value)
    if name == "transport":
        if value not in _TRANSPORTS:
            raise ConfigError(f"LLM setting 'transport' must be one of {', '.join(_TRANSPORTS)}, got {value!r}")
        return value
    if name == "api":
        if value not in APIS:
            raise ConfigError(f"LLM setting 'api' must be one of {', '.join(APIS)}, got {value!r}")
        return value
    if name == "reasoning":
        if not isinstance(value, bool):
            raise ConfigError(f"LLM setting 'reasoning' must be True, False or None (derive from the model), "
                              f"got {value!r}")
        return value
    if name == "cache":
        from .cache import LLMCache, RedisCache, is_redis_url

        if is_redis_url(value):
            RedisCache(value)  # a ConfigError now for a malformed ttl=, not at the first request
            return value.strip()
        if isinstance(value, (bool, str, os.PathLike, LLMCache, RedisCache)):
            return value
        raise ConfigError(f"LLM setting 'cache' must be True/False, a file path, a redis:// URL, an LLMCache or "
                          f"a RedisCache, got {value!r}")
    if name == "client":
        if not hasattr(value, "post") or not hasattr(value, "base_url"):
            raise ConfigError(f"LLM setting 'client' must be an openai.AsyncOpenAI or openai.OpenAI client, "
                              f"got {type(value).__name__}")
        return value
    if name == "prices":
        return _check_prices(value)
    raise ConfigError(f"unknown LLM setting {name!r}")


def _check_prices(prices: Any) -> dict[str, tuple[float, float]]:
    if not isinstance(prices, Mapping):
        raise ConfigError("prices must map model names to (input, output) USD per 1M tokens")
    out: dict[str, tuple[float, float]] = {}
    for model, pair in prices.items():
        try:
            price_in, price_out = (float(p) for p in pair)
        except (TypeError, ValueError):
            raise ConfigError(f"prices[{model!r}] must be (input, output) USD per 1M tokens, got {pair!r}") from None
        if price_in < 0 or price_out < 0:
            raise ConfigError(f"prices[{model!r}] must not be negative")
        out[str(model)] = (price_in, price_out)
    return out


def check_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """Validate per-engine options; ``None`` values mean "not set"."""
    return {name: _check(name, value) for name, value in options.items() if value is not None}


def configure(*, client: Any = _UNSET, model: Any = _UNSET, base_url: Any = _UNSET, api_key: Any = _UNSET,
              max_concurrency: Any = _UNSET, timeout: Any = _UNSET, max_retries: Any = _UNSET,
              max_reasks: Any = _UNSET, cache: Any = _UNSET, transport: Any = _UNSET, prices: Any = _UNSET,
              backoff_base: Any = _UNSET, backoff_max: Any = _UNSET, retry_after_max: Any = _UNSET,
              api: Any = _UNSET, reasoning: Any = _UNSET, deadline: Any = _UNSET, reset: bool = False) -> None:
    """Set process-wide defaults of every LLM judge (arguments given to a scorer still win).

    Passing ``None`` clears one setting; ``reset=True`` clears all first. ``cache``
    is ``True``/``False``, a file path, a ``redis://`` URL (:class:`~scorers.llm.cache.RedisCache`) or an
    :class:`~scorers.llm.cache.LLMCache`;
    ``prices`` maps model names to ``(input, output)`` USD per 1M tokens for cost estimates.
    Retries wait ``backoff_base * 2**k`` seconds (jittered, at most ``backoff_max``), or the
    server's ``Retry-After`` (at most ``retry_after_max``). ``api``, ``reasoning`` and ``deadline`` are
    described in the module docstring.
    """
    given = {k: v for k, v in locals().items() if k != "reset" and v is not _UNSET}
    checked = {name: _check(name, value) for name, value in given.items()}
    if "client" in checked and checked["client"] is not None and ({"api_key", "base_url"} & {
            k for k, v in checked.items() if v is not None}):
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


def configured_values() -> dict[str, Any]:
    """A copy of what :func:`configure` set in this process (e.g. to hand to an engine's workers)."""
    state = _configured()
    with state.lock:
        return dict(state.values)


def settings_state() -> tuple[Any, ...]:
    """What :func:`resolve` depends on besides its arguments: the :func:`configure` version, the
    environment variables it reads and the working folder (relative cache paths). Equal states
    resolve to equal settings, so a caller may memoise :func:`resolve` under this key.
    """
    try:
        folder: str | None = os.getcwd()
    except OSError:  # the working folder was deleted
        folder = None
    environ = os.environ
    return (_configured().version, folder, *[environ.get(name) for name in _ENV_NAMES])


def configured_prices() -> dict[str, tuple[float, float]]:
    """Prices set with ``configure(prices=...)`` (empty when none)."""
    state = _configured()
    with state.lock:
        return dict(state.values.get("prices", {}))


def default_model(override: str | None = None) -> str:
    """``override``, else the configured model, else ``SCORERS_MODEL``, else :data:`DEFAULT_MODEL`."""
    state = _configured()
    with state.lock:
        configured = state.values.get("model")
    return override or configured or _env("SCORERS_MODEL") or DEFAULT_MODEL


def _env(name: str) -> str | None:
    value = os.environ.get(name)
    return value.strip() if value and value.strip() else None


def default_cache_path() -> Path:
    """``$SCORERS_CACHE_DIR/llm-cache.sqlite``, else under ``$XDG_CACHE_HOME/scorers`` or ``~/.cache/scorers``."""
    folder = _env("SCORERS_CACHE_DIR")
    if folder is None:
        base = _env("XDG_CACHE_HOME") or _env("LOCALAPPDATA") or str(Path.home() / ".cache")
        folder = str(Path(base) / "scorers")
    return Path(folder).expanduser() / "llm-cache.sqlite"


def cache_target(value: Any) -> Any:
    """Turn a cache option into ``None`` (off), a path, a Redis URL, or an ``LLMCache``/``RedisCache``."""
    from .cache import is_redis_url

    if value is False:
        return None
    if value is True:
        env = _env("SCORERS_CACHE")
        url = _env("SCORERS_CACHE_URL")
        if env is not None:
            if env.lower() in _OFF:
                return None
            if url is not None:
                raise ConfigError(f"SCORERS_CACHE={env!r} and SCORERS_CACHE_URL are both set: keep the file path "
                                  f"(one machine) or the Redis URL (shared), not both")
            return Path(env).expanduser()
        if os.environ.get("SCORERS_CACHE") is not None:  # set but empty: off
            return None
        if url is not None:
            if not is_redis_url(url):
                raise ConfigError(f"SCORERS_CACHE_URL={mask_urls(url)!r} is not a redis:// or rediss:// URL "
                                  f"(for a file, set SCORERS_CACHE to its path)")
            return _check("cache", url)
        return default_cache_path()
    if is_redis_url(value):
        return value
    if isinstance(value, (str, os.PathLike)):
        return Path(value).expanduser()
    return value


def resolve(**overrides: Any) -> LLMSettings:
    """Merge per-engine ``overrides`` (already checked; ``None`` = unset), :func:`configure` and the environment."""
    state = _configured()
    with state.lock:
        configured = dict(state.values)
    chosen = {**_DEFAULTS, **{k: v for k, v in configured.items() if k != "prices"},
              **{k: v for k, v in overrides.items() if v is not None}}
    explicit_client = overrides.get("client")
    explicit_endpoint = overrides.get("api_key") is not None or overrides.get("base_url") is not None
    # A per-engine endpoint (api_key/base_url) replaces a configured client, and vice versa.
    client = explicit_client if explicit_client is not None else (None if explicit_endpoint else configured.get("client"))
    model = default_model(chosen.get("model"))
    if client is not None:
        base_url = str(client.base_url)
        api_key = None
    else:
        base_url = chosen.get("base_url") or _env("OPENAI_BASE_URL") or DEFAULT_BASE_URL
        api_key = chosen.get("api_key") or _env("OPENAI_API_KEY")
        if api_key is None:
            raise ConfigError(
                "no API key for the LLM judge: set OPENAI_API_KEY, call scorers.configure(api_key=...) "
                "or pass client=/api_key= to the scorer (a local server that ignores keys still needs a placeholder)")
    return LLMSettings(
        model=model, base_url=base_url.rstrip("/"), api_key=api_key, client=client,
        max_concurrency=chosen["max_concurrency"], timeout=chosen["timeout"], max_retries=chosen["max_retries"],
        max_reasks=chosen["max_reasks"], backoff_base=chosen["backoff_base"], backoff_max=chosen["backoff_max"],
        retry_after_max=chosen["retry_after_max"], transport=_env_transport(chosen), cache=cache_target(chosen["cache"]),
        api=chosen["api"], reasoning=chosen.get("reasoning"), deadline=chosen["deadline"],
    )


def _env_transport(chosen: Mapping[str, Any]) -> str:
    transport = chosen["transport"]
    if transport == "auto":
        env = _env("SCORERS_HTTP_TRANSPORT")
        if env is not None:
            return _check("transport", env.lower())
    return transport
