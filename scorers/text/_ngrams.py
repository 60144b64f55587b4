"""Shared machinery of the text scorers: token interning, batched clipped n-gram
matching, and nltk's Porter stemmer (one per process).

The batch paths of BLEU, chrF and ROUGE turn every text into a sequence of
integer ids (one id per distinct token in the batch) and count, for every
(hypothesis, references) pair and n-gram order, the clipped matches
``sum_g min(count_hyp(g), max_r count_r(g))`` with a few sorts over the whole
batch instead of one ``Counter`` per text.

>>> import numpy as np
>>> hyp = np.array([0, 1, 2]); ref = np.array([0, 1, 3])
>>> clipped_ngram_matches(hyp, np.array([3]), ref, np.array([3]), np.array([0]), 2).tolist()
[[2, 1]]
"""

from __future__ import annotations

import threading
from itertools import chain
from typing import TYPE_CHECKING, Any, Callable, Iterable, Sequence

from ._nltk_modules import nltk_module, require_nltk

if TYPE_CHECKING:
    import numpy as np

__all__ = ["CachedSignature", "TokenCache", "concat_ids", "split_flat", "clipped_ngram_matches", "porter_stem"]

#: Largest product of key sizes kept as packed integers before ids are made dense again.
_PACK_LIMIT = 2**62


def porter_stem(scorer: str) -> Callable[[str], str]:
    """nltk's Porter stemmer (its default ``NLTK_EXTENSIONS`` mode, as rouge-score and nltk's METEOR use it).

    One stemmer serves the whole process (it keeps no state between calls);
    without nltk this raises :class:`~scorers.errors.MissingExtraError` naming ``scorer``.
    nltk's package is not imported for it (see :mod:`scorers.text._nltk_modules`).
    """
    require_nltk(scorer=scorer)
    return _porter_stemmer(scorer).stem


_stemmer_lock = threading.Lock()
_stemmer: Any = None


def _porter_stemmer(scorer: str) -> Any:
    """The process's ``PorterStemmer`` (``scorer`` is named in the error should nltk's module fail to import)."""
    global _stemmer
    with _stemmer_lock:
        if _stemmer is None:
            _stemmer = nltk_module("nltk.stem.porter", scorer=scorer).PorterStemmer()
        return _stemmer


class CachedSignature:
    """Mixin for scorers whose settings are fixed at construction: the signature is built once per name."""

    _signature_cache: tuple[str, dict[str, Any]] | None = None

    def signature(self) -> dict[str, Any]:
        cached = self._signature_cache
        # name and signature() are the Scorer's that this mixin comes before in the class's bases
        if cached is None or cached[0] != self.name:  # type: ignore[attr-defined]
            cached = self._signature_cache = (self.name, super().signature())  # type: ignore[attr-defined,misc]
        return dict(cached[1])


class TokenCache:
    """Maps raw words to their token ids, interning tokens on first sight.

    ``split_word(word)`` returns the token strings one raw word becomes; each
    distinct word is split once. Misses are serialised by a lock so that ids stay
    unique across threads; entries are never changed once written.

    >>> cache = TokenCache(lambda w: w.lower().split("-"))
    >>> cache.ids_of_words("Well-known well".split())
    [0, 1, 0]
    >>> flat, lens = cache.ids_of_texts(["well-known", "", "Known x"])
    >>> flat.tolist(), lens.tolist()
    ([0, 1, 1, 2], [2, 0, 2])
    """

    #: Entries after which a scorer starts a fresh cache (bounds memory on endless streams).
    MAX_ENTRIES = 1_000_000
    #: Joins the texts of a batch so that one ``split()`` serves them all; it owns row 0, which has no tokens.
    SEPARATOR = "\x00"

    def __init__(self, split_word: Callable[[str], Iterable[str]]) -> None:
        import numpy as np

        self._split_word = split_word
        self.words: dict[str, tuple[int, ...]] = {}
        self.vocab: dict[str, int] = {}
        self._index: dict[str, int] = {self.SEPARATOR: 0}  # word -> row in the arrays below
        self._counts = np.zeros(1024, dtype=np.int64)  # tokens per word
        self._starts = np.zeros(1024, dtype=np.int64)  # where a word's tokens start in _flat
        self._first = np.zeros(1024, dtype=np.int64)  # a word's first token id (when it has one)
        self._flat = np.zeros(4096, dtype=np.int64)
        self._n_flat = 0
        self._lock = threading.Lock()

    def _add(self, word: str) -> tuple[int, ...]:
        with self._lock:
            ids = self.words.get(word)
            if ids is None:
                ids = tuple(self.vocab.setdefault(tok, len(self.vocab)) for tok in self._split_word(word))
                if word != self.SEPARATOR:
                    self._add_row(word, ids)
                self.words[word] = ids
            return ids

    def _add_row(self, word: str, ids: tuple[int, ...]) -> None:
        import numpy as np

        row = len(self._index)
        if row == len(self._counts):
            self._counts, self._starts, self._first = (
                np.concatenate((a, np.zeros_like(a))) for a in (self._counts, self._starts, self._first)
            )
        while self._n_flat + len(ids) > len(self._flat):
            self._flat = np.concatenate((self._flat, np.zeros_like(self._flat)))
        self._flat[self._n_flat : self._n_flat + len(ids)] = ids
        self._counts[row], self._starts[row] = len(ids), self._n_flat
        self._first[row] = ids[0] if ids else -1
        self._n_flat += len(ids)
        self._index[word] = row  # published last: readers only see complete rows

    def ids_of_words(self, words: Iterable[str]) -> list[int]:
        """Token ids of one sequence of raw words, in order."""
        get = self.words.get
        out: list[int] = []
        for word in words:
            ids = get(word)
            if ids is None:
                ids = self._add(word)
            out.extend(ids)
        return out

    def ids_of_texts(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """Token ids of many texts' whitespace-separated words: all ids concatenated, and each text's length."""
        import numpy as np

        if not texts:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        words = f" {self.SEPARATOR} ".join(texts).split()
        index = self._index
        try:
            rows = [index[word] for word in words]
        except KeyError:
            for word in set(words).difference(index):
                self._add(word)
            rows = [index[word] for word in words]
        at = np.array(rows, dtype=np.int64)
        separators = np.flatnonzero(at == 0)
        if len(separators) != len(texts) - 1:  # a text holds the separator as a word: go text by text
            return concat_ids([self.ids_of_words(text.split()) for text in texts])
        word_starts = np.concatenate(([0], separators + 1))
        word_ends = np.concatenate((separators, [len(at)]))
        counts = self._counts[at]
        words_only = at != 0
        if bool((counts[words_only] == 1).all()):
            return self._first[at[words_only]], word_ends - word_starts
        ends = np.cumsum(counts)
        positions = np.repeat(self._starts[at] - (ends - counts), counts) + np.arange(int(ends[-1]), dtype=np.int64)
        cumulative = np.concatenate(([0], ends))
        return self._flat[positions], cumulative[word_ends] - cumulative[word_starts]

    def full(self) -> bool:
        return len(self.words) + len(self.vocab) > self.MAX_ENTRIES


def split_flat(flat: np.ndarray, lens: np.ndarray) -> list[list[int]]:
    """The per-sequence lists of a concatenated array."""
    values, out, at = flat.tolist(), [], 0
    for length in lens.tolist():
        out.append(values[at : at + length])
        at += length
    return out


def concat_ids(seqs: Sequence[Sequence[int]]) -> tuple[np.ndarray, np.ndarray]:
    """Concatenate integer sequences into one array plus their lengths."""
    import numpy as np

    lens = np.fromiter((len(s) for s in seqs), dtype=np.int64, count=len(seqs))
    flat = np.fromiter(chain.from_iterable(seqs), dtype=np.int64, count=int(lens.sum()))
    return flat, lens


def _dense(keys: np.ndarray) -> tuple[np.ndarray, int]:
    import numpy as np

    uniq, inverse = np.unique(keys, return_inverse=True)
    return inverse.astype(np.int64, copy=False).reshape(-1), len(uniq)


def _count(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sorted distinct keys and how often each occurs."""
    import numpy as np

    if not len(keys):
        return keys, keys
    keys = np.sort(keys)
    edges = np.flatnonzero(np.diff(keys)) + 1
    starts = np.concatenate(([0], edges))
    counts = np.diff(np.concatenate((starts, [len(keys)])))
    return keys[starts], counts


def clipped_ngram_matches(
    hyp_ids: np.ndarray,
    hyp_lens: np.ndarray,
    ref_ids: np.ndarray,
    ref_lens: np.ndarray,
    ref_owner: np.ndarray,
    max_order: int,
    min_order: int = 1,
) -> np.ndarray:
    """Clipped n-gram matches of ``P`` hypotheses against their references.

    ``hyp_ids``/``hyp_lens``: the ``P`` hypotheses' token ids, concatenated, and
    their lengths; ``ref_ids``/``ref_lens``: the references likewise, with
    ``ref_owner[j]`` the hypothesis reference ``j`` belongs to. A reference
    n-gram count is the maximum over a hypothesis' references (sacrebleu's
    multi-reference clipping). Returns an int64 array ``[P, max_order - min_order + 1]``.
    """
    import numpy as np

    n_hyp, n_ref = len(hyp_lens), len(ref_lens)
    out = np.zeros((n_hyp, max_order - min_order + 1), dtype=np.int64)
    tokens = np.concatenate((hyp_ids, ref_ids)).astype(np.int64, copy=False)
    total = len(tokens)
    if total == 0 or n_hyp == 0 or n_ref == 0:
        return out
    lens = np.concatenate((hyp_lens, ref_lens))
    n_seq = len(lens)
    hyp_total = len(hyp_ids)  # hypotheses come first, so their n-grams start before this position
    seq_of_token = np.repeat(np.arange(n_seq, dtype=np.int64), lens)
    if max_order > 1:  # tokens left in a token's own sequence: an n-gram may start where at least n are left
        starts = np.cumsum(lens) - lens
        remaining = np.repeat(lens, lens) - (np.arange(total, dtype=np.int64) - np.repeat(starts, lens))
    one_ref_each = n_ref == n_hyp and bool(np.array_equal(ref_owner, np.arange(n_hyp)))

    tokens, vocab = _dense(tokens) if int(tokens.max()) >= total else (tokens, int(tokens.max()) + 1)
    keys, key_size = tokens, vocab
    for n in range(1, max_order + 1):
        if n > 1:
            if key_size * vocab >= _PACK_LIMIT:
                keys, key_size = _dense(keys)
            keys = keys[:-1] * vocab + tokens[n - 1 :]
            key_size *= vocab
        if n < min_order:
            continue
        width = total - n + 1
        if width <= 0:
            break
        if n_seq * key_size >= _PACK_LIMIT:
            keys, key_size = _dense(keys)
        tagged = seq_of_token[:width] * key_size + keys  # (sequence, n-gram) as one integer
        if n == 1:
            hyp_tagged, ref_tagged = tagged[:hyp_total], tagged[hyp_total:]
        else:
            valid = remaining[:width] >= n
            hyp_tagged = tagged[:hyp_total][valid[:hyp_total]]
            ref_tagged = tagged[hyp_total:][valid[hyp_total:]]
        hyp_keys, hyp_counts = _count(hyp_tagged)
        if not len(hyp_keys) or not len(ref_tagged):
            continue
        ref_tagged = ref_tagged - n_hyp * key_size  # reference j's n-grams, tagged with j
        if one_ref_each:
            ref_keys, ref_counts = _count(ref_tagged)
        else:
            per_ref, per_ref_counts = _count(ref_tagged)
            owned = ref_owner[per_ref // key_size] * key_size + per_ref % key_size
            order = np.argsort(owned, kind="stable")
            owned, per_ref_counts = owned[order], per_ref_counts[order]
            firsts = np.concatenate(([0], np.flatnonzero(np.diff(owned)) + 1))
            ref_keys, ref_counts = owned[firsts], np.maximum.reduceat(per_ref_counts, firsts)
        at = np.minimum(np.searchsorted(ref_keys, hyp_keys), len(ref_keys) - 1)
        clipped = np.where(ref_keys[at] == hyp_keys, np.minimum(hyp_counts, ref_counts[at]), 0)
        out[:, n - min_order] = np.bincount(hyp_keys // key_size, weights=clipped, minlength=n_hyp)[:n_hyp].astype(
            np.int64
        )
    return out
