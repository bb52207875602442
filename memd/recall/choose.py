"""Which candidates fill an injected block within its budget, and why the others were left out.

Within a block, no two items cover the same transcript turns. Excerpts (windows of raw turns)
are shown turn by turn: the turns that carry the prompt's terms first, from every relevant
excerpt, then their neighbours while the budget lasts; an excerpt cites only the turns it
shows. When two memories disagree (same subject, different value) the newer comes first and
both are marked.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from memd.recall import lexical
from memd.recall.block import (
    BlockSize,
    Item,
    carries,
    cut_item,
    day_of,
    excerpt_turns,
    ordered,
    overflow,
    rendered_size,
    show_turns,
    source_uuids,
    whole_excerpt,
)
from memd.recall.hits import Hit, LeftOut
from memd.store import profiles, similar
from memd.store.upsert import SUPERSEDABLE
from memd.text import searchterms

LINE_MATCH = 0.5
"""How much a turn's own match with the prompt (the weighted share of the prompt's terms it
carries, 0..1) adds to its excerpt's score when turns are ranked for the block. Picked on
LoCoMo half A (0.3-0.8 all within 0.01)."""
LEFT_OUT_SHOWN = 12
"""How many left-out candidates a preview explains."""


@dataclass
class Plan:
    items: list[Item] = field(default_factory=list)
    left_out: list[LeftOut] = field(default_factory=list)
    footer: str = ""
    reason: str = ""


def left(result: Hit, reason: str) -> LeftOut:
    return LeftOut(result, reason)


def choose(
    results: list[Hit],
    given: set[str],
    budget: int,
    query_terms: tuple[str, ...],
    brief: bool,
    vectors: dict[str, Any] | None = None,
    model_id: str = "",
    code: Callable[[Hit], str] | None = None,
) -> Plan:
    """The items to inject, best first, within ``budget`` characters, and why others were not.

    An excerpt is a window of a few turns; the block is filled turn by turn. Every turn of a
    relevant excerpt is a piece scored by its excerpt's priority plus ``LINE_MATCH`` times its
    own match with the prompt; typed memories are pieces of their own. One greedy pass in score
    order (summaries last): a turn already shown is skipped, a turn joins its excerpt's item
    (turns in their order, the excerpt citing only the turns it shows), and a piece is kept
    when the block still fits. ``code`` marks a typed memory about to be kept with what
    became of the code it names (:meth:`memd.recall.codecheck.CodeCheck.marker`), so only the
    memories that may be shown are checked, and the block's size counts the mark.
    """
    plan = Plan()
    if not results:
        plan.reason = "no candidates in this project"
        return plan
    relevant = []
    for r in results:
        if r.status != "active":
            continue
        if not r.relevant:
            if len(plan.left_out) < LEFT_OUT_SHOWN:
                plan.left_out.append(left(r, "below the relevance threshold"))
            continue
        if r.id in given:
            plan.left_out.append(left(r, "already injected in this session"))
            continue
        relevant.append(r)
    if not relevant:
        if given and any(r.id in given for r in results):
            plan.reason = "every relevant memory was already injected in this session"
        else:
            best = max((r.relevance for r in results), default=0.0)
            need = min((r.threshold for r in results), default=1.0)
            plan.reason = f"none relevant (best relevance {best:.2f} < {need:.2f})"
        return plan
    weights = lexical.local_weights(query_terms, (r.text for r in relevant))
    split = {r.id: excerpt_turns(r) for r in relevant if r.kind == "excerpt"}
    says = {r.id: r.says for r in relevant}
    matches = {  # each excerpt turn's match with the prompt's terms
        mid: [lexical.weighted_match(weights, line) for _, line in turns]
        for mid, (_, turns) in split.items()
        if turns
    }
    newer = {  # of each excerpt that replaces an older candidate's value, the turns that do
        mid: {at for at, (_, line) in enumerate(turns) if carries(line, says[mid])}
        for mid, (_, turns) in split.items()
        if turns and says[mid]
    }
    pieces = ranked_pieces(relevant, weights, matches, newer)
    pinned_total = sum(1 for r in relevant if r.pinned) if brief else 0
    disagreements = Disagreements(vectors or {}, model_id)
    covered: set[str] = set()
    kept: list[Item] = []
    picked: dict[str, set[int]] = {}
    """Of each excerpt shown, the numbers of the turns it shows."""
    items: dict[str, Item] = {}
    pinned_shown = 0
    size = BlockSize()
    for r, n in pieces:
        if n is not None:  # one turn of an excerpt
            day, turns = split[r.id]
            assert turns is not None
            uuid = turns[n][0]
            if uuid in covered:
                continue  # shown already
            alone = show_turns(turns, [n], weights, says[r.id])
            if size.now() + len(alone) + 3 > budget:  # its long sentences cut to the terms
                alone = show_turns(turns, [n], weights, says[r.id], near=True)
                if size.now() + len(alone) + 3 > budget:
                    continue  # cannot fit (the block only grows)
            item = items.get(r.id)
            if item is not None:  # another turn of an excerpt in the block
                room = budget - size.now(overflow(pinned_total - pinned_shown))
                grown = show_turns(turns, [*picked[r.id], n], weights, says[r.id])
                delta = size.change(item, grown)
                if delta > room:
                    grown = show_turns(turns, [*picked[r.id], n], weights, says[r.id], near=True)
                    delta = size.change(item, grown)
                    if delta > room:
                        continue
                item.display = grown
                item.turns = item.turns | {uuid}
                size.grow(delta)
                picked[r.id].add(n)
                covered.add(uuid)
                continue
            if not matches[r.id][n] and any(matches[r.id]) and n not in newer.get(r.id, ()):
                continue  # a turn with none of the prompt's terms only joins its neighbours
                # (unless it says what replaces an older value: that is what the prompt asks)
            display, turns_shown = alone, frozenset([uuid])
            day = day or day_of(r)
        elif r.id in items:
            continue
        elif r.kind == "excerpt":  # an older excerpt, not one line per turn: whole
            turns_shown = frozenset(source_uuids(r))
            if covered.intersection(turns_shown):
                plan.left_out.append(left(r, "its turns are already shown"))
                continue
            display, day = whole_excerpt(r), split[r.id][0] or day_of(r)
        else:
            turns_shown = frozenset(source_uuids(r))
            display, day = cut_item(r.text, weights), ""
            if (
                r.kind != "summary"
                and turns_shown
                and turns_shown <= covered
                and repeats(display, kept)
            ):  # a line shown may be cut short of what this memory says: then it stays
                plan.left_out.append(left(r, "its turns are already shown"))
                continue
            if r.kind == "summary" and repeats(display, kept):
                plan.left_out.append(left(r, "repeats what the items below say"))
                continue
        section = "pinned" if r.pinned and brief else r.section or r.kind
        if section == "summary" and not brief:
            section = "sessions"  # a relevant summary, not necessarily the last session's
        mark = code(r) if code is not None and n is None and r.kind != "excerpt" else ""
        item = Item(r, section, priority(r), display, turns_shown, day=day, code=mark)
        is_pinned = brief and r.pinned
        footer = overflow(pinned_total - pinned_shown - (1 if is_pinned else 0))
        fits = size.with_item(item, footer) <= budget
        marked = disagreements.mark(item, kept) if fits else []
        if marked:  # notes (and the order) changed: measure the whole block again
            fits = rendered_size(ordered([*kept, item]), footer) <= budget
        if not fits:
            disagreements.undo(marked)
            if n is None:
                plan.left_out.append(left(r, "over the budget"))
            continue
        kept.append(item)
        items[r.id] = item
        if marked:
            size = BlockSize.of(kept)
        else:
            size.add(item)
        if n is not None:
            picked[r.id] = {n}
        if is_pinned:
            pinned_shown += 1
        if r.kind != "summary":
            covered |= turns_shown
    for r in relevant:  # the excerpts none of whose turns were shown, and why
        if r.id not in items and split.get(r.id, ("", None))[1] is not None:
            shown = set(source_uuids(r)) <= covered
            plan.left_out.append(
                left(r, "its turns are already shown" if shown else "over the budget")
            )
    plan.items = ordered(kept)
    plan.footer = overflow(pinned_total - pinned_shown)
    if plan.footer and rendered_size(plan.items, plan.footer) > budget:
        plan.footer = ""  # cannot happen unless even the footer alone is over the budget
    if not plan.items:
        plan.reason = "nothing fits in the budget"
    return plan


def priority(result: Hit) -> float:
    """Fusion score, with typed memories ahead of excerpts of the same relevance."""
    return result.score - (0.05 if result.kind == "excerpt" else 0.0)


def ranked_pieces(
    relevant: list[Hit],
    weights: dict[str, float],
    matches: dict[str, list[float]],
    newer: dict[str, set[int]] | None = None,
) -> list[tuple[Hit, int | None]]:
    """What the block is filled from, best first: (memory, turn number) for each turn of an
    excerpt that is one line per turn, (memory, None) for any other memory; summaries last
    (whether one repeats the items shown can only be told once those are chosen). ``matches``:
    each such excerpt's turns' weighted matches with the prompt's terms.

    A turn scores its excerpt's priority plus ``LINE_MATCH`` times the weighted share of the
    prompt's terms it carries, so the turn that says what the prompt asks comes before its
    neighbours, and a neighbour (often the question or the answer) before weaker excerpts.
    ``newer``: of an excerpt that replaces what an older candidate says, the turns that say
    the new value; each comes just before the older's best piece (the current value first),
    unless it scores higher on its own."""
    total = sum(weights.values())
    scored: list[tuple[bool, float, int, Hit, int | None]] = []
    for order, r in enumerate(relevant):
        base = priority(r)
        if r.id not in matches:
            # A typed memory gets the same bonus for its own match, so a decision is not
            # pushed out by raw turns that say the same (typed ones keep their edge).
            match = lexical.weighted_match(weights, r.text) / total if total > 0 else 0.0
            summary = r.kind == "summary"
            scored.append(
                (summary, -(base + (0.0 if summary else LINE_MATCH * match)), order, r, None)
            )
            continue
        for n, weighted in enumerate(matches[r.id]):
            match = weighted / total if total > 0 else 0.0
            scored.append((False, -(base + LINE_MATCH * match), order, r, n))
    if newer:
        best: dict[str, float] = {}
        for _, score, _, r, _ in scored:
            best[r.id] = min(best.get(r.id, 0.0), score)
        lead: dict[str, float] = {}  # the best piece of what each newer one replaces
        for r in relevant:
            if r.replaced_by in newer and r.id in best:
                was = lead.get(r.replaced_by, best.get(r.replaced_by, 0.0))
                lead[r.replaced_by] = min(was, best[r.id])
        scored = [
            (summary, min(score, lead[r.id] - 1e-6), order, r, n)
            if r.id in lead and n in newer[r.id]
            else (summary, score, order, r, n)
            for summary, score, order, r, n in scored
        ]
    scored.sort(key=lambda x: x[:3])
    return [(r, n) for _, _, _, r, n in scored]


def repeats(summary: str, kept: list[Item]) -> bool:
    """Whether most of a summary's terms are already in the items kept."""
    mine = searchterms.term_set(summary)
    if not mine:
        return True
    shown: set[str] = set()
    for item in kept:
        shown |= searchterms.term_set(item.display)
    return len(mine & shown) / len(mine) >= 0.7


NEWER = "newer"
OLDER = "older: may be outdated"


class Disagreements:
    """Marks the items of one block that disagree (same subject, another value:
    :func:`similar.conflict`): the newer "newer", the older "older: may be outdated", shown
    right after the newer (in its section).

    Insert-time supersession catches the sure cases; this catches what it missed (an unsure
    contradiction, or memories written before memd could tell). Only items about to be shown
    are compared, each with those already kept: a block holds a dozen typed items, while the
    candidates were up to 50 (comparing all of them cost a hook ~3 ms).
    """

    def __init__(self, vectors: dict[str, Any], model_id: str) -> None:
        self.vectors = vectors
        self.model_id = model_id
        self.floor = profiles.conflict_floor(model_id)

    def mark(self, item: Item, kept: list[Item]) -> list[tuple[Item, str, str, float]]:
        """Mark ``item`` and the kept items it disagrees with; returns what to :meth:`undo`."""
        mine = self.vectors.get(item.memory.id)
        if mine is None or item.memory.kind not in SUPERSEDABLE:
            return []
        changed: list[tuple[Item, str, str, float]] = []
        for other in kept:
            theirs = self.vectors.get(other.memory.id)
            if theirs is None or other.memory.kind not in SUPERSEDABLE:
                continue
            if item.memory.kind == other.memory.kind == "bugfix":
                continue  # two fixes both happened (as on insert: memd.store.upsert.STATEMENTS)
            cosine = float(mine @ theirs)
            if cosine < self.floor:
                continue  # not about the same subject
            new, old = sorted((other, item), key=stamp, reverse=True)  # a tie: the better first
            if not disagree(new.memory.text, old.memory.text, round(cosine, 4), self.model_id):
                continue
            for i in (item, other):
                if all(c[0] is not i for c in changed):
                    changed.append((i, i.note, i.section, i.priority))
            if new.note != OLDER:
                new.note = NEWER
            old.note = OLDER
            old.section = new.section
            old.priority = min(old.priority, new.priority - 0.001)
        return changed

    @staticmethod
    def undo(changed: list[tuple[Item, str, str, float]]) -> None:
        for item, note, section, prio in changed:
            item.note, item.section, item.priority = note, section, prio


def stamp(item: Item) -> str:
    """When the item's statement was made (its newest source turn), never when memd stored it:
    an older session ingested after a newer one stays the older."""
    return max((s.timestamp for s in item.memory.sources), default="") or (
        item.memory.memory.created_at
    )


@lru_cache(maxsize=8192)
def disagree(new: str, old: str, cosine: float, model_id: str) -> bool:
    """:func:`similar.conflict`, remembered: the same pairs come up prompt after prompt."""
    return bool(similar.conflict(new, old, cosine, model_id))
