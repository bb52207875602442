"""The default extractor: offline, free and deterministic, for English and Chinese.

The sentence rules are in ``memd.extract.rules``; tool and stack knowledge in ``vocabulary``.

It reads what was said sentence by sentence and keeps only statements with a clear marker
(precision over recall: typed memories get injected into future sessions):

- decision: "we'll use / decided / chose X over Y / going with / switched to", "决定 / 采用 / 改成"
- preference: "I prefer / always / never / don't / must / please use", "不要 / 统一 / 必须 / 偏好"
- todo: "TODO / still need / later / next step / remaining", "待办 / 还没 / 下次 / 以后 / 还需要"
- bugfix: cause and fix statements, "the bug was / caused by / root cause / fixed by", "原因是 / 修复"
- fact: the tech stack (from commands run, files touched and what was said), how tests and
  builds run, files touched, and where things live
- summary: one per segment (topic, summary, keywords), like a topic Markdown file
- excerpt: every substantive user and assistant turn, redacted, with its own provenance
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from memd.extract import vocabulary as vocab
from memd.extract.rules import (
    BUG_FIX,
    BUG_FIX_EXPLAINED,
    IMPORTANCE,
    REFERS_BACK,
    SENTENCE_MAX,
    STACK_SAID,
    clean_text,
    importance_of,
    is_substantive,
    sentences,
    statements,
    supersedes_hint,
)
from memd.models import Candidate, Segment, Turn
from memd.redact import redact

EXCERPT_CHARS = 1000
NEIGHBOUR_CHARS = 400
"""A neighbouring turn in an excerpt window is clipped to this many characters."""
WINDOW_BEFORE = 1
WINDOW_AFTER = 1
MAX_PER_KIND = 12

# --- keywords and topic -------------------------------------------------------------------
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_.+#/-]{1,40}")
_CJK_RUN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]{2,}")
_CJK_STOP = re.compile(
    r"[的了是在我你他她它们这那和与就都也还要把被给对从到个上下中为吗呢吧啊一有没不会能很再先让看下]"
)


@lru_cache(maxsize=2048)
def words(text: str) -> tuple[str, ...]:
    """Keyword candidates: English words and identifiers, plus Chinese chunks."""
    out: list[str] = []
    for w in _WORD.findall(text):
        w = w.strip(".-/")
        low = w.lower()
        if len(low) < 3 or low in vocab.STOPWORDS or low.startswith("redacted"):
            continue
        out.append(low if w.islower() or (w.isupper() and len(w) > 4) else w)
    for run in _CJK_RUN.findall(text):
        out.extend(
            c
            for c in _CJK_STOP.split(run)
            if 2 <= len(c) <= 4 and not any(w in c for w in vocab.CJK_TRIGGERS)
        )
    return tuple(out)


def top_keywords(texts: list[str], n: int = 8) -> list[str]:
    counts: Counter[str] = Counter()
    for t in texts:
        for w in words(t):
            weight = 2 if ("_" in w or "." in w or "/" in w or w.lower() in vocab.TECH) else 1
            counts[w] += weight
    return [w for w, c in counts.most_common(n * 2) if c >= 1][:n]


# --- facts from tools ---------------------------------------------------------------------
_PATH = re.compile(r"(?:[\w.~-]*/)*[\w.-]+\.[A-Za-z0-9]{1,8}\b|(?:[\w.-]+/)+[\w.-]+")
_EDIT_TOOLS = {"Edit", "Write", "MultiEdit", "NotebookEdit", "str_replace_based_edit_tool"}
_READ_TOOLS = {"Read", "NotebookRead", "View"}
_SHELL_TOOLS = {"Bash", "bash", "Shell", "BashOutput"}
_CMD_PREFIX = re.compile(
    r"^(?:\$\s*|cd\s+\S+\s*&&\s*|(?:[A-Z_][A-Z0-9_]*=\S+\s+)+|sudo\s+|(?:do|then|else|exec)\s+)+"
)


def tool_path(summary: str) -> str | None:
    s = summary.strip()
    for prefix in ("file_path:", "path:", "notebook_path:"):
        if s.startswith(prefix):
            s = s[len(prefix) :].strip()
    m = _PATH.search(s)
    return m.group(0) if m else None


def relative(path: str, cwd: str) -> str:
    if cwd and path.startswith(cwd.rstrip("/") + "/"):
        return path[len(cwd.rstrip("/")) + 1 :]
    return path


def shell_commands(summary: str) -> list[str]:
    """The commands in a shell tool summary: ``cd x && pytest -q | tail`` -> ``["pytest -q"]``."""
    s = summary.strip()
    if s.startswith("command:"):
        s = s[len("command:") :].strip()
    out = []
    for part in re.split(r"\s*(?:&&|\|\||;|\n)\s*", s):
        part = _CMD_PREFIX.sub("", part.split(" | ")[0]).strip()
        part = re.sub(r"\s+\d?>+\s*\S+|\s+2>&1", "", part).strip()
        if part and not part.startswith(("cd ", "echo ", "#")):
            out.append(part[:120])
    return out


@dataclass
class Evidence:
    """What a segment shows about the project, gathered in one pass."""

    tech: dict[str, list[str]] = field(default_factory=dict)
    commands: dict[str, str] = field(default_factory=dict)
    command_uuids: dict[str, list[str]] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)
    file_uuids: list[str] = field(default_factory=list)

    def see_tech(self, name: str, uuid: str) -> None:
        uuids = self.tech.setdefault(name, [])
        if uuid not in uuids:
            uuids.append(uuid)

    def see_turn(self, turn: Turn) -> None:
        for tool in turn.tools:
            if tool.name in _EDIT_TOOLS:
                path = tool_path(tool.summary)
                if path:
                    rel = relative(path, turn.cwd)
                    if rel not in self.files:
                        self.files.append(rel)
                    if turn.uuid not in self.file_uuids:
                        self.file_uuids.append(turn.uuid)
                    for name in vocab.tech_of_path(rel):
                        self.see_tech(name, turn.uuid)
            elif tool.name in _READ_TOOLS:
                path = tool_path(tool.summary)
                for name in vocab.tech_of_path(relative(path, turn.cwd)) if path else []:
                    self.see_tech(name, turn.uuid)
            elif tool.name in _SHELL_TOOLS:
                for cmd in shell_commands(tool.summary):
                    for name in vocab.tech_of_command(cmd):
                        self.see_tech(name, turn.uuid)
                    family = vocab.command_family(cmd)
                    if family:
                        self.commands[family] = cmd  # the latest wins: sessions change course
                        uuids = self.command_uuids.setdefault(family, [])
                        if turn.uuid not in uuids:
                            uuids.append(turn.uuid)

    def see_statement(self, sentence: str, uuid: str) -> None:
        if STACK_SAID.search(sentence):
            for name in vocab.tech_in_text(sentence):
                self.see_tech(name, uuid)


# --- the extractor ------------------------------------------------------------------------
class HeuristicExtractor:
    """Offline, deterministic extraction. Cheap enough for every segment (>= 500 turns/s)."""

    name = "heuristic"

    def __init__(self, extra_patterns: tuple[str, ...] | list[str] = ()) -> None:
        self.extra_patterns = tuple(extra_patterns)
        self.calls = 0
        self.candidates = 0

    def stats(self) -> dict[str, Any]:
        return {
            "backend": self.name,
            "calls": self.calls,
            "candidates": self.candidates,
            "tokens_in": 0,
            "tokens_out": 0,
            "failures": 0,
            "fallbacks": 0,
            "budget_exhausted": False,
        }

    def extract(self, segment: Segment) -> list[Candidate]:
        self.calls += 1
        out = extract_segment(segment, self.extra_patterns)
        self.candidates += len(out)
        return out


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


def extract_segment(segment: Segment, extra_patterns: tuple[str, ...] = ()) -> list[Candidate]:
    turns = usable_turns(segment)
    evidence = Evidence()
    typed: dict[tuple[str, str], Candidate] = {}
    typed_turns: set[str] = set()
    cause: Candidate | None = None  # the latest bug cause, waiting for its fix
    tentative: set[int] = set()
    cause_age = 0
    for turn, text in turns:
        evidence.see_turn(turn)
        cause_age += 1
        if cause_age > 3:
            cause = None
        previous = ""
        for sentence in sentences(text):
            evidence.see_statement(sentence, turn.uuid)
            context, previous = previous, sentence
            for kind, statement in statements(sentence, turn.role):
                if kind == "bugfix" and context and REFERS_BACK.match(statement):
                    statement = f"{context} {statement}"  # "That's why ..." needs its cause
                if kind == "fix":
                    if cause is not None and len(cause.text) < SENTENCE_MAX:
                        tentative.discard(id(cause))
                        cause.text = f"{cause.text} {statement}"[:SENTENCE_MAX]
                        if turn.uuid not in cause.source_uuids:
                            cause.source_uuids.append(turn.uuid)
                        typed_turns.add(turn.uuid)
                        cause = None
                        continue
                    if not BUG_FIX_EXPLAINED.search(statement):
                        continue
                    kind = "bugfix"
                    if context and not BUG_FIX.search(context):
                        statement = f"{context} {statement}"  # the sentence before: the cause
                cand = add_typed(typed, kind, statement, turn, extra_patterns)
                typed_turns.add(turn.uuid)
                if kind == "bugfix" and not BUG_FIX.search(statement):
                    cause, cause_age = cand, 0
                    if turn.role == "assistant":
                        tentative.add(id(cand))
    # An assistant's diagnosis that no fix followed is work in progress, not a bug fix.
    out = cap_per_kind([c for c in typed.values() if id(c) not in tentative])
    out.extend(fact_candidates(evidence))
    texts = [text for _, text in turns]
    keywords = top_keywords([t for (turn, t) in turns if turn.role == "user"] * 2 + texts)
    topic = " ".join(keywords[:3]) if keywords else ""
    for cand in out:
        cand.topic = cand.topic or topic
        cand.keywords = cand.keywords or top_keywords([cand.text], 5)
    summary = summary_candidate(turns, out, evidence, topic, keywords)
    if summary is not None:
        out.append(summary)
    out.extend(excerpt_candidates(segment, topic, extra_patterns, typed_turns, turns))
    for cand in out:
        if cand.kind != "excerpt":
            cand.text = redact(cand.text, extra_patterns)
    return out


def add_typed(
    typed: dict[tuple[str, str], Candidate],
    kind: str,
    sentence: str,
    turn: Turn,
    extra_patterns: tuple[str, ...],
) -> Candidate:
    key = (kind, re.sub(r"\W+", " ", sentence.lower()).strip())
    if key in typed:
        cand = typed[key]
        if turn.uuid not in cand.source_uuids:
            cand.source_uuids.append(turn.uuid)
        return cand
    cand = Candidate(
        kind=kind,
        text=sentence,
        importance=importance_of(kind, sentence, turn.role),
        source_uuids=[turn.uuid],
        supersedes_hint=supersedes_hint(sentence) if kind in ("decision", "preference") else "",
    )
    typed[key] = cand
    return cand


def cap_per_kind(cands: list[Candidate]) -> list[Candidate]:
    seen: Counter[str] = Counter()
    out = []
    for c in sorted(cands, key=lambda c: -c.importance):
        seen[c.kind] += 1
        if seen[c.kind] <= MAX_PER_KIND:
            out.append(c)
    order = {id(c): i for i, c in enumerate(cands)}
    return sorted(out, key=lambda c: order[id(c)])


def fact_candidates(ev: Evidence) -> list[Candidate]:
    out = []
    for name, uuids in ev.tech.items():
        display, role = vocab.TECH[name]
        text = f"Project uses {display} for {role}" if role else f"Project uses {display}"
        out.append(
            Candidate(
                kind="fact",
                text=text,
                topic="tech stack",
                keywords=[display, role] if role else [display],
                importance=IMPORTANCE["fact"],
                source_uuids=uuids[:5],
            )
        )
    for family, cmd in ev.commands.items():
        out.append(
            Candidate(
                kind="fact",
                text=f"{vocab.FAMILY_TEXT[family]} with `{cmd}`",
                topic="commands",
                keywords=[family, cmd.split()[0]],
                importance=0.5,
                source_uuids=ev.command_uuids[family][:5],
            )
        )
    if ev.files:
        shown = ", ".join(ev.files[:8])
        more = f" (+{len(ev.files) - 8} more)" if len(ev.files) > 8 else ""
        dirs = sorted({f.split("/")[0] + "/" for f in ev.files if "/" in f})
        out.append(
            Candidate(
                kind="fact",
                text=f"Files touched: {shown}{more}",
                topic="files",
                keywords=dirs[:5] or ev.files[:3],
                importance=0.35,
                source_uuids=ev.file_uuids[:10],
            )
        )
    return out


def summary_candidate(
    turns: list[tuple[Turn, str]],
    cands: list[Candidate],
    ev: Evidence,
    topic: str,
    keywords: list[str],
) -> Candidate | None:
    requests = [(t, s) for t, text in turns if t.role == "user" for s in sentences(text)[:2]]
    if not requests and not cands:
        return None
    parts = []
    if requests:
        asked = " ".join(s for _, s in requests[:2])[:240]
        parts.append(f"Asked: {asked}")
    for kind, label in (("decision", "Decided"), ("bugfix", "Fixed"), ("todo", "Open")):
        items = [c.text for c in cands if c.kind == kind][:3]
        if items:
            parts.append(f"{label}: " + "; ".join(i[:120] for i in items))
    if ev.files:
        parts.append("Files: " + ", ".join(ev.files[:5]))
    text = (f"{topic}: " if topic else "") + ". ".join(p.rstrip(".") for p in parts)
    uuids: list[str] = []
    for t, _ in requests[:5]:
        if t.uuid not in uuids:
            uuids.append(t.uuid)
    for c in cands:
        for u in c.source_uuids:
            if u not in uuids:
                uuids.append(u)
    if not uuids:
        return None
    return Candidate(
        kind="summary",
        text=text[:700],
        topic=topic,
        keywords=keywords,
        importance=IMPORTANCE["summary"],
        source_uuids=uuids[:30],
    )


def clip(text: str, limit: int) -> str:
    body = " ".join(text.split()) if len(text) > limit else text
    return body if len(body) <= limit else body[: limit - 1].rstrip() + "…"


def excerpt_candidates(
    segment: Segment,
    topic: str = "",
    extra_patterns: tuple[str, ...] = (),
    typed_turns: set[str] | None = None,
    turns: list[tuple[Turn, str]] | None = None,
) -> list[Candidate]:
    """One redacted ``excerpt`` per substantive user or assistant turn: a window of that turn
    with the turn before and the turn after (clipped), dated, citing all three.

    The neighbour often holds the question or the answer: on LoCoMo these windows lifted
    evidence recall@5 from 0.49 to 0.70 (bench/locomo.py). The LLM backends add these too,
    so nothing said is unreachable whatever the backend.
    """
    typed_turns = typed_turns or set()
    said = [(t, x) for t, x in (turns if turns is not None else usable_turns(segment)) if x.strip()]
    out: list[Candidate] = []
    for i, (turn, text) in enumerate(said):
        if not is_substantive(text):
            continue
        window = [
            *said[max(0, i - WINDOW_BEFORE) : i],
            (turn, text),
            *said[i + 1 : i + 1 + WINDOW_AFTER],
        ]
        if out and out[-1].source_uuids == [t.uuid for t, _ in window]:
            continue  # the same window as the previous turn's (a two-turn stretch)
        lines = [
            f"{t.role}: {clip(x, EXCERPT_CHARS if t is turn else NEIGHBOUR_CHARS)}"
            for t, x in window
        ]
        day = turn.timestamp[:10]
        body = (f"[{day}] " if day else "") + "\n".join(lines)
        importance = 0.35 if turn.role == "user" else 0.3
        if turn.uuid in typed_turns:
            importance += 0.1
        out.append(
            Candidate(
                kind="excerpt",
                text=redact(body, extra_patterns),
                topic=topic,
                keywords=top_keywords([text], 5),
                importance=round(importance, 2),
                source_uuids=[t.uuid for t, _ in window],
            )
        )
    return out
