"""The one recall path: candidates, fusion and the relevance decision, for every caller.

``search`` (CLI, MCP, viewer), the prompt hook and the session brief all go through
:func:`recall`, so ``memd search --explain``, the hook's DEBUG line and the ``context`` preview
show the same numbers for the same memory.

1. **Candidates.** The nearest memories by vector (the daemon's int8 vector cache, or the table)
   and the best by full text (BM25 over the vector cache's texts, or LanceDB's ICU index for
   what the cache does not hold; the prompt's zh<->en translations searched too,
   :mod:`memd.text.bridge`), prefiltered by project (the asked project plus the user-wide scope)
   and status.
2. **Signals.** For every candidate: ``semantic``, its cosine to the query mapped onto the
   model's calibrated scale (0 = what unrelated texts score with this model, 1 = what clearly
   related ones score), and ``lexical``, the share of the query's meaningful terms it carries,
   each term weighted by how rare it is among the project's memories (:mod:`memd.recall.lexical`);
   for a memory in the other language (zh<->en), the larger of that and the share of the
   memory's own terms the prompt carries (:func:`memd.text.crossterms.reverse_coverage`). Both are
   absolute: neither depends on the other candidates.
3. **Relevance** = the semantic signal, raised by the mean of both when the words match too. A memory is *relevant* when its relevance reaches
   ``relevance_threshold`` (excerpts, being raw turns, need ``excerpt_margin`` more). Only
   relevant memories are searched out or injected: an unrelated prompt gets nothing.
4. **Order.** ``total`` mixes relevance with the rank fusion (RRF over both lists: the BM25 rank
   carries term rarity, which the absolute signals do not), importance, recency and pinning.
"""

from __future__ import annotations

import math
import re
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from memd import kinds
from memd.models import USER_SCOPE, Memory, check_kind
from memd.recall import lexical, synonyms
from memd.recall.hits import BriefScore, Hit, Relevance
from memd.store.filters import Filter, is_in, match
from memd.store.table import MemoryStore
from memd.text import TEXT_CACHE, bridge, crossterms, searchterms
from memd.text.chinese import is_chinese
from memd.timestamps import epoch_seconds

if TYPE_CHECKING:
    from collections.abc import Callable
    from concurrent.futures import Future

    from memd.recall.vectors import VectorCache

RRF_K = 60
BROAD_KINDS = kinds.names("broad")
"""Raw turns and session summaries: broad texts that share words with many prompts, so they
need ``excerpt_margin`` more relevance than a typed memory."""
TEXT_SEARCH = ThreadPoolExecutor(max_workers=2, thread_name_prefix="memd-fts")
QUERY_HEAD = 400
QUERY_TAIL = 200


@dataclass(frozen=True)
class Calibration:
    """Where a model's cosines fall: ``unrelated`` is a high percentile of unrelated pairs,
    ``related`` a typical related pair. Cosines map linearly from one to the other onto 0..1."""

    unrelated: float = 0.15
    related: float = 0.60
    cross: tuple[float, float] | None = None
    """(unrelated, related) for a prompt and a memory in different languages (zh/en), where a
    multilingual model's related pairs score lower; None: one scale for every pair."""
    cross_lexical: float = 1.0
    """For a prompt and a memory in different languages, the lexical coverage that counts as
    full: the zh<->en bridge carries only part of what a sentence says in the other language
    (:data:`memd.embedding.spec.ModelSpec.cross_lexical`; 1.0: the coverage as is)."""
    reads_chinese: bool = True
    """False for an English-only model: its cosines between Chinese texts say nothing (two
    unrelated Chinese sentences score 0.47-0.57 with MiniLM, as much as related English ones),
    so a pair with Chinese on either side gets no semantic signal and only its words count."""

    def scale(
        self, cosine: float, unrelated: float | None = None, related: float | None = None
    ) -> float:
        low = self.unrelated if unrelated is None else unrelated
        span = max(1e-6, (self.related if related is None else related) - low)
        return min(1.0, max(0.0, (cosine - low) / span))

    def scale_pair(
        self, cosine: float, query_zh: bool, text: str, text_zh: bool | None = None
    ) -> float:
        """``text_zh``: whether ``text`` is Chinese, when the caller knows already."""
        if text_zh is None:
            text_zh = is_chinese(text)
        if not self.reads_chinese and (query_zh or text_zh):
            return 0.0
        if self.cross is not None and text_zh != query_zh:
            return self.scale(cosine, *self.cross)
        return self.scale(cosine)


DEFAULT_CALIBRATION = Calibration()


@dataclass(frozen=True)
class Weights:
    """How the signals combine."""

    semantic: float = 0.5
    lexical: float = 0.5
    """Relevance = max(semantic, semantic·0.5 + lexical·0.5): words shared with the prompt can
    only add to what the meaning says, so a memory with the same meaning in other words (or
    another language) is found, and a memory that only shares a word or two is not."""
    threshold: float = 0.30
    excerpt_margin: float = 0.05
    """Excerpts (raw turns) and summaries need this much more relevance than typed memories."""
    vector: float = 0.5
    text: float = 1.0
    """Rank-fusion weights of the two candidate lists."""
    rank_mix: float = 0.6
    """Share of the rank fusion in the ordering, beside relevance."""
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
    """Drop polite lead-ins and extra whitespace; keep the head and tail of a long prompt.

    Embedding cost grows with tokens (a 200-word prompt took 98 ms here, 12 words 15 ms), and
    long prompts are mostly pasted material between the request at the start and the question
    at the end."""
    q = "\n".join(" ".join(line.split()) for line in query.splitlines() if line.strip())
    q = QUERY_NOISE.sub("", q).strip() or q
    if len(q) > QUERY_HEAD + QUERY_TAIL:
        q = q[:QUERY_HEAD] + " … " + q[-QUERY_TAIL:]
    return q


def age_days(stamp: str, now: datetime | float) -> float:
    then, seconds = epoch_seconds(stamp), now if isinstance(now, float) else now.timestamp()
    return 365.0 if then is None else max(0.0, (seconds - then) / 86400)


def where_clause(projects: list[str], kinds: list[str] | None, statuses: tuple[str, ...]) -> Filter:
    where = match(project=projects, status=statuses)
    return where & match(kind=[check_kind(k) for k in kinds]) if kinds else where


def weights_from(settings: Any) -> Weights:
    """The weights with the user's threshold (``relevance_threshold``)."""
    threshold = getattr(settings, "relevance_threshold", None)
    if threshold is None:
        return DEFAULT_WEIGHTS
    return Weights(threshold=float(threshold))


def calibration_of(embedder: Any) -> Calibration:
    raw = getattr(embedder, "calibration", None)
    if isinstance(raw, Calibration):
        return raw
    if isinstance(raw, tuple) and len(raw) == 2:
        cross = getattr(embedder, "cross_calibration", None)
        if not (isinstance(cross, tuple) and len(cross) == 2):
            cross = None
        reads = bool(getattr(embedder, "reads_chinese", True))
        lexical_scale = getattr(embedder, "cross_lexical", 1.0)
        if not isinstance(lexical_scale, (int, float)) or not 0 < lexical_scale <= 1:
            lexical_scale = 1.0
        return Calibration(float(raw[0]), float(raw[1]), cross, float(lexical_scale), reads)
    return DEFAULT_CALIBRATION


def recall(
    store: MemoryStore,
    query: str,
    projects: list[str],
    *,
    depth: int = 40,
    kinds: list[str] | None = None,
    statuses: tuple[str, ...] = ("active",),
    weights: Weights = DEFAULT_WEIGHTS,
    vector: list[float] | None = None,
    vectors: VectorCache | None = None,
    embed_query: Callable[[str], list[float]] | None = None,
    embed_later: Callable[[str], Future[list[float]]] | None = None,
) -> list[Hit]:
    """Every candidate for ``query``, best first, each with its score breakdown and
    ``relevant`` (whether it passes the relevance decision). Callers keep the relevant ones.
    ``embed_later`` starts the query's embedding and returns its future (the daemon's
    :class:`memd.recall.queries.QueryBatcher`), so the rest of the work overlaps it."""
    query = normalize_query(query)
    if not query or store.table is None:
        return []
    scope = list(dict.fromkeys([*projects, USER_SCOPE]))
    where = where_clause(scope, kinds, statuses)
    cacheable = vectors is not None and not kinds and tuple(statuses) == ("active",)
    bridged = bridge.bridge(query)  # the query's terms in the other language (zh<->en)
    # The query's embedding runs in the batcher's thread while this one finds the full-text
    # candidates and the terms' document frequencies: in the vector cache (BM25 over its
    # texts, the translations searched beside the query's own terms) when it holds the
    # projects, else in the table (its full-text index, in another thread; LanceDB and
    # onnxruntime release the GIL).
    pending = embed_later(query) if vector is None and embed_later is not None else None
    if pending is not None:
        wait_started(pending)
    own = lexical.own_names(projects)
    whole, segments = lexical.query_terms(query, own)
    wanted = list(dict.fromkeys([*whole, *(t for seg in segments for t in seg)]))
    carriers = synonyms.search_terms(query)  # "pnpm" for "package manager"
    searched = list(dict.fromkeys([*wanted, *bridged.search_terms, *carriers]))
    text_query = " ".join([bridged.search_text(query), *carriers])
    found = vectors.text_search(scope, searched, depth) if cacheable and vectors else None
    stats: tuple[int, dict[str, int]] | None = None
    by_text_future: Future[list[tuple[Memory, float]]] | None = None
    if found is None:
        cacheable = False
        by_text_future = TEXT_SEARCH.submit(store.text_search, text_query, where, depth)
        if wanted:
            stats = store.document_frequencies(where, wanted)
    else:
        stats = (found.total, {t: found.counts[t] for t in wanted})
    # The full-text hits' rows too, while the embedding may still run.
    by_text = rows_for(store, vectors, scope, found.hits) if found is not None and vectors else []
    idf = lexical.idf_weights(*stats) if stats else None
    signals = Signals(query, idf, weights, datetime.now(UTC), own)
    known = {memory.id: signals.of(memory) for memory, _ in by_text}
    if vector is None:
        vector = pending.result() if pending else (embed_query or store.embedder.embed_one)(query)
    by_vec = vectors.search(vector, scope, depth) if cacheable and vectors is not None else None
    if by_vec is None and cacheable:  # the cache dropped the project meanwhile
        cacheable = False
        by_text_future = TEXT_SEARCH.submit(store.text_search, text_query, where, depth)
    if by_vec is None:
        by_vec = store.vector_search(vector, where, depth)
    if by_text_future is not None:
        by_text = by_text_future.result()
    cosines = {m.id: sim for m, sim in by_vec}
    missing = [m.id for m, _ in by_text if m.id not in cosines]
    if missing:
        if cacheable and vectors is not None:
            cosines.update(vectors.cosines(vector, scope, missing))
        still = [i for i in missing if i not in cosines]
        if still:
            cosines.update(store.cosines(vector, still))
    return rank(
        by_vec,
        by_text,
        query,
        cosines,
        weights,
        calibration_of(store.embedder),
        signals.now,
        idf,
        text_partial=cacheable,
        signals=signals,
        known=known,
    )


def wait_started(future: Future[list[float]], timeout: float = 0.005) -> None:
    """Let the model thread take ``future``'s query up before this thread goes on.

    Both need the interpreter lock: a recall thread that went straight on with its full-text
    work held it while the model thread waited to tokenize the prompt (~1 ms at 10k memories).
    Once the model runs it does not need the lock, so both then work at once."""
    started = getattr(future, "started", None)  # a QueryBatcher's QueryFuture
    if isinstance(started, threading.Event):
        started.wait(timeout)


def rows_for(
    store: MemoryStore, vectors: VectorCache, scope: list[str], hits: list[tuple[str, float]]
) -> list[tuple[Memory, float]]:
    """The full-text hits (id, score) as (memory, score), rows from the vector cache (without
    topic, keywords and history, like the vector half's), from the table for any the cache
    does not hold (a write between the two reads)."""
    ids = [mid for mid, _ in hits]
    found = vectors.memories_of(scope, ids)
    missing = [mid for mid in ids if mid not in found]
    if missing:
        for memory in store.query(is_in("id", missing), limit=len(missing)):
            if memory.status == "active":
                found[memory.id] = memory
    return [(found[mid], score) for mid, score in hits if mid in found]


def search(
    store: MemoryStore,
    query: str,
    projects: list[str],
    limit: int = 10,
    kinds: list[str] | None = None,
    statuses: tuple[str, ...] = ("active",),
    weights: Weights = DEFAULT_WEIGHTS,
    vector: list[float] | None = None,
    cache: VectorCache | None = None,
    embed_query: Callable[[str], list[float]] | None = None,
    embed_later: Callable[[str], Future[list[float]]] | None = None,
) -> list[Hit]:
    """The relevant memories for ``query``, best first (:func:`hits.hit_json` gives their
    DESIGN.md shape)."""
    found = recall(
        store,
        query,
        projects,
        depth=max(limit * 4, 40),
        kinds=kinds,
        statuses=statuses,
        weights=weights,
        vector=vector,
        vectors=cache,
        embed_query=embed_query,
        embed_later=embed_later,
    )
    return complete(store, [r for r in found if r.relevant][:limit])


def complete(store: MemoryStore, results: list[Hit]) -> list[Hit]:
    """Results with every field: those read from the vector cache (no topic, keywords or
    history there) are read back by id. One that went meanwhile is dropped."""
    partial = [r.id for r in results if r.partial]
    if not partial:
        return results
    rows = {m.id: m for m in store.query(is_in("id", partial), limit=len(partial))}
    out = []
    for r in results:
        if not r.partial:
            out.append(r)
            continue
        memory = rows.get(r.id)
        if memory is not None and memory.status == r.status:
            out.append(replace(r, memory=memory, partial=False))
    return out


def rank(
    by_vec: list[tuple[Memory, float]],
    by_text: list[tuple[Memory, float]],
    query: str,
    cosines: dict[str, float],
    weights: Weights = DEFAULT_WEIGHTS,
    calibration: Calibration = DEFAULT_CALIBRATION,
    now: datetime | None = None,
    idf: dict[str, float] | None = None,
    text_partial: bool = False,
    signals: Signals | None = None,
    known: dict[str, tuple[float, bool, float, bool]] | None = None,
) -> list[Hit]:
    """Fuse both candidate lists; score, decide and explain every candidate. ``idf`` weighs
    the query's terms by how rare they are in the project (see :func:`lexical.idf_weights`).
    ``text_partial``: the full-text rows, like the vector ones, come from the vector cache.
    ``signals``: the query's :class:`Signals` (made from ``query``, ``idf``, ``weights`` and
    ``now`` when not given); ``known``: their :meth:`Signals.of` for some candidates, worked
    out already."""
    now = now or datetime.now(UTC)
    query_zh = is_chinese(query)
    memories: dict[str, Memory] = {}
    partial: set[str] = set()
    rrf: dict[str, float] = {}
    bm25: dict[str, float] = {}
    for rank_no, (memory, _sim) in enumerate(by_vec, 1):
        memories[memory.id] = memory
        partial.add(memory.id)
        rrf[memory.id] = rrf.get(memory.id, 0.0) + weights.vector / (RRF_K + rank_no)
    for rank_no, (memory, score) in enumerate(by_text, 1):
        if text_partial:  # rows from the vector cache too
            memories.setdefault(memory.id, memory)
            partial.add(memory.id)
        else:
            memories[memory.id] = memory  # a full row (the vector half may be a cached one)
            partial.discard(memory.id)
        bm25[memory.id] = score
        rrf[memory.id] = rrf.get(memory.id, 0.0) + weights.text / (RRF_K + rank_no)
    best_rrf = (weights.vector + weights.text) / (RRF_K + 1)
    signal = signals or Signals(query, idf, weights, now)
    known = known or {}
    results = []
    needs = {b: weights.threshold + (weights.excerpt_margin if b else 0.0) for b in (False, True)}
    shown_needs = {need: round(need, 4) for need in needs.values()}  # once, not per candidate
    for mid, memory in memories.items():
        cosine = max(0.0, cosines.get(mid, 0.0))
        lex, memory_zh, recency, answers = known.get(mid) or signal.of(memory)
        semantic = calibration.scale_pair(cosine, query_zh, memory.text, memory_zh)
        if memory_zh != query_zh and lex > 0.0:
            lex = min(1.0, lex / calibration.cross_lexical)
        relevance = max(semantic, weights.semantic * semantic + weights.lexical * lex)
        need = needs[memory.kind in BROAD_KINDS]
        if answers:  # a tool of the job the prompt asks for, the person's fact it asks
            relevance = max(relevance, need)
        fused = rrf[mid] / best_rrf
        total = (
            weights.relevance * ((1 - weights.rank_mix) * relevance + weights.rank_mix * fused)
            + weights.importance * memory.importance
            + weights.recency * recency
            + (weights.pinned if memory.pinned else 0.0)
        )
        score = bm25.get(mid, 0.0)
        breakdown = Relevance(
            cosine=round(cosine, 4),
            semantic=round(semantic, 4),
            lexical=round(lex, 4),
            relevance=round(relevance, 4),
            threshold=shown_needs[need],
            bm25=round(score, 4) if score else score,  # a vector-only candidate: 0.0
            rrf=round(fused, 4),
            recency=round(recency, 4),
            importance=round(memory.importance, 4),
            pinned=memory.pinned,
            total=round(total, 4),
        )
        results.append(
            Hit(memory, round(total, 4), breakdown, relevance >= need, partial=mid in partial)
        )
    results.sort(key=lambda r: (-r.score, r.id))
    return results


class Signals:
    """A candidate's signals that do not need the query's vector: its lexical coverage of the
    query (both ways across languages), whether it is Chinese, its recency. :func:`recall`
    works them out for the full-text candidates while the query's embedding runs."""

    def __init__(
        self,
        query: str,
        idf: dict[str, float] | None,
        weights: Weights,
        now: datetime,
        own: frozenset[str] = frozenset(),
    ) -> None:
        whole, segments = lexical.query_terms(query, own)
        self.bridged = bridge.bridge(query)
        self.query_zh = is_chinese(query)
        self.covers = lexical.coverage_of(whole, segments, idf)
        self.query = query  # its words a memory may carry in others (:mod:`synonyms`)
        self.asks_for = synonyms.asks_for(query)  # "Which package manager ...?"
        self.reach = frozenset(whole).union(self.bridged.reach_terms)
        self.half_life = weights.recency_half_life_days
        self.now = now
        self.now_seconds = now.timestamp()

    def of(self, memory: Memory) -> tuple[float, bool, float, bool]:
        """(lexical, memory is Chinese, recency, it gives what the query asks for by name:
        a job's tool, a person's fact)."""
        text = memory.text
        memory_zh = text_is_chinese(text)
        have = searchterms.term_set(text)
        carried = self.bridged.extend(text, synonyms.carried(have, self.query, text))
        lex = self.covers(carried)
        if memory_zh != self.query_zh and not have.isdisjoint(self.reach):  # both ways
            lex = max(lex, crossterms.reverse_coverage(searchterms.terms(text), self.reach))
        age = age_days(memory.said_at(), self.now_seconds)  # `now` once
        answers = self.asks_for and synonyms.answers(have, self.query, text, carried)
        return lex, memory_zh, math.pow(0.5, age / self.half_life), answers


text_is_chinese = lru_cache(maxsize=TEXT_CACHE)(is_chinese)  # the candidates come back


def brief_result(memory: Memory, weights: Weights, base: float = 0.0) -> Hit:
    """A memory offered without a query (the session brief), scored by the same weights as a
    recall minus relevance: importance, recency and pinning, on top of its section's ``base``."""
    recency = math.pow(
        0.5,
        age_days(memory.said_at(), datetime.now(UTC)) / weights.recency_half_life_days,
    )
    total = (
        base
        + weights.importance * memory.importance
        + weights.recency * recency
        + (weights.pinned if memory.pinned else 0.0)
    )
    breakdown = BriefScore(
        section=round(base, 4),
        recency=round(recency, 4),
        importance=round(memory.importance, 4),
        pinned=memory.pinned,
        total=round(total, 4),
    )
    return Hit(memory, round(total, 4), breakdown)
