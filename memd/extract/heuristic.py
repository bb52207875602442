"""The default extractor: offline, free and deterministic, for English and Chinese.

Its one job: a segment's sentences -> typed memories and one summary. The sentence rules are in
``memd.extract.rules``, tool and stack knowledge in ``vocabulary``; the facts from tool calls come
from ``evidence``, the excerpt windows from ``excerpts``, keywords and topics from ``keywords``.

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
from functools import lru_cache
from typing import Any

from memd.extract import vocabulary as vocab
from memd.extract.compaction import summary_candidates
from memd.extract.episodes import Episode, build, informative
from memd.extract.evidence import Evidence, fact_candidates
from memd.extract.excerpts import excerpt_candidates
from memd.extract.findings import (
    bug_fixes,
    findings,
    hook_candidate,
    hook_checks,
    outcome_candidate,
    section_candidates,
)
from memd.extract.keywords import keyword_text, prose_text, top_keywords, words
from memd.extract.records import (
    Commands,
    TodoList,
    answer_candidates,
    command_of,
    commit_candidate,
    commit_message,
    edited_paths,
    edits,
    files_candidate,
    is_review,
    plan_candidate,
    report_candidates,
    todo_candidates,
)
from memd.extract.redact import redact
from memd.extract.rules import (
    BUG_FIX,
    BUG_FIX_EXPLAINED,
    IMPORTANCE,
    REFERS_BACK,
    SENTENCE_MAX,
    clean_text,
    clip_words,
    importance_of,
    is_small_talk,
    sentences,
    statements,
    supersedes_hint,
)
from memd.models import Candidate, Segment, Turn
from memd.names import STOPPED_TOPIC
from memd.text import stopwords
from memd.text.chinese import RANGES, has_chinese
from memd.text.stance import taken_back

MAX_PER_KIND = 12


def clear_caches() -> None:
    """Forget the memoised words, keyword texts and content keys (benchmarks start cold)."""
    words.cache_clear()
    keyword_text.cache_clear()
    content_key.cache_clear()


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


def extract_segment(segment: Segment, extra_patterns: tuple[str, ...] = ()) -> list[Candidate]:
    episodes = build(segment)
    said = statement_turns(episodes)
    evidence = Evidence()
    typed: dict[tuple[str, str], Candidate] = {}
    typed_turns: set[str] = set()
    cause: Candidate | None = None  # the latest bug cause, waiting for its fix
    tentative: set[int] = set()
    cause_age = 0
    for turn, text, role in said:
        cause_age += 1
        if cause_age > 3:
            cause = None
        previous = ""
        for sentence in sentences(text):
            evidence.see_statement(sentence, turn.uuid)
            context, previous = previous, sentence
            for kind, statement in statements(sentence, role):
                if kind == "bugfix" and context and REFERS_BACK.match(statement):
                    statement = f"{context} {statement}"  # "That's why ..." needs its cause
                if kind == "fix":
                    if cause is not None and len(cause.text) < SENTENCE_MAX:
                        tentative.discard(id(cause))
                        cause.text = clip_words(f"{cause.text} {statement}", SENTENCE_MAX)
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
                cand = add_typed(typed, kind, statement, turn, role, extra_patterns)
                typed_turns.add(turn.uuid)
                if kind == "bugfix" and not BUG_FIX.search(statement):
                    cause, cause_age = cand, 0
                    if role == "assistant":
                        tentative.add(id(cand))
    # An assistant's diagnosis that no fix followed is work in progress, not a bug fix.
    typed_out = cap_per_kind([c for c in typed.values() if id(c) not in tentative])
    work = work_candidates(segment, episodes, evidence, typed_out)
    out = [*typed_out, *work, *fact_candidates(evidence)]
    texts = [text for _, text, _ in said]
    keywords = top_keywords([t for (_, t, role) in said if role == "user"] * 2 + texts)
    topic = " ".join(keywords[:3]) if keywords else ""
    for cand in out:
        cand.topic = cand.topic or topic
        cand.keywords = cand.keywords or top_keywords([cand.text], 5)
    files = {f: u for ep in episodes for f, u in edited_paths(ep, roots_of(segment)).items()}
    summary = summary_candidate(episodes, typed_out, files, topic, keywords)
    if summary is not None:
        out.append(summary)
    stopped = stopped_candidate(episodes)
    if stopped is not None:
        out.append(stopped)
    out = contained([c for c in out if c.kind in ("summary", "excerpt") or not fragment(c)])
    out.extend(excerpt_candidates(segment, topic, extra_patterns, typed_turns, episodes))
    for cand in out:
        if cand.kind != "excerpt":
            cand.text = redact(cand.text, extra_patterns)
    return out


_PLAIN = re.compile(r"[\W_]+")


def contained(cands: list[Candidate]) -> list[Candidate]:
    """``cands`` without a progress line whose words another typed memory of the session
    says whole ("Fixed and pushed." beside "Ended with: Fixed and pushed. ..."); a summary
    says the session over, so it hides nothing."""
    typed = [c for c in cands if c.kind not in ("summary", "excerpt")]
    plain = {id(c): _PLAIN.sub(" ", c.text.casefold()).strip() for c in typed}
    gone = {
        id(a)
        for a in typed
        for b in typed
        if a is not b
        and a.kind == "progress"
        and len(plain[id(a)]) >= 12
        and len(plain[id(a)]) < len(plain[id(b)])
        and plain[id(a)] in plain[id(b)]
    }
    return [c for c in cands if id(c) not in gone]


_LIST_ITEM = re.compile(r"^\s*[-*•]\s")
_LEAD_IN = re.compile(
    r"(?:^|(?<=[.!?]\s)|(?<=[。！？]))\s*(?:[^.!?。！？\n]|[.](?=\S)){0,100}[:：]\s*$"
)
"""A short last sentence that announces what follows ("Summary of what happened:")."""


def fragment(cand: Candidate) -> bool:
    """Whether a typed memory is a piece cut from a list or the lead-in of one: a bullet
    ("- `Setup` - triggered via --init flags"), or text that ends by announcing what follows
    ("…Summary of what happened:"), whose trailing lead-in is dropped when the rest stands."""
    if _LIST_ITEM.match(cand.text):
        return True
    lead = _LEAD_IN.search(cand.text)
    if lead is None:
        return False
    rest = cand.text[: lead.start()].rstrip()
    if len(rest.split()) < 4 or rest.endswith((":", "：")):
        return True
    cand.text = rest
    return False


def statement_turns(episodes: list[Episode]) -> list[tuple[Turn, str, str]]:
    """(turn, text, role) of what was said to be read sentence by sentence: the user's
    requests and replies (and what they said refusing a tool call), and the agent's replies
    (a subagent's prompt counts as the agent's words, never the user's)."""
    out: list[tuple[Turn, str, str]] = []
    for ep in episodes:
        if ep.request is not None and ep.request_text.strip():
            out.append((ep.request, ep.request_text, "user" if ep.by == "user" else "assistant"))
        events: list[tuple[Turn, str, str]] = [(t, x, "user") for t, x in ep.feedback]
        replies = {id(t): x for t, x in ep.outcome}
        for turn in ep.work:
            if turn.is_sidechain and ep.by != "agent":
                continue  # a subagent's work: its report reaches the parent as a result
            text = replies.get(id(turn))
            if text is None and turn.text and turn not in ep.replies:
                text = informative(clean_text(turn.text))  # narration of the work dropped
            if text:
                events.append((turn, text, "assistant"))
        order = {id(t): i for i, t in enumerate(ep.work)}
        events.sort(key=lambda e: order.get(id(e[0]), -1))
        out += events
    return out


def roots_of(segment: Segment) -> tuple[str, ...]:
    """Where the segment's paths are relative to: its project, then the cwds it ran in."""
    cwds = [t.cwd for t in segment.turns if t.cwd]
    return tuple(dict.fromkeys([segment.project, *cwds]))[:4]


def work_candidates(
    segment: Segment, episodes: list[Episode], evidence: Evidence, typed: list[Candidate]
) -> list[Candidate]:
    """What the episodes' work shows: tool records (todos, plans, answers, commits, edited
    files, commands that worked, subagents' reports) and what the agent found and did."""
    out: list[Candidate] = []
    todos = TodoList()
    commands = Commands()
    roots = roots_of(segment)
    stated = {c.text for c in typed}
    hooks: dict[str, str] = {}
    working = any(t.tools for t in segment.turns)  # a coding session, not a dialogue
    said = {u for c in typed for u in c.source_uuids}  # replies the rules read already
    for ep in episodes:
        for turn, call in ep.calls:
            if turn.is_sidechain and ep.by != "agent":
                # A subagent's work: its commands, commits and file reads count; not its todos.
                evidence.see_read(turn, call)
                if call.name == "Bash":
                    commands.see(turn, command := command_of(call), call.status, call.result)
                    message = commit_message(command) if call.status == "ok" else ""
                    cand = commit_candidate(turn, message, call.result) if message else None
                    if cand is not None:
                        out.append(cand)
                continue
            evidence.see_turn_call(turn, call)
            todos.see(turn, call.name, call.args, call.result)
            if call.name == "Bash":
                command = command_of(call)
                commands.see(turn, command, call.status, call.result)
                if call.status == "error":
                    for check in hook_checks(command, call.result):
                        hooks.setdefault(check, turn.uuid)
                message = commit_message(command) if call.status == "ok" else ""
                if message:
                    cand = commit_candidate(turn, message, call.result)
                    if cand is not None:
                        out.append(cand)
            elif call.name == "ExitPlanMode" and call.status == "ok":
                cand = plan_candidate(turn, str(call.args.get("plan") or ""))
                if cand is not None:
                    out.append(cand)
            elif call.name == "AskUserQuestion" and call.status == "ok":
                out += answer_candidates(turn, call.result)
            elif call.name in ("Task", "Agent", "TaskNotification") and call.status == "ok":
                out += report_candidates(turn, str(call.args.get("description") or ""), call.result)
        review = ep.by == "agent" and is_review(ep.request_text)  # a subagent's suggestions
        if not ep.calls or review:  # in a coding session, a question answered from what was read
            if working and ep.by == "user" and not any(t.uuid in said for t in ep.replies):
                cand = outcome_candidate(ep, episode_topic(ep), False, False)  # a fact
                if cand is not None:
                    out += [cand, *section_candidates(ep, cand.topic, stated | {cand.text})]
            continue
        changed = edits(ep, roots)
        files = {path: uuid for path, (uuid, _) in changed.items()}
        topic = episode_topic(ep)
        cand = files_candidate(ep, changed, topic)
        if cand is not None:
            out.append(cand)
        fixes = bug_fixes(ep)
        out += fixes
        used = {c.text for c in fixes} | stated
        out += findings(ep, used)
        committed = any(commit_message(command_of(c)) for _, c in ep.calls if c.name == "Bash")
        if not any(t.uuid in said for t in ep.replies):  # the rules read that reply already
            cand = outcome_candidate(ep, topic, bool(files), committed)
            if cand is not None:
                out.append(cand)
                used.add(cand.text)
        out += section_candidates(ep, topic, used)
    out += todo_candidates(todos)
    out += commands.candidates()
    out += commands.failing()
    for turn in segment.turns:
        if turn.is_compact_summary:
            out += summary_candidates(turn)
    out += [hook for hook in [hook_candidate(hooks)] if hook is not None]
    for cand in out:
        cand.origin = "work"
    return out


_SLASH_COMMAND = re.compile(r"^/[\w:.-]+\s+(?=\w)")


def episode_topic(ep: Episode) -> str:
    """What an episode was about, in a short phrase: the request's first sentence that asks
    for something (else its first sentence of substance); never a pasted command or log."""
    if ep.request is None or ep.by != "user":
        return ""
    usable = []
    for sentence in sentences(keyword_text(ep.request_text)):
        sentence = _SLASH_COMMAND.sub("", sentence)  # "/orchestrator create TODO app": its ask
        letters = sum(ch.isalpha() or ch.isspace() for ch in sentence)
        if is_small_talk(sentence) or letters < 0.8 * len(sentence) or sentence[0] in "❯$>#/~.":
            continue  # a pasted command or log line says what was run, not what was asked
        if len(content_key(sentence)) < 3:
            continue  # "原来如此", "ok do it": says nothing about the topic
        usable.append(sentence)
    asks = [s for s in usable if _REQUEST.search(s)]
    best = asks[0] if asks else usable[0] if usable else ""
    return clip_words(best.rstrip(".?!:。？！："), 100)


def stopped_candidate(episodes: list[Episode]) -> Candidate | None:
    """Where the work stopped: the last episode's request and outcome (the session brief's
    progress line)."""
    for ep in reversed(episodes):
        outcome = ep.outcome
        if ep.by != "user" or not outcome:
            continue
        if not ep.calls:
            return None  # a chat ends the segment: no work to resume
        said = [s for t, x in outcome for s in sentences(x)][:3]
        if not said:
            return None
        topic = episode_topic(ep)
        text = (f"Last worked on: {topic}. " if topic else "") + "Ended with: " + " ".join(said)
        return Candidate(
            kind="progress",
            text=clip_words(text, 420),
            topic=STOPPED_TOPIC,
            importance=0.45,
            source_uuids=[
                u for u in (ep.request.uuid if ep.request else "", outcome[-1][0].uuid) if u
            ],
        )
    return None


_KEY_WORD = re.compile(rf"[a-z0-9][a-z0-9_.+#/-]*|[{RANGES}]+")


@lru_cache(maxsize=4096)
def content_key(text: str) -> frozenset[str]:
    """A sentence's content words (Chinese as character pairs): near-identical wording of the
    same statement ("TODO: add the CI job later" / "We still need to add the CI job") has the
    same set."""
    out: set[str] = set()
    for w in _KEY_WORD.findall(text.lower()):
        if has_chinese(w[0]):
            out.update(w[i : i + 2] for i in range(max(1, len(w) - 1)))
            continue
        w = w.rstrip(".-/")
        if w and w not in vocab.STOPWORDS and w not in stopwords.MEMORY_KEY:
            out.add(w)
    return frozenset(out)


def same_statement(a: str, b: str) -> bool:
    ka, kb = content_key(a), content_key(b)
    if not ka or not kb:
        return False
    if ka == kb:
        return True
    small, large = sorted((ka, kb), key=len)
    return len(small) >= 5 and len(small & large) / len(small | large) >= 0.8


def add_typed(
    typed: dict[tuple[str, str], Candidate],
    kind: str,
    sentence: str,
    turn: Turn,
    role: str,
    extra_patterns: tuple[str, ...],
) -> Candidate:
    """The candidate for ``sentence``: a new one, or the one already stating it in this segment
    (same normalised text or near-identical wording), which then cites this turn too."""
    key = (kind, re.sub(r"\W+", " ", sentence.lower()).strip())
    cand = typed.get(key) or next(
        (c for (k, _), c in typed.items() if k == kind and same_statement(c.text, sentence)),
        None,
    )
    if cand is not None:
        if turn.uuid not in cand.source_uuids:
            cand.source_uuids.append(turn.uuid)
        cand.importance = max(cand.importance, importance_of(kind, sentence, role))
        return cand
    cand = Candidate(
        kind=kind,
        text=sentence,
        importance=importance_of(kind, sentence, role),
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


_REQUEST = re.compile(
    r"^(?:[A-Z][\w.'-]{0,30}:\s+)?(?:(?:now|also|then|ok|okay|so|and|next),?\s+)?"
    r"(?:(?:can|could|would|will) you|please|let's|let us|help|fix|add|make|write|implement"
    r"|update|remove|delete|create|run|check|look|find|explain|refactor|rename|move|change"
    r"|set up|investigate|debug|review|show|tell|search|spawn|ask|continue|work on|try|start"
    r"|stop|use|install|test|read|open|list|commit|push|deploy|build|configure|give|send"
    r"|plan|summari[sz]e|analy[sz]e|examine|compare|generate|why|how|what|where|when|which"
    r"|i want|i need|i'd like|we need)\b|[?？]$"
    r"|^(?:帮我|请|麻烦|能不能|看看|看一下|为什么)",
    re.IGNORECASE,
)


def _norm(text: str) -> str:
    return re.sub(r"\W+", " ", text.lower()).strip()


def summary_candidate(
    episodes: list[Episode],
    typed: list[Candidate],
    files: dict[str, str],
    topic: str,
    keywords: list[str],
) -> Candidate | None:
    """What the session worked on, in one short line: the user's first requests (greetings,
    small talk, sentences stored as typed memories and what the user took back later left out)
    and the files edited. Only the user's own words count as "Asked": a subagent's prompt is
    the agent's. It never restates the decisions, fixes and TODOs stored as their own
    memories: the session brief prints those below it."""
    stored = [n for n in (_norm(c.text) for c in typed) if n]
    asked: list[tuple[Turn, str]] = []
    for n, ep in enumerate(episodes):
        if ep.by != "user" or ep.request is None or len(asked) >= 2:
            continue
        later = [prose_text(e.request_text) for e in episodes[n + 1 :] if e.by == "user"]
        for sentence in sentences(prose_text(ep.request_text)):
            norm = _norm(sentence)
            if is_small_talk(sentence) or any(norm in s or s in norm for s in stored):
                continue
            if any(same_statement(sentence, c.text) for c in typed) or any(
                taken_back(s, sentence) for text in later for s in sentences(text)
            ):
                continue  # "I like this idea", taken back later
            asked.append((ep.request, sentence))
            if len(asked) >= 2:
                break
    shown = list(files)[:5]
    if not asked and not shown:
        return None
    parts = []
    if asked:
        label = "Asked" if any(_REQUEST.search(s) for _, s in asked) else "Said"
        parts.append(f"{label}: " + clip_words(" ".join(s for _, s in asked), 240).rstrip("."))
    if shown:
        parts.append("Files: " + ", ".join(shown))
    uuids = [t.uuid for t, _ in asked] + [files[f] for f in shown]
    return Candidate(
        kind="summary",
        text="; ".join(parts),
        topic=topic,
        keywords=keywords,
        importance=IMPORTANCE["summary"],
        source_uuids=list(dict.fromkeys(uuids)),
    )
