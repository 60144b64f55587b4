"""On-disk cache of valid judge replies: one SQLite file, safe to share between processes.

Keys are the SHA-256 of the canonical JSON of everything that shapes a reply:
the endpoint, the request body as sent (model, messages, tools, tool_choice,
temperature, response format, seed, token limit, reasoning effort, logprobs, extra
parameters; a Responses API body has ``input`` where a chat body has ``messages``,
so the API is part of the key) and an optional tag — never the API key.
The file runs in WAL mode with a busy timeout, and every write is one short
transaction, so several processes can read and write it at once.

>>> import tempfile, os
>>> cache = LLMCache(os.path.join(tempfile.mkdtemp(), "c.sqlite"))
>>> key = cache_key({"model": "m", "messages": []}, base_url="http://x/v1")
>>> cache.get(key) is None
True
>>> cache.put(key, {"content": "ok"}, model="m"); cache.get(key)
{'content': 'ok'}
"""
from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from .._util import lazy, memoize
from ..errors import ConfigError

__all__ = ["LLMCache", "cache_key", "cache_keys", "open_cache"]

#: Bump when the stored reply format changes; old entries are then simply not found.
CACHE_FORMAT = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS replies (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    reply TEXT NOT NULL,
    created REAL NOT NULL
)
"""


#: Canonical JSON (sorted keys, no spaces); one instance, as ``json.dumps`` would build one per call.
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)

#: Most keys in one ``IN (...)`` query (SQLite's default limit on parameters is 999 in old builds).
_KEYS_PER_QUERY = 500


def cache_key(body: Mapping[str, Any], *, base_url: str, tag: str | None = None) -> str:
    """SHA-256 of the canonical request: ``body`` is the JSON sent (no credentials), plus the endpoint and a tag."""
    canonical = _CANONICAL.encode({"format": CACHE_FORMAT, "base_url": base_url.rstrip("/"), "body": body, "tag": tag})
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def cache_keys(bodies: Sequence[Mapping[str, Any]], *, base_url: str,
               tags: Sequence[str | None] | None = None) -> list[str]:
    """``[cache_key(body, base_url=base_url, tag=tag) ...]``, faster for a batch of similar requests.

    The canonical JSON of a body is assembled from its encoded values in key order
    (what ``sort_keys`` does), and a value object shared by several bodies (a
    judge's tool schema) is encoded once per call. The keys are the same strings.
    """
    encode = _CANONICAL.encode
    url = encode(base_url.rstrip("/"))
    encoded: dict[int, str] = {}  # id(object) -> JSON; the bodies keep every object alive during the call

    def shared(value: Any) -> str:
        text = encoded.get(id(value))
        if text is None:
            text = encoded[id(value)] = encode(value)
        return text

    keys = []
    for body, tag in zip(bodies, tags if tags is not None else [None] * len(bodies)):
        if not all(type(name) is str for name in body):  # sort_keys' own rules (and errors) for odd keys
            keys.append(cache_key(body, base_url=base_url, tag=tag))
            continue
        parts = []
        for name in sorted(body):
            value = body[name]
            if name == "messages":  # different in every body
                text = _encode_messages(value, encode)
            elif type(value) is list:  # a fresh list of shared items (tools)
                text = f"[{','.join(map(shared, value))}]"
            else:
                text = shared(value)
            parts.append(f"{shared(name)}:{text}")
        canonical = f'{{"base_url":{url},"body":{{{",".join(parts)}}},"format":{CACHE_FORMAT},"tag":{shared(tag)}}}'
        keys.append(hashlib.sha256(canonical.encode("utf-8")).hexdigest())
    return keys


def _encode_messages(messages: Any, encode: Callable[[Any], str]) -> str:
    """Canonical JSON of a list of ``{str: str}`` messages, composed from string encodings (the encoder's
    container path costs microseconds of set-up per call); anything else goes to ``encode``."""
    if type(messages) is not list:
        return encode(messages)
    parts = []
    for message in messages:
        if type(message) is not dict or not all(type(k) is str and type(v) is str for k, v in message.items()):
            return encode(messages)
        parts.append("{" + ",".join(f"{encode(k)}:{encode(message[k])}" for k in sorted(message)) + "}")
    return f"[{','.join(parts)}]"


class LLMCache:
    """A key → JSON reply store in one SQLite file (created with its folder on first use).

    It pickles as its path and settings: the receiving process opens its own connection.
    """

    def __init__(self, path: str | os.PathLike[str], *, busy_timeout_s: float = 30.0) -> None:
        self.path = Path(path)
        self.busy_timeout_s = busy_timeout_s
        self._conn: sqlite3.Connection | None = None
        self._pid = -1

    @lazy
    def _lock(self) -> threading.Lock:
        """Serialises this instance's use of its connection (built on first use, never pickled)."""
        return threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        return {"path": self.path, "busy_timeout_s": self.busy_timeout_s}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["path"], busy_timeout_s=state["busy_timeout_s"])  # type: ignore[misc]

    def _connection(self) -> sqlite3.Connection:
        # A connection must not cross fork(): reopen in a child process.
        if self._conn is None or self._pid != os.getpid():
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                conn = sqlite3.connect(self.path, timeout=self.busy_timeout_s, isolation_level=None,
                                       check_same_thread=False)
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=NORMAL")
                conn.execute(_SCHEMA)
            except (sqlite3.Error, OSError) as exc:
                raise ConfigError(f"cannot open the LLM reply cache {str(self.path)!r}: {exc} "
                                  f"(set SCORERS_CACHE_DIR, or disable the cache with cache=False / --no-cache)") from exc
            self._conn, self._pid = conn, os.getpid()
        return self._conn

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored reply for ``key``, or ``None``."""
        with self._lock:
            row = self._connection().execute("SELECT reply FROM replies WHERE key = ?", (key,)).fetchone()
        return None if row is None else json.loads(row[0])

    def get_many(self, keys: Iterable[str]) -> dict[str, dict[str, Any]]:
        """The stored replies of those ``keys`` that are present (``{key: reply}``), in few queries.

        >>> import tempfile, os
        >>> cache = LLMCache(os.path.join(tempfile.mkdtemp(), "c.sqlite"))
        >>> cache.put("a", {"content": "A"}, model="m")
        >>> cache.get_many(["a", "b"])
        {'a': {'content': 'A'}}
        """
        wanted = list(keys)
        found: dict[str, str] = {}
        with self._lock:
            connection = self._connection()
            for start in range(0, len(wanted), _KEYS_PER_QUERY):
                chunk = wanted[start:start + _KEYS_PER_QUERY]
                query = f"SELECT key, reply FROM replies WHERE key IN ({','.join('?' * len(chunk))})"
                found.update(connection.execute(query, chunk).fetchall())
        return {key: json.loads(text) for key, text in found.items()}

    def put(self, key: str, reply: Mapping[str, Any], *, model: str) -> None:
        """Store ``reply`` (JSON-serialisable) under ``key``, replacing any older entry."""
        text = json.dumps(reply, ensure_ascii=False, separators=(",", ":"))
        with self._lock:
            self._connection().execute("INSERT OR REPLACE INTO replies (key, model, reply, created) VALUES (?, ?, ?, ?)",
                                       (key, model, text, time.time()))

    def clear(self) -> int:
        """Delete every entry; returns how many there were."""
        with self._lock:
            return self._connection().execute("DELETE FROM replies").rowcount

    def __len__(self) -> int:
        with self._lock:
            return self._connection().execute("SELECT COUNT(*) FROM replies").fetchone()[0]

    def close(self) -> None:
        with self._lock:
            if self._conn is not None and self._pid == os.getpid():
                self._conn.close()
            self._conn = None

    def __repr__(self) -> str:
        return f"LLMCache({str(self.path)!r})"


def open_cache(target: LLMCache | str | os.PathLike[str]) -> LLMCache:
    """The process-wide :class:`LLMCache` for a path (one connection per file), or ``target`` itself."""
    if isinstance(target, LLMCache):
        return target
    return _cache_for(Path(target).expanduser().absolute())


@memoize
def _cache_for(path: Path) -> LLMCache:
    """One :class:`LLMCache` per absolute path in this process."""
    return LLMCache(path)
