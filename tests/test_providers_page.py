"""docs/providers/index.md's tables are the registered protocols' own: what each serves (its ``Capabilities``) and
where its requests go (its ``Endpoint``, its extra), rendered from the code here and compared with the page, so the
page cannot drift from the code. ``python tests/test_providers_page.py --write`` rewrites the tables in the page."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Iterator, Mapping

from scorers.llm.protocols import PROTOCOLS, WireProtocol

PAGE = Path(__file__).resolve().parents[1] / "docs" / "providers" / "index.md"
#: The order of the page's rows (a protocol not named here, a plugin's, comes after them).
ON_THE_PAGE = ("chat", "responses", "anthropic", "gemini", "bedrock")
#: The capability table's columns: a judge kind or response mode and the capability it needs (None: every protocol).
CAPABILITY_COLUMNS = (
    ("`tools` mode", "forced_tool"),
    ("`json` mode", "json_schema"),
    ("`json_object` mode", "json_object"),
    ("`text` mode", None),
    ("`tools` with thinking", "forced_tool_with_thinking"),
    ("G-Eval `logprobs`", "logprobs"),
    ("GPTScore", "prompt_logprobs"),
)


class _AnyRegion(Mapping[str, str]):
    """An environment whose region variables read ``REGION``: a default URL that depends on the region, as written."""

    def __getitem__(self, name: str) -> str:
        if "REGION" in name:
            return "REGION"
        raise KeyError(name)

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0


def _table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> str:
    lines = [header, tuple("---" for _ in header), *rows]
    return "\n".join(f"| {' | '.join(cells)} |" for cells in lines)


def _protocols() -> list[WireProtocol]:
    names = sorted(PROTOCOLS.names(), key=lambda name: (ON_THE_PAGE + (name,)).index(name))
    return [PROTOCOLS.get(name) for name in names]


def capability_table() -> str:
    """The table of what each registered protocol serves, as the page has it."""
    rows = [
        (
            f"`{p.name}`",
            *("yes" if need is None or getattr(p.capabilities, need) else "no" for _, need in CAPABILITY_COLUMNS),
        )
        for p in _protocols()
    ]
    return _table(("`api`", *(title for title, _ in CAPABILITY_COLUMNS)), rows)


def endpoint_table() -> str:
    """The table of each registered protocol's credentials, base-URL variables, default URL and extra."""
    rows = []
    for protocol in _protocols():
        endpoint = protocol.endpoint
        key = " or ".join(f"`{name}`" for name in endpoint.key_env) or "the AWS credential chain"
        default = endpoint.default_url(_AnyRegion()) if callable(endpoint.default_url) else endpoint.default_url
        install = f"`scorers[{protocol.extra}]`" if protocol.extra else "core"
        base = " or ".join(f"`{name}`" for name in endpoint.url_env)
        rows.append((f"`{protocol.name}`", key, base, f"`{default}`", install))
    return _table(("`api`", "credentials", "base URL from", "default base URL", "install"), rows)


TABLES = {"capabilities": capability_table, "endpoints": endpoint_table}


def _section(name: str) -> re.Pattern[str]:
    return re.compile(rf"(<!-- {name}:begin [^\n]*-->\n)(.*?)(\n<!-- {name}:end -->)", re.S)


def rewritten(page: str) -> str:
    """``page`` with each table rendered afresh from the code."""
    for name, render in TABLES.items():
        page = _section(name).sub(lambda found, render=render: found[1] + render() + found[3], page)
    return page


def test_the_pages_tables_are_the_protocols_own():
    page = PAGE.read_text(encoding="utf-8")
    for name, render in TABLES.items():
        found = _section(name).search(page)
        assert found, f"docs/providers/index.md has no {name} table between its markers"
        assert found[2] == render(), (
            f"docs/providers/index.md's {name} table differs from the code: python tests/test_providers_page.py --write"
        )


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        raise SystemExit(__doc__)
    PAGE.write_text(rewritten(PAGE.read_text(encoding="utf-8")), encoding="utf-8")
