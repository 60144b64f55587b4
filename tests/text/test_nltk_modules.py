"""nltk's modules without nltk's package __init__: private copies that behave as nltk's own and change nothing global."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from typing import Any

import pytest

pytest.importorskip("nltk")

import scorers.text._nltk_modules as nltk_modules  # noqa: E402
from scorers.errors import MissingExtraError  # noqa: E402

#: The modules the scorers use.
USED = ("nltk.tokenize.destructive", "nltk.stem.porter", "nltk.data", "nltk.corpus.util")


@pytest.fixture
def private() -> nltk_modules._PrivateNltk:
    """A fresh set of private copies (the process's own may already hold some)."""
    return nltk_modules._PrivateNltk()


def test_private_copies_are_nltks_files_and_stay_out_of_sys_modules(private: nltk_modules._PrivateNltk) -> None:
    import nltk.data

    before = dict(sys.modules)
    for name in USED:
        module = private.module(name)
        assert module is not None and module is not sys.modules.get(name)
        assert module.__file__ == sys.modules[name].__file__  # the installed nltk's file, run unchanged
        assert private.owns(module)
    assert {k: v for k, v in sys.modules.items() if k.startswith("nltk")} == {
        k: v for k, v in before.items() if k.startswith("nltk")
    }
    data = private.module("nltk.data")
    assert data is not None and data.find is not nltk.data.find
    assert data.redos is private.module("nltk.redos")  # `from nltk import redos` in nltk.data: a private copy too
    assert not private.owns(nltk.data)


def test_a_module_bound_by_from_import_runs_when_first_read(private: nltk_modules._PrivateNltk) -> None:
    """nltk.data does ``from nltk import grammar, sem`` and reads neither unless it loads a grammar."""
    import nltk.grammar

    private.module("nltk.data")
    grammar = private._modules["nltk.grammar"]
    assert isinstance(grammar, nltk_modules._Deferred) and "CFG" not in vars(grammar)
    assert grammar.CFG.__name__ == "CFG" and grammar.CFG is not nltk.grammar.CFG
    assert type(grammar) is type(nltk.grammar) and private.module("nltk.grammar") is grammar
    with pytest.raises(AttributeError):
        grammar.no_such_name  # noqa: B018


def test_private_copies_tokenize_and_stem_as_nltk_does(private: nltk_modules._PrivateNltk) -> None:
    from nltk.stem.porter import PorterStemmer
    from nltk.tokenize.destructive import NLTKWordTokenizer

    destructive, porter = private.module("nltk.tokenize.destructive"), private.module("nltk.stem.porter")
    assert destructive is not None and porter is not None
    text = "«Don't» he said, 'tis 3.88$ (gimme more'n that)... — O'Neill's cannot-wanna!"
    assert destructive.NLTKWordTokenizer().tokenize(text) == NLTKWordTokenizer().tokenize(text)
    words = "running generously happiness geese relational conditional hopping caresses ponies sky".split()
    assert [porter.PorterStemmer().stem(w) for w in words] == [PorterStemmer().stem(w) for w in words]


@pytest.mark.slow
def test_private_data_path_is_nltks_default(private: nltk_modules._PrivateNltk) -> None:
    """nltk.data's search path as a fresh ``import nltk`` in this environment would make it."""
    data = private.module("nltk.data")
    assert data is not None
    script = "import json, nltk; print(json.dumps(nltk.data.path))"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=300)
    assert data.path == __import__("json").loads(done.stdout)


def test_a_module_that_needs_nltks_init_is_imported_the_ordinary_way(
    private: nltk_modules._PrivateNltk, monkeypatch: pytest.MonkeyPatch
) -> None:
    import nltk.corpus.reader.wordnet

    assert private.module("nltk.corpus.reader.wordnet") is None  # imports names from nltk.corpus.reader's __init__
    assert private.module("nltk.corpus.reader.wordnet") is None  # and is not tried again
    monkeypatch.setattr(nltk_modules, "_PRIVATE", private)
    monkeypatch.setattr(nltk_modules, "nltk_imported", lambda: False)
    assert nltk_modules.nltk_module("nltk.corpus.reader.wordnet", scorer="METEOR") is nltk.corpus.reader.wordnet


def test_nltk_module_gives_nltks_own_modules_once_nltk_is_imported() -> None:
    import nltk.data

    assert nltk_modules.nltk_imported()
    assert nltk_modules.nltk_module("nltk.data", scorer="METEOR") is nltk.data
    with pytest.raises(ValueError, match="not a module of nltk"):
        nltk_modules.nltk_module("json", scorer="METEOR")


def test_version_is_nltks() -> None:
    import nltk

    assert nltk_modules._PrivateNltk().version() == nltk.__version__ == nltk_modules.nltk_version(scorer="METEOR")


@pytest.mark.parametrize("call", [nltk_modules.require_nltk, nltk_modules.nltk_version])
def test_missing_nltk_raises_missing_extra_error(call: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "nltk", None)  # makes `import nltk` fail
    with pytest.raises(MissingExtraError, match=r"METEOR.*scorers\[text\]"):
        call(scorer="METEOR")


# ------------------------------------------------------------------ fresh interpreters
def _python(script: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)],
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ),  # the session's SCORERS_NLTK_DATA, where the text tests set one
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout.split()


#: Run by the scripts below: scores with nltk itself (imported whole), after giving nltk scorers' WordNet copy.
_NLTK_SIDE = """
import nltk
from nltk.translate.meteor_score import meteor_score
from scorers.text.wordnet import ensure_wordnet
if str(ensure_wordnet().parents[1]) not in nltk.data.path:
    nltk.data.path.append(str(ensure_wordnet().parents[1]))
tokenize = lambda text: nltk.word_tokenize(text, preserve_line=True)
theirs = [meteor_score([tokenize(e)], tokenize(o)) for o, e in PAIRS]
"""
_PAIRS = """
PAIRS = [("the cat is glad", "the cat is happy"), ("Geese ran, didn't they?", "The goose runs."),
         ("creates or updates a virtual machine scale set", "create or update a vm set"), ("", "a")]
"""


@pytest.fixture
def indexed(offline_wordnet: None) -> None:
    """The WordNet synonym index exists (building it, once per machine, reads a table of nltk's WordNet reader)."""
    from scorers.text.wordnet import synonym_index

    synonym_index()


@pytest.mark.usefixtures("indexed")
@pytest.mark.slow
def test_cold_meteor_imports_no_nltk_package_and_nltk_works_after_it() -> None:
    """The design: METEOR's cold path runs none of nltk's __init__ (so no scipy or scikit-learn); a later
    ``import nltk`` then gets nltk whole, working, with the same numbers."""
    script = (
        _PAIRS
        + """
import sys, scorers
ours = [scorers.get("METEOR")(output=o, expected=e).score for o, e in PAIRS]
loaded = [m for m in ("nltk", "nltk.data", "scipy", "sklearn", "pandas") if m in sys.modules]
print(*(loaded or ["none"]))
"""
        + _NLTK_SIDE
        + """
print(ours == theirs, nltk.word_tokenize("Don't.", preserve_line=True) == ["Do", "n't", "."], "sklearn" in sys.modules)
"""
    )
    assert _python(script) == ["none", "True", "True", "True"]


@pytest.mark.usefixtures("offline_wordnet")
@pytest.mark.slow
def test_meteor_after_nltk_uses_nltks_modules_with_the_same_numbers() -> None:
    script = (
        _PAIRS
        + _NLTK_SIDE
        + """
from scorers.text import _nltk_modules, meteor
ours = [meteor.METEOR()(output=o, expected=e).score for o, e in PAIRS]
print(ours == theirs, _nltk_modules._PRIVATE._modules == {})
"""
    )
    assert _python(script) == ["True", "True"]


@pytest.mark.usefixtures("indexed")
@pytest.mark.slow
def test_nltk_imported_in_one_thread_while_meteor_starts_cold_in_another() -> None:
    script = (
        _PAIRS
        + """
import threading, time
from scorers.text.meteor import METEOR
results = {}
def ours(key, delay):
    time.sleep(delay)  # 0.3 s: most likely while the other thread is in nltk's __init__
    results[key] = [METEOR()(output=o, expected=e).score for o, e in PAIRS]
def nltk_side():
    import nltk
    results["tokens"] = nltk.word_tokenize("Don't stop.", preserve_line=True)
threads = [threading.Thread(target=ours, args=("first", 0)), threading.Thread(target=nltk_side),
           threading.Thread(target=ours, args=("later", 0.3))]
for t in threads: t.start()
for t in threads: t.join()
"""
        + _NLTK_SIDE
        + """
print(results["first"] == results["later"] == theirs, results["tokens"] == ["Do", "n't", "stop", "."])
"""
    )
    assert _python(script) == ["True", "True"]
