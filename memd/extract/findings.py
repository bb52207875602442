"""What the agent found and did in an episode, as it said it: bug fixes that held, durable
findings about the code, and the outcome of the work.

- **Bug fixes that held.** A cause the agent states ("The issue is...", "That's the bug") is
  kept only when edits follow and a check then succeeds (tests, build, lint or a commit) before
  any other cause is stated: the attempts before it ("a false positive, add an ignore") are
  not memories. Its symptom is the failure it followed.
- **Findings.** A sentence stating how a named piece of code or tooling behaves or where it
  lives ("`current_span_ctx()` returns a span context directly"), not what the agent is doing.
- **Outcome.** The closing reply of an episode with work, cut to its informative sentences,
  after what was asked: a bug fix, a finding, or progress, depending on the work.

Dialogue without tool calls has no work: its turns stay excerpts and statements.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memd.extract import episodes as ep
from memd.extract import vocabulary as vocab
from memd.extract.episodes import Episode, informative, is_narration, split_sentences
from memd.extract.evidence import shell_commands
from memd.extract.records import (
    EDIT_TOOLS,
    MAX_REPORT_SECTIONS,
    command_of,
    commit_message,
    path_of,
    report_sections,
)
from memd.extract.rules import IMPORTANCE, clean_text, is_tentative
from memd.extract.rules import clip_words as clip
from memd.models import Candidate, Turn

_CAUSE = re.compile(
    r"\b(?:the (?:real |actual |root |\w+ )?(?:bug|issue|problem|cause|culprit|error|failure)"
    r"(?: here)? (?:is|was)\b|that'?s (?:the|why the) (?:bug|issue|problem)|root cause"
    r"|(?:is|was|were) caused by|fails? because|failing because|failed because|broke because"
    r"|the reason (?:is|was)|turns? out (?:that|to be)|this happens because|it happens because)"
    r"|原因是|问题出在|根因|根本原因|问题是",
    re.IGNORECASE,
)
_FIXED = re.compile(
    r"\b(?:fixed|fixes|resolved|works now|now works|now passes?|passes now|all (?:\d+ )?tests? "
    r"pass|tests? (?:now )?pass|is passing|are passing|succeeds? now|green)\b|修复|解决了|通过了",
    re.IGNORECASE,
)
_FAILURE_WORDS = re.compile(
    r"\b(?:fail\w*|error\w*|bug\w*|broken|breaks?|crash\w*|doesn'?t work|does not work|not working"
    r"|won'?t|can'?t|cannot|wrong|complain\w*|warning|exception|panic\w*|regress\w*|flak\w*"
    r"|timeout|timed out|returns? nothing|empty|missing|still)\b|报错|失败|不对|不行|异常",
    re.IGNORECASE,
)
_CHECKS = frozenset({"test", "build", "lint", "typecheck", "format"})
_COMPILE = re.compile(
    r"^(?:mix (?:compile|test|credo|dialyzer|format)|go (?:build|vet|test)|cargo (?:check|build|test"
    r"|clippy)|tsc|make\b|npm (?:run )?(?:build|test|lint)|pnpm|yarn|gradle|mvn|dotnet (?:build|test)"
    r"|flutter (?:test|analyze)|dart (?:test|analyze)|bundle exec|rake|mise (?:run )?(?:test|lint"
    r"|check|build)|just\b|task\b|uv run|poetry run|pytest|python -m pytest|ruff|mypy)",
)
_ENTITY = re.compile(
    r"`[^`\n]{2,80}`|\b[\w.-]+/[\w./-]+\b|\b\w+\.(?:py|ts|tsx|js|go|rs|ex|exs|rb|java|kt|swift|md"
    r"|json|toml|ya?ml|sh|sql|c|h|cpp|dart)\b|\b[a-z]+_[a-z0-9_]+\b|\b[a-z]+[A-Z]\w+\b"
    r"|\b[A-Z][a-z]+[A-Z]\w+\b|\b[A-Z]{2,}[A-Z0-9_]*\b|--[a-z][\w-]+|\b\d[\d,.]*\b"
)
_STATE = re.compile(
    r"\b(?:is|are|was|were|returns?|expects?|requires?|accepts?|uses?|runs?|calls?|lives?"
    r"|contains?|supports?|defaults? to|limits?|caps?|rejects?|only|never|always|must|needs?"
    r"|takes?|gives?|reads?|writes?|stores?|sets?|has|have|does ?n[o']t|isn'?t|aren'?t"
    r"|doesn'?t|can'?t|won'?t|means|handles?|points? to|maps? to|comes? from|belongs? to"
    r"|defined|configured|located|stored|generated|triggered|installed|enabled|disabled)\b",
    re.IGNORECASE,
)
_FIRST_PERSON = re.compile(
    r"^(?:i|i'm|i've|i'll|i'd|we'll|we're going|my|me|let|now|next|first|then|here'?s|here is"
    r"|here are|below|above|this (?:commit|pr|change)|the (?:pr|commit|change|diff) (?:is|was)"
    r"|done|all (?:\d+ )?(?:tests?|checks?) pass)\b",
    re.IGNORECASE,
)
_WORK_STATE = re.compile(
    r"\b(?:uncommitted|i (?:need|have|made|added|changed|updated|created|fixed|removed)"
    r"|you (?:can|could|should|might)|let me|we (?:need|should|can)|next step|todo|should"
    r"|looks? (?:correct|right|good|fine|ok)|ready|blockers?|in progress"
    r"|(?:is|are) (?:now )?(?:clean|green)|is now `?[0-9a-f]{6,}|in the index"
    r"|got past|still (?:passes|green))\b",
    re.IGNORECASE,
)
"""The state of the work in the session ("`golangci-lint` is clean locally.", "Mode bit is now
`100755` in the index."): gone by the next one, no finding."""
_IMPERATIVE = re.compile(
    r"^(?:add|configure|create|update|remove|delete|run|fix|implement|use|make|wire|write|move"
    r"|rename|replace|set|change|check|verify|ensure|test|install|document|refactor|extract"
    r"|pass|keep|avoid|consider|try|open|close|push|commit|merge|review|wrap|call|return)\b",
    re.IGNORECASE,
)
MAX_FINDINGS = 3
"""Findings kept per episode, the most specific first."""


@dataclass
class _Pending:
    """A stated cause waiting for a check to confirm it."""

    sentences: list[str]
    turn: Turn
    symptom: str
    symptom_turn: Turn | None
    edited: dict[str, str]
    after: list[tuple[str, Turn]]
    """What the agent said after the cause: where the fix is told ("Added `--no-verify` to
    `GitMerge`")."""


def bug_fixes(episode: Episode) -> list[Candidate]:
    """Causes the agent stated that edits and a successful check then confirmed."""
    held: list[_Pending] = []
    pending: _Pending | None = None
    failure: tuple[str, Turn] | None = None
    if episode.by == "user" and _FAILURE_WORDS.search(episode.request_text):
        failure = (first_line(episode.request_text), episode.request) if episode.request else None
    for turn in episode.work:
        if turn.is_sidechain and episode.by != "agent":
            continue
        said = [s for s in split_sentences(clean_text(turn.text)) if not is_narration(s)]
        causes = cause_sentences(said)
        if causes:
            if failure is None:
                failure = said_failure(episode, turn)
            sym, sym_turn = failure if failure else ("", None)
            pending = _Pending(causes, turn, sym, sym_turn, {}, [])
        elif pending is not None:
            pending.after += [(s, turn) for s in said]
        for call in turn.tools:
            if not call.name:
                continue
            if call.name in EDIT_TOOLS and call.status == "ok" and pending is not None:
                path = path_of(call)
                if path:
                    pending.edited.setdefault(path.rsplit("/", 1)[-1], turn.uuid)
            if call.name != "Bash":
                continue
            command = command_of(call)
            if not is_check(command):
                continue
            if call.status == "error":
                failure = (failure_text(command, call.result), turn)
                if pending is not None and pending.edited:
                    pending = None  # the fix did not hold: that cause was an attempt
            elif call.status == "ok":
                if pending is not None and pending.edited:
                    held.append(pending)
                    pending = None
                failure = None
    if pending is not None and pending.edited:
        closing = " ".join(t.text for t in episode.replies)
        if _FIXED.search(closing):
            held.append(pending)
    told = [(s, t) for t in episode.replies for s in split_sentences(clean_text(t.text))]
    fixes: list[tuple[str, Turn] | None] = []
    for p in reversed(held):  # the closing reply's fix is the latest cause's it fits, not all
        fix = fix_sentence(p.after, p.sentences) or fix_sentence(told, p.sentences)
        fixes.insert(0, None if fix and any(f and f[0] == fix[0] for f in fixes) else fix)
    return [bugfix_candidate(p, fix) for p, fix in zip(held, fixes, strict=True)]


_FIX_TOLD = re.compile(
    r"\b(?:fix(?:ed)? (?:it |this |that )?by|fix:|now (?:uses?|passes|sets?|wraps?|skips?"
    r"|returns?|checks?)\b|(?:added|changed|replaced|switched|removed|moved|wrapped|renamed"
    r"|extracted|set|kept)\b|^use\b)",
    re.IGNORECASE,
)
_WORD = re.compile(r"[A-Za-z_][\w.-]{3,}")


_COMMON_WORDS = (
    "that this with from when what which there their they them have were because into does"
    " doesn't issue problem error bug cause code file files test tests"
)
_COMMON = frozenset(_COMMON_WORDS.split())
"""Words of a cause too common to say what a fix is about."""
_DIFF_LEAD = re.compile(r"^[+-]\s*(?://|#)?\s*")


def fix_sentence(said: list[tuple[str, Turn]], cause: list[str]) -> tuple[str, Turn] | None:
    """The first sentence after a cause that tells what was changed and names a piece of code,
    on a word of the cause ("Added `--no-verify` to the `GitMerge` helper."), not the cause
    again, not narration: a closing recap's first change is another fix's."""
    about = {w.lower().rstrip(".-") for c in cause for w in _WORD.findall(c)} - _COMMON
    for s, turn in said:
        s = _DIFF_LEAD.sub("", s.strip().lstrip("-*• ").strip())
        if len(s) < 20 or s in cause or is_narration(s) or s.endswith((":", "?")):
            continue
        if _SCRATCH.search(s) or s.startswith(("(", "If ", "if ")):
            continue  # a scratch build, an aside, a plan
        if not (_FIX_TOLD.search(s) and _ENTITY.search(s)) or _CAUSE.search(s):
            continue
        if about & {w.lower().rstrip(".-") for w in _WORD.findall(s)}:  # "hooks", `GitMerge`
            return re.sub(r"^fix:\s*", "", _BOLD.sub("", s), flags=re.I), turn
    return None


_REFERS_BACK = re.compile(
    r"^(?:that'?s|this is|which is|that is|here'?s)\b|^(?:so )?(?:that|this|it) (?:was|is)\b",
    re.IGNORECASE,
)


def cause_sentences(said: list[str]) -> list[str]:
    """The sentences of a turn that state a cause, each with the sentence before when it
    refers back to it ("X returns Y directly. That's the bug - ..."), or after "## Root cause"."""
    out: list[str] = []
    for i, s in enumerate(said):
        named = i > 0 and re.match(r"#+\s", said[i - 1]) and _CAUSE.search(said[i - 1])
        if not (named or _CAUSE.search(s)) or s.rstrip().endswith("?") or is_tentative(s):
            continue
        if i > 0 and _REFERS_BACK.match(s) and said[i - 1] not in out:
            out.append(said[i - 1])
        if s not in out and not re.match(r"#+\s", s):  # (a heading; "#47 was…" is no heading)
            out.append(s)
        if len(out) >= 3:
            break
    return out


def said_failure(episode: Episode, before: Turn) -> tuple[str, Turn] | None:
    """The latest sentence of the agent before ``before`` that names a failure and a piece of
    code ("The blocker was a Dialyzer warning on `get_current_trace_id()`")."""
    found: tuple[str, Turn] | None = None
    for turn in episode.work:
        if turn is before:
            break
        for s in split_sentences(clean_text(turn.text)):
            if _FAILURE_WORDS.search(s) and _ENTITY.search(s) and not is_narration(s):
                found = (clip(s, 160), turn)
    return found


def bugfix_candidate(p: _Pending, fix: tuple[str, Turn] | None = None) -> Candidate:
    cause = _BOLD.sub("", " ".join(p.sentences))
    files = ", ".join(f"`{f}`" for f in list(p.edited)[:4])
    text = cause if not p.symptom else f"{p.symptom}: {cause}"
    text = clip(text, 360) + (f" (fixed in {files})" if files else "")
    if fix is not None:
        text += f" Fix: {clip(fix[0], 200)}"
    uuids = [p.turn.uuid, *p.edited.values(), *([fix[1].uuid] if fix else [])]
    if p.symptom_turn is not None:
        uuids.insert(0, p.symptom_turn.uuid)
    return Candidate(
        kind="bugfix",
        text=text,
        topic="bug fix",
        importance=IMPORTANCE["bugfix"],
        source_uuids=list(dict.fromkeys(uuids)),
    )


def is_check(command: str) -> bool:
    """A command that checks the work: tests, build, lint, type check, compile, a commit."""
    if commit_message(command):
        return True
    for cmd in shell_commands(command):
        if vocab.command_family(cmd) in _CHECKS or _COMPILE.match(cmd):
            return True
    return False


_TAG = re.compile(r"^\[([A-Z][A-Z_-]{1,20})\](?:\s|$)")
_LOCATED = re.compile(r"[\w./-]+\.\w{1,6}:\d+|\b(?:FAIL|FAILED|ERROR|panic|Error|error)\b")


def failure_text(command: str, result: str) -> str:
    """What failed, in one short line: the checker's tag, and the output line that names the
    place or the error (``[DIALYZER] lib/x.ex:58:13:pattern_match The pattern can never...``)."""
    text = result.replace("\\n", "\n")
    lines = [ln.strip(" ┃│|") for ln in text.splitlines()]
    lines = [ln.strip() for ln in lines if ln.strip()]
    lines = [ln for ln in lines if not re.match(r"^(?:Error: )?Exit code \d+$|^…$", ln)]
    tag = next((m.group(1) for ln in lines if (m := _TAG.match(ln))), "")
    best = ""
    for i, ln in enumerate(lines):
        if _LOCATED.search(ln) and len(ln) > 12 and not ln.startswith(("~c", "[:", "Total")):
            best = ln
            nxt = lines[i + 1] if i + 1 < len(lines) else ""
            if nxt and len(ln) < 90 and not _LOCATED.search(nxt):
                best = f"{ln} {nxt}"
            break
    if not best:
        best = next((ln for ln in lines if _FAILURE_WORDS.search(ln) and len(ln) > 12), "")
    if best:
        return clip((f"[{tag}] " if tag and tag not in best else "") + best, 180)
    cmd = shell_commands(command)
    return f"`{cmd[0]}` failed" if cmd else "a check failed"


def first_line(text: str) -> str:
    said = split_sentences(text)
    return clip(said[0], 160) if said else ""


def findings(episode: Episode, exclude: set[str]) -> list[Candidate]:
    """The episode's most specific statements of how the code or its tools behave."""
    scored: list[tuple[float, int, str, Turn]] = []
    n = 0
    for turn in episode.work:
        if turn.is_sidechain and episode.by != "agent":
            continue
        if turn in episode.replies:
            continue  # the closing reply is the outcome's
        for s in split_sentences(clean_text(turn.text)):
            n += 1
            score = finding_score(s)
            if score > 0 and s not in exclude:
                scored.append((score, n, s, turn))
    best: list[tuple[float, int, str, Turn]] = []
    shown: list[set[str]] = []
    for item in sorted(scored, key=lambda x: (-x[0], x[1])):
        names = {e.strip("`").lower() for e in _ENTITY.findall(item[2])}
        if any(len(names & seen) >= max(1, len(names) // 2) for seen in shown):
            continue  # says again what a kept finding says
        best.append(item)
        shown.append(names)
        if len(best) >= MAX_FINDINGS:
            break
    out = []
    for _, _, sentence, turn in sorted(best, key=lambda x: x[1]):
        out.append(
            Candidate(
                kind="fact",
                text=clip(sentence.strip("*_ "), 360),
                topic="finding",
                importance=0.5,
                source_uuids=[turn.uuid],
            )
        )
    return out


_SCRATCH = re.compile(r"(?<![\w.])/tmp/")
_BOLD = re.compile(r"\*\*|__")


def finding_score(sentence: str) -> float:
    """How much a sentence reads as a durable finding (0: not one)."""
    s = sentence.strip().lstrip("-*• ").strip()
    if len(s) < 30 or len(s) > 400 or is_narration(s) or is_tentative(s):
        return 0.0
    if _SCRATCH.search(s):
        return 0.0  # a scratch copy ("Rebuilt /tmp/git-sync"): gone with the session
    if _FIRST_PERSON.match(s) or _WORK_STATE.search(s):
        return 0.0
    if _CAUSE.search(s) or _FAILURE_WORDS.search(s):
        return 0.0  # a diagnosis is kept only once a check confirms it (bug_fixes)
    if s.endswith(":"):
        return 0.0
    if _IMPERATIVE.match(s):
        return 0.0  # a step to take, not how things are
    entities = [e for e in _ENTITY.findall(s) if not e.replace(",", "").replace(".", "").isdigit()]
    if not entities or not _STATE.search(s):
        return 0.0
    score = float(min(3, len(entities)))
    if re.match(r"^(?:so|found|confirmed|turns out|note|important)\b", s, re.I):
        score += 0.5
    return score


_CHOICE = re.compile(
    r"\bI think we should\b|\bI(?:'d| would)? rather\b"
    r"|\blet'?s (?:do (?:this|that|it|option|\d|the (?:first|second|third|latter|former|other))"
    r"|go with|ignore|drop|skip|keep|not)\b|\binstead,? let'?s\b"
    r"|我觉得(?:我们|还是)?(?:应该|还是)|还是用|就按|就这么(?:办|做|定)",
    re.IGNORECASE,
)
"""A user's request that makes a choice among what was on the table ("let's do 2. Or better:
remove the starting checkpoint", "I think we should change that to not be strict"): the work
done on it is a decision, in the user's words and the reply's, kept short for the brief's
"Decisions:" (:data:`DECISION_CHARS`)."""
DECISION_CHARS = 300


def outcome_candidate(
    episode: Episode, topic: str, edited: bool, committed: bool
) -> Candidate | None:
    """The closing reply of an episode with work, cut to its informative sentences, after
    what was asked; kind by the work: a fix, a change (progress) or an answer (fact)."""
    said: list[tuple[str, Turn]] = []
    for turn, text in episode.outcome:
        said += [
            (s, turn)
            for s in split_sentences(text)
            if not is_narration(s) and not _SCRATCH.search(s)
        ]
    if not said:
        return None
    chosen = [i for i, (s, _) in enumerate(said) if _ENTITY.search(s) and len(s) > 20][:4]
    chosen = ep.with_their_items([s for s, _ in said], chosen or [0, 1][: len(said)])
    picked = [said[i] for i in chosen]
    body = " ".join(ep.as_prose(_BOLD.sub("", s).strip("*_ ")) for s, _ in picked)
    body = clip(body[:-1] + "." if body.endswith(";") else body, 420)
    if len(body) < 40:
        return None
    buggy = bool(_FAILURE_WORDS.search(episode.request_text)) or any(
        c.status == "error" for _, c in episode.calls
    )
    if buggy and edited and (_CAUSE.search(body) or _FIXED.search(body)):
        kind = "bugfix"
    elif episode.by == "user" and (edited or committed) and _CHOICE.search(episode.request_text):
        kind = "decision"  # "ok, let's do this fix then, ignore the existing PR" and what was done
    elif edited or committed:
        kind = "progress"
    else:
        kind = "fact"
    lead = f"{topic}: " if topic else ""
    room = DECISION_CHARS if kind == "decision" else 480
    uuids = ([episode.request.uuid] if episode.request is not None else []) + [
        t.uuid for _, t in picked
    ]
    return Candidate(
        kind=kind,
        text=clip(lead + body, room),
        topic=topic[:80],
        importance=0.55 if kind != "progress" else 0.5,
        source_uuids=list(dict.fromkeys(uuids)),
    )


SECTION_CHARS = 360
"""A closing reply's section is filed in pieces of at most this many characters, cut between
paragraphs, and only its first :data:`SECTION_CHUNKS` pieces: read on the tuning split of the
real sessions, more pieces crowded the block without adding what a probe asked."""
SECTION_CHUNKS = 2
_PARAGRAPH = re.compile(r"\n\s*\n")
_URL = re.compile(r"https?://\S+")
_CELEBRATED = re.compile(r"^[^\w\s`'\"(\[#*-]")
_NOTHING = re.compile(r"^(?:none|n/a|nothing|noted)\b", re.I)
_OFFER = re.compile(
    r"^(?:would you like|do you want|want me to|should i|shall i|let me know)\b", re.I
)


def section_candidates(episode: Episode, topic: str, said: set[str]) -> list[Candidate]:
    """A closing reply's sections under headings that name something ("## Root cause", "## Does
    it work with GitHub? Yes."), each a memory of its own: the outcome keeps only the reply's
    first sentences, and a report's later sections (why the fix is safe, what was verified)
    were cut away with the rest. A long section gives its first pieces (:func:`_chunks`); a
    piece the outcome already says is left out."""
    out: list[Candidate] = []
    for turn in episode.replies:
        for title, body in report_sections(clean_text(turn.text)):
            if _CELEBRATED.match(title):
                continue  # "🚀 Key Features", "✅ Type Issues Fixed": a recap's showcase
            for content in _chunks(body)[:SECTION_CHUNKS]:
                if len(content) < 25 or any(content[:80] in text for text in said):
                    continue
                out.append(
                    Candidate(
                        kind="fact",
                        text=clip(f"{title}: {content}", SECTION_CHARS),
                        topic=clip(topic or title, 80),
                        importance=0.45,
                        source_uuids=[turn.uuid],
                    )
                )
    return out[:MAX_REPORT_SECTIONS]


def _chunks(body: str) -> list[str]:
    """A section's text in pieces of at most :data:`SECTION_CHARS`, cut between paragraphs: in
    a long section, "why the split is safe" comes after the list of what changed."""
    out: list[str] = []
    for paragraph in _PARAGRAPH.split(body):
        text = _section_text(paragraph)
        if not text or text.endswith(":") or sum(map(len, _URL.findall(text))) * 2 > len(text):
            continue  # nothing, a lead-in to a code block left out, or a list of links
        if out and len(out[-1]) + len(text) < SECTION_CHARS:
            out[-1] = f"{out[-1]} {text}"
        else:
            out.append(text)
    return out


def _section_text(body: str) -> str:
    """A section's informative sentences on one line, without the agent's offers ("Would you
    like me to implement one of these fixes?"); "" for a section that says there is nothing
    ("WARNING: None.")."""
    content = " ".join(informative(body).split("\n"))
    if _NOTHING.match(content):
        return ""
    return " ".join(s for s in split_sentences(content) if not _OFFER.match(s))


_PRECOMMIT_LINE = re.compile(r"^(\S[^\n]*?)\.{3,}\s*\(?(?:Passed|Failed|Skipped)", re.M)


def hook_checks(command: str, result: str) -> list[str]:
    """The checks a git commit hook ran, from a commit it refused: the ``[TAG]`` sections of
    its output, or the pre-commit framework's ``name.....Failed`` lines."""
    if not commit_message(command) and "git commit" not in command:
        return []
    text = result.replace("\\n", "\n")
    if not re.search(r"pre-commit|hook", text, re.IGNORECASE):
        return []
    found = [m.group(1) for ln in text.splitlines() if (m := _TAG.match(ln.strip()))]
    found += [m.group(1).strip() for m in _PRECOMMIT_LINE.finditer(text)]
    return list(dict.fromkeys(f for f in found if 1 < len(f) < 40))


def hook_candidate(checks: dict[str, str]) -> Candidate | None:
    """ "`git commit` runs pre-commit checks: FORMAT, CREDO, DIALYZER" (each seen refusing)."""
    if not checks:
        return None
    names = ", ".join(checks)
    return Candidate(
        kind="fact",
        text=f"The git pre-commit hook runs checks that can refuse a commit: {names}",
        topic="commit hooks",
        importance=0.5,
        source_uuids=list(dict.fromkeys(checks.values()))[:5],
    )
