"""How an injected block looks and how long it is: its items, their lines grouped by section
and day, the turns an excerpt shows, and the block's size kept up to date item by item.

Every block sits between ``<memd-context>`` and ``</memd-context>``, so the transcript parser
drops it and memd never re-learns its own injection. Excerpts sit under one line per day
(oldest first), each turn labelled "user:" or "claude:"; a turn is shown whole unless it is
long (then cut to its matching sentences).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from memd import kinds
from memd.models import USER_SCOPE
from memd.recall import lexical
from memd.recall.hits import Hit

OPEN_TAG = "<memd-context>"
CLOSE_TAG = "</memd-context>"
HEADER = (
    "# memd: memories from earlier sessions; may be outdated, this conversation wins; "
    "if they disagree, ask the user."
)
"""Starts with ``memd.ingest.transcript.MEMD_CONTEXT_HEADER``, which the parser also recognizes."""
SPEAKERS = {"assistant": "claude"}
"""How an excerpt's turn names its speaker in a block ("assistant: " costs 3 more characters
than "claude: " on every turn Claude said; "user: " stays)."""
MAX_ITEM_CHARS = 400
"""A typed memory is clipped to this many characters."""
MAX_EXCERPT_CHARS = 600
"""An excerpt that is not one line per turn (an older one) shows at most this much."""
WHOLE_TURN_CHARS = 500
"""A turn this short is shown whole; a longer one is cut to its matching sentences. (A turn
cut to one matching sentence loses the rest of what it said: at 280 characters a quarter of
LoCoMo's evidence turns were cut, and budgeted recall on half A was 0.595 instead of 0.704.)"""
KEEP_SHARE = 0.5
"""Of a long turn, the sentences whose match is at least half the best one's are kept."""
LONG_SENTENCE_CHARS = 400
"""A kept sentence longer than this (a block of code, a table) of a turn the block has no room
for is cut to the words around the prompt's terms in it, ``NEAR_WORDS`` on each side."""
NEAR_WORDS = 10
_KIND_SECTIONS = [(k.name, k.section) for k in sorted(kinds.KINDS, key=lambda k: k.block_rank)]
_AFTER_SUMMARY = [name for name, _ in _KIND_SECTIONS].index("summary") + 1
SECTIONS = (
    ("pinned", "Pinned"),
    *_KIND_SECTIONS[:_AFTER_SUMMARY],
    ("sessions", "Sessions"),
    *_KIND_SECTIONS[_AFTER_SUMMARY:],
)
"""Each section's key and title. A prompt's block shows the summaries it finds relevant under
"Sessions" (dated): "Last session" is the brief's, where it is the newest one."""
DATE_PREFIX = re.compile(r"^\[(\d{4}-\d{2}-\d{2})\]\s*")
SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+|(?<=[。！？])")


@dataclass
class Item:
    """One memory offered for injection: what it shows and which turns it covers (why it was
    offered is :func:`memd.recall.retrieve.explain` of its ``memory``, worked out for the kept ones)."""

    memory: Hit
    section: str
    priority: float
    display: str = ""
    turns: frozenset[str] = frozenset()
    """The transcript turns (source uuids) whose text this item shows."""
    note: str = ""
    """A mark such as "newer" or "older: may be outdated"."""
    code: str = ""
    """What became of the code the memory names ("moved: `f` now in `b.py`", "may be
    outdated: `a.py` no longer exists (last seen 2026-11-02)"): :mod:`memd.recall.codecheck`."""
    day: str = ""
    """Set on excerpts: the day their turns were said, shown once per day above the items of
    that day (in its section) instead of on every line."""

    def __post_init__(self) -> None:
        if not self.display:
            self.display = clip(self.memory.text)
        if not self.turns:
            self.turns = frozenset(source_uuids(self.memory))


def source_uuids(memory: Hit) -> list[str]:
    return [s.uuid for s in memory.sources if s.uuid]


def clip(text: str, limit: int = MAX_ITEM_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def day_of(memory: Hit) -> str:
    """The day of what the memory says: its newest source turn's, else when it was stored."""
    said = [s.timestamp for s in memory.sources if s.timestamp]
    stored = memory.memory.updated_at or memory.memory.created_at
    return (max(said) if said else stored)[:10]


def line_for(item: Item) -> str:
    """The item's line (without its day line, for an item that has a ``day``)."""
    memory = item.memory
    scope = " [user-wide]" if memory.project == USER_SCOPE else ""
    day = "" if item.day or DATE_PREFIX.match(item.display) else day_of(memory)
    note = f" [{item.note}]" if item.note else ""
    code = f" [{item.code}]" if item.code else ""
    return f"- {item.display}{scope}" + (f" ({day})" if day else "") + note + code


def day_line(day: str) -> str:
    return f"{day}:"


def render(items: list[Item], footer: str = "") -> str:
    """The block for ``items``, grouped by section in a fixed order; within a section, the
    items without a ``day`` first, then the others by day, each day once on a line of its own
    (otherwise in the order given)."""
    if not items:
        return ""
    lines = [OPEN_TAG, HEADER]
    for key, title in SECTIONS:
        group = sorted((i for i in items if i.section == key), key=lambda i: i.day)
        if group:
            lines.append(f"{title}:")
            day = ""
            for i in group:
                if i.day and i.day != day:
                    lines.append(day_line(i.day))
                day = i.day
                lines.append(line_for(i))
    if footer:
        lines.append(footer)
    lines.append(CLOSE_TAG)
    return "\n".join(lines)


def rendered_size(items: list[Item], footer: str = "") -> int:
    return len(render(items, footer))


class BlockSize:
    """The length :func:`render` would give, kept up to date item by item (rendering the whole
    block again for every candidate cost a hook ~1 ms)."""

    FIXED = (OPEN_TAG, HEADER, CLOSE_TAG)

    def __init__(self) -> None:
        self.chars = sum(len(line) for line in self.FIXED)
        self.lines = len(self.FIXED)
        self.sections: set[str] = set()
        self.days: set[tuple[str, str]] = set()

    def line(self, item: Item) -> int:
        """What ``item`` adds: its line, its section's title when it is the first, and its
        day's line when it is the first of that day in its section."""
        added = len(line_for(item)) + 1
        if item.section not in self.sections:
            added += len(SECTION_TITLES[item.section]) + 1
        if item.day and (item.section, item.day) not in self.days:
            added += len(day_line(item.day)) + 1
        return added

    def with_item(self, item: Item, footer: str = "") -> int:
        """The block's length with ``item`` added (and ``footer``)."""
        return self.now(footer) + self.line(item)

    def now(self, footer: str = "") -> int:
        """The block's length as it stands (its frame alone when empty), with ``footer``."""
        extra = len(footer) + 1 if footer else 0
        return self.chars + self.lines - 1 + extra

    @staticmethod
    def change(item: Item, display: str) -> int:
        """How many characters showing ``display`` instead of ``item``'s adds to its line."""
        before, shown = len(line_for(item)), item.display
        item.display = display
        try:
            return len(line_for(item)) - before
        finally:
            item.display = shown

    def grow(self, delta: int) -> None:
        """An item already counted now shows ``delta`` more characters."""
        self.chars += delta

    def add(self, item: Item) -> None:
        if item.section not in self.sections:
            self.sections.add(item.section)
            self.chars += len(SECTION_TITLES[item.section])
            self.lines += 1
        if item.day and (item.section, item.day) not in self.days:
            self.days.add((item.section, item.day))
            self.chars += len(day_line(item.day))
            self.lines += 1
        self.chars += len(line_for(item))
        self.lines += 1

    @classmethod
    def of(cls, items: list[Item]) -> BlockSize:
        size = cls()
        for item in items:
            size.add(item)
        return size

    def total(self, footer: str = "") -> int:
        if self.lines == len(self.FIXED):
            return 0  # nothing to show: no block at all
        extra = len(footer) + 1 if footer else 0
        return self.chars + self.lines - 1 + extra


def sentences(text: str) -> list[str]:
    return [s for s in SENTENCE_END.split(text) if s.strip()]


def excerpt_turns(memory: Hit) -> tuple[str, list[tuple[str, str]] | None]:
    """An excerpt's day and its (turn uuid, line) pairs, in order; ``None`` for the pairs when
    its text is not one line per source turn (an older excerpt).

    An excerpt's text has one line per turn, in the order of its sources (the first line may
    start with a ``[YYYY-MM-DD]`` date)."""
    text = memory.text
    day = ""
    m = DATE_PREFIX.match(text)
    if m:
        day, text = m.group(1), text[m.end() :]
    lines = [line for line in text.split("\n") if line.strip()]
    sources = source_uuids(memory)
    if len(lines) != len(sources) or not lines:
        return day, None
    return day, list(zip(sources, lines, strict=True))


def spoken(line: str) -> str:
    """A turn's line with its speaker as a block names it (:data:`SPEAKERS`)."""
    speaker, sep, rest = line.partition(": ")
    return f"{SPEAKERS[speaker]}: {rest}" if sep and speaker in SPEAKERS else line


def show_turns(
    turns: list[tuple[str, str]],
    picked: Iterable[int],
    weights: dict[str, float],
    says: tuple[str, ...] = (),
    near: bool = False,
) -> str:
    """The picked turns of an excerpt, in order (its day is shown apart: ``Item.day``): a
    turn longer than ``WHOLE_TURN_CHARS`` is cut to its matching sentences and those of
    ``says`` (:attr:`Hit.says`); with ``near``, a long one of them to the words around the
    prompt's terms (:func:`near_terms`: when the block has no room for more)."""
    parts = []
    for n in sorted(picked):
        line = spoken(turns[n][1])
        long = len(line) > WHOLE_TURN_CHARS
        parts.append(cut_turn(line, weights, says, near) if long else line)
    return " / ".join(parts)


def carries(line: str, says: tuple[str, ...]) -> bool:
    """Whether ``line`` holds one of the sentences of ``says`` (a claim may span a few
    sentences of the line, or a sentence a few claims)."""
    flat = " ".join(line.split())
    return any(s in flat or (len(flat) >= 12 and flat in s) for s in says)


def whole_excerpt(memory: Hit) -> str:
    """An excerpt that is not one line per turn (an older one), shown whole (clipped)."""
    body = DATE_PREFIX.sub("", memory.text, count=1)
    return clip("\n".join(spoken(line) for line in body.split("\n")), MAX_EXCERPT_CHARS)


def cut_turn(
    line: str, weights: dict[str, float], says: tuple[str, ...] = (), near: bool = False
) -> str:
    """A long turn cut to its matching sentences (keeping its "speaker:" prefix); to those
    that hold a sentence of ``says`` and its best match when it has them."""
    speaker, sep, rest = line.partition(": ")
    if not sep or len(speaker) > 40:
        speaker, rest = "", line
    said = sentences(rest)
    scores = [lexical.weighted_match(weights, s) for s in said]
    best = max(scores, default=0.0)
    hits = [i for i, score in enumerate(scores) if score > 0 and score >= KEEP_SHARE * best]
    new = {i for i in range(len(said)) if says and carries(said[i], says)}
    if new:  # what replaces an older value, and the best match with the prompt
        hits = sorted(new | {scores.index(best)} if best > 0 else new)
    if not hits:
        return clip(line, WHOLE_TURN_CHARS)
    chosen = " … ".join(
        near_terms(said[i], weights) if near and not carries(said[i], says) else said[i].strip()
        for i in hits
    )
    if hits[0] > 0:
        chosen = "… " + chosen
    if hits[-1] < len(said) - 1:
        chosen += " …"
    chosen = _GAPS.sub("…", chosen)  # (a sentence cut to its terms starts or ends with one)
    return (f"{speaker}: " if speaker else "") + chosen


_MARK = re.compile(r"\[(?:[^\[\]]*?\buntil \d{4}-\d{2}-\d{2}|may be outdated)[^\[\]]*\]")
"""A mark of :mod:`memd.recall.stale` or :mod:`memd.recall.disputed` in a memory's text."""
_WORD_OR_MARK = re.compile(rf"{_MARK.pattern}|\S+")
_GAPS = re.compile(r"…(?:\s+…)+")


def near_terms(sentence: str, weights: dict[str, float]) -> str:
    """``sentence``, or when longer than ``LONG_SENTENCE_CHARS``, the words around those that
    carry the prompt's terms (``NEAR_WORDS`` each side), the gaps shown as "…"."""
    sentence = sentence.strip()
    if len(sentence) <= LONG_SENTENCE_CHARS:
        return sentence
    words = _WORD_OR_MARK.findall(sentence)
    keep = [False] * len(words)
    for n, word in enumerate(words):
        if word.startswith("[") and _MARK.fullmatch(word):  # a mark, and what it marks
            around = slice(max(0, n - NEAR_WORDS), n + 1)
        elif lexical.weighted_match(weights, word) > 0:
            around = slice(max(0, n - NEAR_WORDS), n + NEAR_WORDS + 1)
        else:
            continue
        keep[around] = [True] * len(keep[around])
    if not any(keep):
        return sentence
    out: list[str] = []
    for n, word in enumerate(words):
        if keep[n]:
            out.append(word)
        elif not out or out[-1] != "…":
            out.append("…")
    return " ".join(out)


_PIECE_END = re.compile(r"(?<=[.!?;])\s+")


def cut_item(text: str, weights: dict[str, float]) -> str:
    """A typed memory for the block: whole when short; a long one (an episode's files, its
    commands, a report) cut to its first piece, which names what it is about, and the pieces
    that match the prompt, within ``MAX_ITEM_CHARS``."""
    text = " ".join(text.split())
    if len(text) <= MAX_ITEM_CHARS or not weights:
        return clip(text)
    pieces = _PIECE_END.split(text)
    scores = [lexical.weighted_match(weights, p) for p in pieces]
    best = max(scores[1:], default=0.0)
    if best <= 0:
        return clip(text)  # nothing matches: its first piece alone might say nothing
    keep = [0, *(i for i, sc in enumerate(scores) if i and sc > 0 and sc >= KEEP_SHARE * best)]
    shown = ""
    last = -1
    for i in keep:
        part = ("" if i == last + 1 or not shown else "… ") + pieces[i]
        if len(shown) + len(part) + 1 > MAX_ITEM_CHARS:
            break
        shown = f"{shown} {part}".strip()
        last = i
    if last < len(pieces) - 1:
        shown += " …"
    return shown if len(shown) > 40 else clip(text)


def overflow(more: int) -> str:
    if more <= 0:
        return ""
    noun = "memory" if more == 1 else "memories"
    return f"(+{more} more pinned {noun} not shown here: `memd list` shows them all)"


SECTION_ORDER = {key: n for n, (key, _) in enumerate(SECTIONS)}
SECTION_TITLES = {key: f"{title}:" for key, title in SECTIONS}


def ordered(items: list[Item]) -> list[Item]:
    """In the order the block shows them: by section, then (excerpts, under their day) in the
    order they were said, then best first. The items without a day come first in a section."""
    return sorted(
        items,
        key=lambda i: (SECTION_ORDER[i.section], i.day, said_at(i), -i.priority, i.memory.id),
    )


def said_at(item: Item) -> str:
    """When the first turn an excerpt shows was said ("" for an item without a day)."""
    if not item.day:
        return ""
    return min(
        (s.timestamp for s in item.memory.sources if s.uuid in item.turns),
        default="",
    )
