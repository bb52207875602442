"""A recall's results as typed values: the hit, its score breakdown, what a block chose or left
out, and the one place each becomes the JSON of the socket protocol."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from memd.models import Memory, Source


@dataclass(frozen=True, slots=True)
class Relevance:
    """How a recall scored a candidate for a query (``memd search --explain``)."""

    cosine: float
    semantic: float
    lexical: float
    relevance: float
    threshold: float
    bm25: float
    rrf: float
    recency: float
    importance: float
    pinned: bool
    total: float


@dataclass(frozen=True, slots=True)
class BriefScore:
    """How the session brief scored a memory: no query, so no relevance."""

    section: float
    recency: float
    importance: float
    pinned: bool
    total: float


Breakdown = Relevance | BriefScore


@dataclass(frozen=True, slots=True)
class Hit:
    """One memory as a recall (or the brief) offers it. ``marked``: its text with the marks of
    :mod:`memd.recall.stale` ("" when unmarked); ``section``: where a brief shows it when not
    under its kind; ``partial``: ``memory`` is the vector cache's row, not read in full."""

    memory: Memory
    score: float
    breakdown: Breakdown
    relevant: bool = True
    partial: bool = False
    section: str = ""
    marked: str = ""
    replaced_by: str = ""
    """The id of the newer memory that replaces what this one says (:mod:`memd.recall.stale`)."""
    says: tuple[str, ...] = ()
    """Its sentences that replace what an older candidate says (:mod:`memd.recall.stale`): a
    block shows them first, so the new value is not cut from an excerpt that holds it."""

    @property
    def id(self) -> str:
        return self.memory.id

    @property
    def kind(self) -> str:
        return self.memory.kind

    @property
    def project(self) -> str:
        return self.memory.project

    @property
    def status(self) -> str:
        return self.memory.status

    @property
    def pinned(self) -> bool:
        return self.memory.pinned

    @property
    def sources(self) -> list[Source]:
        return self.memory.sources

    @property
    def text(self) -> str:
        return self.marked or self.memory.text

    @property
    def relevance(self) -> float:
        """The relevance a recall found (0 for a brief item: no query)."""
        return self.breakdown.relevance if isinstance(self.breakdown, Relevance) else 0.0

    @property
    def threshold(self) -> float:
        """The relevance the hit needed (1 for a brief item)."""
        return self.breakdown.threshold if isinstance(self.breakdown, Relevance) else 1.0

    def said_at(self) -> str:
        """When what it says was last said (:meth:`Memory.said_at`)."""
        return self.memory.said_at()


@dataclass(frozen=True, slots=True)
class LeftOut:
    """A candidate a block did not show, and why."""

    hit: Hit
    reason: str


@dataclass(frozen=True, slots=True)
class Chosen:
    """A memory a block shows: what of it (``shown``), under which day, covering which turns,
    why, and its marks."""

    hit: Hit
    shown: str
    day: str
    turns: tuple[str, ...]
    why: str
    note: str
    code: str


def breakdown_json(breakdown: Breakdown) -> dict[str, Any]:
    return asdict(breakdown)


def hit_json(hit: Hit) -> dict[str, Any]:
    """A hit as the socket sends it (``search`` results, ``missed``)."""
    memory = hit.memory
    out: dict[str, Any] = {
        "id": memory.id,
        "text": hit.text,
        "kind": memory.kind,
        "project": memory.project,
        "topic": memory.topic,
        "keywords": memory.keywords,
        "importance": memory.importance,
        "status": memory.status,
        "score": round(hit.score, 4),
        "pinned": memory.pinned,
        "created_at": memory.created_at,
        "updated_at": memory.updated_at,
        "hits": memory.hits,
        "relevant": hit.relevant,
        "score_breakdown": breakdown_json(hit.breakdown),
        "sources": [asdict(s) for s in memory.sources],
    }
    if hit.partial:
        out["partial"] = True
    return out


def left_out_json(left: LeftOut) -> dict[str, Any]:
    return {
        "id": left.hit.id,
        "kind": left.hit.kind,
        "text": left.hit.text,
        "reason": left.reason,
        "score_breakdown": breakdown_json(left.hit.breakdown),
    }


def chosen_json(chosen: Chosen) -> dict[str, Any]:
    return {
        "id": chosen.hit.id,
        "kind": chosen.hit.kind,
        "text": chosen.hit.text,
        "shown": chosen.shown,
        "day": chosen.day,
        "turns": list(chosen.turns),
        "why": chosen.why,
        "note": chosen.note,
        "code": chosen.code,
        "score_breakdown": breakdown_json(chosen.hit.breakdown),
    }


def explain(b: Breakdown) -> str:
    """One line saying why a result was (or was not) chosen."""
    if isinstance(b, BriefScore):  # a brief item: no query, so no relevance
        parts = [f"section {b.section:.1f}", f"importance {b.importance:.2f}"]
        parts.append(f"recency {b.recency:.2f}")
        if b.pinned:
            parts.append("pinned")
        return f"total {b.total:.3f} = " + ", ".join(parts)
    verdict = "relevant" if b.relevance >= b.threshold else "below threshold"
    parts = [
        f"relevance {b.relevance:.2f} {'>=' if verdict == 'relevant' else '<'} "
        f"{b.threshold:.2f} (semantic {b.semantic:.2f} from cosine {b.cosine:.2f}, "
        f"lexical {b.lexical:.2f})",
        f"rrf {b.rrf:.2f}",
        f"importance {b.importance:.2f}",
        f"recency {b.recency:.2f}",
    ]
    if b.pinned:
        parts.append("pinned")
    return f"total {b.total:.3f} = " + ", ".join(parts)


def breakdown_from_json(raw: dict[str, Any]) -> Breakdown:
    """A breakdown read back from a reply (:func:`breakdown_json`)."""
    if "relevance" in raw:
        return Relevance(**{k: raw[k] for k in Relevance.__dataclass_fields__})
    return BriefScore(**{k: raw[k] for k in BriefScore.__dataclass_fields__})
