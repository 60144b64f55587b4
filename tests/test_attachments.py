"""scorers.attachments: every form an attachment is given in, read into one value; its chat content part; the
checks of a protocol's media types and limits; the errors that name what was wrong."""

from __future__ import annotations

import base64
import pickle
from pathlib import Path

import pytest

from scorers.attachments import (
    ANY_IMAGE,
    TINY_PNG,
    Attachment,
    AttachmentError,
    attachment_problem,
    attachments_problem,
    with_text,
)
from scorers.llm.protocols.base import Capabilities

CHART = Path(__file__).resolve().parents[1] / "examples" / "chart.png"
PNG = base64.b64decode(TINY_PNG)
WAV = b"RIFF\x24\x00\x00\x00WAVEfmt \x10\x00\x00\x00\x01\x00\x01\x00"
MP3 = b"ID3\x04\x00\x00\x00\x00\x00\x00"
PDF = b"%PDF-1.4\n1 0 obj<<>>endobj\n%%EOF\n"


def test_a_path_is_read_into_bytes_and_kept_nowhere(tmp_path):
    path = tmp_path / "secret-name.png"
    path.write_bytes(PNG)
    attachment = Attachment.from_path(path)
    assert (attachment.media_type, attachment.data, attachment.url) == ("image/png", PNG, None)
    assert "secret-name" not in repr(attachment) + repr(attachment.to_dict()) + repr(attachment.part())
    assert attachment == Attachment.of(str(path)) == Attachment.of(path) == Attachment.of({"path": str(path)})


def test_the_bytes_decide_the_media_type_over_the_name(tmp_path):
    misnamed = tmp_path / "scan.jpg"
    misnamed.write_bytes(PNG)
    assert Attachment.from_path(misnamed).media_type == "image/png"
    unknown = tmp_path / "page.pdf"
    unknown.write_bytes(b"not a pdf header")  # the bytes tell nothing: the name's ending does
    assert Attachment.from_path(unknown).media_type == "application/pdf"


@pytest.mark.parametrize(
    "data,media_type,kind,part_type",
    [
        (PNG, "image/png", "image", "image_url"),
        (WAV, "audio/wav", "audio", "input_audio"),
        (MP3, "audio/mpeg", "audio", "input_audio"),
        (PDF, "application/pdf", "document", "file"),
    ],
)
def test_each_kind_becomes_its_chat_part_and_reads_back_from_it(data, media_type, kind, part_type):
    attachment = Attachment.of(data)
    assert (attachment.media_type, attachment.kind) == (media_type, kind)
    part = attachment.part()
    assert part["type"] == part_type
    assert Attachment.from_part(part).data == data
    assert Attachment.of(attachment.data_uri()) == Attachment.from_base64(attachment.base64()) == attachment


def test_the_chat_parts_have_the_shapes_the_api_takes():
    assert Attachment.of(WAV).part() == {
        "type": "input_audio",
        "input_audio": {"data": base64.b64encode(WAV).decode(), "format": "wav"},
    }
    document = Attachment.of(PDF)
    assert document.part() == {
        "type": "file",
        "file": {"filename": f"attachment-{document.sha256[:16]}.pdf", "file_data": document.data_uri()},
    }
    named = Attachment.of(
        {"data": base64.b64encode(PDF).decode(), "media_type": "application/pdf", "filename": "q3.pdf"}
    )
    assert named.part()["file"]["filename"] == "q3.pdf"
    assert Attachment.from_part(named.part()) == named


def test_a_url_is_sent_as_it_is():
    attachment = Attachment.of("https://example.com/charts/q3.PNG?v=2")
    assert (attachment.media_type, attachment.url, attachment.size) == (
        "image/png",
        "https://example.com/charts/q3.PNG?v=2",
        0,
    )
    assert attachment.part() == {"type": "image_url", "image_url": {"url": attachment.url}}
    assert Attachment.of({"url": "https://example.com/x", "media_type": "application/pdf"}).kind == "document"
    with pytest.raises(AttachmentError, match="cannot tell the media type of the URL"):
        Attachment.of("https://example.com/render?id=3")
    with pytest.raises(AttachmentError, match="audio is sent as data, not as a URL"):
        Attachment.of("https://example.com/a.wav")
    document = Attachment.of("https://example.com/q3.pdf")
    assert document.part() == {"type": "file", "file": {"filename": document.name(), "file_url": document.url}}
    assert Attachment.from_part(document.part()).url == document.url


def test_the_other_providers_parts_read_as_attachments():
    data_uri = Attachment.of(PNG).data_uri()
    assert Attachment.from_part({"type": "input_image", "image_url": data_uri}).data == PNG
    assert (
        Attachment.from_part(
            {"type": "input_file", "file_data": Attachment.of(PDF).data_uri(), "filename": "a.pdf"}
        ).filename
        == "a.pdf"
    )
    anthropic = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": TINY_PNG}}
    assert Attachment.from_part(anthropic).data == PNG
    by_url = Attachment.from_part({"type": "image", "source": {"type": "url", "url": "https://cdn.example/abc"}})
    assert (by_url.media_type, by_url.kind) == (ANY_IMAGE, "image")


@pytest.mark.parametrize(
    "value,message",
    [
        ("/no/such/file.png", "cannot read the file '/no/such/file.png'"),
        ("data:image/png;base64,@@@", "is not valid base64"),
        ("data:image/png", "is not a data URI"),
        ("data:text/html,<p>", "media type 'text/html' is not supported"),
        (b"plain bytes", "has no media type"),
        ({"path": "a", "url": "https://x/a.png"}, "give exactly one of path, url, data"),
        ("ftp://example.com/a.png", "cannot read the file"),
        (3, "is a int, not an attachment"),
        ("  ", "is empty text"),
        ({"type": "image_url"}, "content part without its 'image_url'"),
        ({"type": "text", "text": "hi"}, "holds no attachment"),
    ],
)
def test_what_is_no_attachment_says_why(value, message):
    with pytest.raises(AttachmentError, match=message.replace("(", r"\(").replace("?", r"\?")):
        Attachment.of(value)


def test_a_file_above_the_ceiling_is_refused_before_it_is_read(tmp_path, monkeypatch):
    monkeypatch.setattr("scorers.attachments.MAX_BYTES", 10)
    path = tmp_path / "big.png"
    path.write_bytes(PNG)
    with pytest.raises(AttachmentError, match="holds 68 bytes, above the 10 allowed"):
        Attachment.from_path(path)


def test_the_bundled_chart_is_a_small_png():
    chart = Attachment.from_path(CHART)
    assert chart.media_type == "image/png" and chart.size < 500


CAPS = Capabilities(
    attachments=frozenset({"image/png", "application/pdf"}),
    attachment_bytes=(("image/*", 100), ("application/pdf", 1000)),
    attachment_total_bytes=200,
    attachment_urls=frozenset({"image/png"}),
)


def test_a_protocol_refuses_what_it_does_not_take_naming_its_limit():
    png = Attachment.of(PNG)
    assert attachment_problem(png, "demo", CAPS) is None
    assert attachment_problem(Attachment.of(WAV), "demo", CAPS) == (
        "is audio/wav, which the demo protocol does not take (it takes: application/pdf, image/png)"
    )
    assert "takes only as data" in attachment_problem(Attachment.of({"url": "https://x/a.pdf"}), "demo", CAPS)
    assert attachment_problem(Attachment.of("https://x/a.png"), "demo", CAPS) is None
    assert "does not take" in attachment_problem(Attachment.of(PNG), "demo", Capabilities())
    big = Attachment("image/png", data=PNG * 2)
    assert attachment_problem(big, "demo", CAPS) == (
        "holds 136 bytes of image/png, above the demo protocol's limit of 100 bytes for image/png"
    )
    field, why = attachments_problem([("a", png), ("b", png), ("c", Attachment.of(PDF))], "demo", CAPS)
    assert field == "a" and why == (
        "is one of 3 attachments taking 228 bytes of the request as base64, above the demo protocol's limit of "
        "200 bytes per request"
    )


def test_an_image_url_of_unknown_type_goes_only_where_image_urls_do():
    unknown = Attachment.from_part({"type": "image_url", "image_url": {"url": "https://cdn.example/abc"}})
    assert attachment_problem(unknown, "demo", CAPS) is None
    assert "takes only as data" in attachment_problem(unknown, "demo", Capabilities(attachments=CAPS.attachments))
    with pytest.raises(AttachmentError, match="exact media type"):
        Attachment(ANY_IMAGE, data=PNG)


def test_text_is_added_to_the_last_text_part():
    parts = [{"type": "text", "text": "See:"}, Attachment.of(PNG).part()]
    assert with_text(parts, "\n\nY or N?")[-1] == {"type": "text", "text": "Y or N?"}
    assert with_text([*parts, {"type": "text", "text": "Now:"}], " Y or N?")[-1]["text"] == "Now: Y or N?"
    assert parts[-1]["type"] == "image_url"  # not changed in place


def test_capabilities_may_name_kinds_or_families():
    by_kind = Capabilities(attachments=frozenset({"image", "document"}), attachment_bytes=(("document", 10),))
    assert attachment_problem(Attachment.of(PNG), "demo", by_kind) is None
    assert "does not take" in attachment_problem(Attachment.of(WAV), "demo", by_kind)
    assert "limit of 10 bytes" in attachment_problem(Attachment.of(PDF), "demo", by_kind)
    by_family = Capabilities(attachments=frozenset({"audio/*"}))
    assert attachment_problem(Attachment.of(MP3), "demo", by_family) is None


def test_the_base64_is_made_once_and_does_not_travel():
    attachment = Attachment.of(PNG)
    assert attachment.base64() is attachment.base64() == TINY_PNG
    copy = pickle.loads(pickle.dumps(attachment))
    assert copy == attachment and "_base64" not in copy.__dict__ and copy.base64() == TINY_PNG
