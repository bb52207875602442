"""Current truth in a block: an older claim a newer candidate replaces is marked, and the newer
statement is brought in ahead of it.

The candidates of a prompt are compared claim by claim (:mod:`memd.store.current`): the best
relevant ones as the older side, every candidate of the same project as the newer. When a newer
candidate replaces a claim of an older one, the older's sentence is marked in place ("until
2026-10-06; now: ops moved the nightly ingest from 01:00 to 02:30") and the newer becomes
relevant and ranks just above it, so the current value comes first and reaches the block even
when the older scored higher. A claim said again later (an upgrade rolled back to the old
version) is not marked.

Only the claims that share a word are compared (an index of the newer side's anchors), so a
prompt with 50 candidates costs well under a millisecond.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import replace
from typing import Any

from memd.models import Memory
from memd.recall.hits import Hit
from memd.store import cues, current, proposals, restated
from memd.store.diffs import DIFF_SHOWN, HUNK, before_after
from memd.store.families import back_on

OLDER_SIDE = 12
"""How many of the best relevant candidates are checked for a replaced claim (a block shows
about that many)."""
CHAIN = 2
"""How many replacements after a shown claim's are followed: each may be replaced in turn."""
MARK_WORDS = 14
"""How many words of the newer statement the mark quotes."""
_BULLET = re.compile(r"^(?:[-*•]|#{1,4})\s+")
"""A list item's or a heading's mark, run onto an excerpt's line: no word of what it says."""
_END = re.compile(r"[.!?;。！？；]+$")
_WORD_CUT = re.compile(r"\S+")
_FENCE_END = re.compile(r"\s*```\s*$")


def mark_text(new_sentence: str, date: str) -> str:
    words = _WORD_CUT.findall(
        _END.sub("", _told(_BULLET.sub("", new_sentence.strip())))
        .replace("[", "(")
        .replace("]", ")")
    )
    quoted = " ".join(words[:MARK_WORDS]) + (" …" if len(words) > MARK_WORDS else "")
    return f" [until {date}; now: {quoted}]"


def _told(sentence: str) -> str:
    """A sentence as a mark quotes it: a diff by its added lines, a table of a change by its
    changed rows ("max upload size: 25 MB → 100 MB")."""
    if "|" in sentence and (rows := before_after(sentence)):
        lead = sentence.split("|", 1)[0].strip()
        told = "; ".join(f"{key}: {was} → {now}" for key, was, now in rows)
        return f"{lead} {told}".strip()
    return _diff_told(sentence)


def _diff_told(sentence: str) -> str:
    """A sentence that tells a change in a diff, as its words before the diff and the diff's
    added lines ("Upgraded to Go 1.23: go 1.23; FROM golang:1.23.2-alpine AS builder"): the
    removed lines are what the mark says is no longer so."""
    lead, fence, body = sentence.partition("```")
    if not fence or not DIFF_SHOWN.search(sentence):
        return sentence  # (a "+" in a commit's words is no line a diff adds)
    added: list[list[str]] = []
    line: list[str] | None = None
    for token in HUNK.sub(" ", body.replace("```", " ")).split():
        if token.startswith(("+++", "---")):
            line = None
        elif token.startswith("+"):
            line = [token[1:]] if len(token) > 1 else []
            added.append(line)
        elif token == "-" and line == []:  # "+ - channel: …": a YAML list's item added
            continue
        elif token.startswith("-"):  # a removed line (a flag of an added one is cut too)
            line = None
        elif line is not None:
            line.append(token)
    told = "; ".join(" ".join(a) for a in added if a)
    return f"{lead.strip()} {told}".strip() if told else sentence


def annotate(text: str, sentence: str, mark: str) -> str:
    """``text`` with ``mark`` put at the end of ``sentence`` (before its final punctuation)."""
    at = text.find(sentence)
    if at < 0:
        return text + mark
    body = _FENCE_END.sub("", sentence)  # (a mark after a closing fence starts a sentence)
    punct = _END.search(body)
    cut = at + len(body) - (len(punct.group(0)) if punct else 0)
    return text[:cut] + mark + text[cut:]


def _index(
    results: list[Hit], said: list[str], since: str, wanted: frozenset[str]
) -> dict[str, list[tuple[int, current.Claim]]]:
    """The claims of the candidates said after ``since`` that could replace another's (they
    say a change), by their anchors, retired values and families among ``wanted``."""
    index: dict[str, list[tuple[int, current.Claim]]] = defaultdict(list)
    for n, r in enumerate(results):
        if said[n] <= since or not (r.relevant or current.may_replace(r.text)):
            continue  # what says a change later, or restates what the prompt asks about
        for c in current.claims(r.text):
            for key in (c.anchors | c.retired | c.families) & wanted:
                index[key].append((n, c))
    return index


def _cosine(vectors: dict[str, Any], a: str, b: str) -> float:
    va, vb = vectors.get(a), vectors.get(b)
    return float(va @ vb) if va is not None and vb is not None else 0.5


def mark_replaced(results: list[Hit], vectors: dict[str, Any], model_id: str) -> list[Hit]:
    """``results`` with replaced claims marked and their replacements promoted (changed
    results are copies; the order is kept)."""
    active = [r for r in results if r.status == "active"]
    if len(active) < 2:
        return results
    said = [r.said_at() for r in active]  # when each statement was made
    relevant = sorted(
        (n for n, r in enumerate(active) if r.relevant),
        key=lambda n: -active[n].score,
    )[:OLDER_SIDE]
    if not relevant:
        return results
    since = min(said[o] for o in relevant)
    if not any(
        said[n] > since and (r.relevant or current.may_replace(r.text))
        for n, r in enumerate(active)
    ):
        return results  # nothing later says a change or restates the subject
    wanted = frozenset(
        key
        for o in relevant
        for c in current.claims(active[o].text)
        for key in c.anchors | c.families
    )
    index = _index(active, said, since, wanted)
    if not index:
        return results  # no later candidate says a change about what they say
    changed: dict[str, Hit] = {}
    gone: list[tuple[frozenset[str], int, str]] = []  # values replaced, by whom, the mark
    queue, hops = list(relevant), dict.fromkeys(relevant, 0)
    while queue:
        o = queue.pop(0)
        old = changed.get(active[o].id) or active[o]
        found = _replacements(active, said, index, o, vectors, model_id)
        if not found:
            continue
        mine = changed.get(old.id) or old
        quoted: set[str] = set()
        for n, rep in found:
            new = changed.get(active[n].id) or active[n]
            date = said[n][:10]
            short = rep.new in quoted
            full = mark_text(rep.new, date)
            mark = f" [until {date}]" if short else full
            quoted.add(rep.new)
            gone.append((_replaced_values(old.text, rep, new.text), n, full))
            if n == o:  # corrected within itself (:func:`_corrected_within`)
                mine = replace(mine, marked=annotate(mine.text, rep.old, mark))
                continue
            mine = replace(mine, marked=annotate(mine.text, rep.old, mark), replaced_by=new.id)
            changed[new.id] = replace(
                new,
                relevant=True,
                score=max(new.score, old.score + 0.001),
                says=tuple(sorted({*new.says, rep.new})),
            )
            if n not in hops and hops[o] < CHAIN:  # what replaced it may be replaced in turn
                hops[n] = hops[o] + 1  # (qwen-turbo → qwen-max → deepseek-chat)
                queue.append(n)
                more = {k for c in current.claims(active[n].text) for k in c.anchors | c.families}
                if not more <= wanted:
                    wanted |= more
                    index = _index(active, said, since, wanted)
        changed[old.id] = mine
    for o in relevant:
        _bring_second_items(active, said, index, o, changed)
    for values, n, mark in gone:
        _mark_old_mentions(active, said, changed, values, n, mark)
    if not changed:
        return results
    return [changed.get(r.id, r) for r in results]


def _bring_second_items(
    active: list[Hit],
    said: list[str],
    index: dict[str, list[tuple[int, current.Claim]]],
    o: int,
    changed: dict[str, Hit],
) -> None:
    """Bring in, just below candidate ``o``, a later one of its project that gives a key of it
    another value in a second item (a second region's provider beside the first): both hold,
    and a question about the subject is told both."""
    old = changed.get(active[o].id) or active[o]
    for oc in current.claims(active[o].text):
        seen: set[tuple[int, str]] = set()  # (a pair is found under each word they share)
        for key in sorted(oc.anchors):
            for n, nc in index.get(key, ()):
                other = active[n]
                if (n, nc.text) in seen or said[n] <= said[o] or other.relevant:
                    continue
                seen.add((n, nc.text))
                if other.id in changed:
                    continue
                if other.project == old.project and restated.another_item(nc, oc):
                    changed[other.id] = replace(
                        other, relevant=True, score=max(other.score, old.score - 0.001)
                    )


def _replaced_values(old_text: str, rep: current.Replacement, new_text: str) -> frozenset[str]:
    """The values of ``rep``'s older claim that its newer one does not state (a place, a
    version, a name it retired): what a later mention calls "the old …"."""
    old = next((c for c in current.claims(old_text) if c.text == rep.old), None)
    new = next((c for c in current.claims(new_text) if c.text == rep.new), None)
    if old is None or new is None:
        return frozenset()
    return frozenset(
        v
        for v in old.values
        if len(v) > 3 and (v in new.retired or (v not in new.values and not v.isalpha()))
    )


def _mark_old_mentions(
    active: list[Hit],
    said: list[str],
    changed: dict[str, Hit],
    values: frozenset[str],
    n: int,
    mark: str,
) -> None:
    """Mark, in the candidates said after ``n`` (the replacement), a sentence that names one of
    ``values`` as the old one ("cn-hangzhou 那个旧桶还没删 [cn-hangzhou: until …; now: …]"): it
    names no current value, and the reader learns which one is."""
    if not values:
        return
    for p, r in enumerate(active):
        if said[p] <= said[n] or r.project != active[n].project:
            continue
        for claim in current.claims(r.text):
            named = sorted(values & claim.values)
            mine = changed.get(r.id) or r  # (another claim of it may be marked already)
            if not named or not cues.mentions_old(claim.text) or claim.text not in mine.text:
                continue
            at = mine.text.find(claim.text) + len(claim.text)
            if mine.text[at:].lstrip().startswith("["):
                continue  # marked already (a sentence marked before its full stop is not found)
            value = _as_written(claim.text, named[0])
            changed[r.id] = replace(
                mine, marked=annotate(mine.text, claim.text, f" [{value}: {mark[2:]}")
            )


def _as_written(sentence: str, value: str) -> str:
    """``value`` (folded) as ``sentence`` writes it (``/data/logs/huaxi``, ``cn-hangzhou``)."""
    m = re.search(rf"[\w./:@#-]*{re.escape(value)}[\w./:@#-]*", sentence, re.I | re.A)
    return m.group(0).strip(".:") if m else value


_BOUNDARY = re.compile(r"[.!?;。！？；\n]")


def _sentence_with(text: str, value: str) -> str:
    """The sentence of ``text`` that holds ``value`` (with its final punctuation); ""."""
    at = text.find(value)
    if at < 0:
        return ""
    start = max((m.end() for m in _BOUNDARY.finditer(text, 0, at)), default=0)
    end = _BOUNDARY.search(text, at + len(value))
    return text[start : end.end() if end else len(text)].strip()


def mark_declared(results: list[Hit], full: dict[str, Memory]) -> list[Hit]:
    """Candidates that say a value a newer memory replaced by its named subject (an LLM
    backend's ``subject`` and ``value``; :func:`memd.store.upsert.replaced_entry`): an excerpt
    of the same turns is marked where it says the old value, and the newer one ranks above.
    ``full``: the memories with a subject, read whole (a cached row has no history)."""
    active = [r for r in results if r.status == "active"]
    replaced = [
        (r, e)
        for r in active
        for e in (full[r.id].history if r.id in full else r.memory.history)
        if e.get("replaced")
    ]
    if not replaced:
        return results
    changed: dict[str, Hit] = {}
    for new, entry in replaced:
        value, turns = str(entry.get("value") or ""), set(entry.get("turns") or ())
        for old in active:
            mine = changed.get(old.id) or old
            if old.id == new.id or not value or not turns & {s.uuid for s in old.sources}:
                continue
            sentence = _sentence_with(mine.text, value)
            if not sentence or old.said_at() >= new.said_at() or "[until" in sentence:
                continue
            mark = mark_text(new.memory.text, new.said_at()[:10])
            changed[old.id] = replace(
                mine, marked=annotate(mine.text, sentence, mark), replaced_by=new.id
            )
            newer = changed.get(new.id) or new
            changed[new.id] = replace(
                newer, relevant=True, score=max(newer.score, old.score + 0.001)
            )
    if not changed:
        return results
    return [changed.get(r.id, r) for r in results]


def _replacements(
    active: list[Hit],
    said: list[str],
    index: dict[str, list[tuple[int, current.Claim]]],
    o: int,
    vectors: dict[str, Any],
    model_id: str,
) -> list[tuple[int, current.Replacement]]:
    """For each claim of candidate ``o`` that a newer candidate replaces, the newest such
    candidate and the two claims; a claim said again later (its value back) is left out. When
    the newest only says the old value is gone ("the old `order-events` topic has had no
    consumers since the cutover"), the newest that gives the new value stands in for it
    ("Deployed … with `fulfillment.orders-topic: commerce.orders.v2`"), unless the gone one
    retires that too."""
    old = active[o]
    out = []
    own = current.claims(old.text)
    for at, oc in enumerate(own):
        best: tuple[int, current.Claim, str] | None = _corrected_within(
            own[at + 1 :], oc, o, model_id
        )
        giving = best if best is not None and _fresh(best[1], oc) else None
        seen: set[tuple[int, str]] = set()
        for key in sorted(oc.anchors | oc.families):  # (sorted: the same answer every run)
            for n, nc in index.get(key, ()):
                if (n, nc.text) in seen or said[n] <= said[o] or n == o:
                    continue
                seen.add((n, nc.text))
                if active[n].project != old.project:
                    continue
                rank = (said[n], len(nc.anchors & oc.anchors))
                newer = best is None or rank > _rank(best, said, oc)
                gives = bool(_fresh(nc, oc)) and (giving is None or rank > _rank(giving, said, oc))
                if not newer and not gives:
                    continue  # the newest; of two said at once, the one closer to the older
                cos = round(_cosine(vectors, active[n].id, old.id), 2)
                why = current.replaces(nc, oc, cos, model_id)
                explicit = why.startswith(
                    ("retires", "a correction", "calls off", "rolled")
                ) or bool(
                    why
                    and (cues.CORRECTION.search(nc.text) or cues.CORRECTION.search(active[n].text))
                )  # said as such ("No wait, sorry, legal just said 50 MB. … Changed to 50 MB")
                if (
                    why
                    and not explicit
                    and _kept_by(active[n].text, oc, nc)
                    and not _variable_set(nc.text, oc.text)  # (one variable, one value:
                ):  # "Infra alerts still go to #ops-alerts" / `SLACK_ALERT_CHANNEL=#payments-oncall`)
                    continue  # "staging 已升级 … 3.2.0。生产保持 3.1.4": both hold
                if why and not explicit and any(cues.named_old(nc.text, v) for v in oc.values):
                    continue  # "cn-hangzhou 的旧 SLB 还没释放": of the old, no new value
                if why and _states(oc) & back_on(active[n].text):
                    continue  # "Rolled back to 4.2.2: …": a statement of 4.2.2 holds again
                if why and (explicit or not same_session(active[n], old)):
                    if not why.startswith("calls off") and _called_off(active, said, n, nc):
                        continue  # its PR was closed unmerged: the older value still holds
                    if newer:
                        best = (n, nc, why)
                    if gives:
                        giving = (n, nc, why)
        if (
            best is not None
            and giving is not None
            and said[giving[0]] < said[best[0]]  # (a later session: "the old … is gone")
            and not same_session(active[giving[0]], active[best[0]])
            and not _fresh(best[1], oc)
            and not _retired_words(best[1]) & giving[1].values
            and not best[2].startswith(("calls off", "rolled"))  # (a closed MR, a rollback)
        ):
            best = giving  # the gone value's mark says what holds now
        if best is not None and not _said_again(said, index, best[0], oc, best[1], best[2]):
            out.append((best[0], current.Replacement(oc.text, best[1].text, "")))
    return out


def _rank(
    found: tuple[int, current.Claim, str], said: list[str], old: current.Claim
) -> tuple[str, int]:
    """How a replacement found ranks: the newest, and of two said at once the one closer to
    the older claim."""
    return (said[found[0]], len(found[1].anchors & old.anchors))


def _fresh(new: current.Claim, old: current.Claim) -> frozenset[str]:
    """The values ``new`` gives as they are that ``old`` does not."""
    return _states(new) - old.values


def _states(claim: current.Claim) -> frozenset[str]:
    """The values ``claim`` gives as they are (not those it says it moved from)."""
    return claim.values - _retired_words(claim)


def _retired_words(claim: current.Claim) -> frozenset[str]:
    """The words of the values ``claim`` retires ("python 3.10.14": python, 3.10.14)."""
    return frozenset(part for v in claim.retired for part in v.split())


def _corrected_within(
    later: tuple[current.Claim, ...], old: current.Claim, o: int, model_id: str
) -> tuple[int, current.Claim, str] | None:
    """A later claim of the same memory that corrects ``old`` as such ("They should get
    en-GB" / "No, that's wrong — the default is actually en-AU now"): a block may show the
    older piece alone, the correction beside another item."""
    for claim in later:
        if cues.CORRECTION.search(claim.text):
            why = current.replaces(claim, old, 0.5, model_id)
            if why:
                return (o, claim, why)
    return None


def _kept_by(text: str, old: current.Claim, new: current.Claim) -> bool:
    """Whether the replacement's memory says, beside it, that a value of ``old`` it does not
    repeat is kept ("生产保持 3.1.4", "staging-eu is unchanged"), or names it beside the new one,
    both as they are ("现在是杭州（cn-hangzhou）和新加坡（ap-southeast-1）两套集群")."""
    fresh = new.values - old.values  # what the change gives
    shapes = {current.shape(f) for f in fresh}
    gone = {v for v in old.values - new.values if current.shape(v) in shapes}
    return any(
        c.text != new.text
        and (
            any(  # in the clause that says it is kept ("`inventory-svc` 切换订阅，消费组名不变": no)
                cues.KEPT.search(part)
                and any(  # ("旧 topic 保留 7 天": the old one is kept around, not in use)
                    current.mentions(part, v) and not cues.named_old(part, v)
                    for v in gone & c.values
                )
                for part in _CLAUSE.split(c.text)
            )
            or _both(c, gone, fresh)
        )
        for c in current.claims(text)
    )


_TWO = re.compile(r"\b(?:both|two|each)\b|两(?:个|套|台|条|处|地)|[两二]者|双")
"""Words that count the values a sentence names as holding side by side ("两套集群")."""


_VARIABLE = re.compile(r"(?<![\w.-])([A-Z][A-Z0-9]*_[A-Z0-9_]+)=([^\s`'\"]+)")
"""An environment variable's assignment (``SLACK_ALERT_CHANNEL=#ops-alerts``)."""


def _variable_set(new: str, old: str) -> bool:
    """Whether ``new`` gives an environment variable of ``old`` another value: a variable
    holds one value, whatever else the newer memory says is kept."""
    was = dict(_VARIABLE.findall(old))
    return any(key in was and was[key] != value for key, value in _VARIABLE.findall(new))


def _both(claim: current.Claim, gone: set[str], fresh: frozenset[str]) -> bool:
    """Whether ``claim`` counts a value of each as holding side by side ("… two clusters"),
    none of them as one that went (no diff's removed line, no "from", no "the old", no "moved
    to")."""
    return bool(
        _TWO.search(claim.text)
        and gone & (claim.values - claim.retired)
        and fresh & (claim.values - claim.retired)
        and not any(cues.named_old(claim.text, v) for v in gone)
        and not cues.shows_diff(claim.text)
        and not any(cues.changed_to(claim.text, f) for f in fresh)
    )


_CLAUSE = re.compile(r"[，,;；]")


def _called_off(active: list[Hit], said: list[str], n: int, claim: current.Claim) -> bool:
    """Whether a candidate newer than ``n`` says the PR, MR or branch that ``claim`` (of ``n``)
    proposes its value on was closed unmerged."""
    if not claim.refs:
        return False
    for m, r in enumerate(active):
        if said[m] <= said[n] or r.project != active[n].project:
            continue
        for c in current.claims(r.text):
            if proposals.calls_off(c.text, claim.text, c.refs & claim.refs):
                return True
    return False


def same_session(a: Hit, b: Hit) -> bool:
    """Whether two candidates come from one session (where a later sentence rarely corrects an
    earlier one without saying so)."""
    sa = {s.session_id for s in a.sources}
    sb = {s.session_id for s in b.sources}
    return bool(sa & sb - {""})


def _said_again(
    said: list[str],
    index: dict[str, list[tuple[int, current.Claim]]],
    after: int,
    old: current.Claim,
    new: current.Claim,
    why: str,
) -> bool:
    """Whether a candidate newer than ``after`` (the replacement) states ``old``'s value
    again: a number, a version or a path the replacement dropped, of one of its own shapes
    when it names any but names ("back to 20.11.1"; not the port or the database name a
    corrected host kept); when the replacement retires a value by name, only that one (the
    other values it kept)."""
    shapes = {current.shape(f) for f in new.values - old.values} - {"name"}  # in their place
    dropped = {
        v
        for v in old.values - new.anchors
        if not v.isalpha() and (not shapes or current.shape(v) in shapes)
    }
    if why.startswith("retires"):
        dropped = {v for v in old.values & _retired_words(new) if not v.isalpha()}
    for key in dropped:
        for n, c in index.get(key, ()):
            if said[n] <= said[after] or key in c.retired or cues.mentions_old(c.text):
                continue  # ("the old `chore/pydantic-v2` branch with the 2.7.1 changes")
            if len({a.lstrip("#@") for a in c.anchors & old.anchors}) > 1:
                return True  # (`#ops` is also read as `ops`: one word, not two)
    return False
