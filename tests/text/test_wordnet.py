"""The offline WordNet builder: Debian's WNDB files turned into nltk's corpora/wordnet."""

from __future__ import annotations

import gzip
import re
from pathlib import Path
from typing import Any

import pytest

import scorers.text.wordnet as wordnet
from scorers.errors import ConfigError

pytest.importorskip("nltk")

needs_debian_wordnet = pytest.mark.skipif(
    not all((wordnet.DEBIAN_WORDNET_DIR / name).is_file() for name in wordnet.SOURCE_FILES),
    reason="Debian's wordnet-base and wordnet-sense-index are not installed",
)
LEXNAMES_MAN_PAGE = Path("/usr/share/man/man5/lexnames.5WN.gz")


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A WordNet copy built once from /usr/share/wordnet into a temporary nltk data folder."""
    if not all((wordnet.DEBIAN_WORDNET_DIR / name).is_file() for name in wordnet.SOURCE_FILES):
        pytest.skip("Debian's wordnet-base and wordnet-sense-index are not installed")
    return wordnet.build_wordnet(tmp_path_factory.mktemp("nltk_data"))


def test_lexnames_table_has_nltks_shape() -> None:
    lines = wordnet.lexnames_table().splitlines()
    assert len(lines) == 45
    for number, line in enumerate(lines):
        index, name, category = line.split("\t")
        assert int(index) == number
        assert int(category) == {"noun": 1, "verb": 2, "adj": 3, "adv": 4}[name.split(".")[0]]


@pytest.mark.skipif(not LEXNAMES_MAN_PAGE.is_file(), reason="lexnames(5WN) man page not installed")
def test_lexnames_table_lists_the_files_of_the_lexnames_man_page() -> None:
    page = gzip.decompress(LEXNAMES_MAN_PAGE.read_bytes()).decode("utf-8", "replace")
    rows = re.findall(r"^(\d\d)\t(\S+)", page, flags=re.M)
    assert [(int(n), name) for n, name in rows] == list(enumerate(wordnet.LEXICOGRAPHER_FILES))


@needs_debian_wordnet
def test_built_copy_holds_real_copies_of_every_file(built: Path) -> None:
    assert built.name == "wordnet" and built.parent.name == "corpora"
    for name in (*wordnet.SOURCE_FILES, "lexnames"):
        path = built / name
        assert path.is_file() and not path.is_symlink(), name
    for name in wordnet.SOURCE_FILES:
        assert (built / name).stat().st_size == (wordnet.DEBIAN_WORDNET_DIR / name).stat().st_size
    assert (built / "lexnames").read_text() == wordnet.lexnames_table()
    assert not list(built.parent.glob(".wordnet-*")), "staging folder left behind"


@needs_debian_wordnet
@pytest.mark.slow
def test_nltk_loads_the_built_copy_and_finds_synonyms(built: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import nltk
    from nltk.corpus.reader.wordnet import WordNetCorpusReader

    monkeypatch.setattr(nltk.data, "path", [str(built.parent.parent)])
    with pytest.warns(UserWarning, match="multilingual"):
        reader = WordNetCorpusReader(str(built), None)
    assert reader.get_version() == "3.0"
    synonyms = {lemma.name() for synset in reader.synsets("glad") for lemma in synset.lemmas()}
    assert "happy" in synonyms
    assert {s.name() for s in reader.synsets("geese")} >= {"goose.n.01"}  # exception lists work


@needs_debian_wordnet
def test_building_again_keeps_the_existing_copy(built: Path) -> None:
    before = (built / "data.noun").stat().st_mtime_ns
    assert wordnet.build_wordnet(built.parent.parent) == built
    assert (built / "data.noun").stat().st_mtime_ns == before


@needs_debian_wordnet
def test_losing_a_build_race_keeps_the_winners_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Another process renames its complete copy into place while we are still copying."""
    real_copyfile = wordnet.shutil.copyfile
    raced = []

    def copy_while_another_builder_finishes(src: Path, dst: Path) -> None:
        if not raced:
            raced.append(True)
            wordnet.build_wordnet(tmp_path)  # the "other process", done before our rename
        real_copyfile(src, dst)

    monkeypatch.setattr(wordnet.shutil, "copyfile", copy_while_another_builder_finishes)
    corpus = wordnet.build_wordnet(tmp_path)
    assert raced and corpus == tmp_path / "corpora" / "wordnet"
    assert all((corpus / name).is_file() for name in wordnet.SOURCE_FILES)
    assert not list((tmp_path / "corpora").glob(".wordnet-*"))


def test_missing_source_raises_config_error_with_install_hint(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        wordnet.build_wordnet(tmp_path / "data", source=tmp_path)
    message = str(info.value)
    assert "apt-get install" in message and "wordnet-base" in message and "wordnet-sense-index" in message
    assert "nltk.download('wordnet')" in message
    assert not (tmp_path / "data" / "corpora" / "wordnet").exists()


def test_incomplete_existing_copy_is_reported(tmp_path: Path) -> None:
    (tmp_path / "corpora" / "wordnet").mkdir(parents=True)
    source = tmp_path / "source"
    source.mkdir()
    for name in wordnet.SOURCE_FILES:
        (source / name).write_text("")
    with pytest.raises(ConfigError, match="not a complete WordNet copy"):
        wordnet.build_wordnet(tmp_path, source=source)


def test_ensure_wordnet_without_any_copy_or_source_raises(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import nltk

    monkeypatch.setattr(nltk.data, "path", [])
    monkeypatch.setenv("SCORERS_NLTK_DATA", str(tmp_path / "cache"))
    with pytest.raises(ConfigError, match="apt-get install"):
        wordnet.ensure_wordnet(source=tmp_path / "nowhere")


@needs_debian_wordnet
def test_ensure_wordnet_builds_into_the_data_dir_and_leaves_nltks_path_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import nltk

    monkeypatch.setattr(nltk.data, "path", [])
    monkeypatch.setenv("SCORERS_NLTK_DATA", str(tmp_path))
    corpus = wordnet.ensure_wordnet()
    assert corpus == tmp_path / "corpora" / "wordnet"
    assert nltk.data.path == []
    assert wordnet.wordnet_version() == "3.0"
    assert wordnet._Source().folder == corpus
    assert nltk.data.path == []


@needs_debian_wordnet
@pytest.mark.slow
def test_nltks_reader_reads_the_built_copy_with_the_path_added_only_while_it_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading

    import nltk

    from scorers.text import meteor

    monkeypatch.setattr(nltk.data, "path", ["/elsewhere"])
    monkeypatch.setenv("SCORERS_NLTK_DATA", str(tmp_path))
    wordnet.ensure_wordnet()
    wordnet._reader.cache_clear()
    try:
        reader = wordnet.wordnet_reader()
        assert nltk.data.path == ["/elsewhere"]
        assert wordnet.wordnet_reader() is reader and reader.get_version() == "3.0"
        synonyms_of = meteor._nltk_wordnet_synonyms()
        assert "happy" in synonyms_of("glad") and "goose" in synonyms_of("geese")
        assert nltk.data.path == ["/elsewhere"]
        with wordnet.nltk_may_read_copy():
            assert nltk.data.path == ["/elsewhere", str(tmp_path)]
            inside = threading.Thread(target=lambda: synonyms_of("sad"))  # a second reader leaves it in place
            inside.start()
            inside.join()
            with wordnet.nltk_may_read_copy():
                assert nltk.data.path == ["/elsewhere", str(tmp_path)]
            assert nltk.data.path == ["/elsewhere", str(tmp_path)]
        assert nltk.data.path == ["/elsewhere"]
        nltk.data.path.append(str(tmp_path))  # put there by the user: left alone
        with wordnet.nltk_may_read_copy():
            pass
        assert nltk.data.path == ["/elsewhere", str(tmp_path)]
    finally:
        wordnet._reader.cache_clear()


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"SCORERS_NLTK_DATA": "/data/nltk", "XDG_CACHE_HOME": "/xdg"}, Path("/data/nltk")),
        ({"XDG_CACHE_HOME": "/xdg"}, Path("/xdg/scorers/nltk_data")),
        ({}, Path.home() / ".cache" / "scorers" / "nltk_data"),
    ],
)
def test_data_dir_follows_the_environment(env: dict[str, str], expected: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("SCORERS_NLTK_DATA", "XDG_CACHE_HOME"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert wordnet.data_dir() == expected


# ------------------------------------------------------------------ the synonym index
@pytest.fixture
def nltk_reads(built: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """nltk finds only the built copy; returns the folder holding ``corpora``."""
    import nltk

    root = built.parent.parent
    monkeypatch.setattr(nltk.data, "path", [str(root)])
    return root


def _load(cache: Path) -> wordnet.SynonymIndex:
    """The index for the corpus nltk finds, bypassing the process-wide memo."""
    import nltk

    return wordnet._load_synonym_index.__wrapped__(wordnet._Source().location, str(cache), nltk.__version__)


@pytest.fixture(scope="module")
def built_index(built: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A cache folder holding the index of the built copy (built once for this module)."""
    import nltk

    patch = pytest.MonkeyPatch()
    patch.setattr(nltk.data, "path", [str(built.parent.parent)])
    try:
        cache = tmp_path_factory.mktemp("index_cache")
        _load(cache)
    finally:
        patch.undo()
    return cache


@pytest.fixture
def cache(built_index: Path, tmp_path: Path) -> Path:
    """A fresh copy of the module's index cache."""
    import shutil

    return Path(shutil.copytree(built_index, tmp_path / "cache"))


@needs_debian_wordnet
@pytest.mark.slow
def test_index_file_is_keyed_by_checksum_and_nltk_version_and_written_atomically(nltk_reads: Path, cache: Path) -> None:
    import hashlib

    import nltk

    index = _load(cache)
    digest = hashlib.sha256()
    for name in wordnet.INDEX_SOURCE_FILES:
        content = (nltk_reads / "corpora" / "wordnet" / name).read_bytes()
        digest.update(f"{name}\0{len(content)}\0".encode() + content)
    checksum = digest.hexdigest()
    assert index.path == cache / f"wordnet-synonyms-{checksum[:20]}-nltk{nltk.__version__}-v{wordnet.INDEX_FORMAT}.tsv"
    assert index.header["source_sha256"] == checksum and index.header["nltk"] == nltk.__version__
    assert sorted(p.name for p in cache.iterdir()) == sorted([index.path.name, "wordnet-synonyms.json"])
    assert 2_000_000 < index.path.stat().st_size < 10_000_000  # compact: a few MB
    assert index.synonyms("glad") >= {"happy", "glad"} and "goose" in index.synonyms("geese")
    lines = index.path.read_text(encoding="utf-8").split("\n")[1:]
    assert lines == sorted(lines) and len(lines) == index.header["entries"]


@pytest.mark.slow
@needs_debian_wordnet
def test_index_is_reused_without_hashing_or_building_again(
    nltk_reads: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def fail(*_: object, **__: object) -> None:
        raise AssertionError("rebuilt or re-hashed")

    monkeypatch.setattr(wordnet, "build_synonym_index", fail)
    monkeypatch.setattr(wordnet._Source, "checksum", fail)  # the recorded sizes and times still match
    assert "happy" in _load(cache).synonyms("glad")


@needs_debian_wordnet
@pytest.mark.slow
def test_damaged_index_is_rebuilt(nltk_reads: Path, cache: Path) -> None:
    path = _load(cache).path
    expected = path.read_text(encoding="utf-8")
    path.write_text(expected[: len(expected) // 2], encoding="utf-8")
    assert "happy" in _load(cache).synonyms("glad")
    assert path.read_text(encoding="utf-8") == expected


@needs_debian_wordnet
@pytest.mark.slow
def test_changed_wordnet_files_get_a_new_index(nltk_reads: Path, cache: Path) -> None:
    first = _load(cache)
    exceptions = nltk_reads / "corpora" / "wordnet" / "noun.exc"
    original = exceptions.read_bytes()
    try:
        exceptions.write_bytes(original + b"gleese glad\n")
        second = _load(cache)
    finally:
        exceptions.write_bytes(original)
    assert second.path != first.path and second.header["source_sha256"] != first.header["source_sha256"]
    assert "gladiolus" in second.synonyms("gleese") and not first.synonyms("gleese")  # the noun glad


@needs_debian_wordnet
def test_unwritable_cache_gives_an_index_in_memory_with_a_warning(
    nltk_reads: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = next(cache.glob("wordnet-synonyms-*.tsv")).read_text(encoding="utf-8")
    monkeypatch.setattr(wordnet, "build_synonym_index", lambda read, checksum: text)
    blocker = cache / "not-a-folder"
    blocker.write_text("")
    with pytest.warns(RuntimeWarning, match="could not save the WordNet synonym index"):
        index = _load(blocker / "cache")
    assert index.path is None and "happy" in index.synonyms("glad")


@needs_debian_wordnet
@pytest.mark.slow
def test_index_built_from_a_zipped_corpus_equals_the_folders(
    nltk_reads: Path, cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import shutil

    import nltk

    from_folder = _load(cache)
    zipped = tmp_path / "zipped"
    (zipped / "corpora").mkdir(parents=True)
    shutil.make_archive(str(zipped / "corpora" / "wordnet"), "zip", str(nltk_reads / "corpora"), "wordnet")
    monkeypatch.setattr(nltk.data, "path", [str(zipped)])
    assert wordnet._Source().folder is None
    assert wordnet.ensure_wordnet() == Path(str(wordnet._wordnet_pointer()))  # nltk's zip is used, nothing built
    from_zip = _load(tmp_path / "other")
    assert from_zip.header["source_sha256"] == from_folder.header["source_sha256"]
    assert from_zip.path.read_text(encoding="utf-8") == from_folder.path.read_text(encoding="utf-8")


# ------------------------------------------------------------------ without nltk's package
@pytest.fixture
def private_data(monkeypatch: pytest.MonkeyPatch) -> Any:
    """A private copy of ``nltk.data``, which scorers asks as in a process that has not imported nltk."""
    from scorers.text import _nltk_modules

    monkeypatch.setattr(_nltk_modules, "nltk_imported", lambda: False)
    monkeypatch.setattr(_nltk_modules, "_PRIVATE", _nltk_modules._PrivateNltk())
    return _nltk_modules.nltk_module("nltk.data", scorer="METEOR")


def _nltk_must_not_be_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    import nltk

    def fail(*_: object, **__: object) -> None:
        raise AssertionError("nltk itself was asked")

    monkeypatch.setattr(nltk.data, "find", fail)


def test_private_nltk_data_finds_a_wordnet_folder(
    built: Path, private_data: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    _nltk_must_not_be_asked(monkeypatch)
    monkeypatch.setattr(private_data, "path", [str(built.parent.parent)])
    pointer = wordnet._nltk_pointer()
    assert isinstance(pointer, private_data.FileSystemPathPointer) and Path(str(pointer)) == built


def test_private_nltk_data_finding_nothing_and_no_zip_is_the_answer(
    tmp_path: Path, private_data: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    _nltk_must_not_be_asked(monkeypatch)
    (tmp_path / "corpora").mkdir()
    monkeypatch.setattr(private_data, "path", [str(tmp_path), str(tmp_path / "absent")])
    assert wordnet._nltk_pointer() is None


@pytest.mark.slow
@pytest.mark.parametrize("archive", ["corpora/wordnet.zip", "corpora.zip", "data.zip"])
def test_zip_archives_on_the_path_are_left_to_nltk_itself(
    archive: str, built: Path, private_data: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """nltk's checks on zip archives read the data path of the nltk.data in sys.modules: nltk itself decides."""
    import shutil
    import zipfile

    import nltk

    zipped = tmp_path / "zipped"
    (zipped / "corpora").mkdir(parents=True)
    if archive == "corpora/wordnet.zip":
        shutil.make_archive(str(zipped / "corpora" / "wordnet"), "zip", str(built.parent), "wordnet")
    else:
        with zipfile.ZipFile(zipped / archive, "w") as other:
            other.writestr("other/README", "no WordNet here")
    entry = str(zipped / archive) if archive == "data.zip" else str(zipped)
    monkeypatch.setattr(private_data, "path", [entry])
    monkeypatch.setattr(nltk.data, "path", [entry])
    asked: list[object] = []
    find = nltk.data.find
    monkeypatch.setattr(nltk.data, "find", lambda *a, **k: asked.append(a) or find(*a, **k))
    pointer = wordnet._nltk_pointer()
    assert asked
    if archive == "corpora/wordnet.zip":
        assert isinstance(pointer, nltk.data.ZipFilePathPointer)  # nltk's own class: nltk answered
    else:
        assert pointer is None


@needs_debian_wordnet
def test_index_answers_the_same_before_and_after_splitting_its_text(nltk_reads: Path, cache: Path) -> None:
    """A fresh index searches its unsplit text; after wordnet._TEXT_LOOKUPS lookups it splits it into lines."""
    text = _load(cache).path.read_text(encoding="utf-8")
    lines = text.split("\n")
    probes = [""]
    for line in lines[1::97] + lines[-3:]:
        form = line.split("\t")[0]
        probes += [form, form[:-1], form + "a", form + "\x00", form + "~", form.upper()]
    probes += ["\x00", "~~~~", "zzzzzz", lines[1].split("\t")[0], lines[-1].split("\t")[0]]
    in_text = wordnet.SynonymIndex(text)
    answers = [in_text._entry_in_text(p + "\t") for p in probes]
    assert in_text._lines is None
    in_lines = wordnet.SynonymIndex(text)
    in_lines._text_lookups = wordnet._TEXT_LOOKUPS
    assert [in_lines._entry(p) for p in probes] == answers and in_lines._lines is not None
    assert sum(a is not None for a in answers) > len(probes) // 7
    assert [in_text.synonyms(w) for w in ("glad", "geese", "ran", "")] == [
        in_lines.synonyms(w) for w in ("glad", "geese", "ran", "")
    ]


def test_synonym_index_rejects_other_files() -> None:
    with pytest.raises(ValueError):
        wordnet.SynonymIndex("hello\nworld")
