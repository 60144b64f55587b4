"""Attachments: an image, an audio clip or a document that a judge's prompt carries as a content part.

An :class:`Attachment` is a media type with its bytes (read from a path, decoded from base64 or a data URI) or
a URL the provider fetches. A template shows it where its field stands (``{{image}}``): the message becomes
chat content parts, text around an ``image_url``, ``input_audio`` or ``file`` part (:meth:`Attachment.part`),
which each wire protocol turns into its own. A request carries the bytes, so its cache key follows the
content, never a path; a URL is sent as it is, so the key holds the URL's text, not what it serves.

>>> png = Attachment.from_base64(TINY_PNG, "image/png")
>>> png
Attachment('image/png', 68 bytes, sha256 43739c566e26fd7c)
>>> png.kind, png.part()["image_url"]["url"][:30]
('image', 'data:image/png;base64,iVBORw0K')
>>> Attachment.of("https://example.com/chart.png").part()
{'type': 'image_url', 'image_url': {'url': 'https://example.com/chart.png'}}
>>> Attachment.of("data:text/html,<p>")
Traceback (most recent call last):
...
scorers.attachments.AttachmentError: media type 'text/html' is not supported (supported: image/png, image/jpeg, \
image/gif, image/webp, audio/wav, audio/mpeg, application/pdf)
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
import re
import secrets
from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence
from urllib.parse import unquote_to_bytes, urlsplit

if TYPE_CHECKING:
    from .llm.protocols.base import Capabilities

__all__ = [
    "Attachment",
    "AttachmentError",
    "MEDIA_TYPES",
    "MAX_BYTES",
    "ANY_IMAGE",
    "TINY_PNG",
    "attachment_problem",
    "attachments_problem",
    "is_hosted",
    "with_text",
    "Placement",
    "shown",
    "size_text",
    "takes",
]

#: The media types an attachment may have, each with its kind (what the prompt shows it as) and its format name.
MEDIA_TYPES: Mapping[str, tuple[str, str]] = {
    "image/png": ("image", "png"),
    "image/jpeg": ("image", "jpeg"),
    "image/gif": ("image", "gif"),
    "image/webp": ("image", "webp"),
    "audio/wav": ("audio", "wav"),
    "audio/mpeg": ("audio", "mp3"),
    "application/pdf": ("document", "pdf"),
}
#: Other names of the same media types.
_ALIASES = {
    "image/jpg": "image/jpeg",
    "image/pjpeg": "image/jpeg",
    "audio/x-wav": "audio/wav",
    "audio/wave": "audio/wav",
    "audio/vnd.wave": "audio/wav",
    "audio/mp3": "audio/mpeg",
    "audio/x-mp3": "audio/mpeg",
}
#: File name endings and the media type each means.
_EXTENSIONS = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
    ".wav": "audio/wav",
    ".mp3": "audio/mpeg",
    ".pdf": "application/pdf",
}
#: The most bytes any attachment may hold, read or decoded: above every provider's limit, so a mistaken path to a
#: large file fails before it is read (each protocol's own limits are checked before sending).
MAX_BYTES = 64_000_000
#: A 1x1 transparent PNG, base64 (for examples and tests).
TINY_PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAAC0lEQVR4nGNgAAIAAAUAAXpeqz8AAAAASUVORK5CYII="

_DATA_URI = re.compile(r"data:([^,;]*)((?:;[^,;]*)*),(.*)", re.DOTALL)
_SHOWN = 100  # the most characters of a value an error shows


class AttachmentError(ValueError):
    """A value that is no usable attachment: a file that cannot be read, bad base64 or data URI, an unsupported
    media type. A judge reports it as the row's :class:`~scorers.errors.ScorerInputError` naming the field."""


def _shown(text: str) -> str:
    return repr(text if len(text) <= _SHOWN else f"{text[:_SHOWN]}...")


#: The media type of an image given by a URL whose name does not tell which image type (a content part's).
ANY_IMAGE = "image/*"


def _media_type(given: str | None) -> str:
    """``given`` lower-cased, its parameters and aliases resolved; an unsupported type is an error."""
    name = (given or "").split(";")[0].strip().lower()
    name = _ALIASES.get(name, name)
    if name not in MEDIA_TYPES and name != ANY_IMAGE:
        raise AttachmentError(
            f"media type {name or given!r} is not supported (supported: {', '.join(MEDIA_TYPES)})"
            if name
            else "has no media type: give one (e.g. image/png)"
        )
    return name


def _sniffed(data: bytes) -> str | None:
    """The media type the bytes begin with, when it is one of :data:`MEDIA_TYPES`."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data[:6] in (b"GIF87a", b"GIF89a"):
        return "image/gif"
    if data[:4] == b"RIFF" and data[8:12] in (b"WEBP", b"WAVE"):
        return "image/webp" if data[8:12] == b"WEBP" else "audio/wav"
    if data.startswith(b"%PDF-"):
        return "application/pdf"
    if data.startswith(b"ID3") or data[:2] in (b"\xff\xfb", b"\xff\xf3", b"\xff\xf2"):
        return "audio/mpeg"
    return None


def _extension_type(name: str) -> str | None:
    return _EXTENSIONS.get(os.path.splitext(name)[1].lower())


@dataclass(frozen=True, eq=True)
class Attachment:
    """An image, audio clip or document for a judge's prompt: its ``media_type`` (one of :data:`MEDIA_TYPES`) and
    either its ``data`` (the bytes) or a ``url`` (http or https) the provider fetches. ``filename`` names a
    document where a protocol asks for one (by default one made from the content's hash, never the path's).

    Build one with :meth:`from_path`, :meth:`from_base64`, :meth:`from_data_uri`, :meth:`from_url`, or
    :meth:`of` for any of those forms (what a row's field holds)."""

    media_type: str
    data: bytes | None = field(default=None, repr=False)
    url: str | None = None
    filename: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "media_type", _media_type(self.media_type))
        if (self.data is None) == (self.url is None):
            raise AttachmentError("give exactly one of data (bytes) or url")
        if self.data is not None:
            if not isinstance(self.data, bytes):
                raise AttachmentError(f"data must be bytes, got {type(self.data).__name__}")
            if len(self.data) > MAX_BYTES:
                raise AttachmentError(f"holds {len(self.data):,} bytes, above the {MAX_BYTES:,} any protocol takes")
            if self.media_type == ANY_IMAGE:
                raise AttachmentError("data needs its exact media type, not image/*")
        if self.url is not None:
            parts = urlsplit(self.url)
            if parts.scheme not in ("http", "https") or not parts.netloc:
                raise AttachmentError(f"url {_shown(self.url)} is not an http(s) URL")
            if self.kind == "audio":
                raise AttachmentError(f"audio is sent as data, not as a URL ({_shown(self.url)}): pass the file")

    # ------------------------------------------------------------ constructors
    @classmethod
    def from_path(cls, path: str | os.PathLike[str], media_type: str | None = None) -> "Attachment":
        """The file at ``path``, read now; its media type is what its bytes begin with, else ``media_type``,
        else its name's ending. The path itself is kept nowhere."""
        try:
            size = os.stat(path).st_size
            if size > MAX_BYTES:
                raise AttachmentError(f"file {str(path)!r} holds {size:,} bytes, above the {MAX_BYTES:,} allowed")
            data = Path(path).read_bytes()
        except OSError as exc:
            raise AttachmentError(f"cannot read the file {str(path)!r}: {exc.strerror or exc}") from None
        return cls(_sniffed(data) or media_type or _extension_type(str(path)) or "", data=data)

    @classmethod
    def from_base64(cls, data: str | bytes, media_type: str | None = None) -> "Attachment":
        """Base64 text (line breaks allowed); the media type is what the bytes begin with, else ``media_type``."""
        try:
            decoded = base64.b64decode(
                re.sub(rb"\s+", b"", data if isinstance(data, bytes) else data.encode()), validate=True
            )
        except (binascii.Error, UnicodeEncodeError) as exc:
            raise AttachmentError(f"is not valid base64 ({exc})") from None
        return cls(_sniffed(decoded) or media_type or "", data=decoded)

    @classmethod
    def from_data_uri(cls, uri: str) -> "Attachment":
        """A ``data:`` URI (``data:image/png;base64,...``, or percent-encoded without ``;base64``)."""
        match = _DATA_URI.fullmatch(uri.strip())
        if match is None:
            raise AttachmentError(f"{_shown(uri)} is not a data URI (data:<media type>;base64,<data>)")
        declared, parameters, payload = match.groups()
        if "base64" in (p.strip().lower() for p in parameters.split(";")):
            return cls.from_base64(payload, declared)
        return cls(declared, data=unquote_to_bytes(payload))

    @classmethod
    def from_url(cls, url: str, media_type: str | None = None) -> "Attachment":
        """A URL the provider fetches; its media type is ``media_type``, else its path's ending."""
        guessed = media_type or _extension_type(urlsplit(url).path)
        if guessed is None:
            raise AttachmentError(
                f"cannot tell the media type of the URL {_shown(url)} from its name: give it "
                "({'url': ..., 'media_type': 'image/png'})"
            )
        return cls(guessed, url=url)

    @classmethod
    def of(cls, value: Any) -> "Attachment":
        """An attachment from what a row's field may hold: an :class:`Attachment`; text that is a data URI, an
        http(s) URL or a path; a path object; bytes; a mapping with ``path``, ``url``, ``data`` (base64) or
        ``data_uri`` (and ``media_type``, ``filename``); or a chat content part (``image_url``, ``input_audio``,
        ``file``, and the Responses and Anthropic forms, :meth:`from_part`)."""
        if isinstance(value, Attachment):
            return value
        if isinstance(value, str):
            text = value.strip()
            if text[:5].lower() == "data:":
                return cls.from_data_uri(text)
            if text[:7].lower() == "http://" or text[:8].lower() == "https://":
                return cls.from_url(text)
            if not text:
                raise AttachmentError("is empty text, not a path, URL or data URI")
            return cls.from_path(text)
        if isinstance(value, os.PathLike):
            return cls.from_path(value)
        if isinstance(value, (bytes, bytearray)):
            return cls(_sniffed(bytes(value)) or "", data=bytes(value))
        if isinstance(value, Mapping):
            return cls._from_mapping(value)
        raise AttachmentError(
            f"is a {type(value).__name__}, not an attachment (a path, an http(s) URL, a data URI, or a mapping "
            "with path, url or data and media_type)"
        )

    @classmethod
    def _from_mapping(cls, value: Mapping[str, Any]) -> "Attachment":
        if "type" in value:
            return cls.from_part(value)
        media_type, filename = value.get("media_type"), value.get("filename")
        given = [key for key in ("path", "url", "data", "data_uri") if value.get(key) is not None]
        if len(given) != 1:
            raise AttachmentError(
                f"a mapping with keys {sorted(value)}: give exactly one of path, url, data (base64) or data_uri"
            )
        source = value[given[0]]
        if given[0] == "path":
            found = cls.from_path(source, media_type)
        elif given[0] == "url":
            found = cls.from_url(source, media_type)
        elif given[0] == "data":
            found = cls.from_base64(source, media_type)
        else:
            found = cls.from_data_uri(source)
        return found if filename is None else replace(found, filename=str(filename))

    @classmethod
    def from_part(cls, part: Mapping[str, Any]) -> "Attachment":
        """The attachment a content part holds: chat ``image_url``/``input_audio``/``file``, Responses
        ``input_image``/``input_file``, Anthropic ``image``/``document`` (base64 or url source), LangChain's
        ``image``/``audio``/``file`` (``url``, or ``base64`` with ``mime_type``). A part naming a file stored
        with the provider (``file_id``, an Anthropic ``file`` source) holds none: :func:`is_hosted`.

        >>> Attachment.from_part({"type": "input_image", "image_url": "https://example.com/a.png"}).url
        'https://example.com/a.png'
        """
        kind = part.get("type")
        try:
            if kind in ("image_url", "input_image"):
                image = part["image_url"]
                return cls._from_link(image["url"] if isinstance(image, Mapping) else image, ANY_IMAGE)
            if kind == "input_audio":
                audio = part["input_audio"]
                return cls.from_base64(audio["data"], f"audio/{audio.get('format', '')}")
            if kind in ("file", "input_file"):
                file = part.get("file", part)
                found = cls._from_link(file.get("file_data") or file.get("file_url"), "application/pdf")
                return replace(found, filename=file["filename"]) if file.get("filename") else found
            if kind in ("image", "document") and "source" in part:  # Anthropic's blocks
                source = part["source"]
                if source.get("type") == "url":
                    return cls._from_link(source["url"], ANY_IMAGE if kind == "image" else "application/pdf")
                return cls.from_base64(source["data"], source.get("media_type"))
            if kind in ("image", "audio", "file"):  # LangChain's standard blocks
                if part.get("url") is not None:
                    fallback = {"image": ANY_IMAGE, "file": "application/pdf"}.get(kind, "")
                    return cls._from_link(part["url"], part.get("mime_type") or fallback)
                return cls.from_base64(part.get("base64") or part["data"], part.get("mime_type"))
        except (KeyError, TypeError, AttributeError) as exc:
            raise AttachmentError(f"a {kind!r} content part without its {exc}") from None
        raise AttachmentError(f"a content part of type {kind!r} holds no attachment")

    @classmethod
    def _from_link(cls, link: Any, fallback: str) -> "Attachment":
        """A part's data URI or URL; a URL whose name does not tell its media type has ``fallback`` (``image/*``
        for an image part: an image of a type the name does not tell, which only some protocols send)."""
        if not isinstance(link, str):
            raise TypeError("url")
        if link[:5].lower() == "data:":
            return cls.from_data_uri(link)
        return cls.from_url(link, _extension_type(urlsplit(link).path) or fallback)

    # ----------------------------------------------------------------- facts
    @property
    def kind(self) -> str:
        """``image``, ``audio`` or ``document``."""
        return MEDIA_TYPES.get(self.media_type, ("image", ""))[0]

    @property
    def format(self) -> str:
        """The short format name (``png``, ``jpeg``, ``wav``, ``mp3``, ``pdf``; ``""`` for ``image/*``)."""
        return MEDIA_TYPES.get(self.media_type, ("image", ""))[1]

    @property
    def size(self) -> int:
        """The bytes it holds (``0`` for a URL: the provider fetches them)."""
        return len(self.data) if self.data is not None else 0

    @property
    def sent_size(self) -> int:
        """The bytes it takes in a request's body: its base64 (4 for every 3 bytes), or its URL."""
        return -(-self.size // 3) * 4 if self.data is not None else len(self.url or "")

    @property
    def sha256(self) -> str:
        """The SHA-256 of the bytes (of the URL's text for a URL)."""
        return hashlib.sha256(self.data if self.data is not None else (self.url or "").encode()).hexdigest()

    def base64(self) -> str:
        """The bytes as base64 text (encoded once: every request of a row, samples and swapped orders, sends it)."""
        if self.data is None:
            raise AttachmentError(f"the URL {_shown(self.url or '')} holds no data to send as base64")
        return self._base64

    @cached_property
    def _base64(self) -> str:
        return base64.b64encode(self.data or b"").decode("ascii")

    def __getstate__(self) -> dict[str, Any]:
        """Its fields, without the base64 made from them (a row sent to a worker carries its bytes once)."""
        return {key: value for key, value in self.__dict__.items() if key != "_base64"}

    def data_uri(self) -> str:
        """``data:<media type>;base64,<data>``."""
        return f"data:{self.media_type};base64,{self.base64()}"

    def name(self) -> str:
        """The file name a document is sent with: ``filename``, else one made from the content's hash."""
        return self.filename or f"attachment-{self.sha256[:16]}.{self.format}"

    def part(self) -> dict[str, Any]:
        """The chat-completions content part: ``image_url`` (a data URI or the URL), ``input_audio`` (base64 and
        format) or ``file`` (a data URI, or a ``file_url``, and a file name: the chat API itself takes no URL of a
        document, the Responses and Anthropic protocols do)."""
        if self.kind == "image":
            return {"type": "image_url", "image_url": {"url": self.url or self.data_uri()}}
        if self.kind == "audio":
            return {"type": "input_audio", "input_audio": {"data": self.base64(), "format": self.format}}
        source = {"file_url": self.url} if self.url is not None else {"file_data": self.data_uri()}
        return {"type": "file", "file": {"filename": self.name(), **source}}

    def to_dict(self) -> dict[str, Any]:
        """What a results file or an error shows: the media type and the hash and size of the bytes, or the URL."""
        if self.url is not None:
            return {"media_type": self.media_type, "url": self.url}
        return {"media_type": self.media_type, "bytes": self.size, "sha256": self.sha256}

    def __repr__(self) -> str:
        if self.url is not None:
            return f"Attachment({self.media_type!r}, url={self.url!r})"
        return f"Attachment({self.media_type!r}, {self.size:,} bytes, sha256 {self.sha256[:16]})"


def is_hosted(part: Mapping[str, Any]) -> bool:
    """Whether a content part names a file stored with its provider (a ``file_id``, an Anthropic ``file`` source),
    whose bytes only the provider has."""
    inner = part.get(part.get("type"))  # type: ignore[arg-type]
    source = part.get("source")
    return (
        "file_id" in part
        or (isinstance(inner, Mapping) and "file_id" in inner)
        or (isinstance(source, Mapping) and source.get("type") == "file")
    )


class Placement:
    """The attachments a prompt being rendered shows, each written into its text as a marker that no input can
    hold (a random nonce), and the text split at the markers into content parts (:meth:`parts`). While one is
    active (``with Placement() as placement:``), whatever renders an attachment into text takes its marker
    (:func:`shown`), a template's fields and a conversation's messages alike; ``found`` lists them with the
    field each came from.

    >>> with Placement() as placement:
    ...     text = "Chart: " + shown(Attachment.from_base64(TINY_PNG), "chart") + " Y or N?"
    >>> [part["type"] for part in placement.parts(text)], [field for field, _ in placement.found]
    (['text', 'image_url', 'text'], ['chart'])
    >>> shown(Attachment.from_base64(TINY_PNG), "chart")  # no prompt being rendered: a placeholder
    '[image/png attachment]'
    """

    def __init__(self) -> None:
        self.nonce = ""  # made with the first marker
        #: ``(field, attachment)`` for each marker, in the order they were made.
        self.found: list[tuple[str, Attachment]] = []
        self._token: Any = None

    @staticmethod
    def current() -> "Placement | None":
        """The placement active in this context, if any."""
        return _PLACEMENT.get()

    def __enter__(self) -> "Placement":
        self._token = _PLACEMENT.set(self)
        return self

    def __exit__(self, *exc: object) -> None:
        _PLACEMENT.reset(self._token)

    def marker(self, attachment: Attachment, field: str) -> str:
        """The text that stands for ``attachment`` (of ``field``) until :meth:`parts` replaces it."""
        self.nonce = self.nonce or secrets.token_hex(8)
        self.found.append((field, attachment))
        return f"\x00{self.nonce}:{len(self.found) - 1}\x00"

    def parts(self, content: str) -> str | list[dict[str, Any]]:
        """``content`` as it is when it holds no marker, else its text parts around the attachments' parts."""
        if not self.found or "\x00" not in content:
            return content
        parts: list[dict[str, Any]] = []
        position = 0
        for match in _MARKER.finditer(content):
            if match.group(1) != self.nonce:
                continue
            if match.start() > position:
                parts.append({"type": "text", "text": content[position : match.start()]})
            parts.append(self.found[int(match.group(2))][1].part())
            position = match.end()
        if position < len(content):
            parts.append({"type": "text", "text": content[position:]})
        return parts if position else content


_MARKER = re.compile("\x00([0-9a-f]{16}):(\\d+)\x00")

_PLACEMENT: ContextVar[Placement | None] = ContextVar("scorers_attachment_placement", default=None)


def shown(attachment: Attachment, field: str) -> str:
    """How text shows an attachment of ``field``: its marker while a prompt is rendered (:class:`Placement`), so
    the prompt carries its part there; else a placeholder naming its media type."""
    placement = _PLACEMENT.get()
    if placement is None:
        return f"[{attachment.media_type} attachment]"
    return placement.marker(attachment, field)


def with_text(content: str | list[dict[str, Any]], text: str) -> str | list[dict[str, Any]]:
    """A message's content with ``text`` added at its end: to the text, or to its last part when that is text,
    else as a text part of its own.

    >>> with_text("Is it red?", " Answer Y or N.")
    'Is it red? Answer Y or N.'
    >>> with_text([{"type": "text", "text": "Chart:"}, Attachment.from_base64(TINY_PNG).part()], "Y or N?")[-1]
    {'type': 'text', 'text': 'Y or N?'}
    """
    if isinstance(content, str):
        return content + text
    if content and content[-1].get("type") == "text":
        return [*content[:-1], {"type": "text", "text": content[-1]["text"] + text}]
    return [*content, {"type": "text", "text": text.lstrip("\n")}]


# -------------------------------------------------------------- limits
def _names(attachment: Attachment) -> tuple[str, ...]:
    """What a protocol's capabilities may call the attachment's type: its media type, its family (``image/*``) or
    its kind (``image``, ``audio``, ``document``)."""
    return attachment.media_type, attachment.media_type.split("/")[0] + "/*", attachment.kind


def takes(accepted: frozenset[str], attachment: Attachment) -> bool:
    """Whether ``accepted`` (media types, families such as ``image/*``, or kinds such as ``image``) holds the
    attachment's type; an image of unknown type (:data:`ANY_IMAGE`) is taken where any image is.

    >>> takes(frozenset({"image"}), Attachment.from_base64(TINY_PNG)), takes(frozenset({"application/pdf"}), Attachment.from_base64(TINY_PNG))
    (True, False)
    """
    if attachment.media_type == ANY_IMAGE:
        return any(name.startswith("image") for name in accepted)
    return any(name in accepted for name in _names(attachment))


def _limit(limits: Sequence[tuple[str, int]], attachment: Attachment) -> int | None:
    """The first limit that names the attachment's type (its media type, family or kind)."""
    names = _names(attachment)
    return next((most for name, most in limits if name in names), None)


def size_text(count: int) -> str:
    """A number of bytes as the providers state their limits (``20 MB``: millions of bytes).

    >>> size_text(20_000_000), size_text(1_536)
    ('20 MB', '1,536 bytes')
    """
    return f"{count / 1_000_000:.3g} MB" if count >= 1_000_000 else f"{count:,} bytes"


def attachment_problem(attachment: Attachment, protocol: str, capabilities: "Capabilities") -> str | None:
    """Why ``protocol`` (with its ``capabilities``) cannot send ``attachment``, or ``None`` when it can.

    >>> from scorers.llm.protocols.base import Capabilities
    >>> caps = Capabilities(attachments=frozenset({"image/png"}), attachment_bytes=(("image/*", 50),))
    >>> print(attachment_problem(Attachment.from_base64(TINY_PNG), "demo", caps))
    holds 68 bytes of image/png, above the demo protocol's limit of 50 bytes for image/png
    """
    accepted = capabilities.attachments
    if not takes(accepted, attachment) and attachment.media_type != ANY_IMAGE:
        shown = ", ".join(sorted(accepted)) if accepted else "none"
        return f"is {attachment.media_type}, which the {protocol} protocol does not take (it takes: {shown})"
    if attachment.url is not None and not takes(capabilities.attachment_urls, attachment):
        return (
            f"is a URL of {attachment.media_type}, which the {protocol} protocol takes only as data: pass the file, "
            "its base64 or a data URI"
        )
    most = _limit(capabilities.attachment_bytes, attachment)
    if most is not None and attachment.size > most:
        return (
            f"holds {size_text(attachment.size)} of {attachment.media_type}, above the {protocol} protocol's limit of "
            f"{size_text(most)} for {attachment.media_type}"
        )
    return None


def attachments_problem(
    attachments: Sequence[tuple[str, Attachment]], protocol: str, capabilities: "Capabilities"
) -> tuple[str, str] | None:
    """``(field, why)`` for the first ``(field, attachment)`` that ``protocol`` cannot send, or for the total of
    one request's attachments above its limit (the field of the largest named), or ``None``."""
    for name, attachment in attachments:
        problem = attachment_problem(attachment, protocol, capabilities)
        if problem is not None:
            return name, problem
    total, most = sum(a.sent_size for _, a in attachments), capabilities.attachment_total_bytes
    if most is not None and total > most:
        largest = max(attachments, key=lambda found: found[1].size)[0]
        return largest, (
            f"is one of {len(attachments)} attachments taking {size_text(total)} of the request as base64, above the {protocol} "
            f"protocol's limit of {size_text(most)} per request"
        )
    return None
