"""A segment as episodes: one request, the agent's work on it, and the reply that closes it.

An episode opens with a request: a user turn of the main thread that says something. The
agent's turns up to the next request are its work (tool calls and their results, from the main
thread and from its subagents); the assistant turns among them that call no tool are its
replies, and they close it (in a coding session, one closing reply; in a dialogue, where every
turn is a statement, each turn of the other speaker). Text in an assistant turn that also calls
tools announces or comments the work in progress ("Let me look at...") and is never an outcome.

Subagents (sidechain turns) work for the agent, not for the user: their first "user" turn is
the parent agent's prompt. Their turns join the episode that was open when they ran; a segment
made of a subagent's turns alone has episodes whose request is that prompt, ``by == "agent"``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from memd.extract.rules import clean_text, is_substantive
from memd.models import Segment, ToolCall, Turn
from memd.text.stopwords import HEADING_GENERIC

_NARRATION_SENTENCE = re.compile(
    r"^(?:(?:ok(?:ay)?|great|perfect|excellent|good|now|alright|all right|right|so|first|next"
    r"|then|finally|good news|got it|understood|sure|yes|done|nice|hmm|interesting"
    r"|i see)[,.!:]?\s+)*"
    r"(?:let me|let's|let us|i'll|i will|i'm going to|i am going to|i need to|i should|i want to"
    r"|i'm now going to|now i'll|now i will|time to|going to|we need to (?:check|look|see|find"
    r"|verify|run|read)|i can see|i see|looking at|checking|searching|reading|running|continuing"
    r"|now "
    r"(?:let me|i'll|checking|running|looking)|(?:now )?i (?:now )?(?:have|understand|know)"
    r"(?: (?:all|enough|a (?:complete|full|clear|good)|the full|everything))?\b(?! that)"
    r"|i've (?:made|got|gathered)|i have (?:gathered|made)|(?:here'?s|here is) (?:the|a|my|what)"
    r"|the (?:changes|edits) (?:are|have been) (?:in place|made|applied))\b",
    re.IGNORECASE,
)
_ZH_NARRATION_SENTENCE = re.compile(
    r"^(?:好的|好|明白|收到)?[，,]?\s*(?:让我|我来|我先|我再|接下来我|下面我|现在我)"
)
_EXCLAIM_ONLY = re.compile(
    r"^(?:ok(?:ay)?|great|perfect|excellent|good|now|alright|all right|right|so|done|nice"
    r"|got it|understood|sure|yes|awesome|wonderful|hmm|interesting|good news|好的|好|明白了?)"
    r"[\s!.,:，。！]*$",
    re.IGNORECASE,
)
_MARKUP = re.compile(r"\*\*|__|[✅✔✓❌⚠️🎉🚀]\ufe0f?\s*")
_RULE = re.compile(r"^[-=*_|: ]{3,}$")
_HEADING_NUMBER = re.compile(r"^(?:\d+[.)]|[A-Z][.)]|step \d+:?)\s+", re.IGNORECASE)
_USER_SAID = re.compile(r"the user said:\s*\n?(?P<said>.+)\Z", re.DOTALL | re.IGNORECASE)
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z`*\"'(\[])|(?<=[。！？])")


@dataclass
class Episode:
    """One request, the work on it and the replies that close it."""

    request: Turn | None = None
    """The turn that opened it (a user's, or an agent's prompt to a subagent); None for work
    that came before any request in the segment (a continuation)."""
    by: str = ""
    """Who asked: ``user``, ``agent`` (a subagent's prompt), or "" (no request)."""
    request_text: str = ""
    work: list[Turn] = field(default_factory=list)
    """Assistant turns (the main thread's and its subagents'), in order."""
    replies: list[Turn] = field(default_factory=list)
    """The main thread's assistant turns that call no tool: what the episode ended with."""
    feedback: list[tuple[Turn, str]] = field(default_factory=list)
    """What the user said while refusing a tool call (a plan, an edit), with its turn."""

    @property
    def calls(self) -> list[tuple[Turn, ToolCall]]:
        """Every tool call of the work, with its turn, in order."""
        return [(t, c) for t in self.work for c in t.tools if c.name]

    @property
    def outcome(self) -> list[tuple[Turn, str]]:
        """The replies, each as the text that carries information: with work (tool calls),
        narration dropped; in a dialogue, every turn is a statement and stays whole."""
        work = bool(self.calls)
        out = []
        for turn in self.replies:
            text = clean_text(turn.text)
            text = informative(text) if work or turn.tools else text.strip()
            if text:
                out.append((turn, text))
        return out

    def last_uuid(self) -> str:
        turns = [t for t in (self.request, *self.work) if t is not None]
        return turns[-1].uuid if turns else ""


def build(segment: Segment) -> list[Episode]:
    """The segment's episodes, in order."""
    main = [t for t in segment.turns if not t.is_sidechain and not t.is_compact_summary]
    agent_only = not main
    episodes: list[Episode] = []
    current: Episode | None = None
    for turn in segment.turns:
        if turn.is_compact_summary:
            continue
        text = clean_text(turn.text) if turn.text else ""
        if turn.role == "user":
            opens = bool(text.strip()) and is_substantive(text) if not turn.is_sidechain else False
            if turn.is_sidechain and agent_only and text.strip() and text.strip() != "Warmup":
                opens = True
            if turn.is_sidechain and not agent_only:
                continue  # the parent agent's prompt to a subagent: part of the work
            if opens:
                current = Episode(
                    request=turn, by="agent" if turn.is_sidechain else "user", request_text=text
                )
                episodes.append(current)
            elif text.strip() and current is not None and not turn.is_sidechain:
                # "ok", "yes", "continue": a reply to the agent, not a new request
                current.feedback.append((turn, text))
            continue
        if turn.role != "assistant":
            continue
        if current is None:
            current = Episode()
            episodes.append(current)
        current.work.append(turn)
        for call in turn.tools:
            said = user_feedback(call)
            if said:
                current.feedback.append((turn, said))
        main_thread = not turn.is_sidechain or agent_only
        if main_thread and turn.text.strip() and not any(c.name for c in turn.tools):
            current.replies.append(turn)
    for ep in episodes:
        if not ep.replies:
            # Ended without a closing reply (interrupted, or the segment closed mid-work): the
            # last thing the agent said that carries information stands for the outcome.
            last = next(
                (
                    t
                    for t in reversed(ep.work)
                    if (not t.is_sidechain or agent_only) and informative(clean_text(t.text))
                ),
                None,
            )
            if last is not None:
                ep.replies.append(last)
    return episodes


def user_feedback(call: ToolCall) -> str:
    """What the user said when refusing a call ("...the user said:\n<words>"), else ""."""
    if call.status != "rejected":
        return ""
    m = _USER_SAID.search(call.result)
    return m.group("said").strip() if m else ""


def is_narration(sentence: str) -> bool:
    """An assistant sentence that announces or comments its next step, or says nothing
    ("Let me look at the tests.", "Perfect!", "Now I'll run the linter")."""
    s = sentence.strip().lstrip("*_#>-• ").strip()
    if not s:
        return True
    if _EXCLAIM_ONLY.match(s):
        return True
    return bool(_NARRATION_SENTENCE.match(s) or _ZH_NARRATION_SENTENCE.match(s))


def split_sentences(text: str) -> list[str]:
    """A reply's sentences and list items, in order (line breaks kept as separators)."""
    out: list[str] = []
    for line in text.split("\n"):
        line = line.strip()
        if not line:
            continue
        out.extend(p.strip() for p in _SENTENCE.split(line) if p.strip())
    return out


_LIST_ITEM = re.compile(r"^(?:[-*•]|\d+[.)])\s")


def with_their_items(sentences: list[str], picked: list[int]) -> list[int]:
    """``picked`` (indices into ``sentences``) with the list items that follow a picked
    sentence ending in a colon: "Fixed all 17 type errors by:" says nothing without them."""
    out: list[int] = []
    for i in picked:
        if i in out:
            continue
        out.append(i)
        if not sentences[i].rstrip("*_ ").endswith(":"):
            continue
        j = i + 1
        while j < len(sentences) and _LIST_ITEM.match(sentences[j]):
            if j not in out:
                out.append(j)
            j += 1
    return out


def as_prose(sentence: str) -> str:
    """A list item as a clause of a sentence ("- Using `cast()` for JSON" -> "Using `cast()`
    for JSON;"), so that the block can cut a memory between its items; other text as it is."""
    m = _LIST_ITEM.match(sentence)
    if not m:
        return sentence
    item = sentence[m.end() :].strip()
    return item if item[-1:] in ".;:!?" else f"{item};"


def heading(line: str) -> str:
    """A Markdown heading as a line of content ("### 5. opentelemetry_phoenix" ->
    "opentelemetry_phoenix"), or "" when it is only structure ("## Summary of changes")."""
    text = _HEADING_NUMBER.sub("", line.lstrip("#").strip()).strip()
    words = re.findall(r"[a-z]+", text.lower())
    if not text or all(w in HEADING_GENERIC for w in words) or is_narration(text):
        return ""
    return text


def informative(text: str) -> str:
    """``text`` without its narration sentences (see :func:`is_narration`), line breaks kept;
    "" when nothing else is left."""
    if not text.strip():
        return ""
    lines = []
    for line in text.split("\n"):
        line = _MARKUP.sub("", line).strip()
        if not line or _RULE.match(line):
            continue
        if line.startswith("#"):
            line = heading(line)
            if not line:
                continue
        kept = [s for s in _SENTENCE.split(line) if s.strip() and not is_narration(s)]
        if kept:
            lines.append(" ".join(s.strip() for s in kept))
    out = "\n".join(lines).strip()
    return out if is_substantive(out) else ""
