"""Every registered wire protocol renders the chat shape's attachment parts as its own: an image on all of them,
audio and documents where its ``Capabilities`` say it takes them, a URL where it takes that type by URL. The body
carries the bytes (so the cache key follows them) and none of the chat part names on a protocol with its own, and
the protocol's loopback counterpart accepts the request over real HTTP, reading the same text around the parts."""

from __future__ import annotations

import json

import pytest

from scorers.attachments import TINY_PNG, Attachment, takes
from scorers.llm.protocol import ChatRequest
from scorers.llm.protocols import PROTOCOLS
from scorers.testing import LoopbackLLM, Reply

IMAGE = Attachment.from_base64(TINY_PNG)
SAMPLES = {
    "image": IMAGE,
    "audio": Attachment(
        "audio/wav", data=b"RIFF\x24\x00\x00\x00WAVEfmt \x10\x00\x00\x00\x01\x00\x01\x00\x40\x1f\x00\x00"
    ),
    "document": Attachment("application/pdf", data=b"%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n"),
}
#: Each built-in protocol's own part for the image (a protocol added later is checked by the general rules alone).
IMAGE_PARTS = {
    "chat": IMAGE.part(),
    "responses": {"type": "input_image", "image_url": IMAGE.data_uri(), "detail": "auto"},
    "anthropic": {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": TINY_PNG}},
    "gemini": {"inlineData": {"mimeType": "image/png", "data": TINY_PNG}},
    "bedrock": {"image": {"format": "png", "source": {"bytes": TINY_PNG}}},
}
#: The chat part types no other protocol has (``input_audio`` is Responses' too).
CHAT_ONLY_TYPES = {"image_url", "file"}


def request(attachment: Attachment) -> ChatRequest:
    parts = [{"type": "text", "text": "Look at this:\n"}, attachment.part(), {"type": "text", "text": "\nY or N?"}]
    return ChatRequest(messages=[{"role": "user", "content": parts}], max_tokens=20)


def cases() -> list[tuple[str, str]]:
    return [
        (name, kind)
        for name in PROTOCOLS.names()
        for kind, sample in SAMPLES.items()
        if takes(PROTOCOLS.get(name).capabilities.attachments, sample)
    ]


@pytest.mark.parametrize("api", PROTOCOLS.names())
def test_every_protocol_takes_images(api):
    assert takes(PROTOCOLS.get(api).capabilities.attachments, IMAGE), f"the {api} protocol declares no images"


@pytest.mark.parametrize("api,kind", cases())
def test_every_protocol_renders_the_parts_it_takes(api, kind):
    protocol = PROTOCOLS.get(api)
    body = protocol.body(request(SAMPLES[kind]), "judge-model", False)
    text = json.dumps(body)
    assert SAMPLES[kind].base64() in text, f"{api} sent no {kind} bytes"
    if api != "chat":
        kept = [part for part in _parts(body) if part.get("type") in CHAT_ONLY_TYPES]
        assert not kept, f"{api} sent a chat part as it is: {kept}"
    if kind == "image" and api in IMAGE_PARTS:
        assert IMAGE_PARTS[api] in _parts(body), f"{api}'s image part: {text[:400]}"


LINKED = Attachment.of("https://example.com/charts/q3.png")


@pytest.mark.parametrize(
    "api", [name for name in PROTOCOLS.names() if takes(PROTOCOLS.get(name).capabilities.attachment_urls, LINKED)]
)
def test_an_image_url_goes_as_the_url_where_the_protocol_takes_one(api):
    """(A protocol that takes images as data only refuses a URL before sending: the limits' tests.)"""
    assert LINKED.url in json.dumps(PROTOCOLS.get(api).body(request(LINKED), "judge-model", False))


@pytest.mark.parametrize("api,kind", cases())
def test_the_loopback_counterpart_accepts_the_parts(api, kind, fake_api_key, monkeypatch):
    """The request goes over real HTTP through the protocol's client and the server reads the text around it."""
    from test_every_judge_protocol import environment

    from scorers.llm import LLMEngine

    with LoopbackLLM(default=Reply.text("Y")) as server, monkeypatch.context() as patch:
        for name, value in environment(PROTOCOLS.get(api), server, fake_api_key).items():
            patch.setenv(name, value)
        result = LLMEngine(api=api, cache=False, max_reasks=0).complete_sync(request(SAMPLES[kind]))
        assert result.content == "Y"
        (recorded,) = [r for r in server.requests if r.api is not None]
        assert "Look at this:" in recorded.last_user_message and "Y or N?" in recorded.last_user_message


def _parts(body: object) -> list[dict]:
    """Every dict inside ``body`` (a protocol's parts sit at different depths)."""
    found: list[dict] = []
    stack = [body]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            found.append(value)
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
    return found
