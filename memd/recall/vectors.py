"""The daemon's in-memory vectors of active memories (the query embedder they are searched with
is :mod:`memd.recall.queries`).

Owned by the app (``App.recall_cache``): the prompt hook, the session brief and
``search`` all read the same vectors, so a hook and ``memd search --explain`` see the same
candidates. A project's entry holds its active memories' rows (without their vectors) and their
vectors as int8 codes with one float32 scale per row.
"""

from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

from memd.heap import trim_heap
from memd.models import Memory
from memd.recall.wordindex import WordIndex, no_postings
from memd.store.filters import match
from memd.store.layout import from_row
from memd.text import TEXT_CACHE
from memd.text.chinese import CJK_CHAR, CJK_CLASS

CACHE_MAX_ROWS = 20_000
"""A project with more active memories than this is searched in the table instead."""
CACHE_TOTAL_ROWS = 100_000
"""Vectors kept in memory, all projects together (int8: 38 MB at 384 dimensions)."""
CACHE_MAX_AGE = 600.0
POSTINGS_KEPT = 1_000_000
"""Postings (row number and count, 8 bytes each) kept per project entry: 8 MB at most."""
TERMS_KEPT = 50_000
MEMOS_KEPT = 4096
"""Memory objects kept per project entry (a few KiB each)."""
BM25_K1 = 1.2
BM25_B = 0.75
TRIM_AFTER_BUILD_ROWS = 1000
"""Building an entry this big frees enough to hand back to the OS at once."""
CACHE_COLUMNS = ["id", "text", "kind", "project", "importance", "pinned", "status"]
CACHE_COLUMNS += ["created_at", "updated_at", "hits", "sources", "subject"]
"""What recall reads of a memory (not its history or keywords). The sources are kept so that
injection can tell which transcript turns a memory covers without a second read; the subject,
which memories may have replaced a value by it (their history is read then)."""


class TextHits(NamedTuple):
    """A full-text search over the cache: the memories it covered, each term's document
    frequency among them, and the best (id, BM25 score), best first."""

    total: int
    counts: dict[str, int]
    hits: list[tuple[str, float]]


def quantize(vectors: Any) -> tuple[Any, Any]:
    """int8 codes and a float32 scale per row, so that ``codes[i] * scales[i] ≈ vectors[i]``."""
    import numpy as np

    vectors = np.asarray(vectors, dtype=np.float32)
    peak = np.abs(vectors).max(axis=1) if len(vectors) else np.zeros(0, dtype=np.float32)
    scales = np.where(peak > 0, peak / 127.0, 1.0).astype(np.float32)
    codes = np.rint(vectors / scales[:, None]).astype(np.int8)
    return np.ascontiguousarray(codes), scales


FEW_ROWS = 32
"""Up to this many rows are read value by value: ``Table.take`` costs ~0.16 ms however few rows
it takes (one pass per column), ~4x what reading five rows' values one by one costs."""


def row_dicts(rows: Any, indices: list[int]) -> list[dict[str, Any]]:
    """Rows ``indices`` of the Arrow table ``rows`` as dicts, as ``rows.take(indices).to_pylist()``
    gives them."""
    if len(indices) > FEW_ROWS:
        return list(rows.take(indices).to_pylist())
    columns = list(zip(rows.column_names, rows.columns, strict=True))
    return [{name: column[i].as_py() for name, column in columns} for i in indices]


class VectorCache:
    """Each recently used project's active memories (vectors and rows), in memory, for hooks.

    A hook then costs one matrix-vector product (~0.4 ms for 5,000 memories) instead of a
    LanceDB vector search with a project prefilter (~80 ms at 100k rows here) plus reading the
    rows. Vectors are kept as int8 codes with one float32 scale per row: a quarter of float32's
    memory, and a cosine within 0.002 of the exact one, so rankings differ only between near
    ties. (float16 took half the memory but 2.2 ms per product: numpy converts it slowly.) The
    product runs without BLAS threads (``einsum``), whose spinning made a 0.3 ms product take
    8 ms on a busy 2-core machine.

    Freshness: an entry is valid for one state of the table (``MemoryStore.mutations``). Every
    write, delete, supersession or archiving changes it, so a stale memory is never injected.
    The one exception is the hit counters the injector itself writes (:meth:`touch`): they
    change no vector and no status, so the entries carry over to the new state instead of
    being rebuilt.
    """

    def __init__(
        self,
        store: Any,
        max_rows: int = CACHE_MAX_ROWS,
        total_rows: int = CACHE_TOTAL_ROWS,
        max_age: float = CACHE_MAX_AGE,
        on_build: Callable[[str, Any], None] | None = None,
    ) -> None:
        self.store = store
        self.on_build = on_build
        """Called with a project and its rows after each build while all the projects cached hold
        no more texts than the text caches (the daemon reads them ahead of the hooks:
        :mod:`memd.recall.readahead`)."""
        self.max_rows = max_rows
        self.total_rows = total_rows
        self.max_age = max_age
        self.generation = 0
        self.builds = 0
        self._entries: OrderedDict[str, tuple[Any, Any, Any, float]] = OrderedDict()
        self._indexes: dict[str, tuple[Any, dict[str, int], list[str]]] = {}
        """Per project: (the entry's rows, id -> row number, the ids), built on first use."""
        self._terms: dict[
            str,
            tuple[Any, dict[str, tuple[Any, Any]], Any, list[int], bool, list[WordIndex | None]],
        ] = {}
        """Per project: (the entry's rows, term -> postings, row lengths, postings kept,
        whether any of its texts holds a Chinese character, its word index once made)."""
        self._memos: dict[str, tuple[Any, dict[int, Memory]]] = {}
        """Per project: (the entry's rows, row number -> its Memory), the rows recalls read."""
        self._lock = threading.Lock()

    def invalidate(self) -> None:
        with self._lock:
            self.generation += 1
            self._entries.clear()
            self._indexes.clear()
            self._terms.clear()
            self._memos.clear()

    def signature(self) -> Any:
        return (self.generation, id(self.store.table), self.store.mutations)

    def touch(self, touch: Callable[[list[str]], None], ids: list[str]) -> None:
        """Run the hit-counter update ``touch(ids)``; entries stay valid across it."""
        with self.store.write_lock:  # no other write can slip in between the two signatures
            before = self.signature()
            touch(ids)
            after = self.signature()
        with self._lock:
            for project, (sig, rows, matrix, built) in list(self._entries.items()):
                if sig == before:
                    self._entries[project] = (after, rows, matrix, built)

    def rows(self, project: str) -> tuple[Any, Any] | None:
        """(arrow rows, (int8 codes, row scales)) of the project's active memories; None: too
        many."""
        import numpy as np
        import pyarrow as pa

        with self._lock:
            sig = self.signature()
            hit = self._entries.get(project)
            if hit is not None and hit[0] == sig and time.monotonic() - hit[3] < self.max_age:
                self._entries.move_to_end(project)
                return hit[1], hit[2]
            table = self.store.table
            if table is None:
                return None
            where = match(project=project, status="active")
            count = self.store.count(where)
            if count > self.max_rows:
                return None
            query = table.search().where(where.sql).select([*CACHE_COLUMNS, "vector"])
            # In batches: one float32 copy of a whole project at once stayed in RSS afterwards.
            parts, scales, batches = [], [], []
            for batch in query.limit(max(1, count)).to_batches(1024):
                column = batch.column("vector")
                flat = column.flatten().to_numpy(zero_copy_only=False)
                codes, scale = quantize(flat.reshape(batch.num_rows, column.type.list_size))
                parts.append(codes)
                scales.append(scale)
                batches.append(batch.drop_columns(["vector"]))
            if not batches:
                matrix = (np.zeros((0, 1), dtype=np.int8), np.zeros(0, dtype=np.float32))
                rows = pa.table({c: [] for c in CACHE_COLUMNS})
            else:
                matrix = (np.concatenate(parts), np.concatenate(scales))
                rows = pa.Table.from_batches(batches).combine_chunks()
            self._entries[project] = (sig, rows, matrix, time.monotonic())
            self._entries.move_to_end(project)
            while len(self._entries) > 1 and self.cached_rows() > self.total_rows:
                self._entries.popitem(last=False)
            self.builds += 1
            if self.on_build is not None and self.cached_rows() <= TEXT_CACHE:
                self.on_build(project, rows)  # (more would push each other out of the caches)
            if count >= TRIM_AFTER_BUILD_ROWS:
                del parts, scales, batches, query
                trim_heap()  # the read left ~4x the entry's size behind (a few ms)
            return rows, matrix

    def cached_projects(self) -> list[str]:
        """The projects with an entry, least recently used first."""
        with self._lock:
            return list(self._entries)

    def cached_rows(self) -> int:
        return sum(entry[1].num_rows for entry in self._entries.values())

    def text_search(self, projects: list[str], terms: list[str], limit: int) -> TextHits | None:
        """BM25 over the cached texts of ``projects``: the ``limit`` best (id, score) for
        ``terms``, with the document frequencies they were scored with; None when a project
        is too big to cache.

        This replaces the table's full-text index on the hook path: that query cost ~11 ms
        of wall time and ~9 ms of CPU per hook at 10k memories, on threads that competed with
        the query's embedding, while the terms' postings (which memories hold each term, how
        often) are one pass over a project's texts and are kept until its entry changes.
        Terms match as case-blind substrings, like the document frequencies the lexical
        signal is weighed with (a stem meets its inflections, a bigram any Chinese run)."""
        import numpy as np

        terms = list(dict.fromkeys(t for t in terms if t))
        parts: list[tuple[Any, dict[str, tuple[Any, Any]], Any]] = []
        used: list[str] = []
        total = 0
        counts = dict.fromkeys(terms, 0)
        for project in dict.fromkeys(projects):
            got = self.rows(project)
            if got is None:
                return None
            rows = got[0]
            total += rows.num_rows
            if rows.num_rows == 0:
                continue
            postings, lengths = self._postings(project, rows, terms)
            for term, (idx, _tf) in postings.items():
                counts[term] += len(idx)
            parts.append((rows, postings, lengths))
            used.append(project)
        hits: list[tuple[str, float]] = []
        if limit <= 0 or not terms or total == 0:
            return TextHits(total, counts, hits)
        idf = {t: math.log(1.0 + (total - df + 0.5) / (df + 0.5)) for t, df in counts.items() if df}
        mean = max(1.0, float(sum(lengths.sum() for _, _, lengths in parts)) / total)
        for project, (rows, postings, lengths) in zip(used, parts, strict=True):
            scores = np.zeros(rows.num_rows, dtype=np.float32)
            # every row's length norm at once (elementwise: the same values as per term)
            norms = BM25_K1 * (1.0 - BM25_B + BM25_B * lengths / mean)
            for term, weight in idf.items():
                idx, tf = postings[term]
                if len(idx):
                    scores[idx] += weight * tf * (BM25_K1 + 1.0) / (tf + norms[idx])
            matched = np.flatnonzero(scores)
            if len(matched) > limit:
                matched = matched[np.argpartition(-scores[matched], limit)[:limit]]
            ids = self._id_maps(project, rows)[2]  # a list: no Arrow take per query
            hits += [(str(ids[i]), float(scores[i])) for i in matched.tolist()]
        hits.sort(key=lambda h: (-h[1], h[0]))
        return TextHits(total, counts, hits[:limit])

    def _entry_terms(self, project: str, rows: Any) -> tuple[Any, ...]:
        """The project's entry's term cache: (rows, postings by term, row lengths, postings
        kept, whether any text holds Chinese, its :class:`WordIndex` once a term missed),
        made on first use."""
        import numpy as np
        import pyarrow.compute as pc

        with self._lock:
            cached = self._terms.get(project)
            if cached is None or cached[0] is not rows:
                texts = rows.column("text")
                length = pc.utf8_length(texts).to_numpy(zero_copy_only=False)
                chinese = pc.any(pc.match_substring_regex(texts, CJK_CLASS)).as_py()
                cached = (rows, {}, length.astype(np.float32), [0], bool(chinese), [None])
                self._terms[project] = cached
        return cached

    def has_chinese(self, project: str) -> bool:
        """Whether any active memory of the project holds Chinese text (False when the cache
        does not hold the project)."""
        got = self.rows(project)
        return (
            got is not None and got[0].num_rows > 0 and bool(self._entry_terms(project, got[0])[4])
        )

    def _postings(
        self, project: str, rows: Any, terms: list[str]
    ) -> tuple[dict[str, tuple[Any, Any]], Any]:
        """Each term's postings in the project's entry ``rows`` (row numbers holding it, and
        how many times), and every row's length in characters; kept with the entry."""

        _, known, lengths, size, chinese, index = self._entry_terms(project, rows)
        out: dict[str, tuple[Any, Any]] = {}
        for term in terms:
            hit = known.get(term)
            if hit is None and not chinese and CJK_CHAR.search(term):
                hit = no_postings()  # a Chinese term in a project without Chinese text (most
                # English prompts bring some, from the zh<->en bridge): nothing to scan for
            if hit is None:
                if index[0] is None:
                    index[0] = WordIndex(rows.column("text"))
                hit = index[0].postings(term)
                if size[0] + len(hit[0]) <= POSTINGS_KEPT and len(known) < TERMS_KEPT:
                    known[term] = hit
                    size[0] += len(hit[0])
            out[term] = hit
        return out, lengths

    def _id_maps(self, project: str, rows: Any) -> tuple[Any, dict[str, int], list[str]]:
        """(``rows``, id -> row number, the ids by row number) of the project's entry
        ``rows``, built on first use."""
        with self._lock:
            cached = self._indexes.get(project)
            if cached is None or cached[0] is not rows:
                ids = rows.column("id").to_pylist()
                cached = (rows, {mid: i for i, mid in enumerate(ids)}, ids)
                self._indexes[project] = cached
        return cached

    def _located(
        self, projects: list[str], ids: list[str]
    ) -> Iterator[tuple[str, Any, Any, list[tuple[str, int]]]]:
        """For each project of ``projects`` whose cache entry holds some of ``ids``: (project,
        its rows, its (int8 codes, row scales), the (id, row number) pairs there). Each id is
        found once, in the first project that holds it; ids the cache does not hold are left
        out."""
        want = dict.fromkeys(ids)
        for project in dict.fromkeys(projects):
            got = self.rows(project) if want else None
            if got is None:
                continue
            rows, matrix = got
            index = self._id_maps(project, rows)[1]
            found = [(mid, i) for mid in want if (i := index.get(mid)) is not None]
            if found:
                for mid, _ in found:
                    del want[mid]
                yield project, rows, matrix, found

    def vectors_of(self, projects: list[str], ids: list[str]) -> dict[str, Any]:
        """The (dequantized) vector of each cached memory in ``ids`` (those of ``projects``)."""
        import numpy as np

        out: dict[str, Any] = {}
        for _, _, (codes, scales), found in self._located(projects, ids):
            for mid, i in found:
                out[mid] = codes[i].astype(np.float32) * scales[i]
        return out

    def memories_of(self, projects: list[str], ids: list[str]) -> dict[str, Memory]:
        """The cached rows (without topic, keywords or history) of the memories in ``ids``
        that are active in ``projects``; ids the cache does not hold are left out."""
        out: dict[str, Memory] = {}
        for project, rows, _, found in self._located(projects, ids):
            taken = self._memories(project, rows, [i for _, i in found])
            out.update(zip((mid for mid, _ in found), taken, strict=True))
        return out

    def _memories(self, project: str, rows: Any, indices: list[int]) -> list[Memory]:
        """The Memory of each row number of the project's entry ``rows``: made once per entry
        (reading rows and making Memory objects was ~1 ms of a hook: the same memories come up
        prompt after prompt). Callers read them, never change them."""
        with self._lock:
            cached = self._memos.get(project)
            if cached is None or cached[0] is not rows:
                cached = (rows, {})
                self._memos[project] = cached
        memos = cached[1]
        local = {i: m for i in indices if (m := memos.get(i)) is not None}
        missing = [i for i in indices if i not in local]
        if missing:
            fresh = [from_row(row) for row in row_dicts(rows, missing)]
            if len(memos) + len(missing) > MEMOS_KEPT:
                memos.clear()
            for i, memory in zip(missing, fresh, strict=True):
                local[i] = memos[i] = memory
        return [local[i] for i in indices]

    def cosines(self, vector: list[float], projects: list[str], ids: list[str]) -> dict[str, float]:
        """The cosine to ``vector`` of each cached memory in ``ids`` (those of ``projects``)."""
        import numpy as np

        query = np.asarray(vector, dtype=np.float32)
        out: dict[str, float] = {}
        for _, _, (codes, scales), found in self._located(projects, ids):
            at = np.fromiter((i for _, i in found), dtype=np.int64, count=len(found))
            sims = (codes[at] @ query) * scales[at]  # one product for all of them
            out.update(zip((mid for mid, _ in found), sims.tolist(), strict=True))
        return out

    def search(
        self, vector: list[float], projects: list[str], limit: int
    ) -> list[tuple[Memory, float]] | None:
        """The nearest active memories in ``projects`` with their cosine; None: not cacheable."""
        import numpy as np

        query = np.asarray(vector, dtype=np.float32)
        scored: list[tuple[float, int, int]] = []
        tables: list[Any] = []
        for project in dict.fromkeys(projects):
            got = self.rows(project)
            if got is None:
                return None
            rows, (codes, scales) = got
            if rows.num_rows == 0:
                continue
            sims = np.einsum("ij,j->i", codes, query) * scales
            n = rows.num_rows
            top = np.argpartition(-sims, limit)[:limit] if n > limit else np.arange(n)
            scored += [(float(sims[i]), len(tables), int(i)) for i in top]
            tables.append((project, rows))
        scored.sort(key=lambda t: -t[0])
        scored = scored[:limit]
        picked: dict[tuple[int, int], Memory] = {}
        for t, (project, rows) in enumerate(tables):
            indices = [i for _, which, i in scored if which == t]
            if indices:
                for i, memory in zip(indices, self._memories(project, rows, indices), strict=True):
                    picked[(t, i)] = memory
        out = []
        for sim, t, i in scored:
            memory = picked[(t, i)]
            if memory.status == "active":
                out.append((memory, sim))
        return out
