"""The memories table's layout in LanceDB: its Arrow schema, the mapping between a
:class:`~memd.models.Memory` and a row, the indexes it carries, and its storage statistics.

:class:`memd.store.table.MemoryStore` reads and writes the table through these; nothing here opens,
locks or journals anything.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from memd.models import Memory, Source

log = logging.getLogger(__name__)

TABLE = "memories"
READ_COLUMNS = [
    "id",
    "text",
    "kind",
    "project",
    "topic",
    "keywords",
    "importance",
    "pinned",
    "status",
    "superseded_by",
    "created_at",
    "updated_at",
    "last_used_at",
    "hits",
    "score",
    "sources",
    "history",
    "subject",
    "value",
]


def schema(dim: int) -> pa.Schema:
    source = pa.struct(
        [("session_id", pa.string()), ("uuid", pa.string()), ("timestamp", pa.string())]
    )
    return pa.schema(
        [
            ("id", pa.string()),
            ("text", pa.string()),
            ("search_text", pa.string()),
            ("kind", pa.string()),
            ("project", pa.string()),
            ("topic", pa.string()),
            ("keywords", pa.list_(pa.string())),
            ("importance", pa.float32()),
            ("pinned", pa.bool_()),
            ("status", pa.string()),
            ("superseded_by", pa.string()),
            ("created_at", pa.string()),
            ("updated_at", pa.string()),
            ("last_used_at", pa.string()),
            ("hits", pa.int32()),
            ("score", pa.float32()),
            ("sources", pa.list_(source)),
            ("history", pa.string()),
            ("vector", pa.list_(pa.float32(), dim)),
            ("subject", pa.string()),
            ("value", pa.string()),
        ]
    )


def search_text(memory: Memory) -> str:
    """What the full-text index sees: the text plus topic and keywords."""
    extra = " ".join([memory.topic, *memory.keywords]).strip()
    return f"{memory.text}\n{extra}" if extra else memory.text


def to_row(memory: Memory, vector: Sequence[float]) -> dict[str, Any]:
    return {
        "id": memory.id,
        "text": memory.text,
        "search_text": search_text(memory),
        "kind": memory.kind,
        "project": memory.project,
        "topic": memory.topic,
        "keywords": list(memory.keywords),
        "importance": float(memory.importance),
        "pinned": bool(memory.pinned),
        "status": memory.status,
        "superseded_by": memory.superseded_by,
        "created_at": memory.created_at,
        "updated_at": memory.updated_at,
        "last_used_at": memory.last_used_at,
        "hits": int(memory.hits),
        "score": float(memory.score),
        "sources": [s.__dict__ for s in memory.sources],
        "history": json.dumps(memory.history, ensure_ascii=False),
        "vector": list(vector),
        "subject": memory.subject,
        "value": memory.value,
    }


def from_row(row: dict[str, Any]) -> Memory:
    data = {k: row[k] for k in READ_COLUMNS if k in row}
    data["sources"] = [Source.from_dict(s) for s in row.get("sources") or []]
    data["history"] = json.loads(row.get("history") or "[]")
    data["keywords"] = list(row.get("keywords") or [])
    return Memory(**data)


FTS_CLEAN = re.compile(r"[^\w\s]+", re.UNICODE)


def fts_query(text: str) -> str:
    """Query text with the full-text parser's operators removed."""
    cleaned = FTS_CLEAN.sub(" ", text)
    return " ".join(w for w in cleaned.split() if w.upper() not in {"AND", "OR", "NOT"})[:1000]


def ensure_indexes(tbl: Any) -> None:
    """Scalar indexes on id/project/status/kind and the ICU full-text index, once."""
    from lancedb.index import FTS, Bitmap, BTree

    if tbl is None or tbl.count_rows() == 0:
        return
    have = {tuple(i.columns) for i in tbl.list_indices()}
    wanted = [
        ("id", BTree()),
        ("project", Bitmap()),
        ("status", Bitmap()),
        ("kind", Bitmap()),
        ("search_text", FTS(base_tokenizer="icu", with_position=False)),
    ]
    for column, config in wanted:
        if (column,) not in have:
            tbl.create_index(column, config=config, replace=True)


def build_ann(tbl: Any, min_rows: int) -> None:
    """The ANN vector index (IVF_HNSW_SQ, cosine), once the table holds ``min_rows`` rows."""
    rows = int(tbl.count_rows())
    if rows < min_rows:
        return
    have = {tuple(i.columns) for i in tbl.list_indices()}
    if ("vector",) in have:
        return
    from lancedb.index import HnswSq

    log.info("building the ANN vector index over %d rows", rows)
    tbl.create_index("vector", config=HnswSq(distance_type="cosine"), replace=True)


def table_stats(tbl: Any) -> dict[str, Any]:
    """Rows, version and fragments of the table (zeros when there is none yet)."""
    if tbl is None:
        return {"rows": 0, "version": 0, "fragments": 0}
    stats = tbl.stats()
    frag = getattr(stats, "fragment_stats", None) or (
        stats.get("fragment_stats") if isinstance(stats, dict) else None
    )
    fragments = getattr(frag, "num_fragments", None)
    if fragments is None and isinstance(frag, dict):
        fragments = frag.get("num_fragments")
    return {"rows": tbl.count_rows(), "version": tbl.version, "fragments": fragments}


def counts(tbl: Any) -> dict[str, Any]:
    """Rows in all, by project, by kind and by status (one scan of those three columns)."""
    out: dict[str, Any] = {"total": 0, "by_project": {}, "by_kind": {}, "by_status": {}}
    if tbl is None:
        return out
    arrow = (
        tbl.search()
        .select(["project", "kind", "status"])
        .limit(max(1, int(tbl.count_rows())))
        .to_arrow()
    )
    for name, key in (("by_project", "project"), ("by_kind", "kind"), ("by_status", "status")):
        found = arrow.group_by(key).aggregate([(key, "count")]).to_pylist()
        out[name] = {c[key]: c[f"{key}_count"] for c in found}
    out["total"] = arrow.num_rows
    out["active"] = out["by_status"].get("active", 0)
    return out
