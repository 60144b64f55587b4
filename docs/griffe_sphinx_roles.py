"""A griffe extension for the API reference (mkdocs.yml): the docstrings' Sphinx roles as cross-reference links.

The docstrings name other objects with Sphinx roles (``:class:`Score```, ``:meth:`~Scorer.score```,
``:mod:`.base```), which mkdocstrings would show as text. Once the package is loaded, this resolves each role's
target in the scope of the object whose docstring holds it (its members, then its parents', imports included, as
Python would; a leading ``.`` is relative to the module's package; a path from the package's name is taken as
written) and writes an optional autorefs reference: a link where the target is on a page of the site, the name in
code where it is not (a private module, an undocumented member, or outside the package: ``json.dumps``). It changes
only what the site shows.
"""

from __future__ import annotations

import html
import re
from typing import Any

import griffe

ROLE = re.compile(r":(?:py:)?(?:class|meth|func|data|attr|mod|exc|obj|const):`(?P<target>[^`]+)`")


def _resolve(obj: griffe.Object, target: str) -> str | None:
    """The full path that ``target`` names in the scope of ``obj``, or None for a name outside the package."""
    if target.startswith("."):
        name = target.lstrip(".")
        module = obj.module
        base: griffe.Object | None = module if module.is_init_module else module.parent
        for _ in range(len(target) - len(name) - 1):
            base = base.parent if base is not None else None
        return f"{base.path}.{name}" if base is not None else None
    head, _, rest = target.partition(".")
    if head == obj.package.name:
        return target
    try:
        resolved = obj.resolve(head)
    except griffe.NameResolutionError:
        return None
    return f"{resolved}.{rest}" if rest else resolved


def link_roles(obj: griffe.Object, text: str) -> str:
    """``text`` with each Sphinx role an optional autorefs reference to its target, resolved in ``obj``'s scope."""

    def replace(match: re.Match[str]) -> str:
        written = match["target"]
        target = written.lstrip("~")
        shown = target.rsplit(".", 1)[-1] if written.startswith("~") else target
        code = f"<code>{html.escape(shown)}</code>"
        path = _resolve(obj, target.rstrip("()"))
        if path is None:
            return code
        return f'<autoref identifier="{html.escape(path)}" optional>{code}</autoref>'

    return ROLE.sub(replace, text)


def _walk(obj: griffe.Object) -> None:
    if obj.docstring is not None:
        obj.docstring.value = link_roles(obj, obj.docstring.value)
    for member in obj.members.values():
        if not member.is_alias:
            _walk(member)  # type: ignore[arg-type]


class SphinxRoles(griffe.Extension):
    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        _walk(pkg)
