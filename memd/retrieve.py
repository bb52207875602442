"""Hybrid retrieval: vector and ICU full-text search, fused with RRF, then ranked and explained.

Every query is prefiltered by project (the asked project plus the user-wide scope) and status.
Each result carries a ``score_breakdown`` so a user can see why a memory came back.
"""

from __future__ import annotations

import math
import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

from memd.models import USER_SCOPE, Memory, check_kind
from memd.store import MemoryStore, sql_in

RRF_K = 60
TEXT_SEARCH = ThreadPoolExecutor(max_workers=2, thread_name_prefix="memd-fts")


@dataclass(frozen=True)
class Weights:
    """How the signals combine. Relevance dominates; the rest only reorders near-ties."""

    vector: float = 0.5
    text: float = 1.5
    """Full-text ranks weigh 3x vector ranks in the fusion: on LoCoMo (bench/locomo.py --tune),
    1:3 beat 1:1 by 2-5 points of recall@5 and @10 on each held-out half."""
    relevance: float = 0.80
    importance: float = 0.10
    recency: float = 0.05
    pinned: float = 0.05
    recency_half_life_days: float = 90.0


DEFAULT_WEIGHTS = Weights()
QUERY_NOISE = re.compile(
    r"^(?:(?:hey|hi|please|can you|could you|would you|tell me|do you (?:know|remember))\b[\s,]*)+",
    re.I,
)


def normalize_query(query: str) -> str:
    """Drop polite lead-ins and extra whitespace; keep the words that carry meaning."""
    q = " ".join(query.split())
    return QUERY_NOISE.sub("", q).strip() or q


def age_days(stamp: str, now: datetime) -> float:
    try:
        then = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return 365.0
    if then.tzinfo is None:
        then = then.replace(tzinfo=UTC)
    return max(0.0, (now - then).total_seconds() / 86400)


def where_clause(projects: list[str], kinds: list[str] | None, statuses: tuple[str, ...]) -> str:
    parts = [sql_in("project", projects), sql_in("status", statuses)]
    if kinds:
        parts.append(sql_in("kind", [check_kind(k) for k in kinds]))
    return " AND ".join(parts)


class VectorIndex(Protocol):
    """An in-memory vector index of active memories (``memd.inject.VectorCache``)."""

    def search(
        self, vector: list[float], projects: list[str], limit: int
    ) -> list[tuple[Memory, float]] | None: ...


def search(
    store: MemoryStore,
    query: str,
    projects: list[str],
    limit: int = 10,
    kinds: list[str] | None = None,
    statuses: tuple[str, ...] = ("active",),
    weights: Weights = DEFAULT_WEIGHTS,
    vector: list[float] | None = None,
    cache: VectorIndex | None = None,
) -> list[dict[str, Any]]:
    """Ranked results in the DESIGN.md shape, best first.

    With ``cache`` (the daemon's), the vector half of a search of active memories of any kind
    is a product over the cached int8 vectors instead of a LanceDB query (8 -> ~1 ms on
    LoCoMo); the cache holds no sources, so results found by it alone are read back by id.
    """
    query = normalize_query(query)
    if not query or store.table is None:
        return []
    scope = list(dict.fromkeys([*projects, USER_SCOPE]))
    where = where_clause(scope, kinds, statuses)
    depth = max(limit * 4, 40)
    # The full-text half runs in another thread while this one embeds and searches vectors
    # (LanceDB releases the GIL): 20 -> 16 ms p50 at 100k memories (bench/store.py).
    by_text_future = TEXT_SEARCH.submit(store.text_search, query, where, depth)
    qvec = vector if vector is not None else store.embedder.embed_one(query)
    by_vec = None
    if cache is not None and not kinds and tuple(statuses) == ("active",):
        by_vec = cache.search(qvec, scope, depth)
    from_cache = by_vec is not None
    if by_vec is None:
        by_vec = store.vector_search(qvec, where, depth)
    by_text = by_text_future.result()
    results = rank(by_vec, by_text, limit, weights)
    if from_cache:
        results = complete(store, results, {m.id for m, _ in by_text})
    return results


def complete(
    store: MemoryStore, results: list[dict[str, Any]], full: set[str]
) -> list[dict[str, Any]]:
    """Results with every field: those not in ``full`` (found in the cache alone) are read."""
    partial = [r["id"] for r in results if r["id"] not in full]
    if not partial:
        return results
    rows = {m.id: m for m in store.query(sql_in("id", partial), limit=len(partial))}
    out = []
    for r in results:
        if r["id"] in full:
            out.append(r)
            continue
        memory = rows.get(r["id"])
        if memory is not None and memory.status == "active":  # else it went meanwhile
            out.append(result_dict(memory, r["score"], r["score_breakdown"]))
    return out


def rank(
    by_vec: list[tuple[Memory, float]],
    by_text: list[tuple[Memory, float]],
    limit: int,
    weights: Weights = DEFAULT_WEIGHTS,
) -> list[dict[str, Any]]:
    memories: dict[str, Memory] = {}
    semantic: dict[str, float] = {}
    lexical: dict[str, float] = {}
    rrf: dict[str, float] = {}
    for rank_no, (memory, sim) in enumerate(by_vec, 1):
        memories[memory.id] = memory
        semantic[memory.id] = max(0.0, sim)
        rrf[memory.id] = rrf.get(memory.id, 0.0) + weights.vector / (RRF_K + rank_no)
    top_bm25 = max((s for _, s in by_text), default=0.0) or 1.0
    for rank_no, (memory, score) in enumerate(by_text, 1):
        memories[memory.id] = memory  # a full row (the vector half may be a cached one)
        lexical[memory.id] = score / top_bm25
        rrf[memory.id] = rrf.get(memory.id, 0.0) + weights.text / (RRF_K + rank_no)
    best_rrf = (weights.vector + weights.text) / (RRF_K + 1)
    now = datetime.now(UTC)
    results = []
    for mid, memory in memories.items():
        relevance = rrf[mid] / best_rrf
        recency = math.pow(
            0.5,
            age_days(memory.updated_at or memory.created_at, now) / weights.recency_half_life_days,
        )
        total = (
            weights.relevance * relevance
            + weights.importance * memory.importance
            + weights.recency * recency
            + (weights.pinned if memory.pinned else 0.0)
        )
        breakdown = {
            "semantic": round(semantic.get(mid, 0.0), 4),
            "lexical": round(lexical.get(mid, 0.0), 4),
            "rrf": round(relevance, 4),
            "recency": round(recency, 4),
            "importance": round(memory.importance, 4),
            "pinned": memory.pinned,
            "total": round(total, 4),
        }
        results.append(result_dict(memory, total, breakdown))
    results.sort(key=lambda r: (-r["score"], r["id"]))
    return results[:limit]


def result_dict(memory: Memory, score: float, breakdown: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": memory.id,
        "text": memory.text,
        "kind": memory.kind,
        "project": memory.project,
        "topic": memory.topic,
        "keywords": memory.keywords,
        "importance": memory.importance,
        "status": memory.status,
        "score": round(score, 4),
        "pinned": memory.pinned,
        "created_at": memory.created_at,
        "updated_at": memory.updated_at,
        "hits": memory.hits,
        "score_breakdown": breakdown,
        "sources": [s.__dict__ for s in memory.sources],
    }


def explain(result: dict[str, Any]) -> str:
    """One line saying why a result was chosen."""
    b = result["score_breakdown"]
    parts = [
        f"semantic {b['semantic']:.2f}",
        f"lexical {b['lexical']:.2f}",
        f"rrf {b['rrf']:.2f}",
        f"importance {b['importance']:.2f}",
        f"recency {b['recency']:.2f}",
    ]
    if b.get("pinned"):
        parts.append("pinned")
    return f"total {b['total']:.3f} = " + ", ".join(parts)
