"""The default extractor: offline, free and deterministic, for English and Chinese.

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
from memd.models import Candidate, Segment, Turn
from memd.redact import redact

EXCERPT_CHARS = 1000
SENTENCE_MAX = 400
MAX_PER_KIND = 12

# --- text cleaning ------------------------------------------------------------------------
_NOISE_BLOCKS = re.compile(
    r"<(system-reminder|task-notification|local-command-stdout|local-command-stderr|"
    r"bash-stdout|bash-stderr|command-message|command-args|command-name|bash-input|"
    r"memd-context|user-prompt-submit-hook)>.*?(?:</\1>|\Z)",
    re.DOTALL,
)
_CODE_FENCE = re.compile(r"```.*?(?:```|\Z)", re.DOTALL)
_INTERRUPTED = re.compile(r"\[Request interrupted by user[^\]]*\]")
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_SENT_SPLIT = re.compile(r"(?<=[.!?])\s+|(?<=[。！？；])|\n+")
_BULLET = re.compile(r"^\s*(?:[-*•>]+|\d+[.)]|#+)\s*")
_FILLER = re.compile(
    r"^(?:ok(?:ay)?|so|well|alright|right|yes|yeah|great|sure|hmm|好的|好|嗯|那么|那|行)[,，.。!！\s]+",
    re.IGNORECASE,
)
_TRIVIAL = {
    "ok", "okay", "k", "thanks", "thank you", "thx", "yes", "no", "y", "n", "continue", "go on",
    "go ahead", "sounds good", "lgtm", "perfect", "great", "nice", "cool", "done", "proceed",
    "继续", "好的", "好", "谢谢", "可以", "行", "嗯", "没问题", "对", "是的", "继续吧", "好的谢谢",
}  # fmt: skip


def clean_text(text: str) -> str:
    """Turn text without transcript noise (system reminders, command wrappers, interrupts)."""
    if "<" in text:
        text = _NOISE_BLOCKS.sub(" ", text)
    if "[Request interrupted" in text:
        text = _INTERRUPTED.sub(" ", text)
    return text.strip()


def is_substantive(text: str) -> bool:
    norm = re.sub(r"[\W_]+", " ", text.lower()).strip()
    if not norm or norm in _TRIVIAL:
        return False
    cjk = len(_CJK.findall(text))
    return cjk >= 4 or len(norm.replace(" ", "")) >= 10


def sentences(text: str) -> list[str]:
    """Prose sentences of a turn: code blocks dropped, bullets and fillers stripped."""
    if "```" in text:
        text = _CODE_FENCE.sub("\n", text)
    out = []
    for raw in _SENT_SPLIT.split(text):
        s = _BULLET.sub("", raw).replace("**", "").replace("__", "").strip()
        s = _FILLER.sub("", s).strip()
        if not s or len(s) > SENTENCE_MAX:
            continue
        cjk = len(_CJK.findall(s))
        if cjk < 3 and len(s) < 12:
            continue
        if looks_like_code(s):
            continue
        out.append(s)
    return out


_NON_LETTER = re.compile(r"[\W\d_]+")


def looks_like_code(s: str) -> bool:
    if s.startswith(("$ ", "def ", "class ", "import ", "from ", "return ", "{", "}", "//", "|")):
        return True
    letters = len(_NON_LETTER.sub("", s))
    return letters < 0.45 * len(s) or bool(re.search(r"[{};]\s*$|=>|\)\s*\{", s))


# --- typed sentence rules -----------------------------------------------------------------
def _rx(*parts: str, flags: int = re.IGNORECASE) -> re.Pattern[str]:
    return re.compile("|".join(parts), flags)


_HEDGE = _rx(
    r"\b(?:might|maybe|perhaps|probably|possibly|likely|could be|i think|i guess|not sure|"
    r"seems?|suspect|wonder|hypothes\w+|whether)\b",
    r"可能|也许|大概|似乎|好像|是不是|要不要|是否|吗$",
)
_QUESTION_START = re.compile(
    r"^(?:should|shall|can|could|would|do|does|did|is|are|what|why|how|which|where|when)\b",
    re.IGNORECASE,
)
_NARRATION = re.compile(
    r"^(?:let me|now let me|now i(?:'ll| will)?|i'll now|i will now|first,? i|next,? i|"
    r"i(?:'m| am) going to (?:run|check|look|read|open|search)|let's (?:run|check|look|see|read))\b",
    re.IGNORECASE,
)
_ZH_NARRATION = re.compile(r"^(?:已|已经|我已|我把|我用|我先|我来|我会|我这边|好的|明白|收到|可以)")
DECISION = _rx(
    r"\bwe(?:'ll| will|'re going to| are going to| should| now)? (?:use|go with|adopt|switch to"
    r"|stick with|move to|migrate to|keep using)\b",
    r"\b(?:decided|decide) (?:to|on|that|against)\b",
    r"\b(?:the )?decision(?: is| was|:)",
    r"\b(?:chose|chosen|opted for|settled on|went with|going with)\b",
    r"\bswitch(?:ed|ing)? (?:\S+ ){0,3}?(?:from \S+(?: \S+)? )?to\b",
    r"\bmigrat(?:e|ed|ing) (?:\S+ ){0,2}?from \S+(?: \S+)? to\b",
    r"\b(?:use|using) \S+(?: \S+)? (?:instead of|rather than|over) \S+",
    r"决定|采用|改成|改为|改用|定为|选用|选择了|换成|就用|最终用",
)
_DECISION_USER_ONLY = _rx(r"\blet'?s (?:use|go with|switch to|stick with|adopt|move to|keep)\b")
_DECISION_EXPLICIT = _rx(
    r"\b(?:decided|decision|chose|chosen|opted for|settled on|going with|we(?:'ll| will) use)\b",
    r"决定|定为|选用|采用|选择了",
)
"""What an assistant must say for a decision: it narrates "switched to X" for every edit."""
PREFERENCE = _rx(
    r"\bI (?:really |strongly )?(?:prefer|like to|want you to|don't want|do not want|hate|dislike"
    r"|always|never)\b",
    r"^(?:please )?(?:always|never|don't|do not|avoid|make sure to|remember to|stop)\b",
    r"\b(?:always|never) (?:use|run|write|add|put|commit|push|call|import|keep|prefer|include"
    r"|mock|edit|create|format|touch|delete|leave)\b",
    r"\bmust (?:always |never |not )?(?:be|use|have|run|pass|include|stay|go|live)\b",
    r"\bplease (?:use|always|never|don't|do not|keep|write|prefer|avoid)\b",
    r"^(?:use|keep|write|put|name|prefer)\b.{3,200},? please[.!]?$|\bno more \w+|\b\w+, ever\b",
    r"\bI'd rather\b|\bprefer \S+ (?:over|to)\b",
    r"不要|别用|统一|必须|偏好|一律|总是|永远不要|务必|请用|请使用|习惯用|喜欢用|禁止",
)
_SCOPE = _rx(
    r"\b(?:everywhere|from now on|going forward|by default|in this (?:codebase|project|repo)"
    r"|across the (?:codebase|project|repo))\b",
    r"以后都|今后|从现在开始|所有的?(?:代码|项目|文件)",
)
"""A user instruction meant to last: a preference unless it is a decision."""
_CONVENTION = _rx(r"\b(?:our|the project'?s?|the) conventions? (?:is|are|:)|\bby convention\b")
TODO_MARK = re.compile(r"\bTODO\b|\bFIXME\b|\bXXX\b")
TODO = _rx(
    r"\bstill (?:need|needs|have|has) to\b|\bstill (?:missing|pending|open|to do)\b",
    r"\b(?:next steps?|remaining work|left to do|to do next|follow[- ]up)\b",
    r"\b(?:need to|needs? \w+ing|should|will|'ll|must|have to)\b[^.]{0,80}\blater\b",
    r"\blater\b[^.]{0,40}\b(?:we|i)(?:'ll| will| should| need)\b",
    r"\bnot (?:yet )?(?:implemented|handled|supported|done|wired)(?: yet)?\b",
    r"待办|还没|下次|以后再|以后要|还需要|还要|待处理|后续|回头再|稍后",
)
BUG_CAUSE = _rx(
    r"\bthe (?:bug|issue|problem|error|crash|failure|regression) (?:was|is|came from|comes from)\b",
    r"\b(?:was|were|is) caused by\b|\broot cause\b|\bthe culprit\b|\bturned out (?:to be|that)\b",
    r"\bfailing because\b|\bfailed because\b|\bbroke because\b",
    r"\b(?:that's|that is|this is|which is) why\b|\bwhich explains\b",
    r"原因是|问题出在|根因|根本原因|是因为|导致",
)
BUG_FIX = _rx(
    r"\bfix(?:ed)? (?:it |this |that |the \w+ )?by\b|\bthe fix (?:is|was)\b|\bfix:",
    r"\b(?:resolved|solved) (?:it |this |the \w+ )?by\b|\bfixed (?:the|a|an|it|this|that)\b",
    r"修复|修好|解决了|改好了",
)
BUG_FIX_EXPLAINED = _rx(
    r"\b(?:fix(?:ed)?|resolved|solved) (?:it |this |that |the \w+ )?by\b|\bthe fix (?:is|was)\b",
    r"\bfix:",
    r"(?:修复|解决)[^，。]{0,6}[:：]|通过.{2,40}(?:修复|解决)",
)
"""A fix statement that stands on its own as a memory (it says how)."""
_STRUCTURE = _rx(
    r"\b(?:lives?|is|are|located|defined|implemented|stored|kept|configured|goes|go|sits?)"
    r"\s+(?:in|under|at)\s+`?(?:[\w.-]+/)+[\w.-]*`?",
    r"(?:在|位于)\s*`?(?:[\w.-]+/)+[\w.-]*`?",
)
_STACK_SAID = _rx(
    r"\b(?:we|project|repo|app|service|it|this)\b[^.]{0,40}\b(?:uses?|using|built with"
    r"|written in|based on|runs on)\b",
    r"\b(?:our|the) (?:stack|backend|frontend|database|test runner|formatter|linter) (?:is|uses)\b",
    r"用的是|使用|基于|我们用|项目用|技术栈",
)

IMPORTANCE = {
    "decision": 0.75,
    "preference": 0.8,
    "bugfix": 0.7,
    "todo": 0.6,
    "fact": 0.55,
    "summary": 0.5,
    "excerpt": 0.3,
}
_STRONG = _rx(r"\b(?:always|never|must)\b", r"必须|一律|永远|务必|禁止")


def classify(sentence: str, role: str) -> str | None:
    """The memory kind a sentence states, or None when it states none clearly.

    ``"fix"`` is a fix statement without a cause: the caller appends it to the cause stated
    just before (one bugfix memory with cause and fix), or keeps it alone when it says how.
    """
    s = sentence
    question = s.rstrip().endswith(("?", "？")) or bool(_QUESTION_START.match(s))
    if question or _HEDGE.search(s):
        return None
    narration = role == "assistant" and bool(_NARRATION.match(s) or _ZH_NARRATION.match(s))
    if BUG_CAUSE.search(s):
        return "bugfix"
    if BUG_FIX.search(s):
        return "fix"
    if TODO_MARK.search(s) or (TODO.search(s) and not narration):
        return "todo"
    if role == "user" and PREFERENCE.search(s):
        return "preference"
    if _CONVENTION.search(s):
        return "preference"
    if role == "user" and (DECISION.search(s) or _DECISION_USER_ONLY.search(s)):
        return "decision"
    if role == "user" and _SCOPE.search(s):
        return "preference"
    if role == "assistant" and not narration and _DECISION_EXPLICIT.search(s):
        return "decision"
    if not narration and _STRUCTURE.search(s):
        return "fact"
    return None


_CLAUSE_SPLIT = re.compile(
    r"\s*[，；;]\s*|,\s+(?:and|but)\s+(?=(?:don't|do not|never|always|please|avoid|use)\b)",
    re.IGNORECASE,
)


_REFERS_BACK = re.compile(
    r"^(?:that's|that is|this is|which is) why\b|^这(?:就)?是(?:为什么|因为)", re.I
)


def statements(sentence: str, role: str) -> list[tuple[str, str]]:
    """(kind, text) for each fact a sentence states: one, or one per clause when several clauses
    state different things ("组件统一用函数式写法，必须用 TypeScript，不要用 any")."""
    kind = classify(sentence, role)
    parts = [p for p in _CLAUSE_SPLIT.split(sentence) if p]
    if len(parts) > 1:
        typed = [(k, p) for p in parts if (k := classify(p, role)) == "preference"]
        if len(typed) > 1 and all(len(p) >= 6 for _, p in typed):
            return typed
    return [(kind, sentence)] if kind else []


_T = r"[\w.+#/-]+"
_REPLACES = [
    re.compile(p, re.IGNORECASE)
    for p in (
        rf"switch(?:ed|ing)?\s+(?:(?P<what>[a-z][\w -]{{0,30}}?)\s+)?from\s+(?P<old>{_T})\s+to\s+{_T}",
        rf"migrat\w*\s+(?:(?P<what>[a-z][\w -]{{0,30}}?)\s+)?from\s+(?P<old>{_T})\s+to\s+{_T}",
        rf"replac\w*\s+(?P<old>{_T})\s+with\s+{_T}",
        rf"\b{_T}\s+(?:instead of|rather than)\s+(?P<old>{_T})",
        rf"(?:从|把)\s*(?P<old>{_T})\s*(?:改成|改为|换成|迁移到|切换到)",
        rf"(?:改用|换成|用)\s*{_T}\s*(?:替代|替换|代替)\s*(?P<old>{_T})",
    )
]


def supersedes_hint(sentence: str) -> str:
    """For "switch formatting from ruff to black": "use ruff for formatting" (the old choice)."""
    for rx in _REPLACES:
        m = rx.search(sentence)
        if m:
            what = (m.groupdict().get("what") or "").strip()
            old = m.group("old").rstrip(".,;:!?")
            return f"use {old} for {what}" if what else f"use {old}"
    return ""


def importance_of(kind: str, sentence: str, role: str) -> float:
    base = IMPORTANCE[kind]
    if role == "user":
        base += 0.05
    if kind in ("preference", "decision") and _STRONG.search(sentence):
        base += 0.1
    return round(min(1.0, base), 2)


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
        if _STACK_SAID.search(sentence):
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
                if kind == "bugfix" and context and _REFERS_BACK.match(statement):
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


def excerpt_candidates(
    segment: Segment,
    topic: str = "",
    extra_patterns: tuple[str, ...] = (),
    typed_turns: set[str] | None = None,
    turns: list[tuple[Turn, str]] | None = None,
) -> list[Candidate]:
    """One redacted ``excerpt`` per substantive user or assistant turn, with its own uuid.

    The LLM backends add these too, so nothing said is unreachable whatever the backend.
    """
    typed_turns = typed_turns or set()
    out = []
    for turn, text in turns if turns is not None else usable_turns(segment):
        if not is_substantive(text):
            continue
        body = " ".join(text.split()) if len(text) > EXCERPT_CHARS else text
        if len(body) > EXCERPT_CHARS:
            body = body[: EXCERPT_CHARS - 1].rstrip() + "…"
        body = redact(body, extra_patterns)
        importance = 0.35 if turn.role == "user" else 0.3
        if turn.uuid in typed_turns:
            importance += 0.1
        out.append(
            Candidate(
                kind="excerpt",
                text=body,
                topic=topic,
                keywords=top_keywords([text], 5),
                importance=round(importance, 2),
                source_uuids=[turn.uuid],
            )
        )
    return out
