"""Template files read as YAML, bounded: no file can hang the reader, take its memory or crash it.

The file's size, its nesting and its node count (each alias counted as a copy of
what it names) are capped (:mod:`scorers.judges.limits`); what YAML allows but a
template never means (duplicate keys, a list as a key, an alias inside its own
anchor) and values Python refuses (a 13th month, an integer of 5,000 digits) are
located problems, never tracebacks.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from ..limits import MAX_TEMPLATE_FILE_BYTES, MAX_YAML_DEPTH, MAX_YAML_NODES

__all__ = ["SourceError", "read_text", "load"]


class SourceError(Exception):
    """What makes a template file unreadable as a template: ``message`` and, when known, the 1-based ``line``."""

    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.message, self.line = message, line


def read_text(path: Path) -> str:
    """The file's text (UTF-8), refused past :data:`MAX_TEMPLATE_FILE_BYTES` without reading further."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_TEMPLATE_FILE_BYTES + 1)
        if len(data) > MAX_TEMPLATE_FILE_BYTES:
            raise SourceError(
                f"the file is larger than {MAX_TEMPLATE_FILE_BYTES:,} bytes, the limit for a template file"
            )
        return data.decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SourceError(f"cannot read the file: {exc}") from None


def load(text: str) -> tuple[Any, Any]:
    """``(root node, data)`` of one YAML document (``(None, None)`` when empty); raises :class:`SourceError`."""
    loader = _BoundedLoader(text)
    try:
        node = loader.get_single_node()
        return node, (loader.construct_document(node) if node is not None else None)
    except _LimitError as exc:
        raise SourceError(exc.limit, exc.line) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise SourceError(
            f"invalid YAML: {getattr(exc, 'problem', None) or exc}", mark.line + 1 if mark else None
        ) from None
    except (ValueError, OverflowError) as exc:  # a value YAML reads but Python refuses (a 13th month ...)
        raise SourceError(f"invalid YAML value: {exc}") from None
    finally:
        loader.dispose()


class _LimitError(yaml.MarkedYAMLError):
    """The file passes a limit of :mod:`scorers.judges.limits` (``limit``, what it says) at ``mark``, an event's
    start mark (``line``: its 1-based line)."""

    def __init__(self, limit: str, mark: Any) -> None:
        super().__init__(None, None, limit, mark)
        self.limit, self.line = limit, mark.line + 1


class _BoundedLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` within the limits, refusing duplicate and unhashable keys.

    Composing measures each node as it is completed: its size and depth with every alias
    expanded, from its children's, so an exponential alias tree is refused at the first
    node past the limit, before anything walks it.
    """

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0
        #: ``id(node) -> (nodes, depth)`` with aliases expanded, for every node composed.
        self._measures: dict[int, tuple[int, int]] = {}

    def compose_node(self, parent: Any, index: Any) -> Any:
        event = self.peek_event()  # type: ignore[no-untyped-call]  # types-PyYAML leaves peek_event unannotated
        if isinstance(event, yaml.AliasEvent):
            node = super().compose_node(parent, index)
            if id(node) not in self._measures:  # its anchor's node is still being composed
                raise _LimitError("an alias refers to the node that contains it", event.start_mark)
            return node
        self._depth += 1
        try:
            if self._depth > MAX_YAML_DEPTH:
                raise _LimitError(_too_deep(), event.start_mark)
            node = super().compose_node(parent, index)
        finally:
            self._depth -= 1
        self._measure(node, event.start_mark)
        return node

    def _measure(self, node: Any, mark: Any) -> None:
        if isinstance(node, yaml.MappingNode):
            children = [child for pair in node.value for child in pair]
        elif isinstance(node, yaml.SequenceNode):
            children = node.value
        else:
            children = []
        count, depth = 1, 1
        for child in children:
            measure = self._measures[id(child)]
            count, depth = count + measure[0], max(depth, measure[1] + 1)
        if depth > MAX_YAML_DEPTH:
            raise _LimitError(_too_deep(), mark)
        if count > MAX_YAML_NODES:
            raise _LimitError(
                f"the file holds more than {MAX_YAML_NODES:,} values, counting each "
                "alias (*name) as a copy of what it names",
                mark,
            )
        self._measures[id(node)] = (count, depth)


def _too_deep() -> str:
    return f"mappings and lists nested more than {MAX_YAML_DEPTH} deep (counting aliases as copies)"


def _construct_mapping(loader: _BoundedLoader, node: Any, deep: bool = False) -> dict[Any, Any]:
    loader.flatten_mapping(node)
    seen: set[Any] = set()
    for key_node, _value in node.value:
        key = loader.construct_object(key_node, deep=True)
        try:
            duplicate = key in seen
        except TypeError:
            raise yaml.constructor.ConstructorError(
                None, None, f"a {type(key).__name__} cannot be a key", key_node.start_mark
            ) from None
        if duplicate:
            raise yaml.constructor.ConstructorError(None, None, f"duplicate key {key!r}", key_node.start_mark)
        seen.add(key)
    return dict(loader.construct_pairs(node, deep=deep))


_BoundedLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
