"""Insert-time dedupe, update and supersession.

- A near-duplicate (same project and kind, high cosine and lexical overlap) is merged: hits and
  importance go up, and the sources are united.
- A newer statement that contradicts an older one on the same subject supersedes it: the old
  memory is kept with status ``superseded`` and ``superseded_by``, and is never injected.
- Pinned memories are never superseded automatically.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from memd.models import Memory, Source, now_iso
from memd.store import MemoryStore, from_row, sql_str

SUPERSEDABLE = ("decision", "preference", "fact", "bugfix")
SUBJECT_MIN_COSINE = 0.45
TERM = r"[\w.+#/-]+"

CHANGE_PATTERNS = [
    # "switch formatting from ruff to black", "migrated from npm to pnpm"
    re.compile(
        rf"\b(?:switch|switched|switching|move|moved|moving|migrate|migrated|migrating|"
        rf"change|changed|changing|go|went|convert|converted)\b[^.\n]{{0,40}}?\bfrom\s+"
        rf"(?P<old>{TERM})\s+(?:to|over to|in favou?r of)\s+(?P<new>{TERM})",
        re.I,
    ),
    re.compile(
        rf"\b(?:use|using|prefer|chose|choose)\s+(?P<new>{TERM})\s+instead of\s+(?P<old>{TERM})",
        re.I,
    ),
    re.compile(rf"\breplac(?:e|ed|ing)\s+(?P<old>{TERM})\s+with\s+(?P<new>{TERM})", re.I),
    re.compile(rf"\b(?:chose|choose|picked|pick)\s+(?P<new>{TERM})\s+over\s+(?P<old>{TERM})", re.I),
    re.compile(
        rf"\b(?:no longer use|stop using|stopped using|drop|dropped)\s+(?P<old>{TERM})", re.I
    ),
    re.compile(
        r"(?:从|由)?(?P<old>[\w.+#-]+?)\s*(?:改成|改为|换成|换为|切换到|切换成|迁移到)\s*(?P<new>[\w.+#-]+)"
    ),
    re.compile(r"不再(?:用|使用)\s*(?P<old>[\w.+#-]+)"),
    re.compile(r"用\s*(?P<new>[\w.+#-]+?)\s*(?:代替|替代|取代)\s*(?P<old>[\w.+#-]+)"),
]
USE_FOR = re.compile(
    rf"\b(?:use|uses|using)\s+(?P<tool>{TERM})\s+(?:for|as)\s+(?P<subject>[^.\n]+)", re.I
)
WORD = re.compile(r"[a-z0-9_]+|[\u3400-\u9fff]", re.I)
STOP = frozenset(
    [
        "the",
        "a",
        "an",
        "to",
        "for",
        "of",
        "and",
        "or",
        "in",
        "on",
        "with",
        "is",
        "are",
        "be",
        "we",
        "use",
        "uses",
        "using",
        "it",
        "this",
        "that",
    ]
)


def tokens(text: str) -> set[str]:
    return {w.lower() for w in WORD.findall(text) if w.lower() not in STOP}


def jaccard(a: str, b: str) -> float:
    ta, tb = tokens(a), tokens(b)
    if not ta or not tb:
        return 0.0
    return len(ta & tb) / len(ta | tb)


def contradicts(new: str, old: str) -> bool:
    """True when ``new`` replaces what ``old`` says on the same subject."""
    old_l = old.lower()
    for pattern in CHANGE_PATTERNS:
        m = pattern.search(new)
        if not m:
            continue
        replaced = m.group("old").lower().strip(".,")
        added = (m.groupdict().get("new") or "").lower().strip(".,")
        if replaced and re.search(rf"(?<![\w]){re.escape(replaced)}(?![\w])", old_l):
            # The old statement must be about the replaced thing, not already the new one.
            if not added or added not in old_l or replaced in old_l:
                return True
    a, b = USE_FOR.search(new), USE_FOR.search(old)
    if a and b and a.group("tool").lower() != b.group("tool").lower():
        return jaccard(a.group("subject"), b.group("subject")) >= 0.5
    return False


@dataclass
class UpsertResult:
    id: str
    action: str  # inserted | merged | unchanged
    target: str = ""
    superseded: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "action": self.action,
            "target": self.target,
            "superseded": self.superseded,
        }


def union_sources(a: Sequence[Source], b: Sequence[Source]) -> list[Source]:
    seen = {(s.session_id, s.uuid): s for s in a}
    for s in b:
        seen.setdefault((s.session_id, s.uuid), s)
    return list(seen.values())


def merge_into(target: Memory, incoming: Memory) -> bool:
    """Fold ``incoming`` into ``target``. Returns False when nothing changed."""
    sources = union_sources(target.sources, incoming.sources)
    seen_before = incoming.id == target.id or any(
        h.get("merged") == incoming.id for h in target.history
    )
    if len(sources) == len(target.sources) and seen_before:
        return False  # a replay (e.g. after a crash) changes nothing
    target.sources = sources
    target.hits += 1
    target.importance = min(1.0, max(target.importance, incoming.importance) + 0.05)
    target.keywords = list(dict.fromkeys([*target.keywords, *incoming.keywords]))[:12]
    target.updated_at = now_iso()
    if incoming.id != target.id:
        target.history.append(
            {"at": target.updated_at, "merged": incoming.id, "text": incoming.text}
        )
    return True


def upsert(
    store: MemoryStore, memories: list[Memory], *, near_dups: bool = True
) -> list[UpsertResult]:
    """Embed, dedupe, supersede and write ``memories`` as one batch.

    ``near_dups=False`` (bulk imports) keeps only exact-id dedupe; the nightly dedupe job
    sweeps the rest. Atomic: the store's write lock is held from the first read of the rows
    it merges into to the write, so a concurrent merge, touch or pin is never overwritten.
    """
    with store.write_lock:
        return _upsert(store, memories, near_dups=near_dups)


def _upsert(store: MemoryStore, memories: list[Memory], *, near_dups: bool) -> list[UpsertResult]:
    if not memories:
        return []
    settings = store.settings
    vectors = store.embedder.embed([m.text for m in memories])
    existing = store.rows_with_vectors(m.id for m in memories)
    pending: dict[str, Memory] = {}
    pending_vecs: dict[str, Sequence[float]] = {}
    results: list[UpsertResult] = []

    def stage(memory: Memory, vector: Sequence[float]) -> None:
        pending[memory.id] = memory
        pending_vecs[memory.id] = vector

    for memory, vector in zip(memories, vectors, strict=True):
        # 1. The same id: a replay of the same source (crash recovery) or a re-import.
        if memory.id in pending or memory.id in existing:
            if memory.id in pending:
                target = pending[memory.id]
            else:
                target = from_row(existing[memory.id])
            changed = merge_into(target, memory)
            if changed or memory.id in pending:
                stage(target, pending_vecs.get(memory.id) or existing[memory.id]["vector"])
            results.append(UpsertResult(memory.id, "merged" if changed else "unchanged", memory.id))
            continue
        neighbours = []
        if near_dups and memory.kind != "excerpt" and store.table is not None:
            where = (
                f"project = {sql_str(memory.project)} AND status = 'active'"
                f" AND kind IN ('{memory.kind}', {', '.join(repr(k) for k in SUPERSEDABLE)})"
            )
            neighbours = store.vector_search(vector, where, limit=8)
        neighbours += [
            (m, cosine(vector, pending_vecs[m.id]))
            for m in pending.values()
            if m.project == memory.project and m.kind != "excerpt" and m.status == "active"
        ]
        # 2. Supersession: a newer statement on the same subject that replaces an older one.
        superseded = []
        if memory.kind in SUPERSEDABLE:
            for old, cos in neighbours:
                if old.id == memory.id or old.pinned or old.kind not in SUPERSEDABLE:
                    continue
                if cos >= SUBJECT_MIN_COSINE and contradicts(memory.text, old.text):
                    superseded.append(old)
        if superseded:
            for old in superseded:
                old.status = "superseded"
                old.superseded_by = memory.id
                old.updated_at = now_iso()
                old.history.append(
                    {"at": old.updated_at, "superseded_by": memory.id, "text": memory.text}
                )
                stage(
                    old,
                    pending_vecs.get(old.id) or store.rows_with_vectors([old.id])[old.id]["vector"],
                )
            stage(memory, vector)
            results.append(
                UpsertResult(memory.id, "inserted", memory.id, [o.id for o in superseded])
            )
            continue
        # 3. Near-duplicate in the same project and kind: merge.
        dup = next(
            (
                old
                for old, cos in sorted(neighbours, key=lambda p: -p[1])
                if old.kind == memory.kind
                and cos >= settings.dedupe_threshold
                and jaccard(old.text, memory.text) >= 0.5
            ),
            None,
        )
        if dup is not None:
            target = pending.get(dup.id) or dup
            merge_into(target, memory)
            vec = pending_vecs.get(dup.id) or store.rows_with_vectors([dup.id])[dup.id]["vector"]
            stage(target, vec)
            results.append(UpsertResult(memory.id, "merged", dup.id))
            continue
        stage(memory, vector)
        results.append(UpsertResult(memory.id, "inserted", memory.id))
    store.write(list(pending.values()), pending_vecs)
    return results


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    return float(sum(x * y for x, y in zip(a, b, strict=True)))
