"""Recall results built by hand, for the tests of what a block chooses and marks."""

from __future__ import annotations

from typing import Any

from memd.models import Memory, Source
from memd.recall import stale
from memd.recall.hits import Hit, Relevance
from memd.store import current

MINILM = "sentence-transformers/all-MiniLM-L6-v2"


def hit(raw: dict[str, Any]) -> Hit:
    """A :class:`Hit` from the fields a test names (the old dict shape of a result): ``id``,
    ``text``, ``kind``, ``project``, ``score``, ``relevant``, ``sources``, ``pinned``,
    ``status``, ``score_breakdown`` (its ``relevance`` and ``threshold``)."""
    b = raw.get("score_breakdown") or {}
    score = float(raw.get("score", 0.0))
    memory = Memory(
        text=raw.get("text") or f"memory {raw['id']}",
        kind=raw.get("kind", "fact"),
        project=raw.get("project", "p"),
        id=raw["id"],
        pinned=bool(raw.get("pinned", False)),
        status=raw.get("status", "active"),
        sources=[Source.from_dict(s) for s in raw.get("sources") or []],
        created_at=raw.get("created_at", ""),
    )
    breakdown = Relevance(
        cosine=0.0,
        semantic=0.0,
        lexical=0.0,
        relevance=float(b.get("relevance", 1.0)),
        threshold=float(b.get("threshold", 0.35)),
        bm25=0.0,
        rrf=0.0,
        recency=float(b.get("recency", 1.0)),
        importance=float(b.get("importance", 0.5)),
        pinned=bool(raw.get("pinned", False)),
        total=float(b.get("total", score)),
    )
    return Hit(memory, score, breakdown, bool(raw.get("relevant", True)))


def marked(*texts: tuple[str, str], session: str = "") -> dict[str, str]:
    """``stale.mark_replaced`` over excerpts said on the given days (of one session when
    ``session`` is given): each one's text as the block would show it."""
    results = [
        {"id": chr(97 + i), "project": "p", "kind": "excerpt", "score": 0.9 - i / 10,
         "sources": [{"session_id": session or f"s{i}", "timestamp": f"{day}T10:0{i}:00Z"}], "text": text}
        for i, (day, text) in enumerate(texts)
    ]  # fmt: skip
    return {r.id: r.text for r in stale.mark_replaced([hit(r) for r in results], {}, MINILM)}


def pairs(old_text: str, new_text: str) -> list[str]:
    """Why each claim of ``new_text`` (said later) replaces each claim of ``old_text``."""
    return [
        why
        for o in current.claims(old_text)
        for n in current.claims(new_text)
        if (why := current.replaces(n, o, 0.9, MINILM))
    ]
