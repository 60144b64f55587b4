"""The HTTP clients under the engine: ``openai`` clients for OpenAI's APIs, and the HTTP client (aiohttp or the
httpx this ``openai`` uses) that each protocol's client sends with (:func:`http_client`).

>>> credentials_apart("http://host:8080/v1")
('http://host:8080/v1', None)
"""

from __future__ import annotations

import warnings
from typing import Any, Mapping

from .._util import memoize, optional_import
from ..errors import ConfigError, MissingExtraError

__all__ = ["openai_client", "async_twin", "credentials_apart", "http_client", "httpx_module"]


def openai_client(base_url: str, transport: str, **options: Any) -> Any:
    """An ``openai.AsyncOpenAI`` client the engine makes (the SDK's retries off) for ``base_url``.

    Credentials in the URL (``http://user:password@host/v1``) are not handed to the client in it: the HTTP
    client logs every request's URL as it was given (httpx's ``HTTP Request: POST <url>`` line at INFO), and
    an error carries it. The client gets the URL without them and sends them as HTTP Basic auth, in place of
    the API key, as httpx does with a URL's own (:func:`credentials_apart`). The aiohttp transport gets the
    URL as given: it refuses credentials in a URL next to the key before sending anything, which ``send``
    reports as an :class:`EndpointConfigError`.
    """
    import openai

    http = http_client(transport)
    aiohttp_client = getattr(openai, "DefaultAioHttpClient", None)
    if not (isinstance(aiohttp_client, type) and isinstance(http, aiohttp_client)):
        base_url, auth = credentials_apart(base_url)
        if auth is not None:
            http.auth = auth
    return openai.AsyncOpenAI(base_url=base_url, max_retries=0, http_client=http, **options)


def credentials_apart(url: str) -> tuple[str, Any]:
    """``url`` without its user information, and an ``httpx.BasicAuth`` (of the httpx this ``openai`` uses) of
    that user and password, or ``None`` when ``url`` has none. User and password are percent-decoded, as
    httpx does when it sends a URL's credentials itself; a URL httpx cannot parse is returned as it is (the
    HTTP client's refusal of it says why).

    >>> url, auth = credentials_apart("http://user:p%40ss@host:8080/v1")
    >>> url, type(auth).__name__
    ('http://host:8080/v1', 'BasicAuth')
    >>> credentials_apart("http://host:8080/v1")
    ('http://host:8080/v1', None)
    """
    httpx = httpx_module()
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, TypeError, ValueError):
        return url, None
    if not parsed.userinfo:
        return url, None
    plain = str(parsed.copy_with(userinfo=b""))
    if not (parsed.username or parsed.password):  # ``http://@host``: nothing to send
        return plain, None
    return plain, httpx.BasicAuth(username=parsed.username, password=parsed.password)


def async_twin(client: Any, transport: str) -> Any:
    """An ``openai.AsyncOpenAI`` client with the settings of the sync ``openai.OpenAI`` ``client``.

    Key, endpoint, organization and project are public attributes; the headers and query parameters
    the user added are read through the public API (:func:`_custom_defaults`). The SDK's retries
    are off, and credentials in the URL are sent apart from it, as for every client the engine makes
    (:func:`openai_client`).
    """
    headers, query = _custom_defaults(client)
    return openai_client(
        str(client.base_url),
        transport,
        api_key=client.api_key,
        organization=client.organization,
        project=client.project,
        default_headers=headers,
        default_query=query,
    )


def _custom_defaults(client: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """The headers and query parameters given to ``client`` (``default_headers=``/``default_query=``).

    They are the client's public ``default_headers``/``default_query`` less those of a copy made
    without them (``client.copy(set_default_headers={}, set_default_query={})``, which shares the
    client's connection pool and opens nothing). Should a future ``openai`` drop that API, the
    twin sends no custom headers, and a warning says so.
    """
    import openai

    try:
        plain = client.copy(set_default_headers={}, set_default_query={})
        headers = _added(client.default_headers, plain.default_headers)
        query = _added(client.default_query, plain.default_query)
    except (AttributeError, TypeError, ValueError) as exc:
        warnings.warn(
            f"cannot read the custom headers and query parameters of the openai.OpenAI client "
            f"through openai {getattr(openai, '__version__', '?')}'s public API ({type(exc).__name__}: "
            f"{exc}); the judges' async copy of it sends none. Pass an openai.AsyncOpenAI client "
            "(client=) to keep them",
            RuntimeWarning,
            stacklevel=4,
        )
        return {}, {}
    return headers, query


def _added(given: Mapping[str, Any], plain: Mapping[str, Any]) -> dict[str, Any]:
    """The entries of ``given`` that ``plain`` lacks or has with another value."""
    import openai

    omit = getattr(openai, "Omit", None)

    def same(a: Any, b: Any) -> bool:  # ``Omit`` markers (an unset header) compare by type, not identity
        return a is b or (omit is not None and isinstance(a, omit) and isinstance(b, omit)) or a == b

    missing = object()
    return {name: value for name, value in given.items() if not same(value, plain.get(name, missing))}


def http_client(transport: str) -> Any:
    """The HTTP client under the SDK.

    aiohttp is the default when installed. Measured through this engine's request
    path (``client.post`` with a raw response) against :class:`scorers.testing.LoopbackLLM`
    in another process, 100 ms latency, 1,000 requests, 2 cores, openai 3.57.0:

    ========== ============ ============ ==============
    transport  concurrency  requests/s   client CPU/req
    ========== ============ ============ ==============
    httpx2     32           266          1.10 ms
    aiohttp    32           258-282      0.67 ms
    httpx2     64           511          1.11 ms
    aiohttp    64           534          0.73 ms
    ========== ============ ============ ==============

    Throughput is close (the SDK's httpx2 fork no longer collapses at 64
    connections as httpx 0.28 did), but aiohttp needs about 40 % less CPU per
    request, which a batch run shares with scoring. Override with
    ``transport="httpx"`` or ``SCORERS_HTTP_TRANSPORT=httpx``.
    """
    import openai

    if transport in ("auto", "aiohttp"):
        try:
            optional_import("aiohttp", scorer="The LLM engine's aiohttp transport", extra="aiohttp")
            return openai.DefaultAioHttpClient()
        except MissingExtraError:
            if transport == "aiohttp":
                raise
        except (AttributeError, RuntimeError) as exc:  # an openai without the aiohttp client
            if transport == "aiohttp":
                raise ConfigError(
                    f"transport='aiohttp' needs openai's aiohttp support: pip install 'scorers[aiohttp]' ({exc})"
                ) from exc
    return openai.DefaultAsyncHttpxClient()


@memoize
def httpx_module() -> Any:
    """The httpx flavour this ``openai`` sends with: ``httpx2`` where its default client is an
    ``httpx2.AsyncClient`` (the fork this environment's openai uses), else ``httpx`` (upstream openai's)."""
    import openai

    try:
        import httpx2
    except ImportError:
        pass
    else:
        if issubclass(openai.DefaultAsyncHttpxClient, httpx2.AsyncClient):
            return httpx2
    import httpx

    return httpx
