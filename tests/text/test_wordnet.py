"""The offline WordNet builder: Debian's WNDB files turned into nltk's corpora/wordnet."""
from __future__ import annotations

import gzip
import re
from pathlib import Path

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
def test_ensure_wordnet_builds_into_the_data_dir_and_puts_it_on_nltks_path(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import nltk

    monkeypatch.setattr(nltk.data, "path", [])
    monkeypatch.setenv("SCORERS_NLTK_DATA", str(tmp_path))
    corpus = wordnet.ensure_wordnet()
    assert corpus == tmp_path / "corpora" / "wordnet"
    assert nltk.data.path == [str(tmp_path)]
    assert Path(str(nltk.data.find("corpora/wordnet"))) == corpus
    assert wordnet.wordnet_version() == "3.0"


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"SCORERS_NLTK_DATA": "/data/nltk", "XDG_CACHE_HOME": "/xdg"}, Path("/data/nltk")),
        ({"XDG_CACHE_HOME": "/xdg"}, Path("/xdg/scorers/nltk_data")),
        ({}, Path.home() / ".cache" / "scorers" / "nltk_data"),
    ],
)
def test_data_dir_follows_the_environment(env: dict[str, str], expected: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("SCORERS_NLTK_DATA", "XDG_CACHE_HOME"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert wordnet.data_dir() == expected
