"""docs/attachments.md's table of what each protocol sends (media types, URLs, limits) is the registered protocols'
own ``Capabilities``, rendered here and compared with the page, so the page cannot drift from the code.
``python tests/test_attachments_page.py --write`` rewrites the table in the page."""

from __future__ import annotations

import sys
from pathlib import Path

from test_providers_page import _protocols, _section, _table

from scorers.attachments import MEDIA_TYPES, size_text
from scorers.llm.protocols import WireProtocol

PAGE = Path(__file__).resolve().parents[1] / "docs" / "attachments.md"
KINDS = (("images", "image"), ("audio", "audio"), ("documents", "document"))


def _formats(types: frozenset[str], kind: str) -> str:
    """The formats of ``kind`` that ``types`` names (by media type, family or kind), or ``no``."""
    named = [
        form
        for name, (of, form) in MEDIA_TYPES.items()
        if of == kind and {name, f"{name[: name.index('/')]}/*", of} & types
    ]
    return ", ".join(named) or "no"


def _limits(protocol: WireProtocol) -> str:
    limits = protocol.capabilities.attachment_bytes
    return "; ".join(f"{name} {size_text(most)}" for name, most in limits) or "none stated"


def attachment_table() -> str:
    """The table of what each registered protocol's prompts may carry, as the page has it."""
    rows = []
    for protocol in _protocols():
        caps = protocol.capabilities
        total = caps.attachment_total_bytes
        rows.append(
            (
                f"`{protocol.name}`",
                *(_formats(caps.attachments, kind) for _, kind in KINDS),
                ", ".join(title for title, kind in KINDS if _formats(caps.attachment_urls, kind) != "no") or "no",
                _limits(protocol),
                size_text(total) if total is not None else "none stated",
            )
        )
    header = ("`api`", *(title for title, _ in KINDS), "by URL", "one attachment at most", "a request's, as base64")
    return _table(header, rows)


def test_the_pages_table_is_the_protocols_own():
    page = PAGE.read_text(encoding="utf-8")
    found = _section("attachments").search(page)
    assert found, "docs/attachments.md has no attachments table between its markers"
    shown = {row.split(" | ")[0]: row for row in found[2].splitlines()}
    for row in attachment_table().splitlines():  # a protocol not yet registered keeps the row it has
        assert shown.get(row.split(" | ")[0]) == row, (
            f"docs/attachments.md's table differs from the code: python tests/test_attachments_page.py --write\n"
            f"{attachment_table()}"
        )


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        raise SystemExit(__doc__)
    section = _section("attachments")
    page = PAGE.read_text(encoding="utf-8")
    PAGE.write_text(section.sub(lambda found: found[1] + attachment_table() + found[3], page), encoding="utf-8")
