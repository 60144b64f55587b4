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

``nltk.data.path`` is left as it is: METEOR reads the built copy's files
itself (the synonym index below). nltk >= 3.10 reads corpus files only below
its search path, so the one place where nltk's own ``WordNetCorpusReader``
reads the built copy (METEOR's reference path, and its fallback when the index
cannot be built) adds the copy's data folder to ``nltk.data.path`` for the
duration of each read and removes it after (:func:`nltk_may_read_copy`). To use
the copy with nltk's own functions, put ``ensure_wordnet().parents[1]`` on
``nltk.data.path`` yourself. Nothing is ever downloaded; when no source exists
a :class:`~scorers.errors.ConfigError` says how to get one.

METEOR needs only WordNet's synonym sets, and loading nltk's corpus reader for
them costs seconds and ~190 MB. :func:`synonym_index` instead reads a compact
table (:class:`SynonymIndex`, a few MB of sorted text) built once from the same
corpus files nltk reads and stored next to the built copy, keyed by the files'
SHA-256 and the nltk version; its synonym sets equal nltk's (the tests compare).

>>> from scorers.text.wordnet import ensure_wordnet
>>> ensure_wordnet().name
'wordnet'

Setup scripts can build the copy and the index eagerly with
``python -m scorers.text.wordnet`` (prints the corpus folder and the index file).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
import threading
import warnings
from bisect import bisect_left
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

from .._util import memoize, optional_import
from ..errors import ConfigError
from ._nltk_modules import is_private, nltk_module, nltk_version, require_nltk

__all__ = [
    "DEBIAN_WORDNET_DIR",
    "INDEX_FORMAT",
    "INDEX_SOURCE_FILES",
    "LEXICOGRAPHER_FILES",
    "SOURCE_FILES",
    "SynonymIndex",
    "build_synonym_index",
    "build_wordnet",
    "data_dir",
    "ensure_wordnet",
    "lexnames_table",
    "nltk_may_read_copy",
    "synonym_index",
    "wordnet_reader",
    "wordnet_version",
]

#: Where Debian's ``wordnet-base`` and ``wordnet-sense-index`` install the WordNet 3.0 database.
DEBIAN_WORDNET_DIR = Path("/usr/share/wordnet")

#: The files nltk's ``WordNetCorpusReader`` reads, besides ``lexnames``.
SOURCE_FILES = (
    "adj.exc",
    "adv.exc",
    "noun.exc",
    "verb.exc",
    "data.adj",
    "data.adv",
    "data.noun",
    "data.verb",
    "index.adj",
    "index.adv",
    "index.noun",
    "index.verb",
    "index.sense",
    "cntlist.rev",
)

#: WordNet 3.0's 45 lexicographer files, in file-number order (see ``lexnames(5WN)``).
LEXICOGRAPHER_FILES = (
    "adj.all",
    "adj.pert",
    "adv.all",
    "noun.Tops",
    "noun.act",
    "noun.animal",
    "noun.artifact",
    "noun.attribute",
    "noun.body",
    "noun.cognition",
    "noun.communication",
    "noun.event",
    "noun.feeling",
    "noun.food",
    "noun.group",
    "noun.location",
    "noun.motive",
    "noun.object",
    "noun.person",
    "noun.phenomenon",
    "noun.plant",
    "noun.possession",
    "noun.process",
    "noun.quantity",
    "noun.relation",
    "noun.shape",
    "noun.state",
    "noun.substance",
    "noun.time",
    "verb.body",
    "verb.change",
    "verb.cognition",
    "verb.communication",
    "verb.competition",
    "verb.consumption",
    "verb.contact",
    "verb.creation",
    "verb.emotion",
    "verb.motion",
    "verb.perception",
    "verb.possession",
    "verb.social",
    "verb.stative",
    "verb.weather",
    "adj.ppl",
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


def lexnames_table() -> str:
    """The ``lexnames`` file nltk expects: ``NN<TAB>name<TAB>category`` on 45 lines.

    >>> lexnames_table().splitlines()[44]
    '44\\tadj.ppl\\t3'
    """
    return "".join(
        f"{number:02d}\t{name}\t{_CATEGORY[name.split('.')[0]]}\n" for number, name in enumerate(LEXICOGRAPHER_FILES)
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

    >>> import tempfile
    >>> target = tempfile.mkdtemp()
    >>> build_wordnet(target).relative_to(target).as_posix()
    'corpora/wordnet'
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


def _nltk_pointer() -> Any:
    """Where nltk's ``nltk.corpus.wordnet`` loads from, found as its lazy loader finds it (folder or zip), or None.

    Without nltk imported, nltk's ``find`` is asked through private copies of its modules
    (:mod:`scorers.text._nltk_modules`), and its answer is kept when it is a folder, or nothing while no
    zip archive nltk could look into exists: nltk's checks on zip archives read the data path
    of the ``nltk.data`` in ``sys.modules``, so for those nltk itself is imported and asked.
    """
    data = nltk_module("nltk.data", scorer="METEOR")
    util = nltk_module("nltk.corpus.util", scorer="METEOR")
    if not is_private(data):
        return _find_wordnet(data, util)
    try:
        pointer = _find_wordnet(data, util)
        if isinstance(pointer, data.FileSystemPathPointer) or (pointer is None and not _zip_candidates(data.path)):
            return pointer
    except Exception:  # noqa: BLE001, S110  (nltk itself answers below)
        pass
    import nltk.corpus.util  # nltk itself, imported whole
    import nltk.data

    return _find_wordnet(nltk.data, nltk.corpus.util)


def _find_wordnet(data: Any, util: Any) -> Any:
    names = ["corpora/wordnet", "corpora/wordnet.zip/wordnet/"]
    for name in reversed(names) if getattr(util, "TRY_ZIPFILE_FIRST", False) else names:
        try:
            return data.find(name)
        except LookupError:
            pass
    return None


def _zip_candidates(path: Any) -> list[str]:
    """The zip files nltk's ``find`` would look for WordNet in on the data path ``path`` that exist."""
    found = []
    for entry in path:
        entry = str(getattr(entry, "path", entry))
        for candidate in (entry, os.path.join(entry, "corpora.zip"), os.path.join(entry, "corpora", "wordnet.zip")):
            if candidate.endswith(".zip") and os.path.isfile(candidate):
                found.append(candidate)
    return found


def _built_copy() -> Path | None:
    """The complete copy in :func:`data_dir`, if there is one."""
    corpus = data_dir() / "corpora" / "wordnet"
    return corpus if _is_complete(corpus) else None


def _wordnet_pointer() -> Any:
    """The WordNet scorers reads: nltk's own copy where nltk finds one (an nltk path pointer, folder or zip
    entry), else the complete copy in :func:`data_dir` (a Path), else None. nltk's search path is not changed."""
    pointer = _nltk_pointer()
    return pointer if pointer is not None else _built_copy()


#: Guards :data:`_path_users`: how many reads by nltk of the built copy are under way, per data folder added.
_path_lock = threading.Lock()
_path_users: dict[str, int] = {}


@contextmanager
def nltk_may_read_copy() -> Iterator[None]:
    """For its duration, nltk may read the built copy of WordNet: its data folder is on ``nltk.data.path``.

    nltk >= 3.10 refuses to read corpus files outside its search path. Where nltk
    finds a WordNet of its own this changes nothing; else the data folder of the
    copy in :func:`data_dir` is appended on entering and removed on leaving (by the
    last of several threads inside at once; a folder that was on the path already
    is left alone). Other threads see the extra entry meanwhile: it only adds, at
    the end of the path, the copy scorers itself reads.
    """
    corpus = _built_copy()
    if corpus is None:
        yield
        return
    import nltk

    root, added = str(corpus.parent.parent), False
    with _path_lock:
        if _path_users.get(root):  # added here, for a read still under way
            _path_users[root] += 1
            added = True
        elif root not in nltk.data.path and _nltk_pointer() is None:  # (nltk's own copy needs nothing)
            nltk.data.path.append(root)
            _path_users[root] = 1
            added = True
    try:
        yield
    finally:
        if added:
            with _path_lock:
                _path_users[root] -= 1
                if not _path_users[root]:
                    del _path_users[root]
                    if root in nltk.data.path:
                        nltk.data.path.remove(root)


def _nltk_finds_wordnet() -> Path | None:
    pointer = _nltk_pointer()
    return None if pointer is None else Path(str(pointer))


def ensure_wordnet(*, target: Path | str | None = None, source: Path | str = DEBIAN_WORDNET_DIR) -> Path:
    """Make WordNet 3.0 available without any download; return its corpus folder.

    Uses nltk's own copy when it has one, else the copy in ``target``
    (default :func:`data_dir`, where scorers looks for it), building it from
    ``source`` when needed. ``nltk.data.path`` is left as it is (see the module's
    notes for giving the copy to nltk). Raises :class:`~scorers.errors.ConfigError`
    with install instructions when there is no copy and no source.
    """
    require_nltk(scorer="METEOR")
    # No lock: building is safe across threads and processes (see build_wordnet).
    if target is None:
        found = _nltk_finds_wordnet()
        if found is not None:
            return found
    return build_wordnet(Path(target if target is not None else data_dir()), source=source)


def wordnet_reader() -> Any:
    """nltk's ``WordNetCorpusReader`` on the WordNet :func:`ensure_wordnet` provides, made once per process.

    The reader ``nltk.corpus.wordnet`` would be (with the same lazily loaded
    multilingual data), made on that folder directly; nltk's search path is not
    changed. Where it reads the built copy, nltk reads it only inside
    :func:`nltk_may_read_copy` (its first lookups open the data files, which it then
    keeps open). Loading it takes seconds; METEOR itself reads :func:`synonym_index`.
    """
    ensure_wordnet()
    return _reader(str(_wordnet_pointer()))


@memoize
def _reader(location: str) -> Any:
    """The reader of the WordNet at ``location`` (the memo's key)."""
    from nltk.corpus.reader import CorpusReader, WordNetCorpusReader
    from nltk.corpus.util import LazyCorpusLoader

    with nltk_may_read_copy():
        pointer = _wordnet_pointer()
        if pointer is None:
            raise ConfigError(f"METEOR needs WordNet 3.0, which nltk cannot find. {_INSTALL_HINT}")
        # As nltk.corpus defines ``wordnet``: the multilingual data is found on nltk's path if it is ever used.
        return WordNetCorpusReader(
            str(pointer) if isinstance(pointer, Path) else pointer,
            LazyCorpusLoader("omw-2.0", CorpusReader, r".*/wn-data-.*\.tab", encoding="utf8"),
        )


def wordnet_version() -> str:
    """The version nltk's ``corpora/wordnet`` declares in its header (``"3.0"`` for WordNet 3.0).

    Call after :func:`ensure_wordnet`; reads a few lines, not the whole corpus.
    """
    stream = _Source().open("data.adj")
    try:
        for _ in range(64):
            match = re.search(rb"Word[nN]et (\d+\+?|\d+\.\d+) Copyright", stream.readline())
            if match:
                return match.group(1).decode("ascii")
    finally:
        stream.close()
    raise ConfigError("nltk's corpora/wordnet/data.adj does not declare its WordNet version; is it WordNet?")


# ------------------------------------------------------------------ the synonym index
#: Version of the index's layout and lookup rules (part of its file name; bump when either changes).
INDEX_FORMAT = 1
#: Parts of speech in the order nltk's ``wordnet.synsets`` visits them, with their file suffixes.
_PARTS_OF_SPEECH = (("n", "noun"), ("v", "verb"), ("a", "adj"), ("r", "adv"))
#: The corpus files whose content the index is built from (their SHA-256 keys it).
INDEX_SOURCE_FILES = tuple(f"{kind}.{suffix}" for kind in ("index", "data") for _, suffix in _PARTS_OF_SPEECH) + tuple(
    f"{suffix}.exc" for _, suffix in _PARTS_OF_SPEECH
)
#: A lemma's syntactic marker in the data files, e.g. ``(a)`` in ``galore(ip)``, which nltk strips from its name.
_MARKER = re.compile(r"(.*?)(\([^()]*\))?$")

_HEADER = "# scorers WordNet synonym index"
#: Lookups an index answers on its unsplit text before it splits the text into lines for faster ones.
_TEXT_LOOKUPS = 2000


def _unmarked(word: str) -> str:
    """``word`` less its syntactic marker (``(a)``, ``(p)``, ``(ip)``)."""
    match = _MARKER.match(word)
    assert match is not None  # every part of the pattern is optional: it matches every string
    return match.group(1)


class SynonymIndex:
    """WordNet's synonym sets as nltk's METEOR sees them, from a compact sorted table.

    ``synonyms(word)`` is the set of one-word lemma names (no ``_``) of all the
    synsets ``nltk.corpus.wordnet.synsets(word)`` returns, WordNet's morphology
    included: per part of speech, the word's exception-list base forms if it has
    any, else its forms under the suffix rules, each kept where WordNet lists it.
    The table has one line per word form, ``form``, its synsets' names for each
    part of speech and its exception-list base forms for each, tab-separated and
    sorted, so a lookup is a binary search and nothing is parsed at load.
    """

    def __init__(self, text: str, *, path: Path | None = None) -> None:
        body = text.find("\n") + 1  # 0: no entries at all, which the header's count rejects below
        label, _, header = text[: body - 1 if body else len(text)].partition("\t")
        if label != _HEADER:
            raise ValueError("not a scorers WordNet synonym index")
        self.header: dict[str, Any] = json.loads(header)
        if self.header.get("format") != INDEX_FORMAT:
            raise ValueError(f"synonym index format {self.header.get('format')!r}, expected {INDEX_FORMAT}")
        self._rules = [
            tuple((old, new) for old, new in self.header["substitutions"][pos]) for pos, _ in _PARTS_OF_SPEECH
        ]
        entries = text.count("\n", body) + 1 if body else 0
        if entries != self.header["entries"]:
            raise ValueError(f"synonym index with {entries} entries, its header says {self.header['entries']}")
        self._text, self._body = text, body
        #: The table split into lines (the header first), made once the lookups make it worth its ~20 ms.
        self._lines: list[str] | None = None
        self._text_lookups = 0
        self.path = path

    def _entry(self, form: str) -> list[str] | None:
        """The fields of ``form``'s line, or None: a binary search over the lines."""
        probe = form + "\t"
        lines = self._lines
        if lines is None:
            self._text_lookups += 1
            if self._text_lookups <= _TEXT_LOOKUPS:
                return self._entry_in_text(probe)
            lines = self._lines = self._text.split("\n")
        at = bisect_left(lines, probe, 1)
        if at < len(lines) and lines[at].startswith(probe):
            return lines[at].split("\t")
        return None

    def _entry_in_text(self, probe: str) -> list[str] | None:
        """:meth:`_entry` on the unsplit text (a cold start reads a few words: splitting costs more than it saves)."""
        text, size = self._text, len(self._text)
        low, high = self._body, size  # `low` is always the start of a line
        if not low:  # a header without entries
            return None
        while low < high:
            middle = (low + high) // 2
            start = text.rfind("\n", 0, middle) + 1  # the line holding `middle`; it starts at `low` or later
            if text[start : start + len(probe)] < probe:  # its line sorts before the probe
                end = text.find("\n", start)
                low = size + 1 if end < 0 else end + 1
            else:
                high = start
        if low < size and text.startswith(probe, low):
            end = text.find("\n", low)
            return text[low : size if end < 0 else end].split("\t")
        return None

    def synonyms(self, word: str) -> set[str]:
        """One-word lemma names of the synsets nltk's ``wordnet.synsets(word)`` returns (not ``word`` itself)."""
        form = word.lower()
        names: set[str] = set()
        if not form or "\t" in form or "\n" in form:  # no WordNet form is empty or holds whitespace
            return names
        own = self._entry(form)
        for p, rules in enumerate(self._rules):
            exceptions = own[5 + p] if own is not None else ""
            if exceptions:  # "+" then the base forms: the form is on this part of speech's exception list
                candidates = [form, *exceptions[1:].split()]
            else:
                candidates = [form, *(form[: -len(old)] + new for old, new in rules if form.endswith(old))]
            for candidate in candidates:
                entry = own if candidate == form else self._entry(candidate)
                if entry is not None and entry[1 + p]:
                    names.update(entry[1 + p].split(" "))
        return names


def build_synonym_index(read: Callable[[str], bytes], *, checksum: str = "") -> str:
    """The text of a :class:`SynonymIndex` built from WordNet's files (``read(name)`` returns one's bytes).

    Reads the files as nltk's ``WordNetCorpusReader`` does: ``index.*`` for each
    lemma's synsets per part of speech (a later line for the same lemma wins),
    ``data.*`` for each synset's lemma names (markers stripped), ``*.exc`` for the
    exception lists (a later line wins). Raises ``ValueError`` on data nltk could not read either.
    """
    substitutions = _morphological_substitutions()
    names: dict[tuple[str, int], list[str]] = {}  # (part of speech, offset) -> one-word lemma names
    for pos, suffix in _PARTS_OF_SPEECH:
        names.update(_synset_names(pos, suffix, read(f"data.{suffix}")))
    table = _forms_table(read, names)
    # split() never makes a form that is empty or holds a tab or a newline; such a form is left out
    lines = [_index_line(form, table[form]) for form in sorted(table) if form and not any(c in form for c in "\t\n")]
    header = {
        "format": INDEX_FORMAT,
        "nltk": _nltk_version(),
        "source_sha256": checksum,
        "substitutions": {pos: [list(rule) for rule in substitutions[pos]] for pos, _ in _PARTS_OF_SPEECH},
        "entries": len(lines),
    }
    return "\n".join([f"{_HEADER}\t{json.dumps(header, sort_keys=True)}", *lines])


#: The column of each part of speech among a form's names (and, 4 further on, its exceptions).
_POSITIONS = {pos: p for p, (pos, _) in enumerate(_PARTS_OF_SPEECH)}


def _synset_names(pos: str, suffix: str, content: bytes) -> dict[tuple[str, int], list[str]]:
    """``(pos, offset) -> one-word lemma names`` of each synset in the data file ``data.<suffix>`` (``content``)."""
    # nltk seeks to a synset's byte offset; in ASCII text (WordNet 3.0's is) characters are bytes.
    text = content.decode("ascii") if content.isascii() else None
    raw_lines: list[str] | list[bytes] = text.split("\n") if text is not None else content.split(b"\n")
    names: dict[tuple[str, int], list[str]] = {}
    start = 0
    for raw in raw_lines:
        at, start = start, start + len(raw) + 1
        if not raw or raw[0] in (" ", 32):  # the licence header's lines start with spaces
            continue
        names[(pos, at)] = _synset_line_names(raw, at, suffix)
    return names


def _synset_line_names(raw: str | bytes, at: int, suffix: str) -> list[str]:
    """The one-word lemma names, markers stripped, of the synset line ``raw`` at byte ``at`` of ``data.<suffix>``."""
    line = raw if isinstance(raw, str) else raw.split(b"|", 1)[0].decode("utf-8")
    offset, _, _, count, rest = line.split(None, 4)  # lex_filenum, ss_type, w_cnt, then the words
    if int(offset) != at:
        raise ValueError(f"data.{suffix}: the line at byte {at} gives offset {offset}")
    words = rest.split(None, 2 * int(count, 16))[: 2 * int(count, 16) : 2]  # each word is followed by its lex_id
    return [name for name in (_unmarked(word) if word[-1] == ")" else word for word in words) if "_" not in name]


def _forms_table(read: Callable[[str], bytes], names: Mapping[tuple[str, int], list[str]]) -> dict[str, list[Any]]:
    """``form -> [names per part of speech (None: not listed), exceptions per part of speech]`` from the
    ``index.*`` and ``*.exc`` files, read part of speech by part of speech (a later line for a form wins)."""
    table: dict[str, list[Any]] = {}
    for pos, suffix in _PARTS_OF_SPEECH:
        for line in read(f"index.{suffix}").decode("utf-8").split("\n"):
            if not line or line.startswith(" "):
                continue
            lemma, listed_pos, lemma_names = _index_entry(line, suffix, names)
            table.setdefault(lemma, [None] * 8)[_POSITIONS[listed_pos]] = lemma_names
        for line in read(f"{suffix}.exc").decode("utf-8").split("\n"):
            terms = line.split()
            if terms:
                table.setdefault(terms[0], [None] * 8)[4 + _POSITIONS[pos]] = terms[1:]
    return table


def _index_entry(line: str, suffix: str, names: Mapping[tuple[str, int], list[str]]) -> tuple[str, str, set[str]]:
    """The lemma of a line of ``index.<suffix>``, the part of speech it is listed under, and its synsets' names."""
    fields = line.split()
    lemma, listed_pos, synsets, pointers = fields[0], fields[1], int(fields[2]), int(fields[3])
    offsets = [int(offset) for offset in fields[6 + pointers : 6 + pointers + synsets]]
    if listed_pos not in _POSITIONS or len(offsets) != synsets or synsets < 1:
        raise ValueError(f"index.{suffix}: unreadable line {line[:60]!r}")
    try:  # nltk looks a lemma's synsets up in the data file of the part of speech it was listed under
        return lemma, listed_pos, {name for offset in offsets for name in names[(listed_pos, offset)]}
    except KeyError as exc:
        raise ValueError(f"index.{suffix}: {lemma!r} points to no synset at {exc}") from None


def _index_line(form: str, fields: list[Any]) -> str:
    """The index's line of ``form``: its names per part of speech (sorted), then its exceptions (``+`` first)."""
    return "\t".join(
        [
            form,
            *(" ".join(sorted(n)) if n else "" for n in fields[:4]),
            *("" if e is None else "+" + " ".join(e) for e in fields[4:]),
        ]
    )


def _morphological_substitutions() -> dict[str, Any]:
    """nltk's suffix rules per part of speech (a public class attribute of its WordNet reader; no corpus is loaded)."""
    reader = optional_import("nltk.corpus.reader.wordnet", scorer="METEOR", extra="text")
    return reader.WordNetCorpusReader.MORPHOLOGICAL_SUBSTITUTIONS


def _nltk_version() -> str:
    return nltk_version(scorer="METEOR")


class _Source:
    """The WordNet files nltk reads: a folder, or an entry of a zip file (nltk's downloaded ``wordnet.zip``)."""

    def __init__(self) -> None:
        self.pointer = _wordnet_pointer()
        if self.pointer is None:
            raise ConfigError(f"METEOR needs WordNet 3.0, which nltk cannot find. {_INSTALL_HINT}")
        path = self.pointer if isinstance(self.pointer, Path) else getattr(self.pointer, "path", None)
        self.folder = Path(path) if path and os.path.isdir(path) else None
        self.location = str(self.folder) if self.folder else repr(self.pointer)

    def open(self, name: str) -> Any:
        """A binary stream of the file ``name``."""
        if self.folder is not None:
            return (self.folder / name).open("rb")
        return self.pointer.join(name).open()

    def read(self, name: str) -> bytes:
        with self.open(name) as stream:
            return stream.read()

    def stamp(self) -> str:
        """Sizes and modification times of the files: when unchanged, the recorded checksum still holds."""
        files = (
            [self.folder / name for name in INDEX_SOURCE_FILES]
            if self.folder
            else [Path(self.pointer.zipfile.filename)]
        )
        return json.dumps([(str(f), st.st_size, st.st_mtime_ns) for f in files for st in [f.stat()]])

    def checksum(self) -> str:
        digest = hashlib.sha256()
        for name in INDEX_SOURCE_FILES:
            content = self.read(name)
            digest.update(f"{name}\0{len(content)}\0".encode())
            digest.update(content)
        return digest.hexdigest()


def synonym_index() -> SynonymIndex:
    """The :class:`SynonymIndex` of the WordNet nltk reads (see :func:`ensure_wordnet`), built once per machine.

    The index lives in :func:`data_dir` as ``wordnet-synonyms-<sha256>-nltk<version>-v<format>.tsv``,
    written atomically; a small ``wordnet-synonyms.json`` remembers each corpus' checksum
    with its files' sizes and times, so that a cold start does not hash ~30 MB. Where the
    folder is not writable the index is built in memory (with a warning).
    """
    ensure_wordnet()
    return _load_synonym_index(_Source().location, str(data_dir()), _nltk_version())


@memoize
def _load_synonym_index(location: str, cache_dir: str, nltk_version: str) -> SynonymIndex:
    source = _Source()
    cache = Path(cache_dir)
    stamps_file = cache / "wordnet-synonyms.json"
    stamp = source.stamp()
    try:
        stamps = json.loads(stamps_file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        stamps = {}
    recorded = stamps.get(location) if isinstance(stamps, dict) else None
    if isinstance(recorded, dict) and recorded.get("stamp") == stamp:
        checksum = recorded["sha256"]
    else:
        checksum = source.checksum()
    path = cache / f"wordnet-synonyms-{checksum[:20]}-nltk{nltk_version}-v{INDEX_FORMAT}.tsv"
    try:
        index = SynonymIndex(path.read_text(encoding="utf-8"), path=path)
        if index.header["source_sha256"] == checksum and index.header["nltk"] == nltk_version:
            return index
    except (OSError, ValueError, KeyError):
        pass  # absent or damaged: (re)build it
    text = build_synonym_index(source.read, checksum=checksum)
    try:
        _write_atomically(path, text)
        stamps = stamps if isinstance(stamps, dict) else {}
        stamps[location] = {"stamp": stamp, "sha256": checksum}
        _write_atomically(stamps_file, json.dumps(stamps, indent=1, sort_keys=True))
    except OSError as exc:
        warnings.warn(
            f"METEOR: could not save the WordNet synonym index to {path} ({exc}); it is rebuilt in every "
            "process (about a second). Set SCORERS_NLTK_DATA to a writable folder.",
            RuntimeWarning,
            stacklevel=3,
        )
        return SynonymIndex(text)
    return SynonymIndex(text, path=path)


def _write_atomically(path: Path, text: str) -> None:
    """Write ``text`` to a temporary file next to ``path`` and rename it into place (readers see all or nothing)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}-", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
            stream.flush()
            os.fsync(stream.fileno())
        os.chmod(temporary, 0o644)
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise


if __name__ == "__main__":
    print(ensure_wordnet())
    print(synonym_index().path)
