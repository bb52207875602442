"""Excerpt candidates: each episode's request and its outcome, redacted and cut to a budget,
citing exactly those turns (what any backend stores besides its typed memories, so nothing
said to or by the user is unreachable). No turn is in two excerpts; an agent's narration of its
next step is in none.
"""

from __future__ import annotations

import re

from memd.extract.episodes import Episode, build
from memd.extract.keywords import top_keywords
from memd.extract.redact import redact
from memd.extract.rules import clean_text, is_substantive
from memd.models import Candidate, Segment, Turn

WINDOW_BEFORE = 1
WINDOW_AFTER = 1
WINDOW_CHARS = 1500
"""An excerpt longer than this has each of its turns cut in proportion."""
MIN_TURN_CHARS = 120


def usable_turns(segment: Segment) -> list[tuple[Turn, str]]:
    """User and assistant turns worth reading, with their cleaned text."""
    out = []
    for turn in segment.turns:
        if turn.role not in ("user", "assistant") or turn.is_compact_summary:
            continue
        text = clean_text(turn.text)
        if turn.is_sidechain and text.strip().lower() == "warmup":
            continue
        out.append((turn, text))
    return out


_SENTENCE_END = re.compile(r"[.!?](?=\s)|[。！？；]")


def clip_turn(text: str, limit: int, keep_end: bool = False) -> str:
    """One turn cut to ``limit`` characters at a sentence boundary where possible (else a word
    boundary), marked with "…". ``keep_end`` keeps the end: the part next to the turn after."""
    if len(text) <= limit:
        return text
    if keep_end:
        tail = text[len(text) - (limit - 1) :]
        starts = [m.end() for m in _SENTENCE_END.finditer(tail) if m.end() <= len(tail) // 2]
        if starts:
            tail = tail[starts[0] :]
        elif " " in tail[: len(tail) // 2]:
            tail = tail.split(" ", 1)[1]
        return "…" + tail.lstrip()
    head = text[: limit - 1]
    ends = [m.end() for m in _SENTENCE_END.finditer(head)]
    if ends and ends[-1] >= limit // 2:
        return head[: ends[-1]].rstrip() + "…"
    if " " in head[limit // 2 :]:
        head = head.rsplit(" ", 1)[0]
    return head.rstrip(" ,;:") + "…"


def excerpt_lines(window: list[tuple[str, str]], focus: int, cap: int = WINDOW_CHARS) -> list[str]:
    """``role: text`` lines, one per (role, text) turn with whitespace collapsed, within ``cap``
    characters: when longer, each turn is cut in proportion to its length, at a sentence
    boundary where possible. A turn before ``focus`` keeps its end (the part next to the
    evidence), the others their start."""
    said = [" ".join(x.split()) for _, x in window]
    total = sum(len(x) for x in said)
    if total > cap:
        said = [
            clip_turn(x, max(MIN_TURN_CHARS, cap * len(x) // total), keep_end=i < focus)
            for i, x in enumerate(said)
        ]
    return [f"{role}: {x}" for (role, _), x in zip(window, said, strict=True)]


def excerpt_turns(episode: Episode) -> list[tuple[str, Turn, str]]:
    """(speaker, turn, text) of what an episode's excerpt shows: its request (``user``, or
    ``agent`` for a subagent's prompt) and its outcome (:attr:`Episode.outcome`)."""
    out: list[tuple[str, Turn, str]] = []
    if episode.request is not None and is_substantive(episode.request_text):
        out.append((episode.by or "user", episode.request, episode.request_text))
    out += [("assistant", turn, text) for turn, text in episode.outcome]
    return out


def excerpt_candidates(
    segment: Segment,
    topic: str = "",
    extra_patterns: tuple[str, ...] = (),
    typed_turns: set[str] | None = None,
    episodes: list[Episode] | None = None,
) -> list[Candidate]:
    """One redacted ``excerpt`` per episode that says something: its request and its outcome,
    dated, citing those turns.

    Contract (the injector relies on it): each line of the text is exactly one turn, in the
    order of ``source_uuids`` (line i is ``source_uuids[i]``), as ``role: text`` with the
    turn's whitespace collapsed; the first line may start with ``[YYYY-MM-DD] ``. An excerpt
    longer than ``WINDOW_CHARS`` has each turn cut in proportion, at sentence boundaries.

    In a dialogue (no tool calls), an episode is a turn and the other speaker's answer, so
    each question sits with its answer; in a coding session the request sits with the reply
    that closed it, never with the agent's attempts in between.
    """
    typed_turns = typed_turns or set()
    episodes = episodes if episodes is not None else build(segment)
    if not any(ep.calls for ep in episodes):
        # A dialogue (LoCoMo's kind): the neighbour often holds the question or the answer,
        # and no narration or attempt sits between them (budgeted recall on LoCoMo half A was
        # 0.627 with episode excerpts against 0.713 with these windows).
        return window_candidates(segment, topic, extra_patterns, typed_turns)
    out: list[Candidate] = []
    for episode in episodes:
        shown = [(who, t, x) for who, t, x in excerpt_turns(episode) if x.strip()]
        if not shown or not any(is_substantive(x) for _, _, x in shown):
            continue
        clean = [(who, " ".join(redact(x, extra_patterns).split())) for who, _, x in shown]
        lines = excerpt_lines(clean, focus=0)
        first = shown[0][1]
        day = first.timestamp[:10]
        by_user = any(who == "user" for who, _, _ in shown)
        importance = 0.35 if by_user else 0.3
        if any(t.uuid in typed_turns for _, t, _ in shown):
            importance += 0.1
        texts = [x for _, _, x in shown]
        out.append(excerpt(lines, day, topic, texts, importance, [t.uuid for _, t, _ in shown]))
    return out


def window_candidates(
    segment: Segment,
    topic: str = "",
    extra_patterns: tuple[str, ...] = (),
    typed_turns: set[str] | None = None,
    turns: list[tuple[Turn, str]] | None = None,
) -> list[Candidate]:
    """A dialogue's excerpts (no tool call in the segment: every turn is a statement): one per
    substantive turn, a window of that turn with the turn before and the turn after, dated,
    citing all three.

    Contract (the injector relies on it): each line of the text is exactly one turn, in the
    order of ``source_uuids`` (line i is ``source_uuids[i]``), as ``role: text`` with the
    turn's whitespace collapsed; the first line may start with ``[YYYY-MM-DD] ``. A window
    longer than ``WINDOW_CHARS`` has each turn cut in proportion, at sentence boundaries.

    The neighbour often holds the question or the answer: on LoCoMo these windows lifted
    evidence recall@5 from 0.49 to 0.70 (bench/locomo.py). The LLM backends add these too,
    so nothing said is unreachable whatever the backend.
    """
    typed_turns = typed_turns or set()
    said = [(t, x) for t, x in (turns if turns is not None else usable_turns(segment)) if x.strip()]
    clean: dict[int, tuple[str, str]] = {}  # redacted before any cut: no half secret survives

    def shown(j: int) -> tuple[str, str]:
        if j not in clean:
            t, x = said[j]
            clean[j] = (t.role, " ".join(redact(x, extra_patterns).split()))
        return clean[j]

    out: list[Candidate] = []
    for i, (turn, text) in enumerate(said):
        if not is_substantive(text):
            continue
        first, last = max(0, i - WINDOW_BEFORE), min(len(said), i + 1 + WINDOW_AFTER)
        window = said[first:last]
        if out and out[-1].source_uuids == [t.uuid for t, _ in window]:
            continue  # the same window as the previous turn's (a two-turn stretch)
        lines = excerpt_lines([shown(j) for j in range(first, last)], focus=i - first)
        day = turn.timestamp[:10]
        importance = 0.35 if turn.role == "user" else 0.3
        if turn.uuid in typed_turns:
            importance += 0.1
        out.append(excerpt(lines, day, topic, [text], importance, [t.uuid for t, _ in window]))
    return out


def excerpt(
    lines: list[str], day: str, topic: str, texts: list[str], importance: float, uuids: list[str]
) -> Candidate:
    """An excerpt candidate: its ``role: text`` lines under the day they were said, its
    keywords from ``texts``, citing ``uuids`` (line i is ``uuids[i]``)."""
    return Candidate(
        kind="excerpt",
        text=(f"[{day}] " if day else "") + "\n".join(lines),
        topic=topic,
        keywords=top_keywords(texts, 5),
        importance=round(importance, 2),
        source_uuids=uuids,
    )
