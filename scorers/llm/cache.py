"""On-disk cache of valid judge replies: one SQLite file, safe to share between processes.

Keys are the SHA-256 of the canonical JSON of everything that shapes a reply
(endpoint, model, messages, tools, tool_choice, temperature, response format,
seed, max_tokens, extra parameters and an optional tag) — never the API key.
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
from typing import Any, Mapping

from ..errors import ConfigError

__all__ = ["LLMCache", "cache_key", "open_cache"]

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


def cache_key(body: Mapping[str, Any], *, base_url: str, tag: str | None = None) -> str:
    """SHA-256 of the canonical request: ``body`` is the JSON sent (no credentials), plus the endpoint and a tag."""
    canonical = json.dumps({"format": CACHE_FORMAT, "base_url": base_url.rstrip("/"), "body": body, "tag": tag},
                           sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class LLMCache:
    """A key → JSON reply store in one SQLite file (created with its folder on first use)."""

    def __init__(self, path: str | os.PathLike[str], *, busy_timeout_s: float = 30.0) -> None:
        self.path = Path(path)
        self.busy_timeout_s = busy_timeout_s
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._pid = -1

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


_open: dict[Path, LLMCache] = {}
_open_lock = threading.Lock()


def open_cache(target: LLMCache | str | os.PathLike[str]) -> LLMCache:
    """The process-wide :class:`LLMCache` for a path (one connection per file), or ``target`` itself."""
    if isinstance(target, LLMCache):
        return target
    path = Path(target).expanduser().absolute()
    with _open_lock:
        cache = _open.get(path)
        if cache is None:
            cache = _open[path] = LLMCache(path)
        return cache
