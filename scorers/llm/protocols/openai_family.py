"""What OpenAI's two APIs share: the ``openai`` client the engine posts with, and its endpoint and credentials.

:class:`OpenAIProtocol` is the base of :mod:`~scorers.llm.protocols.chat` and
:mod:`~scorers.llm.protocols.responses`: both post through one ``openai.AsyncOpenAI`` client per endpoint (made by
:func:`scorers.llm.http.openai_client`, or the user's ``client=``), with the SDK's retries off.
"""

from __future__ import annotations

from typing import Any, ClassVar, Mapping

from ..http import httpx_module, openai_client
from .base import Endpoint, HTTPReply, Settings, WireProtocol

__all__ = ["OpenAIProtocol", "OPENAI_ENDPOINT"]

#: OpenAI's endpoint and key variables (any OpenAI-compatible server: ``OPENAI_BASE_URL``).
OPENAI_ENDPOINT = Endpoint(
    key_env=("OPENAI_API_KEY",),
    url_env=("OPENAI_BASE_URL",),
    default_url="https://api.openai.com/v1",
    key_hint="OPENAI_API_KEY (with OPENAI_BASE_URL for a server other than api.openai.com)",
)


class OpenAIProtocol(WireProtocol):
    """An OpenAI API posted through the ``openai`` SDK's raw ``client.post`` (the body is ours, the SDK sends it)."""

    endpoint: ClassVar[Endpoint] = OPENAI_ENDPOINT
    client_family: ClassVar[str] = "openai"
    #: The path under the base URL.
    route: ClassVar[str]

    def path(self, model: str) -> str:
        return self.route

    async def client(self, settings: Settings) -> Any:
        return openai_client(settings.base_url, settings.transport, api_key=settings.api_key)

    async def post(self, client: Any, path: str, body: Mapping[str, Any], timeout: float) -> HTTPReply:
        """POST through ``client.post`` with ``cast_to`` the SDK's raw response; an error status comes back as an
        ``openai.APIStatusError``, whose response is the reply."""
        import openai

        try:
            response = await client.post(
                path, body=body, cast_to=httpx_module().Response, options={"max_retries": 0, "timeout": timeout}
            )
        except openai.APIStatusError as exc:
            response = exc.response
        return HTTPReply(response.status_code, response.headers, response.content)

    def connection_errors(self) -> tuple[type[BaseException], ...]:
        import openai

        return (openai.APIConnectionError,)
