"""Hand-labelled English and Chinese sessions with the memories a good extractor should find.

Each ``*.json`` file holds one session: ``turns`` (role, text, tools as ``[name, summary]``)
and ``expected`` memories: ``{"kind", "turn", "all"}``, where ``turn`` is the index of the turn
that states it and ``all`` lists words the memory's text must contain (case-insensitive).

A candidate matches an expected memory when the kinds agree, every word is in its text, and its
``source_uuids`` include the labelled turn (provenance counts). Matching is one-to-one (a
maximum bipartite matching), so duplicates count as false positives.
``summary`` and ``excerpt`` candidates are scored separately: one summary per session, one
excerpt per substantive turn.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memd.models import Candidate, Segment, ToolCall, Turn

HERE = Path(__file__).resolve().parent
TYPED_KINDS = ("decision", "preference", "todo", "bugfix", "fact")


@dataclass
class Expected:
    kind: str
    words: list[str]
    uuid: str
    turn: int


@dataclass
class LabelledCase:
    name: str
    lang: str
    segment: Segment
    expected: list[Expected]


def turn_uuid(name: str, index: int) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"memd-labelled/{name}/{index}"))


def load_case(path: Path) -> LabelledCase:
    raw: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    name = raw["name"]
    session = str(uuid.uuid5(uuid.NAMESPACE_URL, f"memd-labelled/{name}"))
    turns = [
        Turn(
            uuid=turn_uuid(name, i),
            session_id=session,
            role=t["role"],
            text=t["text"],
            timestamp=f"2026-11-20T10:{i // 60:02d}:{i % 60:02d}.000Z",
            cwd=raw["project"],
            tools=[ToolCall(name=n, summary=s) for n, s in t.get("tools", [])],
        )
        for i, t in enumerate(raw["turns"])
    ]
    expected = [
        Expected(kind=e["kind"], words=e["all"], uuid=turn_uuid(name, e["turn"]), turn=e["turn"])
        for e in raw["expected"]
    ]
    segment = Segment(session_id=session, project=raw["project"], turns=turns, reason="ingest")
    return LabelledCase(name=name, lang=raw["lang"], segment=segment, expected=expected)


def load_labelled() -> list[LabelledCase]:
    return [load_case(p) for p in sorted(HERE.glob("*.json"))]


def matches(cand: Candidate, exp: Expected) -> bool:
    text = cand.text.lower()
    return (
        cand.kind == exp.kind
        and all(w.lower() in text for w in exp.words)
        and exp.uuid in cand.source_uuids
    )


def match(cands: list[Candidate], expected: list[Expected]) -> dict[int, int]:
    """Maximum one-to-one matching: expected index -> candidate index."""
    edges = [[j for j, c in enumerate(cands) if matches(c, e)] for e in expected]
    owner: dict[int, int] = {}

    def augment(i: int, seen: set[int]) -> bool:
        for j in edges[i]:
            if j in seen:
                continue
            seen.add(j)
            if j not in owner or augment(owner[j], seen):
                owner[j] = i
                return True
        return False

    for i in range(len(expected)):
        augment(i, set())
    return {i: j for j, i in owner.items()}


@dataclass
class KindScore:
    tp: int = 0
    fp: int = 0
    fn: int = 0
    misses: list[str] = field(default_factory=list)
    extras: list[str] = field(default_factory=list)

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 1.0

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 1.0


def score(
    results: list[tuple[LabelledCase, list[Candidate]]],
) -> dict[str, KindScore]:
    """Per-kind true/false positives and misses over every case, plus an ``all`` row."""
    scores = {k: KindScore() for k in (*TYPED_KINDS, "all")}
    for case, cands in results:
        typed = [c for c in cands if c.kind in TYPED_KINDS]
        pairs = match(typed, case.expected)
        hit = set(pairs.values())
        for i, exp in enumerate(case.expected):
            row = scores[exp.kind]
            if i in pairs:
                row.tp += 1
                scores["all"].tp += 1
            else:
                row.fn += 1
                scores["all"].fn += 1
                row.misses.append(f"{case.name}[{exp.turn}] {' + '.join(exp.words)}")
        for j, c in enumerate(typed):
            if j not in hit:
                scores[c.kind].fp += 1
                scores["all"].fp += 1
                scores[c.kind].extras.append(f"{case.name}: {c.text[:90]}")
    return scores
