"""Rebuilding the memory table's vectors and rows: re-embedding after a model change (all
memories, or only those with Chinese text after a gloss change), and recreating the table from
the journal after a crash left it unreadable (`memd doctor --repair`).

Texts, ids, sources, pins and history are kept; only vectors, the model id and the table's
files change. The journal still holds every memory, so an interrupted rebuild is repaired by
`memd doctor --repair`.
"""

from __future__ import annotations

import logging
import shutil
import time
from typing import TYPE_CHECKING

import pyarrow as pa

from memd.embedding.embed import unglossed
from memd.models import Memory
from memd.store.filters import clause
from memd.store.layout import ensure_indexes, to_row
from memd.text.chinese import CJK_CLASS

if TYPE_CHECKING:
    from memd.store.table import MemoryStore

log = logging.getLogger(__name__)

BATCH = 512
"""Memories embedded and appended at a time by a reload."""


def migrate_model(store: MemoryStore) -> int | None:
    """Re-embed every memory when the table was written with another model (the daemon does
    this at start after the default model changed); only those with Chinese text when it was
    this model before it glossed Chinese or with another gloss (``GLOSS_SUFFIX``). Returns how
    many memories were re-embedded, or None when nothing had to change."""
    stored = store.meta().get("model_id")
    if store.table is None or not stored or stored == store.embedder.model_id:
        return None
    started = time.monotonic()
    partial = unglossed(stored) == unglossed(store.embedder.model_id)  # only Chinese differs
    log.warning(
        "the store holds vectors from %s; re-embedding %s with %s",
        stored,
        "the memories with Chinese text" if partial else "every memory",
        store.embedder.model_id,
    )
    count = reembed_chinese(store) if partial else reindex(store)
    log.warning(
        "re-embedded %d memories with %s in %.1f s",
        count,
        store.embedder.model_id,
        time.monotonic() - started,
    )
    return count


def reembed_chinese(store: MemoryStore) -> int:
    """Re-embed the memories whose text holds Chinese (their vectors, nothing else)."""
    where = clause("regexp_like(text, ?)", CJK_CLASS)
    chinese = store.query(where) if store.table is not None else []
    for start in range(0, len(chinese), 256):
        store.write(chinese[start : start + 256], {}, same_text=True)
    store.write_meta()
    return len(chinese)


def reindex(store: MemoryStore) -> int:
    """Re-embed every memory with the configured model (after a model change)."""
    memories = store.query(None)
    store.drop_table()
    bulk_load(store, memories)
    return len(memories)


def rebuild_from_journal(store: MemoryStore) -> int:
    """Recreate the table from the journal (after a crash left it unreadable); the broken
    table is moved aside, not deleted."""
    store.check_version()  # a newer memd's store is never rebuilt by this one
    memories = list(store.journal.replay().values())
    broken = store.root.with_name(f"store.broken-{int(time.time())}")
    if store.root.exists():
        shutil.move(str(store.root), broken)
    store.open(check_model=False)
    store.journal.rewrite(memories)
    bulk_load(store, memories)
    return len(memories)


def bulk_load(store: MemoryStore, memories: list[Memory]) -> None:
    """Embed and append ``memories`` to an empty (or absent) table, a batch at a time; the
    journal already holds them."""
    store.mutations += 1
    store.embedder.load()
    for start in range(0, len(memories), BATCH):
        chunk = memories[start : start + BATCH]
        vecs = store.embedder.embed([m.text for m in chunk])
        rows = [to_row(m, v) for m, v in zip(chunk, vecs, strict=True)]
        tbl = store.ensure_table(len(rows[0]["vector"]))
        tbl.add(pa.Table.from_pylist(rows, schema=tbl.schema))
    tbl = store.ensure_table(store.embedder.dim)
    store.write_meta()
    ensure_indexes(tbl)
