"""Which rows of a project's cached texts hold a term: a word index for the vector cache's
BM25 (:meth:`memd.recall.vectors.VectorCache.text_search`)."""

from __future__ import annotations

from typing import Any


def no_postings() -> tuple[Any, Any]:
    import numpy as np

    return np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.float32)


class WordIndex:
    """Which rows of a project's entry hold a term, without reading every text.

    A term (:func:`memd.text.searchterms.terms`: no whitespace) occurs only inside the whitespace-separated
    words of a text. The index keeps each distinct lower-cased word once, in one buffer, and
    for each word the rows that hold it and how often. A term's postings are then a substring
    search over the words (~4x fewer bytes than the texts) plus the postings of the words it
    was found in: the same counts as Arrow's case-blind ``count_substring`` over the texts,
    which cost ~0.25 ms per term at 500 memories and is still used for a term found in very
    many words (a short stem), where walking its matches in Python is slower.

    Size: ~6 bytes per (word, row) pair plus the words: the daemon's anonymous memory at 100k
    memories went from 302 to 321 MiB (``bench/memory.py``)."""

    SEPARATOR = b"\x00"

    def __init__(self, texts: Any) -> None:
        import numpy as np

        self.texts = texts
        ids: dict[str, int] = {}
        pair_word: list[int] = []
        pair_row: list[int] = []
        for row, text in enumerate(texts.to_pylist()):
            for word in (text or "").lower().split():
                pair_word.append(ids.setdefault(word, len(ids)))
                pair_row.append(row)
        words = [w.encode() for w in ids]
        sizes = np.fromiter((len(w) + 1 for w in words), dtype=np.int64, count=len(words))
        starts = np.concatenate(([0], np.cumsum(sizes)[:-1])) if len(words) else sizes
        self.blob = self.SEPARATOR.join(words)
        # (word, row) pairs with their counts, sorted by word: one slice per word.
        key = np.asarray(pair_word, dtype=np.int64) * max(1, len(texts)) + np.asarray(
            pair_row, dtype=np.int64
        )
        key, count = np.unique(key, return_counts=True)
        word = key // max(1, len(texts))
        self.rows = (key % max(1, len(texts))).astype(np.int32)
        self.counts = count.astype(np.uint16 if len(count) and count.max() < 65535 else np.int32)
        self.word_starts = starts
        self.word_offsets = np.searchsorted(word, np.arange(len(words) + 1)).astype(np.int64)

    def postings(self, term: str) -> tuple[Any, Any]:
        """(row numbers holding ``term``, case-blind, as int32; how many times, float32)."""
        import numpy as np

        needle = term.lower().encode()
        if not needle or self.SEPARATOR in needle or needle.isspace():
            return self._counted(term)
        blob, step = self.blob, len(needle)
        matches = blob.count(needle)  # non-overlapping, like the walk below
        if matches == 0:
            return no_postings()
        if matches > len(self.texts) // 2 + 16:
            return self._counted(term)  # walking them would cost more than reading every text
        found = np.empty(matches, dtype=np.int64)
        at = -step
        for i in range(matches):
            at = blob.find(needle, at + step)
            found[i] = at
        word = np.searchsorted(self.word_starts, found, side="right") - 1
        offsets = self.word_offsets
        if matches == 1 or word[0] == word[-1]:  # one word (positions come in order)
            lo, hi = offsets[word[0]], offsets[word[0] + 1]
            return self.rows[lo:hi], self.counts[lo:hi].astype(np.float32) * float(matches)
        words, times = np.unique(word, return_counts=True)
        lo, size = offsets[words], offsets[words + 1] - offsets[words]
        # every (word, row) pair of those words, by position in the pair arrays
        at_pairs = np.repeat(lo - np.cumsum(size) + size, size) + np.arange(int(size.sum()))
        weight = self.counts[at_pairs].astype(np.float32) * np.repeat(times, size)
        total = np.bincount(self.rows[at_pairs], weight, len(self.texts))
        idx = np.flatnonzero(total)  # a sum per row, no sort
        return idx.astype(np.int32), total[idx].astype(np.float32)

    def _counted(self, term: str) -> tuple[Any, Any]:
        import numpy as np
        import pyarrow.compute as pc

        # RE2's case-blind search: 3x faster here than a plain one over a lower-cased copy.
        tf = pc.count_substring(self.texts, term, ignore_case=True).to_numpy(zero_copy_only=False)
        idx = np.flatnonzero(tf).astype(np.int32)
        return idx, tf[idx].astype(np.float32)
