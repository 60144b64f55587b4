"""WordNet 3.0 for nltk, offline.

nltk's METEOR needs the ``wordnet`` corpus, and ``nltk.download`` cannot work
without a network. :func:`ensure_wordnet` finds a usable copy, in this order:

1. nltk's own ``corpora/wordnet`` wherever ``nltk.data.path`` already finds it;
2. a copy built earlier in :func:`data_dir` (``$SCORERS_NLTK_DATA``, else
   ``$XDG_CACHE_HOME/scorers/nltk_data``, else ``~/.cache/scorers/nltk_data``);
3. a copy built now from Debian's ``wordnet-base`` and ``wordnet-sense-index``
   packages (``/usr/share/wordnet``): the files are *copied* (nltk >= 3.10 refuses
   symlinks leaving the corpus root) and the ``lexnames`` table, which Debian
   does not ship, is generated from :data:`LEXICOGRAPHER_FILES`.

It then makes sure the folder holding ``corpora/wordnet`` is on
``nltk.data.path``. Nothing is ever downloaded; when no source exists a
:class:`~scorers.errors.ConfigError` says how to get one.

>>> from scorers.text.wordnet import ensure_wordnet
>>> ensure_wordnet().name  # doctest: +SKIP
'wordnet'

Setup scripts can build the copy eagerly with
``python -m scorers.text.wordnet`` (prints the corpus folder).
"""
from __future__ import annotations

import os
import shutil
import tempfile
import threading
from pathlib import Path

from ..errors import ConfigError, MissingExtraError

__all__ = [
    "DEBIAN_WORDNET_DIR",
    "LEXICOGRAPHER_FILES",
    "SOURCE_FILES",
    "build_wordnet",
    "data_dir",
    "ensure_wordnet",
    "lexnames_table",
    "wordnet_version",
]

#: Where Debian's ``wordnet-base`` and ``wordnet-sense-index`` install the WordNet 3.0 database.
DEBIAN_WORDNET_DIR = Path("/usr/share/wordnet")

#: The files nltk's ``WordNetCorpusReader`` reads, besides ``lexnames``.
SOURCE_FILES = (
    "adj.exc", "adv.exc", "noun.exc", "verb.exc",
    "data.adj", "data.adv", "data.noun", "data.verb",
    "index.adj", "index.adv", "index.noun", "index.verb",
    "index.sense", "cntlist.rev",
)

#: WordNet 3.0's 45 lexicographer files, in file-number order (see ``lexnames(5WN)``).
LEXICOGRAPHER_FILES = (
    "adj.all", "adj.pert", "adv.all", "noun.Tops", "noun.act", "noun.animal", "noun.artifact",
    "noun.attribute", "noun.body", "noun.cognition", "noun.communication", "noun.event", "noun.feeling",
    "noun.food", "noun.group", "noun.location", "noun.motive", "noun.object", "noun.person",
    "noun.phenomenon", "noun.plant", "noun.possession", "noun.process", "noun.quantity", "noun.relation",
    "noun.shape", "noun.state", "noun.substance", "noun.time", "verb.body", "verb.change", "verb.cognition",
    "verb.communication", "verb.competition", "verb.consumption", "verb.contact", "verb.creation",
    "verb.emotion", "verb.motion", "verb.perception", "verb.possession", "verb.social", "verb.stative",
    "verb.weather", "adj.ppl",
)

#: Syntactic category numbers used in ``lexnames``' third column.
_CATEGORY = {"noun": 1, "verb": 2, "adj": 3, "adv": 4}

#: Where the Debian packaging keeps the WordNet licence, copied along as ``LICENSE``.
_DEBIAN_COPYRIGHT = Path("/usr/share/doc/wordnet-base/copyright")

_INSTALL_HINT = (
    "Install it without a network from Debian/Ubuntu packages with "
    "`apt-get install --no-install-recommends wordnet-base wordnet-sense-index` "
    "(then `python -m scorers.text.wordnet` builds the nltk copy), or, where the internet is reachable, "
    "run `python -c \"import nltk; nltk.download('wordnet')\"`."
)

_lock = threading.Lock()


def lexnames_table() -> str:
    """The ``lexnames`` file nltk expects: ``NN<TAB>name<TAB>category`` on 45 lines.

    >>> lexnames_table().splitlines()[44]
    '44\\tadj.ppl\\t3'
    """
    return "".join(
        f"{number:02d}\t{name}\t{_CATEGORY[name.split('.')[0]]}\n"
        for number, name in enumerate(LEXICOGRAPHER_FILES)
    )


def data_dir() -> Path:
    """The nltk data folder ``scorers`` builds into (``corpora/wordnet`` goes below it)."""
    override = os.environ.get("SCORERS_NLTK_DATA")
    if override:
        return Path(override).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache).expanduser() / "scorers" / "nltk_data"


def _is_complete(corpus: Path) -> bool:
    return (corpus / "lexnames").is_file() and all((corpus / name).is_file() for name in SOURCE_FILES)


def build_wordnet(target: Path | str | None = None, *, source: Path | str = DEBIAN_WORDNET_DIR) -> Path:
    """Build ``<target>/corpora/wordnet`` from a WNDB folder (Debian's by default); return the corpus folder.

    The copy is assembled in a temporary folder next to the destination and
    renamed into place, so readers never see a half-built corpus and two
    processes building at once both end up with the same complete copy.
    An existing complete copy is kept as it is.

    >>> build_wordnet("/tmp/nltk_data")  # doctest: +SKIP
    PosixPath('/tmp/nltk_data/corpora/wordnet')
    """
    source = Path(source)
    corpora = Path(target if target is not None else data_dir()) / "corpora"
    corpus = corpora / "wordnet"
    if _is_complete(corpus):
        return corpus
    missing = [name for name in SOURCE_FILES if not (source / name).is_file()]
    if missing:
        raise ConfigError(
            f"METEOR needs WordNet 3.0, which nltk cannot find and which is missing from {source} "
            f"(no {', '.join(missing[:4])}{', ...' if len(missing) > 4 else ''}). {_INSTALL_HINT}"
        )
    if corpus.exists():
        if _is_complete(corpus):  # another process finished building it meanwhile
            return corpus
        raise ConfigError(f"{corpus} exists but is not a complete WordNet copy; delete it and try again.")
    corpora.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".wordnet-", dir=corpora))
    try:
        staging.chmod(0o755)  # mkdtemp makes it private; the corpus is public data
        for name in SOURCE_FILES:
            shutil.copyfile(source / name, staging / name)  # a copy: nltk rejects links leaving its root
        (staging / "lexnames").write_text(lexnames_table(), encoding="ascii")
        licence = source / "LICENSE" if (source / "LICENSE").is_file() else _DEBIAN_COPYRIGHT
        if licence.is_file():
            shutil.copyfile(licence, staging / "LICENSE")
        try:
            os.rename(staging, corpus)
        except OSError:
            if not _is_complete(corpus):  # not a concurrent builder winning the race
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return corpus


def _on_nltk_path(folder: Path) -> None:
    import nltk

    if str(folder) not in [str(p) for p in nltk.data.path]:
        nltk.data.path.append(str(folder))


def _nltk_finds_wordnet() -> Path | None:
    import nltk

    try:
        pointer = nltk.data.find("corpora/wordnet")
    except LookupError:
        return None
    return Path(str(pointer))


def ensure_wordnet(*, target: Path | str | None = None, source: Path | str = DEBIAN_WORDNET_DIR) -> Path:
    """Make WordNet 3.0 loadable by nltk without any download; return its corpus folder.

    Uses nltk's own copy when it has one, else the copy in ``target``
    (default :func:`data_dir`), building it from ``source`` when needed.
    Raises :class:`~scorers.errors.ConfigError` with install instructions when
    there is no copy and no source.
    """
    try:
        import nltk  # noqa: F401
    except ImportError as exc:
        raise MissingExtraError("METEOR", "nltk", "text") from exc
    with _lock:
        if target is None:
            found = _nltk_finds_wordnet()
            if found is not None:
                return found
        root = Path(target if target is not None else data_dir())
        corpus = build_wordnet(root, source=source)
        _on_nltk_path(root)
    return corpus


def wordnet_version() -> str:
    """The version nltk's ``corpora/wordnet`` declares in its header (``"3.0"`` for WordNet 3.0).

    Call after :func:`ensure_wordnet`; reads a few lines, not the whole corpus.
    """
    import re

    import nltk

    stream = nltk.data.find("corpora/wordnet/data.adj").open()
    try:
        for _ in range(64):
            match = re.search(rb"Word[nN]et (\d+\+?|\d+\.\d+) Copyright", stream.readline())
            if match:
                return match.group(1).decode("ascii")
    finally:
        stream.close()
    raise ConfigError("nltk's corpora/wordnet/data.adj does not declare its WordNet version; is it WordNet?")


if __name__ == "__main__":
    print(ensure_wordnet())
