"""The insert path (:func:`upsert`): insert-time dedupe, update and supersession.

- A near-duplicate (same project and kind; :func:`memd.store.similar.is_duplicate` on normalised
  text, shared words and values, and the vector) is merged: hits and importance go up, and the
  sources are united.
- A newer statement that surely contradicts an older one on the same subject (same subject,
  different value, with or without a trigger phrase: :func:`memd.store.similar.conflict`) supersedes
  it: the old memory is kept with status ``superseded`` and ``superseded_by``, and is never
  injected. An unsure contradiction keeps both; injection shows the newer first, marked.
- Pinned memories are never superseded automatically.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from memd import kinds
from memd.models import Memory, Source, now_iso
from memd.store import current, forgetting, proposals, similar, subjects
from memd.store.filters import all_of, contains, match
from memd.store.layout import from_row
from memd.store.table import MemoryStore

SUPERSEDABLE = kinds.names("supersedable")
NEIGHBOURS = 8
"""How many nearest memories a new one is compared with."""
Near = Callable[[Sequence[float], str, Collection[str], int], list[str] | None]
"""(vector, project, kinds, limit) -> the ids of the active memories of those kinds nearest the
vector in the project, best first; None when the index behind it does not hold the project."""


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


def fold_duplicate(target: Memory, incoming: Memory) -> bool:
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
    if incoming.subject and not target.subject:
        target.subject, target.value = incoming.subject, incoming.value
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
        results = _upsert(store, memories, near_dups=near_dups)
        inserted = {r.id for r in results if r.action == "inserted"}
        for memory in memories:
            if memory.id in inserted and near_dups:
                called_off(store, memory)
        return results


def called_off(store: MemoryStore, memory: Memory) -> list[Memory]:
    """Make current again the memories that a change proposed in a PR, an MR or a branch
    superseded, when ``memory`` says that proposal was closed unmerged ("Closed #482 without
    merging"): the change never happened. The ones restored."""
    said = [
        c for c in current.claims(memory.text) if c.refs and proposals.CALLED_OFF.search(c.text)
    ]
    if not said or store.table is None:
        return []
    olds = store.query(match(project=memory.project, status="superseded"), limit=MAX_CALLED_OFF)
    proposers = {o.superseded_by for o in olds if o.superseded_by}
    by = {m.id: m for m in store.query(match(id=sorted(proposers)))} if proposers else {}
    back = [
        old
        for old in olds
        if (b := by.get(old.superseded_by)) is not None
        and any(
            proposals.calls_off(c.text, p.text, c.refs & p.refs)
            for c in said
            for p in current.claims(b.text)
        )
    ]
    if back:
        forgetting.restore_memories(
            store, back, f"its change was called off: {said[0].text[:120]}", by="memd"
        )
    return back


def proposal_called_off(store: MemoryStore, memory: Memory, staged: Iterable[Memory]) -> bool:
    """Whether a memory said after ``memory``, stored or ``staged``, says the PR, MR or branch
    that ``memory`` proposes a change on was closed unmerged."""
    proposed = [
        c for c in current.claims(memory.text) if c.refs and proposals.PROPOSAL.search(c.text)
    ]
    if not proposed:
        return False
    refs = {r for c in proposed for r in c.refs}
    later: list[Memory] = [m for m in staged if m.project == memory.project]
    if store.table is not None:
        for ref in sorted(refs):
            where = all_of(
                match(project=memory.project, status="active"),
                contains("text", ref.lstrip("#!").casefold(), fold_case=True),
            )
            later += store.query(where, limit=MAX_CALLED_OFF)
    mine = memory.said_at()
    return any(
        proposals.calls_off(c.text, p.text, c.refs & p.refs)
        for m in later
        if m.said_at() > mine
        for c in current.claims(m.text)
        if c.refs & refs and proposals.CALLED_OFF.search(c.text)
        for p in proposed
    )


MAX_CALLED_OFF = 500
"""Memories of a project read for a proposal called off: superseded ones to restore, or the
ones naming its PR that may have closed it."""


def _upsert(store: MemoryStore, memories: list[Memory], *, near_dups: bool) -> list[UpsertResult]:
    if not memories:
        return []
    model_id = store.embedder.model_id
    vectors = store.embedder.embed([m.text for m in memories])
    existing = store.rows_with_vectors(m.id for m in memories)
    pending: dict[str, Memory] = {}
    pending_vecs: dict[str, Sequence[float]] = {}
    results: list[UpsertResult] = []

    def stage(memory: Memory, vector: Sequence[float]) -> None:
        pending[memory.id] = memory
        pending_vecs[memory.id] = vector

    def restage(memory: Memory) -> Memory:
        """Stage a stored (or already staged) memory about to change; the staged copy."""
        target = pending.get(memory.id) or memory
        vec = pending_vecs.get(memory.id)
        stage(target, vec or store.rows_with_vectors([memory.id])[memory.id]["vector"])
        return target

    for memory, vector in zip(memories, vectors, strict=True):
        # 1. The same id: a replay of the same source (crash recovery) or a re-import.
        if memory.id in pending or memory.id in existing:
            if memory.id in pending:
                target = pending[memory.id]
            else:
                target = from_row(existing[memory.id])
            changed = fold_duplicate(target, memory)
            if changed or memory.id in pending:
                stage(target, pending_vecs.get(memory.id) or existing[memory.id]["vector"])
            results.append(UpsertResult(memory.id, "merged" if changed else "unchanged", memory.id))
            continue
        neighbours = []
        compare = memory.kind != "excerpt" or says_a_change(memory.text)
        if near_dups and compare and store.table is not None:
            kinds = [memory.kind, *SUPERSEDABLE] if memory.kind != "excerpt" else [*SUPERSEDABLE]
            if memory.kind in SUPERSEDABLE:
                kinds.append("excerpt")
            neighbours = nearest(store, vector, memory.project, kinds)
        if compare:
            batch = [
                (m, cosine(vector, pending_vecs[m.id]))
                for m in pending.values()
                if m.project == memory.project and m.status == "active"
            ]
            # The nearest of this batch too (a bulk import would otherwise compare every pair).
            neighbours += sorted(batch, key=lambda p: -p[1])[:NEIGHBOURS]
        # 2. Supersession: a newer statement on the same subject replaces an older typed one;
        # newer and older by when each was said, not by the order memd reads them.
        superseded, newer = supersession(memory, neighbours, model_id)
        if superseded and proposal_called_off(store, memory, pending.values()):
            superseded = []  # its PR was closed unmerged (said later, read first)
        if newer is not None and proposal_called_off(store, newer, pending.values()):
            newer = None
        if newer is not None:
            if subjects.declared(newer, memory):
                restage(newer).history.append(replaced_entry(memory))
            memory.status = "superseded"
            memory.superseded_by = newer.id
            memory.history.append(
                {"at": memory.updated_at, "superseded_by": newer.id, "text": newer.text}
            )
            stage(memory, vector)
            results.append(UpsertResult(memory.id, "inserted", memory.id))
            continue
        if superseded:
            memory.history += [
                replaced_entry(o) for o in superseded if subjects.declared(memory, o)
            ]
            for old in map(restage, superseded):
                old.status = "superseded"
                old.superseded_by = memory.id
                old.updated_at = now_iso()
                old.history.append(
                    {"at": old.updated_at, "superseded_by": memory.id, "text": memory.text}
                )
            stage(memory, vector)
            results.append(
                UpsertResult(memory.id, "inserted", memory.id, [o.id for o in superseded])
            )
            continue
        # 3. Near-duplicate in the same project and kind: merge.
        if memory.kind == "excerpt":
            neighbours = []  # (excerpts are deduplicated by the turns they cite)
        dup = next(
            (
                old
                for old, cos in sorted(neighbours, key=lambda p: -p[1])
                if old.kind == memory.kind
                and similar.is_duplicate(old.text, memory.text, cos, model_id)
            ),
            None,
        )
        if dup is not None:
            fold_duplicate(restage(dup), memory)
            results.append(UpsertResult(memory.id, "merged", dup.id))
            continue
        stage(memory, vector)
        results.append(UpsertResult(memory.id, "inserted", memory.id))
    store.write(list(pending.values()), pending_vecs)
    return results


def says_a_change(text: str) -> bool:
    """Whether an excerpt could supersede a typed memory on insert (:func:`replaces`): it
    retires a value, or names a value of a family ("3.12", "pnpm") with a change word."""
    return any(c.retired or (c.cue and c.families) for c in current.claims(text))


STATEMENTS = kinds.names("statement")
"""The kinds that state how things are; a bug fix is an event (two fixes both happened)."""
MAX_REPLACED = 300
"""Characters: a longer typed memory (a report, findings) holds many claims; one replaced claim
is marked where it is shown, not the whole memory superseded."""


def replaces(new: Memory, old: Memory, cos: float, model_id: str) -> bool:
    """Whether ``new`` (said at the same time or later) replaces the typed memory ``old``."""
    if old.pinned or old.kind not in STATEMENTS or old.id == new.id:
        return False
    if old.text.startswith(current.RECORDS) or new.text.startswith(current.RECORDS):
        return False
    named = subjects.declared(new, old) if new.kind in STATEMENTS else None
    if named is not None:
        return named
    if new.kind in STATEMENTS and similar.conflict(new.text, old.text, cos, model_id).sure:
        return True
    if (new.kind not in STATEMENTS and new.kind != "excerpt") or len(old.text) > MAX_REPLACED:
        return False
    # On insert only an explicit retirement ("instead of X", "X has left"); the looser
    # readings of a change only mark a claim where it is shown (memd.recall.stale).
    found = current.replaced_claim(new.text, old.text, cos, model_id)
    return found is not None and found.reason.startswith(("retires", "a new version", "calls off"))


def supersession(
    memory: Memory, neighbours: list[tuple[Memory, float]], model_id: str
) -> tuple[list[Memory], Memory | None]:
    """The older typed memories ``memory`` replaces, and a newer memory that replaces it (then
    it is stored superseded: an older session read after a newer one)."""
    olds: list[Memory] = []
    newer: Memory | None = None
    mine = memory.said_at()
    for other, cos in neighbours:
        if other.status != "active" or other.id == memory.id:
            continue
        if other.said_at() <= mine:
            if other not in olds and (
                replaces(memory, other, cos, model_id) or named_by(memory, other)
            ):
                olds.append(other)
        elif (
            newer is None
            and not memory.pinned
            and (replaces(other, memory, cos, model_id) or named_by(other, memory))
        ):
            newer = other
    return olds, newer


def replaced_entry(old: Memory) -> dict[str, Any]:
    """The history entry of a memory that replaced ``old`` by their named subject: the old
    value and the turns that said it, so an excerpt of those turns is marked where shown
    (:mod:`memd.recall.stale`)."""
    return {
        "at": now_iso(),
        "replaced": old.id,
        "subject": old.subject,
        "value": old.value,
        "turns": [s.uuid for s in old.sources],
    }


def named_by(new: Memory, old: Memory) -> bool:
    """Whether the extractor's ``supersedes`` hint for ``new`` (in its history) names the
    typed memory ``old`` as what ``new`` replaces."""
    hint = next((str(e["supersedes"]) for e in new.history if e.get("supersedes")), "")
    if not hint or old.pinned or old.kind not in STATEMENTS or new.kind not in STATEMENTS:
        return False
    return not old.text.startswith(current.RECORDS) and subjects.hinted(hint, new, old)


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    return float(sum(x * y for x, y in zip(a, b, strict=True)))


def nearest(
    store: MemoryStore, vector: Sequence[float], project: str, kinds: list[str]
) -> list[tuple[Memory, float]]:
    """The active memories of ``kinds`` nearest ``vector`` in ``project``, with their cosine.

    In the daemon the candidates come from its vector cache (``store.near``: every memory of the
    project, int8 codes), twice as many as needed, and are ranked again on the exact cosines of
    their stored vectors: the rows read are a few by id, where LanceDB's vector search at 100k
    memories held its index in memory (+120-150 MiB at a write) and searched approximately."""
    ids = store.near(vector, project, kinds, 2 * NEIGHBOURS) if store.near is not None else None
    if ids is None:
        where = match(project=project, status="active", kind=kinds)
        return store.vector_search(vector, where, limit=NEIGHBOURS)
    found = []
    for row in store.rows_with_vectors(ids).values():
        memory = from_row(row)
        if memory.status == "active" and memory.kind in kinds and memory.project == project:
            found.append((memory, cosine(vector, row["vector"])))
    found.sort(key=lambda p: -p[1])
    return found[:NEIGHBOURS]
