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

A judge's batch also finds its replies by *derived* keys, known before any prompt is rendered
(:func:`derived_keys`: the judge's fingerprint and a row's template values): each links to the key of the
reply stored for the rendered prompt, in a table of its own (:meth:`LLMCache.link`, :meth:`LLMCache.get_linked`).

For many machines, :class:`RedisCache` keeps the same keys and replies on a Redis server that every
worker reaches (``SCORERS_CACHE_URL=redis://host:6379/0``), so work an engine retries elsewhere is free.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import json
import os
import random
import sqlite3
import threading
import time
import urllib.parse
import uuid
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

from .._util import json_loads, lazy, memoize, optional_import
from ..errors import ConfigError
from .redaction import mask_urls

__all__ = [
    "LLMCache",
    "RedisCache",
    "CacheError",
    "ReplyCache",
    "cache_key",
    "cache_keys",
    "derived_keys",
    "is_redis_url",
    "open_cache",
    "paying",
    "stamped",
    "paid_here",
]

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


#: Bump when what a derived key covers changes: old links are then simply not found (never a wrong hit).
DERIVED_FORMAT = 1

_DERIVED_SCHEMA = """
CREATE TABLE IF NOT EXISTS derived (
    key TEXT PRIMARY KEY,
    reply_key TEXT NOT NULL
) WITHOUT ROWID
"""

#: Canonical JSON (sorted keys, no spaces); one instance, as ``json.dumps`` would build one per call.
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def _encode_text(text: str) -> str:
    """``_CANONICAL.encode(text)`` for a ``str``. An ASCII text without DEL (which only the ASCII escaper escapes)
    comes out the same from the ASCII escaper, the faster of the two (about 2.5 against 4 us for a 1 kB prompt)."""
    return _ascii_escaped(text) if text.isascii() and "\x7f" not in text else _escaped(text)


_ascii_escaped: Callable[[str], str] = json.encoder.encode_basestring_ascii
_escaped: Callable[[str], str] = json.encoder.encode_basestring

#: Most keys in one ``IN (...)`` query (SQLite's default limit on parameters is 999 in old builds).
_KEYS_PER_QUERY = 500


def cache_key(body: Mapping[str, Any], *, base_url: str, tag: str | None = None) -> str:
    """SHA-256 of the canonical request: ``body`` is the JSON sent (no credentials), plus the endpoint and a tag."""
    canonical = _CANONICAL.encode({"format": CACHE_FORMAT, "base_url": base_url.rstrip("/"), "body": body, "tag": tag})
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def cache_keys(
    bodies: Sequence[Mapping[str, Any]], *, base_url: str, tags: Sequence[str | None] | None = None
) -> list[str]:
    """``[cache_key(body, base_url=base_url, tag=tag) ...]``, faster for a batch of similar requests.

    The canonical JSON of a body is assembled from its encoded entries in key order
    (what ``sort_keys`` does). An entry whose value a previous body shared (the same
    object, or a fresh list of the same objects: a judge's tools) is encoded once per
    call, and so are the key orders; only ``messages`` is encoded for every body.
    The keys are the same strings.
    """
    encode = _CANONICAL.encode
    head = f'{{"base_url":{encode(base_url.rstrip("/"))},"body":{{'
    orders: dict[tuple[Any, ...], list[str] | None] = {}  # the body's keys -> sorted, or None: odd keys
    entries: dict[tuple[Any, ...], str] = {}  # (key, id(value) or ids of a list's items) -> '"key":json'
    tails: dict[Any, str] = {}  # tag -> what follows the body
    # id(object) is a sound memo key within this call: the bodies keep every object alive until it returns

    keys = []
    for body, tag in zip(bodies, tags if tags is not None else [None] * len(bodies)):
        given = tuple(body)
        order = orders.get(given, ())
        if order == ():
            order = orders[given] = sorted(given) if all(type(name) is str for name in given) else None
        if order is None:  # sort_keys' own rules (and errors) for odd keys
            keys.append(cache_key(body, base_url=base_url, tag=tag))
            continue
        parts = []
        for name in order:
            value = body[name]
            if name == "messages":  # different in every body
                parts.append(f'"messages":{_encode_messages(value, encode)}')
                continue
            ident = (name, None, *map(id, value)) if type(value) is list else (name, id(value))
            text = entries.get(ident)
            if text is None:
                if type(value) is list:  # a fresh list of shared items (tools)
                    text = f"{encode(name)}:[{','.join(map(encode, value))}]"
                else:
                    text = f"{encode(name)}:{encode(value)}"
                entries[ident] = text
            parts.append(text)
        tail = tails.get(tag)
        if tail is None:
            tail = tails[tag] = f'}},"format":{CACHE_FORMAT},"tag":{encode(tag)}}}'
        keys.append(hashlib.sha256(f"{head}{','.join(parts)}{tail}".encode()).hexdigest())
    return keys


def derived_keys(fingerprint: Mapping[str, Any], rows: Sequence[Sequence[str]], positions: int) -> list[str]:
    """The derived keys of ``rows`` (each row's template values, as text): for each row, one per request of the row
    (``positions`` of them), row after row. Each is the SHA-256 of the canonical JSON of the ``fingerprint`` (what
    every prompt of the judge shares: its signature, template hash, settings, endpoint), the row's values and the
    request's position; it names the key of the reply stored for that request (:meth:`LLMCache.link`).

    >>> one, two = derived_keys({"judge": "J"}, [["a", "b"]], 2)
    >>> one != two and derived_keys({"judge": "J"}, [["a", "b"]], 2) == [one, two]
    True
    >>> derived_keys({"judge": "J"}, [["a", "c"]], 1)[0] != one and derived_keys({"judge": "K"}, [["a", "b"]], 1)[0] != one
    True
    """
    head = _CANONICAL.encode({"derived": DERIVED_FORMAT, "fingerprint": fingerprint})
    base = hashlib.sha256(head.encode())
    keys = []
    for values in rows:
        text = f"[{','.join(map(_encode_text, values))}]"
        for position in range(positions):
            digest = base.copy()
            digest.update(f"{text}{position}".encode())
            keys.append(digest.hexdigest())
    return keys


def _encode_messages(messages: Any, encode: Callable[[Any], str]) -> str:
    """Canonical JSON of a list of ``{str: str}`` messages, composed from string encodings (the encoder's
    container path costs microseconds of set-up per call); anything else goes to ``encode``."""
    if type(messages) is not list:
        return encode(messages)
    parts = []
    for message in messages:
        if type(message) is dict and len(message) == 2:  # the usual message: {"role": str, "content": str}
            content, role = message.get("content"), message.get("role")
            if type(content) is str and type(role) is str:
                parts.append(f'{{"content":{_encode_text(content)},"role":{_encode_text(role)}}}')
                continue
        if type(message) is not dict or not all(type(k) is str and type(v) is str for k, v in message.items()):
            return encode(messages)
        parts.append("{" + ",".join(f"{encode(k)}:{encode(message[k])}" for k in sorted(message)) + "}")
    return f"[{','.join(parts)}]"


#: The key of a stored reply naming who paid for it: ``[run, block, attempt]`` (see :func:`paying`).
PAID_BY = "paid_by"
#: Who pays for the calls made now: the run, its block and this attempt at the block (None: nobody says).
_PAYER: contextvars.ContextVar[tuple[str, int, str] | None] = contextvars.ContextVar("scorers_payer", default=None)


@contextlib.contextmanager
def paying(run: str, block: int) -> Iterator[None]:
    """Calls made in the block (this task and the tasks it starts) are paid for by the rows of ``block`` of
    ``run`` (an engine's block of rows, named by its first row's index), in an attempt of their own. A reply
    that another attempt at the same block of the same run stored (a worker lost after it paid, whose rows are
    scored again) then counts as paid on a hit, not as cached: the run did pay for it. A hit on any other
    entry (another run's, another block's: the same prompt in two rows) is cached, as always.

    >>> stored = stamped({"content": "A"})  # outside paying(): no stamp
    >>> with paying("run-1", 0):
    ...     stored = stamped({"content": "A"})
    ...     paid_here(stored)  # this attempt's own entry: a repeat of the prompt, cached
    False
    >>> with paying("run-1", 0):  # the block scored again after its worker was lost
    ...     paid_here(stored)
    True
    >>> with paying("run-1", 16):
    ...     paid_here(stored)
    False
    """
    token = _PAYER.set((run, block, uuid.uuid4().hex))
    try:
        yield
    finally:
        _PAYER.reset(token)


def stamped(reply: dict[str, Any]) -> dict[str, Any]:
    """``reply`` to store, with :data:`PAID_BY` when a block is :func:`paying` for the calls made now."""
    payer = _PAYER.get()
    return reply if payer is None else {**reply, PAID_BY: list(payer)}


def paid_here(stored: Mapping[str, Any]) -> bool:
    """Whether ``stored`` was paid for by another attempt at the block of the run that is :func:`paying` now."""
    payer, paid_by = _PAYER.get(), stored.get(PAID_BY)
    return payer is not None and isinstance(paid_by, list) and paid_by[:2] == list(payer[:2]) and paid_by[2] != payer[2]


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
        type(self).__init__(self, state["path"], busy_timeout_s=state["busy_timeout_s"])

    def _connection(self) -> sqlite3.Connection:
        # A connection must not cross fork(): reopen in a child process.
        if self._conn is None or self._pid != os.getpid():
            self._conn, self._pid = self._open(), os.getpid()
        return self._conn

    def connect(self) -> sqlite3.Connection:
        """This process's connection, opened and checked on first use: a file that cannot be opened or is
        not a sound SQLite database raises :class:`~scorers.errors.ConfigError` naming it and the way out."""
        with self._lock:
            return self._connection()

    def _open(self) -> sqlite3.Connection:
        """Connect, switch the file to WAL, create the table and check the file (``PRAGMA quick_check``:
        it reads every page, some 0.1 s per 150 MB, once per process). Processes that open a new file at
        the same moment (a pool's workers) can get "database is locked" from the journal-mode switch,
        which SQLite does not wait out: that is retried until ``busy_timeout_s``, and only a file already
        in WAL skips it."""
        deadline = time.monotonic() + self.busy_timeout_s
        while True:
            conn = None
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                conn = sqlite3.connect(
                    self.path, timeout=self.busy_timeout_s, isolation_level=None, check_same_thread=False
                )
                if conn.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
                    conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=NORMAL")
                conn.execute(_SCHEMA)
                conn.execute(_DERIVED_SCHEMA)
                problems = [row[0] for row in conn.execute("PRAGMA quick_check(3)")]
                if problems != ["ok"]:
                    raise sqlite3.DatabaseError("; ".join(problems))
                return conn
            except sqlite3.OperationalError as exc:
                if conn is not None:
                    conn.close()
                if "locked" in str(exc) and time.monotonic() < deadline:
                    time.sleep(random.uniform(0.01, 0.05))
                    continue
                raise self._unusable(exc) from exc
            except sqlite3.DatabaseError as exc:  # not a database, or a damaged one
                if conn is not None:
                    conn.close()
                raise self._corrupt(exc) from exc
            except (sqlite3.Error, OSError) as exc:
                if conn is not None:
                    conn.close()
                raise self._unusable(exc) from exc

    def _unusable(self, exc: BaseException) -> ConfigError:
        return ConfigError(
            f"cannot open the LLM reply cache {str(self.path)!r}: {exc} "
            f"(set SCORERS_CACHE_DIR, or disable the cache with cache=False / --no-cache)"
        )

    def _corrupt(self, exc: BaseException) -> ConfigError:
        return ConfigError(
            f"the LLM reply cache {str(self.path)!r} is not a sound SQLite database ({exc}): "
            f"delete it (with its -wal and -shm files) to start an empty cache, or run without "
            f"the cache (cache=False, --no-cache or SCORERS_CACHE=off)"
        )

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored reply for ``key``, or ``None``."""
        with self._lock:
            row = self._connection().execute("SELECT reply FROM replies WHERE key = ?", (key,)).fetchone()
        return None if row is None else json_loads(row[0])

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
                chunk = wanted[start : start + _KEYS_PER_QUERY]
                query = f"SELECT key, reply FROM replies WHERE key IN ({','.join('?' * len(chunk))})"
                found.update(connection.execute(query, chunk).fetchall())
        return {key: json_loads(text) for key, text in found.items()}

    def get_linked(self, keys: Iterable[str]) -> dict[str, tuple[str, dict[str, Any]]]:
        """For those derived ``keys`` that are linked to a stored reply: ``{key: (reply key, reply)}``, in one
        query per 500 keys (a join of the links and the replies).

        >>> import tempfile, os
        >>> cache = LLMCache(os.path.join(tempfile.mkdtemp(), "c.sqlite"))
        >>> cache.put("r", {"content": "A"}, model="m"); cache.link([("d", "r"), ("e", "gone")])
        >>> cache.get_linked(["d", "e", "f"])
        {'d': ('r', {'content': 'A'})}
        """
        wanted = list(keys)
        found: list[tuple[str, str, str]] = []
        with self._lock:
            connection = self._connection()
            for start in range(0, len(wanted), _KEYS_PER_QUERY):
                chunk = wanted[start : start + _KEYS_PER_QUERY]
                query = (
                    "SELECT derived.key, derived.reply_key, replies.reply FROM derived "
                    f"JOIN replies ON replies.key = derived.reply_key WHERE derived.key IN ({','.join('?' * len(chunk))})"
                )
                found.extend(connection.execute(query, chunk).fetchall())
        return {key: (reply_key, json_loads(text)) for key, reply_key, text in found}

    def link(self, pairs: Iterable[tuple[str, str]]) -> None:
        """Record each ``(derived key, reply key)`` pair (replacing an older link), in one transaction."""
        rows = list(pairs)
        if not rows:
            return
        with self._lock:
            connection = self._connection()
            connection.execute("BEGIN")
            try:
                connection.executemany("INSERT OR REPLACE INTO derived (key, reply_key) VALUES (?, ?)", rows)
            except BaseException:
                connection.execute("ROLLBACK")
                raise
            connection.execute("COMMIT")

    def put(self, key: str, reply: Mapping[str, Any], *, model: str) -> None:
        """Store ``reply`` (JSON-serialisable) under ``key``, replacing any older entry."""
        text = json.dumps(reply, ensure_ascii=False, separators=(",", ":"))
        with self._lock:
            self._connection().execute(
                "INSERT OR REPLACE INTO replies (key, model, reply, created) VALUES (?, ?, ?, ?)",
                (key, model, text, time.time()),
            )

    def clear(self) -> int:
        """Delete every entry (and every derived key's link); returns how many entries there were."""
        with self._lock:
            connection = self._connection()
            connection.execute("DELETE FROM derived")
            return connection.execute("DELETE FROM replies").rowcount

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


class CacheError(Exception):
    """A shared cache that was reached before failed during a run (:class:`RedisCache`); the engine warns and
    goes on without the cache for that call, as it does when the SQLite file fails."""


#: URL schemes of :class:`RedisCache` (``rediss://`` is Redis over TLS).
REDIS_SCHEMES = ("redis", "rediss")

#: Seconds a :class:`RedisCache` is bypassed after a failure before the server is tried again: each cache call
#: runs on the engine's event loop, so an unreachable host must not cost a socket timeout on every request.
REDIS_RETRY_AFTER_S = 10.0


def is_redis_url(value: object) -> bool:
    """Whether ``value`` is a ``redis://`` or ``rediss://`` URL (a :class:`RedisCache` target).

    >>> is_redis_url("redis://cache.internal:6379/0"), is_redis_url("llm-cache.sqlite")
    (True, False)
    """
    return isinstance(value, str) and urllib.parse.urlsplit(value.strip()).scheme.lower() in REDIS_SCHEMES


class RedisCache:
    """A key → JSON reply store on a Redis server (``redis://[:password@]host:port/db``), for many machines.

    The keys (prefixed ``scorers:llm:``) and the stored replies are those of :class:`LLMCache`; a URL
    parameter ``ttl=<seconds>`` makes entries expire, other parameters go to the ``redis`` client
    (``socket_timeout=``). It connects once per process, when the engine opens it (:func:`open_cache`) or
    on first use: a server that cannot be reached then is a :class:`~scorers.errors.ConfigError` naming
    the URL (its password masked); a failure after that raises :class:`CacheError` and the server is left
    alone for :data:`REDIS_RETRY_AFTER_S` seconds. It pickles as its URL: the receiving process opens its
    own connection.

    >>> cache = RedisCache("redis://:s3cret@cache.internal:6379/2?ttl=86400")
    >>> cache, cache.ttl_s
    (RedisCache('redis://:***@cache.internal:6379/2?ttl=86400'), 86400)
    """

    #: Prefix of every key, so that the entries can share a database with other data.
    prefix = "scorers:llm:"
    #: Prefix of the derived keys' links (:func:`derived_keys`), each holding the key of a stored reply.
    link_prefix = "scorers:derived:"

    def __init__(self, url: str) -> None:
        if not is_redis_url(url):
            raise ConfigError(f"not a Redis URL: {mask_urls(str(url))!r} (expected redis://host:port/db)")
        self.url = url.strip()
        parts = urllib.parse.urlsplit(self.url)
        query = urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
        self.ttl_s = _ttl_seconds(self.url, [value for name, value in query if name == "ttl"])
        self._client_url = parts._replace(
            query=urllib.parse.urlencode([(n, v) for n, v in query if n != "ttl"])
        ).geturl()
        self._client: Any = None
        self._pid = -1
        self._down_until = 0.0

    @lazy
    def _lock(self) -> threading.Lock:
        """Serialises connecting (built on first use, never pickled)."""
        return threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        return {"url": self.url}

    def __setstate__(self, state: dict[str, Any]) -> None:
        type(self).__init__(self, state["url"])

    def connect(self) -> Any:
        """This process's ``redis`` client, connected on first use and pinged: a server that cannot be reached
        raises :class:`~scorers.errors.ConfigError` (naming the URL, password masked), which stops a run."""
        with self._lock:
            if self._client is not None and self._pid == os.getpid():
                return self._client
            redis = optional_import("redis", scorer="The Redis reply cache", extra="redis")
            from redis.backoff import NoBackoff
            from redis.retry import Retry

            # one immediate retry: a pooled connection the server closed is reopened, a dead server is not waited on
            try:
                client = redis.Redis.from_url(self._client_url, retry=Retry(NoBackoff(), 1))
                client.ping()
            except (redis.RedisError, ValueError) as exc:
                raise ConfigError(
                    f"cannot use the Redis reply cache {mask_urls(self.url)!r}: "
                    f"{type(exc).__name__}: {exc} (start the server or fix SCORERS_CACHE_URL / cache=, or disable the cache "
                    f"with cache=False / --no-cache)"
                ) from exc
            self._client, self._pid, self._down_until = client, os.getpid(), 0.0
            return client

    def _call(self, command: Callable[[Any], Any]) -> Any:
        """Run ``command(client)``; a Redis failure raises :class:`CacheError` (and pauses the cache)."""
        client = self.connect()
        if time.monotonic() < self._down_until:
            raise CacheError(
                f"the Redis reply cache {mask_urls(self.url)!r} failed less than "
                f"{REDIS_RETRY_AFTER_S:g} s ago; not asking it yet"
            )
        import redis

        try:
            return command(client)
        except redis.RedisError as exc:
            self._down_until = time.monotonic() + REDIS_RETRY_AFTER_S
            raise CacheError(
                f"the Redis reply cache {mask_urls(self.url)!r} failed: {type(exc).__name__}: {exc}"
            ) from exc

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored reply for ``key``, or ``None``."""
        text = self._call(lambda client: client.get(self.prefix + key))
        return None if text is None else json_loads(text)

    def get_many(self, keys: Iterable[str]) -> dict[str, dict[str, Any]]:
        """The stored replies of those ``keys`` that are present (``{key: reply}``), in one round trip."""
        wanted = list(dict.fromkeys(keys))
        if not wanted:
            return {}

        def fetch(client: Any) -> list[Any]:
            pipeline = client.pipeline(transaction=False)
            for start in range(0, len(wanted), _KEYS_PER_QUERY):
                pipeline.mget([self.prefix + key for key in wanted[start : start + _KEYS_PER_QUERY]])
            return [text for chunk in pipeline.execute() for text in chunk]

        return {key: json_loads(text) for key, text in zip(wanted, self._call(fetch)) if text is not None}

    def get_linked(self, keys: Iterable[str]) -> dict[str, tuple[str, dict[str, Any]]]:
        """For those derived ``keys`` that are linked to a stored reply: ``{key: (reply key, reply)}``, in two round
        trips (the links, then their replies)."""
        wanted = list(dict.fromkeys(keys))
        if not wanted:
            return {}

        def fetch(client: Any, prefix: str, names: list[str]) -> list[Any]:
            pipeline = client.pipeline(transaction=False)
            for start in range(0, len(names), _KEYS_PER_QUERY):
                pipeline.mget([prefix + name for name in names[start : start + _KEYS_PER_QUERY]])
            return [text for chunk in pipeline.execute() for text in chunk]

        links = self._call(lambda client: fetch(client, self.link_prefix, wanted))
        linked = {key: _text(target) for key, target in zip(wanted, links) if target is not None}
        targets = list(dict.fromkeys(linked.values()))
        replies = dict(zip(targets, self._call(lambda client: fetch(client, self.prefix, targets)))) if targets else {}
        return {
            key: (target, json_loads(replies[target])) for key, target in linked.items() if replies[target] is not None
        }

    def link(self, pairs: Iterable[tuple[str, str]]) -> None:
        """Record each ``(derived key, reply key)`` pair (expiring after ``ttl_s`` when set), in one round trip."""
        rows = list(pairs)
        if not rows:
            return

        def store(client: Any) -> None:
            pipeline = client.pipeline(transaction=False)
            for key, target in rows:
                pipeline.set(self.link_prefix + key, target, ex=self.ttl_s)
            pipeline.execute()

        self._call(store)

    def put(self, key: str, reply: Mapping[str, Any], *, model: str) -> None:
        """Store ``reply`` under ``key`` (expiring after ``ttl_s`` when set), replacing any older entry.

        ``model`` is part of the interface of :class:`LLMCache`, which keeps it in a column; the reply holds it too.
        """
        text = json.dumps(reply, ensure_ascii=False, separators=(",", ":"))
        self._call(lambda client: client.set(self.prefix + key, text, ex=self.ttl_s))

    def _keys(self, client: Any) -> list[Any]:
        return list(client.scan_iter(match=self.prefix + "*", count=1000))

    def clear(self) -> int:
        """Delete every entry under :attr:`prefix` (and every link under :attr:`link_prefix`); returns how many
        entries there were."""

        def delete(client: Any) -> int:
            keys = self._keys(client)
            links = list(client.scan_iter(match=self.link_prefix + "*", count=1000))
            for start in range(0, len(links), 1000):
                client.unlink(*links[start : start + 1000])
            return sum(client.unlink(*keys[start : start + 1000]) for start in range(0, len(keys), 1000))

        return self._call(delete)

    def __len__(self) -> int:
        return len(self._call(self._keys))

    def close(self) -> None:
        with self._lock:
            if self._client is not None and self._pid == os.getpid():
                self._client.close()
            self._client = None

    def __repr__(self) -> str:
        return f"RedisCache({mask_urls(self.url)!r})"


def _text(value: Any) -> str:
    """A Redis value as text (the client returns bytes unless told to decode)."""
    return value.decode() if isinstance(value, bytes) else str(value)


def _ttl_seconds(url: str, values: list[str]) -> int | None:
    """The ``ttl`` parameter of a Redis URL: whole seconds > 0, or ``None`` when absent."""
    if not values:
        return None
    if len(values) == 1 and values[0].isdigit() and int(values[0]) > 0:
        return int(values[0])
    raise ConfigError(
        f"the Redis cache URL {mask_urls(url)!r} has ttl={'&ttl='.join(values)}; "
        f"give one ttl=<whole seconds > 0>, or none to keep entries until Redis evicts them"
    )


#: A reply cache: the SQLite file of one machine or a Redis server shared by many.
ReplyCache = LLMCache | RedisCache


def open_cache(target: ReplyCache | str | os.PathLike[str]) -> ReplyCache:
    """The process-wide cache of a path or Redis URL (one connection each), or ``target`` itself, connected.

    The cache is opened and checked here, so that an unusable one (a Redis server that is down, a
    damaged SQLite file) stops a run with a :class:`~scorers.errors.ConfigError` before its first request.
    """
    if isinstance(target, (LLMCache, RedisCache)):
        cache = target
    elif is_redis_url(target):
        cache = _redis_cache_for(str(target).strip())
    else:
        cache = _cache_for(Path(target).expanduser().absolute())
    cache.connect()
    return cache


@memoize
def _redis_cache_for(url: str) -> RedisCache:
    """One :class:`RedisCache` per URL in this process."""
    return RedisCache(url)


@memoize
def _cache_for(path: Path) -> LLMCache:
    """One :class:`LLMCache` per absolute path in this process."""
    return LLMCache(path)
