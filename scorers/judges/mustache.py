"""Mustache sections in judge templates (``{{#name}}...{{/name}}``, ``{{^name}}...{{/name}}``), rewritten as Jinja.

A section over a list renders its body once per item, over any other true value once, and not at all over a false
or empty value; an inverted section renders only then. Inside a section a tag names a key of the current item
first, then of the enclosing items, then a template variable; ``{{.}}`` is the item itself. A section tag alone
on its line takes the line with it, as mustache does. The names stay top-level template variables only outside
sections.

>>> print(sections_to_jinja("Messages:{{#thread}}\\n- {{ role }}: {{ content }}{{/thread}}"))
Messages:{% for __s1 in mustache_section(thread) %}
- {{ mustache_get((__s1,), 'role') }}: {{ mustache_get((__s1,), 'content') }}{% endfor %}
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from jinja2 import pass_context
from jinja2.exceptions import UndefinedError
from jinja2.runtime import Context, Undefined
from jinja2.utils import missing

__all__ = ["HELPERS", "sections_to_jinja", "mustache_get", "mustache_section"]

_TAG = re.compile(r"\{\{\s*([#^/]?)\s*([\w.]+)\s*\}\}")


def sections_to_jinja(source: str) -> str:
    """``source`` with its balanced mustache sections rewritten as Jinja (an unbalanced tag is left as it is, for
    the template's check to report); one pass over the text."""
    tags = list(_TAG.finditer(source))
    closing = _matching_tags(tags)
    if not closing:
        return source
    out: list[str] = []
    stack: list[tuple[int, str]] = []  # (index of the opening tag, Jinja name of its item)
    position = 0
    for index, match in enumerate(tags):
        kind, name = match.group(1), match.group(2)
        in_section = bool(kind)
        if not in_section and not stack:
            continue
        start, end = match.span()
        if in_section:
            start, end = _standalone(source, start, end)
        out.append(source[position:start])
        position = end
        if not in_section:
            out.append("{{ " + _lookup(name, stack) + " }}")
        elif kind == "/":
            opened = stack.pop()
            out.append("{% endfor %}" if opened[1] else "{% endif %}")
        elif kind == "#":
            item = f"__s{len(stack) + 1}"
            out.append(f"{{% for {item} in mustache_section({_lookup(name, stack, optional=True)}) %}}")
            stack.append((index, item))
        else:
            out.append(f"{{% if not mustache_section({_lookup(name, stack, optional=True)}) %}}")
            stack.append((index, ""))
    out.append(source[position:])
    return "".join(out)


def _matching_tags(tags: list[re.Match[str]]) -> dict[int, int]:
    """Opening tag index → its closing tag index, for the sections that nest properly."""
    pairs: dict[int, int] = {}
    open_tags: list[int] = []
    for index, match in enumerate(tags):
        kind, name = match.group(1), match.group(2)
        if kind in ("#", "^"):
            open_tags.append(index)
        elif kind == "/":
            if not open_tags or tags[open_tags[-1]].group(2) != name:
                return {}  # unbalanced: left for the check to report
            pairs[open_tags.pop()] = index
    return pairs if not open_tags else {}


def _lookup(name: str, stack: list[tuple[int, str]], *, optional: bool = False) -> str:
    """The Jinja expression of a name: the current item (``.``), a lookup through the section items (``optional``:
    a missing name is empty, for a section's own name), or the name itself outside sections."""
    items = [item for _, item in reversed(stack) if item]
    if name == ".":
        return items[0] if items else "."
    if not items:
        return name
    return f"mustache_get(({', '.join(items)},), {name!r}{', True' if optional else ''})"


def _standalone(source: str, start: int, end: int) -> tuple[int, int]:
    """The span to replace for a tag at ``[start, end)``: the whole line when the tag stands alone on it (only the
    blanks next to the tag are read, so the rewrite stays linear in the text)."""
    line_start = start
    while line_start > 0 and source[line_start - 1] in " \t":
        line_start -= 1
    line_end = end
    while line_end < len(source) and source[line_end] in " \t\r":
        line_end += 1
    if (line_start > 0 and source[line_start - 1] != "\n") or (line_end < len(source) and source[line_end] != "\n"):
        return start, end
    return line_start, min(line_end + 1, len(source))


def mustache_section(value: Any) -> Any:
    """What a section renders over: a list's items, a true value once, nothing for a false or empty value."""
    if isinstance(value, Undefined) or not value:
        return ()
    if isinstance(value, (list, tuple)):
        return value
    return (value,)


@pass_context
def mustache_get(context: Context, items: tuple[Any, ...], path: str, optional: bool = False) -> Any:
    """``path`` (``a``, ``a.b``, ``a.0``) looked up in the section items, innermost first, then in the template's
    variables; an empty value (``None``) shows as nothing, as in mustache. A name found nowhere is an error, or
    ``None`` when ``optional`` (a nested section's name: the section renders nothing)."""
    first, *rest = path.split(".")
    for item in items:
        if isinstance(item, Mapping) and first in item:
            value = item[first]
            break
    else:
        value = context.resolve_or_missing(first)
        if value is missing or isinstance(value, Undefined):
            if optional:
                return None
            raise UndefinedError(f"{first!r} is not a key of the section's item nor a template variable")
    environment = context.environment
    for part in rest:
        value = environment.getitem(value, int(part)) if part.isdigit() else environment.getattr(value, part)
        if isinstance(value, Undefined):
            raise UndefinedError(f"{path!r}: no {part!r} in the section's item")
    return "" if value is None else value


#: The functions the rewritten sections call, as the template environment's globals.
HELPERS = {"mustache_section": mustache_section, "mustache_get": mustache_get}
