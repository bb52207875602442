"""The memory store's I/O: one LanceDB table under $MEMD_HOME, read and written through the
journal it can be rebuilt from (re-embedding and rebuilding: :mod:`memd.store.rebuild`).

Only one process writes (the daemon, or the CLI under the writer lock). Writes are batched:
each call to ``write`` is one journal append and one ``merge_insert``.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from memd.atomic import write_atomic
from memd.embedding.embed import Embedder, unglossed
from memd.errors import ModelMismatch, NotFound, SchemaTooNew, StoreError
from memd.models import Memory, now_iso
from memd.store.filters import Filter, clause, contains, is_in, literal, match
from memd.store.journal import Journal
from memd.store.keyindex import KeyIndex
from memd.store.layout import (
    READ_COLUMNS,
    TABLE,
    build_ann,
    counts,
    ensure_indexes,
    from_row,
    fts_query,
    schema,
    table_stats,
    to_row,
)

if TYPE_CHECKING:
    from memd.settings import Settings
    from memd.store.upsert import Near

log = logging.getLogger(__name__)

AMBIGUOUS_SHOWN = 10
"""How many matches an ambiguous id prefix lists."""
META_FILE = "memd-meta.json"
STORE_VERSION = 2
"""The store's schema version (``schema_version`` in the meta file), migrated by
:mod:`memd.store.migrations`. 0: before versions existed. 1: the same layout, versioned.
2: ``subject`` and ``value`` columns (what a stated value belongs to, and the value)."""


class MemoryStore:
    """LanceDB table + journal + embedding model. Build it cheaply, then ``open()``."""

    def __init__(
        self,
        settings: Settings,
        embedder: Embedder | None = None,
        *,
        keep_keys: bool = False,
        near: Callable[[MemoryStore], Near] | None = None,
    ) -> None:
        """``keep_keys`` and ``near`` are the daemon's: a one-shot process reads the table."""
        self.settings = settings
        self.root = settings.home / "store"
        self.journal = Journal(settings.home / "journal.jsonl")
        self.embedder = embedder or Embedder(settings)
        self._db: Any = None
        self._table: Any = None
        self._columns: tuple[Any, list[str]] = (None, [])
        self._write_lock = threading.RLock()
        self.writes_since_optimize = 0
        self.mutations = 0
        """Bumped by every change this process makes to the table (LanceDB's own ``version``
        costs a round trip through its event loop, ~0.4 ms, on every read of it)."""
        self.keys: KeyIndex | None = KeyIndex(self) if keep_keys else None
        """The daemon's in-memory list keys and counts (:mod:`memd.store.keyindex`), told of every
        change below; None in a one-shot process, which reads the table instead."""
        self.near: Near | None = near(self) if near is not None else None
        """The daemon's ids nearest a vector in one project, from its vector cache (upsert's
        neighbours without LanceDB's index in memory); None: search the table."""

    # ---- lifecycle
    def open(self, *, check_model: bool = True) -> MemoryStore:
        import lancedb

        self.check_version()
        self.settings.home.mkdir(parents=True, exist_ok=True)
        self.settings.home.chmod(0o700)
        try:
            # The index cache must hold the ANN index: at 100k rows IVF_HNSW_SQ needs ~60 MB,
            # and a 32 MB cache reloaded it on every query (98 ms instead of 6 ms).
            session = lancedb.Session(
                index_cache_size_bytes=128 << 20, metadata_cache_size_bytes=32 << 20
            )
            self._db = lancedb.connect(self.root, session=session)
            self._table = None
            if TABLE in self._db.list_tables().tables:
                self._table = self._db.open_table(TABLE)
            self.mutations += 1
        except Exception as exc:
            raise StoreError(
                f"cannot open the memory table in {self.root}: {exc}; "
                "run `memd doctor --repair` to rebuild it from the journal"
            ) from exc
        if check_model:
            self.check_model()
        return self

    def read_columns(self) -> list[str]:
        """The memory columns the table has: a reader may open a store that an older memd
        wrote before a writer migrates it (:mod:`memd.store.migrations`)."""
        table = self._table
        if self._columns[0] is not table:
            names = set(table.schema.names) if table is not None else set()
            self._columns = (table, [c for c in READ_COLUMNS if c in names])
        return self._columns[1]

    def close(self) -> None:
        self._table = None
        self._db = None
        self.mutations += 1

    @property
    def write_lock(self) -> threading.RLock:
        """Held by every write; hold it across a read-modify-write so no other write slips in."""
        return self._write_lock

    @property
    def table(self) -> Any:
        if self._db is None:
            raise StoreError("the store is not open")
        return self._table

    def meta(self) -> dict[str, Any]:
        try:
            return dict(json.loads((self.root / META_FILE).read_text()))
        except FileNotFoundError:
            return {}
        except ValueError as exc:
            raise StoreError(f"{self.root / META_FILE} is damaged: {exc}") from exc

    def check_version(self) -> None:
        """Refuse a store written by a newer memd, before anything touches it."""
        try:
            version = int(self.meta().get("schema_version", 0))
        except (StoreError, TypeError, ValueError):
            return  # a damaged meta file: check_model and doctor report it
        if version > STORE_VERSION:
            raise SchemaTooNew(
                f"the memory store in {self.root} has schema version {version}, but this memd "
                f"only knows up to {STORE_VERSION}: it was written by a newer memd. Upgrade "
                "memd (or restore a backup); memd leaves it untouched."
            )

    def write_meta(self, *, new_table: bool = False) -> None:
        """Record the model (and, for a table this code created, the schema version)."""
        self.root.mkdir(parents=True, exist_ok=True)
        try:
            meta = self.meta()
        except StoreError:
            meta = {}  # damaged: rewritten whole
        meta.update({"model_id": self.embedder.model_id, "dim": self.embedder.dim})
        if new_table:
            meta["schema_version"] = STORE_VERSION
        write_atomic(self.root / META_FILE, json.dumps(meta), mode=0o644)

    def check_model(self) -> None:
        stored = self.meta().get("model_id")
        current = self.embedder.model_id
        # Before glossing or another gloss: only Chinese texts' vectors differ (redone at start).
        if self._table is not None and stored and unglossed(stored) != unglossed(current):
            raise ModelMismatch(
                f"the store holds vectors from {stored!r} but the configured model is "
                f"{self.embedder.model_id!r}; run `memd reindex` to re-embed"
            )

    def ensure_table(self, dim: int) -> Any:
        """The table, created (with the meta file) on the first write."""
        if self._table is None:
            self._table = self._db.create_table(TABLE, schema=schema(dim))
            self.write_meta(new_table=True)
        return self._table

    def drop_table(self) -> None:
        """Drop the table (its rows are still in the journal): before a reload of every row."""
        self.mutations += 1
        if self._table is not None:
            self._db.drop_table(TABLE)
            self._table = None

    # ---- reads
    def count(self, where: Filter | None = None) -> int:
        if self._table is None:
            return 0
        return int(self._table.count_rows(where.sql) if where else self._table.count_rows())

    def query(self, where: Filter | None, limit: int | None = None) -> list[Memory]:
        if self._table is None:
            return []
        q = self._table.search().select(self.read_columns())
        if where:
            q = q.where(where.sql)
        q = q.limit(limit if limit is not None else max(1, self.count(where)))
        return [from_row(r) for r in q.to_list()]

    def rows_with_vectors(self, ids: Iterable[str]) -> dict[str, dict[str, Any]]:
        ids = list(set(ids))
        if self._table is None or not ids:
            return {}
        rows = self._table.search().where(is_in("id", ids).sql).limit(len(ids)).to_list()
        return {r["id"]: r for r in rows}

    def document_frequencies(self, where: Filter, terms: list[str]) -> tuple[int, dict[str, int]]:
        """(rows matching ``where``, how many of them contain each term in their text, as a
        lower-cased substring; give the terms lower-cased): the table's answer when no vector
        cache holds the project."""
        # The daemon remembers them until a text, project, kind or status changes (not across
        # a pin or a hit count): each is a scan of the texts, ~10-40 ms apiece at 100k.
        memo = self.keys.memo() if self.keys is not None else {}
        if memo is None:
            memo = {}
        total = memo.get((where, None))
        if total is None:
            total = memo[(where, None)] = self.count(where)
        counts = {}
        for term in terms:
            n = memo.get((where, term))
            if n is None:
                n = memo[(where, term)] = self.count(where & contains("text", term, fold_case=True))
            counts[term] = n
        return total, counts

    def cosines(self, vector: Sequence[float], ids: Iterable[str]) -> dict[str, float]:
        """The cosine of each stored memory in ``ids`` to ``vector`` (stored vectors are unit)."""
        import numpy as np

        ids = list(set(ids))
        if self._table is None or not ids:
            return {}
        # Only the ids and vectors, as Arrow: turning ~80 vectors into Python lists of floats
        # (every column, as rows_with_vectors reads them) cost ~100 ms per search at 100k.
        found = (
            self._table.search()
            .where(is_in("id", ids).sql)
            .select(["id", "vector"])
            .limit(len(ids))
            .to_arrow()
        )
        if found.num_rows == 0:
            return {}
        column = found.column("vector").combine_chunks()
        matrix = column.flatten().to_numpy(zero_copy_only=False).reshape(found.num_rows, -1)
        sims = matrix.astype(np.float32) @ np.asarray(vector, dtype=np.float32)
        return {
            str(mid): float(sim)
            for mid, sim in zip(found.column("id").to_pylist(), sims, strict=True)
        }

    def get(self, ref: str) -> Memory:
        """A memory by id, or by a unique id prefix of at least 4 characters."""
        ref = ref.strip()
        if re.fullmatch(r"[0-9a-f]{1,3}", ref):
            raise NotFound(f"id prefix {ref!r} is too short: give at least 4 characters")
        if not re.fullmatch(r"[0-9a-f]{4,64}", ref):
            raise NotFound(f"no memory with id {ref!r}")
        found = self.query(match(id=ref), limit=1)
        if not found and len(ref) < 16:
            found = self.query(clause("starts_with(id, ?)", ref), limit=AMBIGUOUS_SHOWN + 1)
            if len(found) > 1:
                more = " (and more)" if len(found) > AMBIGUOUS_SHOWN else ""
                shown = "".join(
                    f"\n  {m.id[:12]}  {m.kind:<10} {m.text[:70]}" for m in found[:AMBIGUOUS_SHOWN]
                )
                raise NotFound(
                    f"id prefix {ref!r} matches several memories{more}; "
                    f"give more characters:{shown}"
                )
        if not found:
            raise NotFound(f"no memory with id {ref!r}")
        return found[0]

    def vector_search(
        self, vector: Sequence[float], where: Filter, limit: int
    ) -> list[tuple[Memory, float]]:
        if self._table is None:
            return []
        rows = (
            self._table.search(list(vector), vector_column_name="vector")
            .distance_type("cosine")
            .where(where.sql, prefilter=True)
            .select([*self.read_columns(), "_distance"])
            .limit(limit)
            .to_list()
        )
        return [(from_row(r), 1.0 - float(r["_distance"])) for r in rows]

    def text_search(self, text: str, where: Filter, limit: int) -> list[tuple[Memory, float]]:
        rows = self._text_rows(text, where, limit, self.read_columns())
        return [(from_row(r), float(r.get("_score") or 0.0)) for r in rows]

    def _text_rows(
        self, text: str, where: Filter, limit: int, columns: list[str]
    ) -> list[dict[str, Any]]:
        query = fts_query(text)
        if self._table is None or not query:
            return []
        try:
            rows: list[dict[str, Any]] = (
                self._table.search(query, query_type="fts", fts_columns="search_text")
                .where(where.sql, prefilter=True)
                .select([*columns, "_score"])
                .limit(limit)
                .to_list()
            )
        except Exception as exc:  # no FTS index yet, or a query the parser refuses
            log.debug("full-text search skipped: %s", exc)
            return []
        return rows

    # ---- writes
    @contextmanager
    def _journaled(self, entries: list[dict[str, Any]], failed: str) -> Iterator[int]:
        """One change to the table, journal first (the caller holds the write lock): a failure
        of the table takes the entries back out of the journal and raises ``StoreError``
        starting with ``failed``. Yields the mutation count from before the change."""
        before = self.mutations
        mark = self.journal.size()
        self.journal.append(entries)
        try:
            yield before
        except Exception as exc:
            self.journal.truncate(mark)
            raise StoreError(f"{failed}: {exc}") from exc
        finally:
            self.mutations += 1

    def write(
        self,
        memories: list[Memory],
        vectors: dict[str, Sequence[float]],
        *,
        same_text: bool = False,
    ) -> None:
        """Journal, then one merge_insert. All or nothing: a failed write leaves no trace.

        ``same_text``: the caller changed no memory's text (the key index then keeps what it
        derived from the texts)."""
        if not memories:
            return
        with self._write_lock:
            missing = [m for m in memories if m.id not in vectors]
            if missing:
                fresh = self.embedder.embed([m.text for m in missing])
                vectors = {**vectors, **{m.id: v for m, v in zip(missing, fresh, strict=True)}}
            rows = [to_row(m, vectors[m.id]) for m in memories]
            journaled = [{"op": "put", "m": m.to_dict()} for m in memories]
            with self._journaled(journaled, "write failed, nothing was stored") as before:
                tbl = self.ensure_table(len(rows[0]["vector"]))
                data = pa.Table.from_pylist(rows, schema=tbl.schema)
                if tbl.count_rows(is_in("id", [m.id for m in memories]).sql) == 0:
                    # All new (the usual case for ingest and imports): a plain append, which
                    # needs far less memory than merge_insert's join against the whole table.
                    tbl.add(data)
                else:
                    (
                        tbl.merge_insert("id")
                        .when_matched_update_all()
                        .when_not_matched_insert_all()
                        .execute(data)
                    )
            if self.keys is not None:
                self.keys.put(memories, before, same_text)
            self.writes_since_optimize += len(rows)
            ensure_indexes(self._table)

    def delete(self, ids: Sequence[str]) -> None:
        if not ids or self._table is None:
            return
        with self._write_lock:
            entries = [{"op": "del", "id": i} for i in ids]
            with self._journaled(entries, "delete failed") as before:
                self._table.delete(is_in("id", ids).sql)
            if self.keys is not None:
                self.keys.remove(ids, before)

    def touch(self, ids: Sequence[str]) -> None:
        """hits += 1 and last_used_at = now for many ids, in one update."""
        ids = sorted(set(ids))
        if not ids or self._table is None:
            return
        at = now_iso()
        with self._write_lock:  # one SQL update (hits + 1): atomic, and ordered with writes
            entries = [{"op": "touch", "ids": ids, "at": at}]
            with self._journaled(entries, "touch failed, nothing was stored") as before:
                self._table.update(
                    where=is_in("id", ids).sql,
                    values_sql={"hits": "hits + 1", "last_used_at": literal(at)},
                )
            if self.keys is not None:
                self.keys.touched(ids, before)

    def update_fields(self, updates: dict[str, dict[str, Any]]) -> None:
        """Set plain fields (score, status, ...) on many memories, as one atomic rewrite."""
        if not updates:
            return
        with self._write_lock:  # the rows read are the rows rewritten: no write in between
            rows = self.rows_with_vectors(updates)
            changed: list[Memory] = []
            vectors: dict[str, Sequence[float]] = {}
            for mid, fields in updates.items():
                if mid not in rows:
                    continue
                memory = from_row(rows[mid])
                for key, value in fields.items():
                    setattr(memory, key, value)
                changed.append(memory)
                vectors[mid] = rows[mid]["vector"]
            same_text = not any("text" in fields for fields in updates.values())
            self.write(changed, vectors, same_text=same_text)

    # ---- maintenance
    def table_stats(self) -> dict[str, Any]:
        return table_stats(self._table)

    def optimize(self, retries: int = 3) -> dict[str, Any]:
        """Compact, drop old versions, refresh indexes. Holds the write lock: never races."""
        if self._table is None:
            return {"skipped": "empty"}
        with self._write_lock:
            unchanged_since = self.mutations
            self.mutations += 1
            before = self.table_stats()
            for attempt in range(retries):
                try:
                    self._table.checkout_latest()
                    with warnings.catch_warnings():
                        # We are the only writer; dropping every old version is the point.
                        warnings.simplefilter("ignore", UserWarning)
                        self._table.optimize(cleanup_older_than=timedelta(0))
                    break
                except Exception as exc:
                    if "onflict" not in str(exc) or attempt == retries - 1:
                        raise StoreError(f"optimize failed: {exc}") from exc
                    time.sleep(0.2 * (attempt + 1))
            ensure_indexes(self._table)
            build_ann(self._table, self.settings.ann_index_min_rows)
            self.compact_journal()
            self.writes_since_optimize = 0
            self.mutations += 1
            if self.keys is not None:  # the same rows, compacted
                self.keys.carry(unchanged_since)
            return {"before": before, "after": self.table_stats()}

    def compact_journal(self, slack: int = 3) -> bool:
        """Rewrite the journal as one entry per live memory once it has grown ``slack``× that."""
        rows = self.count()
        if self.journal.lines() <= slack * rows + 1000:
            return False
        self.journal.rewrite(self.query(None))
        return True

    def stats(self) -> dict[str, Any]:
        """Counts for `memd status`: total, by project, by kind, by status."""
        if self._table is not None and self.keys is not None:  # the daemon: in memory, exact
            return self.keys.counts()
        return counts(self._table)
