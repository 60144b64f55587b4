"""EmbeddingSimilarity: cosine similarity of sentence embeddings, local (MiniLM) or OpenAI."""

from __future__ import annotations

import asyncio
import inspect
import os
import threading
import weakref
from collections import OrderedDict
from typing import Any, ClassVar, Hashable, Sequence
from urllib.parse import urlsplit, urlunsplit

from .._aio import run_sync
from .._util import lazy
from ..base import Scorer
from ..errors import ConfigError, ScorerError
from ..fields import references_field, text_field
from ..params import param
from ..registry import register
from ..score import Score
from . import models

__all__ = ["EmbeddingSimilarity", "OpenAIEmbeddingSimilarity", "EMBEDDING_CACHE", "LRU"]

DEFAULT_OPENAI_MODEL = "text-embedding-3-small"
DEFAULT_OPENAI_BASE_URL = "https://api.openai.com/v1"
#: Texts per embeddings request (the OpenAI API's limit on inputs per request).
OPENAI_MAX_INPUTS = 2048


class LRU:
    """A small thread-safe LRU map (its lock lives in the instance)."""

    def __init__(self, maxsize: int) -> None:
        self.maxsize = maxsize
        self._data: OrderedDict[Hashable, Any] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> Any:
        with self._lock:
            value = self._data.get(key)
            if value is not None:
                self._data.move_to_end(key)
            return value

    def put(self, key: Hashable, value: Any) -> None:
        if self.maxsize <= 0:
            return
        with self._lock:
            self._data[key] = value
            self._data.move_to_end(key)
            while len(self._data) > self.maxsize:
                self._data.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._data.clear()

    def __len__(self) -> int:
        return len(self._data)


#: Process-wide bounded embedding cache, keyed by (provider, endpoint, model, prefix, text).
EMBEDDING_CACHE = LRU(20_000)


@register
class EmbeddingSimilarity(models.HubModel, Scorer):
    """Cosine similarity of sentence embeddings of ``output`` and ``expected``.

    Local provider (default): the bundled all-MiniLM-L6-v2 with mean pooling over
    tokens and L2 normalisation, equal to sentence-transformers' ``encode`` (texts
    truncated to the model's ``max_seq_length``, 256 for MiniLM); a synchronous scorer.
    ``provider="openai"`` uses the OpenAI embeddings endpoint through ``openai.AsyncOpenAI``
    (``model``, ``api_key``/``base_url``, or ``client=`` an ``AsyncOpenAI`` or ``OpenAI``
    client); such a scorer is async (``is_async`` is set per instance from ``provider``)
    and never blocks the event loop. A missing API key is a :class:`ConfigError` at
    construction, before any request.

    Requests to OpenAI go at most :data:`OPENAI_MAX_INPUTS` texts each, concurrently
    within the batch's limit, through one ``AsyncOpenAI`` client per event loop (made on
    first use). A ``client=`` ``AsyncOpenAI`` is awaited as is; a synchronous client
    (``openai.OpenAI``) runs in a worker thread. A failed request fails the rows that
    needed it, with a :class:`~scorers.errors.ScorerError`.

    Score: ``cos`` capped at 1, then ``max((cos - expected_min) / (1 - expected_min), 0)``.
    The default ``expected_min=0`` gives the plain cosine clamped to [0, 1];
    ``expected_min=0.7`` reproduces autoevals' ``EmbeddingSimilarity``. ``prefix`` is
    prepended to both texts before embedding (as in autoevals). ``expected`` may be a
    list of references: the best cosine counts (``metadata["reference"]`` is its index).

    Embeddings are cached in a bounded process-wide LRU (:data:`EMBEDDING_CACHE`)
    keyed by provider, endpoint, model, prefix and text (autoevals keys by text
    only, so two models share entries there; not here). Models and clients are
    ``@lazy``: a pickled scorer carries its settings only (a scorer built with
    ``client=`` cannot be pickled: pass ``api_key``/``base_url`` instead).

    >>> round(EmbeddingSimilarity()(output="The cat sat on the mat.", expected="The cat sat on the mat.").score, 6)
    1.0
    """

    name = "EmbeddingSimilarity"
    kind = "embedding"
    extra: ClassVar[str | None] = "bert"  # with provider="openai": none
    description = "Cosine similarity of sentence embeddings (local MiniLM by default, or OpenAI embeddings)."
    fields = (text_field("output", utf8=True), references_field("expected", utf8=True))
    example = 'EmbeddingSimilarity()(output="The cat sat on the mat.", expected="A feline was sitting on the rug.")'
    algorithm_version = "1"

    provider: str = param(
        "local: the bundled MiniLM (sync); openai: the OpenAI embeddings endpoint (async)",
        default="local",
        choices=("local", "openai"),
    )
    model: str | None = param("the embedding model (None: MiniLM, or the OpenAI default)", default=None)
    prefix: str = param("text put before both texts before embedding (as in autoevals)", default="")
    expected_min: float = param(
        "the cosine that maps to 0 (0.7: autoevals' EmbeddingSimilarity)", default=0.0, ge=0, lt=1
    )
    batch_size: int = param("most texts per forward pass (never changes a number)", default=64, ge=1, signed=False)
    device: str | None = param("the torch device (None: cuda when available, else cpu)", default=None, signed=False)
    client: Any = param("an openai.AsyncOpenAI or openai.OpenAI client (provider='openai')", default=None, signed=False)
    api_key: str | None = param("the API key (provider='openai'; None: OPENAI_API_KEY)", default=None, signed=False)
    base_url: str | None = param(
        "the endpoint (provider='openai'; None: OPENAI_BASE_URL, else OpenAI's)", default=None, signed=False
    )
    allow_download: bool = param(
        "fetch a hub model not in the local cache (otherwise nothing is downloaded)", default=False, signed=False
    )

    def __post_init__(self) -> None:
        provider, client, api_key, base_url = self.provider, self.client, self.api_key, self.base_url
        # The local model runs in the caller's thread (sync); OpenAI requests are awaited (async). Set per
        # instance over the class's derived value (the class has both routes); every caller reads the instance's.
        self.is_async = provider == "openai"  # type: ignore[misc]  # a ClassVar on Scorer, set here on purpose
        self.expected_min = float(self.expected_min)
        if provider == "local":
            if client is not None or api_key is not None or base_url is not None:
                raise ConfigError(
                    f"{self.name}: client, api_key and base_url are for provider='openai'", scorer=self.name
                )
            models.require_packages(self.name, "torch", "transformers")
            self._source  # noqa: B018  (a missing model package fails here, not at first scoring)
            return
        if client is not None and (api_key is not None or base_url is not None):
            raise ConfigError(f"{self.name}: pass either client= or api_key=/base_url=, not both", scorer=self.name)
        self.model = self.model or DEFAULT_OPENAI_MODEL
        if client is None:
            self._resolved_key()  # no key: ConfigError now, before any request
            # resolved once: a pickled copy sends to the same endpoint, whatever its environment says
            self._base_url = base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_OPENAI_BASE_URL
        else:
            self._base_url = str(getattr(client, "base_url", "") or "")
        self._endpoint = _public_url(self._base_url)

    def _resolved_key(self) -> str:
        key = self.api_key or os.environ.get("OPENAI_API_KEY")
        if not key:
            raise ConfigError(
                f"{self.name}: provider='openai' needs an API key: pass api_key= or client=, or set OPENAI_API_KEY",
                scorer=self.name,
            )
        return key

    # ------------------------------------------------------------ per-process state (dropped when pickled)
    @lazy
    def _tokenizer(self) -> Any:
        return models.load_tokenizer(self._source, True, self.allow_download, self.name)

    @lazy
    def _model(self) -> Any:
        return models.load_model(self._source, self._torch_device, None, self.allow_download, self.name)

    @lazy
    def _clients(self) -> "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Any]":
        """The ``AsyncOpenAI`` client made for each running event loop."""
        return weakref.WeakKeyDictionary()

    @lazy
    def _identity(self) -> dict[str, Any]:
        if self.provider == "openai":
            return {"provider": "openai", "endpoint": self._endpoint, "model": self.model}
        return {
            "provider": "local",
            **self._source.identity(),
            "pooling": "mean",
            "normalize": True,
            **models.stack_versions(),
        }

    def params(self) -> dict[str, Any]:
        return {**self._identity, "prefix": self.prefix, "expected_min": self.expected_min}

    def __getstate__(self) -> dict[str, Any]:
        if self.client is not None:
            raise TypeError(
                f"{self.name}: an EmbeddingSimilarity with client= cannot be pickled; pass api_key=/base_url= instead"
            )
        return super().__getstate__()

    def __copy__(self) -> "EmbeddingSimilarity":  # partial() copies; a client= is shared, not pickled
        clone = object.__new__(type(self))
        clone.__dict__.update(self.__dict__)
        return clone

    # ------------------------------------------------------------ embeddings
    def _cache_key(self, text: str) -> tuple[str, ...]:
        if self.provider == "openai":
            # the OpenAI provider always has an endpoint
            return (self.provider, self._endpoint, self.model, self.prefix, text)  # type: ignore[return-value]
        return (self.provider, "local", self._source.location, self.prefix, text)

    def _cached(self, texts: Sequence[str]) -> tuple[list[tuple[str, ...]], dict[tuple[str, ...], Any], list[str]]:
        """Cache keys of ``texts``, the vectors found, and the distinct texts to embed."""
        keys = [self._cache_key(t) for t in texts]
        found = {k: v for k in keys if (v := EMBEDDING_CACHE.get(k)) is not None}
        missing = list(dict.fromkeys(k[-1] for k in keys if k not in found))
        return keys, found, missing

    def embed(self, texts: Sequence[str]) -> list[Any]:
        """Unit-norm embeddings (numpy float64 arrays) of ``texts`` (``prefix`` prepended), via the cache.

        From sync code; with ``provider="openai"`` the requests run on the background event loop."""
        if self.provider == "openai":
            return run_sync(self.aembed(texts))
        keys, found, missing = self._cached(texts)
        if missing:
            for text, vector in zip(missing, self._embed_local([self.prefix + t for t in missing])):
                key = self._cache_key(text)
                EMBEDDING_CACHE.put(key, vector)
                found[key] = vector
        return [found[k] for k in keys]

    async def aembed(self, texts: Sequence[str]) -> list[Any]:
        """Async form of :meth:`embed` (the local model runs in the calling thread); raises the
        :class:`ScorerError` of a failed request."""
        if self.provider == "local":
            return self.embed(texts)
        vectors = await self._fetch(list(texts), asyncio.Semaphore(4))
        for vector in vectors:
            if isinstance(vector, ScorerError):
                raise vector
        return vectors

    def _embed_local(self, texts: list[str]) -> list[Any]:
        torch = models.import_torch(self.name)

        tokenizer = self._tokenizer
        limit = models.max_seq_length(self._source.location) or tokenizer.model_max_length
        ids = tokenizer(list(texts), add_special_tokens=True, truncation=True, max_length=limit)["input_ids"]
        pad = tokenizer.pad_token_id
        states = models.encode_tokens(
            self._model, self._torch_device, ids, pad if pad is not None else 0, self.batch_size
        )
        return [torch.nn.functional.normalize(s.mean(dim=0), dim=0).double().numpy() for s in states]

    async def _fetch(self, texts: list[str], limit: asyncio.Semaphore) -> list[Any]:
        """A vector or the request's ScorerError per text, in order; only texts not cached are requested (OpenAI)."""
        keys, found, missing = self._cached(texts)
        chunks = [missing[i : i + OPENAI_MAX_INPUTS] for i in range(0, len(missing), OPENAI_MAX_INPUTS)]
        for chunk, vectors in zip(chunks, await asyncio.gather(*(self._request(c, limit) for c in chunks))):
            for text, vector in zip(chunk, vectors):
                key = self._cache_key(text)
                found[key] = vector
                if not isinstance(vector, ScorerError):
                    EMBEDDING_CACHE.put(key, vector)
        return [found[k] for k in keys]

    async def _request(self, texts: list[str], limit: asyncio.Semaphore) -> list[Any]:
        import numpy as np
        import openai

        from ..llm.redaction import mask_urls

        async with limit:
            try:
                response = await self._create([self.prefix + t for t in texts])
            except openai.OpenAIError as exc:
                detail = mask_urls(str(exc))
                for secret in {self.api_key, os.environ.get("OPENAI_API_KEY")} - {None, ""}:
                    detail = detail.replace(secret, "<redacted>")  # type: ignore[arg-type]  # None is taken out
                error = ScorerError(
                    f"{self.name}: the embeddings request failed: {type(exc).__name__}: {detail}", scorer=self.name
                )
                return [error] * len(texts)
        data = sorted(response.data, key=lambda d: d.index)
        if len(data) != len(texts):
            error = ScorerError(
                f"{self.name}: the embeddings endpoint returned {len(data)} vectors for {len(texts)} texts",
                scorer=self.name,
            )
            return [error] * len(texts)
        vectors = []
        for item in data:
            v = np.asarray(item.embedding, dtype=np.float64)
            norm = float(np.linalg.norm(v))
            vectors.append(v / norm if norm > 0 else v)
        return vectors

    async def _create(self, texts: list[str]) -> Any:
        if self.client is None:
            return await self._loop_client().embeddings.create(model=self.model, input=texts)
        create = self.client.embeddings.create
        if inspect.iscoroutinefunction(create):
            return await create(model=self.model, input=texts)
        return await asyncio.to_thread(create, model=self.model, input=texts)

    def _loop_client(self) -> Any:
        import openai

        from ..llm.http import credentials_apart

        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None:
            # credentials in the URL go as HTTP Basic auth, not in the URL, which the HTTP client logs as given
            base_url, auth = credentials_apart(self._base_url)
            http_client = openai.DefaultAsyncHttpxClient(auth=auth) if auth is not None else None
            client = self._clients[loop] = openai.AsyncOpenAI(
                api_key=self._resolved_key(), base_url=base_url, http_client=http_client
            )
        return client

    # ------------------------------------------------------------ scoring
    @staticmethod
    def _texts(rows: list[dict[str, Any]]) -> list[str]:
        return list(dict.fromkeys(t for row in rows for t in (row["output"], *row["expected"])))

    def _row_score(self, row: dict[str, Any], vectors: dict[str, Any]) -> Score | ScorerError:
        output = vectors[row["output"]]
        if isinstance(output, ScorerError):
            return output
        cosines = []
        for ref in row["expected"]:
            vector = vectors[ref]
            if isinstance(vector, ScorerError):
                return vector
            cosines.append(float(output @ vector))
        best = max(range(len(cosines)), key=cosines.__getitem__)
        capped = min(cosines[best], 1.0)
        value = max((capped - self.expected_min) / (1.0 - self.expected_min), 0.0)
        extra: dict[str, Any] = {"reference": best} if len(cosines) > 1 else {}
        return self.make_score(value, cosine=cosines[best], **extra)

    def _score_batch(self, rows: list[dict[str, Any]]) -> list[Score | ScorerError]:
        """The local provider's route (sync)."""
        texts = self._texts(rows)
        vectors = dict(zip(texts, self.embed(texts)))
        return [self._row_score(row, vectors) for row in rows]

    async def _ascore_batch(self, rows: list[dict[str, Any]], limit: asyncio.Semaphore) -> list[Score | ScorerError]:
        """The OpenAI provider's route (async): a failed request fails only the rows that needed it."""
        if self.provider == "local":
            return self._score_batch(rows)
        texts = self._texts(rows)
        vectors = dict(zip(texts, await self._fetch(texts, limit)))
        return [self._row_score(row, vectors) for row in rows]


def _public_url(url: str) -> str:
    """``url`` without credentials, query or fragment, and without a trailing slash (signatures, cache keys)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", "")) if parts.scheme else url.rstrip("/")


class OpenAIEmbeddingSimilarity(EmbeddingSimilarity):
    """:class:`EmbeddingSimilarity` with ``provider="openai"`` as the default (kept for code that names it).

    ``EmbeddingSimilarity(provider="openai", ...)`` is the same scorer, with the same signature.
    """

    extra = None  # the OpenAI client is a core dependency

    provider: str = param("the OpenAI embeddings endpoint (async)", default="openai", choices=("openai",))

    def signature(self) -> dict[str, Any]:
        """As :class:`EmbeddingSimilarity`'s: this class is a default, not another scorer."""
        scorer = (
            EmbeddingSimilarity.name if self.name == EmbeddingSimilarity.name else f"EmbeddingSimilarity:{self.name}"
        )
        return {**super().signature(), "scorer": scorer}
