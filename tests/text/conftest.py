"""Fixtures shared by the text-metric tests."""

from __future__ import annotations

from typing import Iterator

import pytest

from scorers.errors import ConfigError


@pytest.fixture(scope="session")
def offline_wordnet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """nltk's WordNet if it has one, else a copy (and synonym index) built for this test run, never the user's cache."""
    nltk = pytest.importorskip("nltk")
    from scorers.text.wordnet import ensure_wordnet

    patch = pytest.MonkeyPatch()
    try:
        nltk.data.find("corpora/wordnet")
    except LookupError:
        patch.setenv("SCORERS_NLTK_DATA", str(tmp_path_factory.mktemp("nltk_data")))
    try:
        corpus = ensure_wordnet()
    except ConfigError as exc:
        patch.undo()
        pytest.skip(f"no WordNet available: {exc}")
    # The tests' reference, nltk's own meteor_score, reads nltk.corpus.wordnet: for this test session, nltk
    # finds the built copy on its path (scorers itself leaves nltk.data.path alone).
    root = str(corpus.parents[1])
    if root not in [str(p) for p in nltk.data.path]:
        patch.setattr(nltk.data, "path", [*nltk.data.path, root])
    yield
    patch.undo()
