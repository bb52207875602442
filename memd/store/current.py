"""Which statement is current: claims inside memories, and a newer claim that replaces an older.

A memory (a typed one or an excerpt of several turns) states values in some of its sentences:
"the ingest batch starts at 01:00 UTC", "Deploy alerts go to #ops-firehose". Those sentences are
its *claims*. A later claim replaces an earlier one about the same subject when

- it retires a value the earlier one states ("moved from 01:00 to 02:30", "Redis instead of
  Memcached", "Marta has left", "not Lisbon", "#ops-firehose was archived", "王磊已经离职");
- or it says a change ("now", "switched", "changed ... to", "rolled back", "现在", "改成") and
  names a new value of the same shape (a number for a number, a path for a path, a name for a
  name) on a shared subject word;
- or it gives another value of a person's one-value fact (:mod:`memd.store.personal`);
- or :func:`memd.store.similar.conflict` is sure of it (same subject, another value).

The words that say a change, a retirement or a correction are in :mod:`memd.store.cues`.

"Later" is when each was said (a transcript's own time), never the order memd read them in.
Newer claims supersede typed memories; injection marks an older claim ("until ...; now: ...").
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from functools import lru_cache

from memd.store import clock, cues, personal, proposals, restated, roles, similar
from memd.store.diffs import before_after, diff_removed, sed_read, sed_swaps
from memd.store.families import VERSION, family, rolled_back, stem_of
from memd.store.values import listed
from memd.text import searchterms, stance, stopwords
from memd.text.chinese import RANGES
from memd.text.stems import statement_stem

_SENTENCE = re.compile(
    r"(?<!e\.g\.)(?<!i\.e\.)(?<=[.!?;])\s+(?!sorry,? I meant)|(?<=[。！？；])\s*(?=\S)|\n+"
    r"|\s+/\s+(?=(?:user|claude|agent):)"
)
_SPEAKER = re.compile(
    r"^(?:/\s*)?(?:\[\d{4}-\d\d-\d\d\]\s*)?(?:[-*•]\s*)?(?:user|claude|agent|assistant):\s*"
    r"|^\[\d{4}-\d\d-\d\d\]\s*",
    re.I,
)
_NAMED = re.compile(r"^([A-Z][a-z]+): ")
MAX_CLAIM = 320
"""Characters: a longer "sentence" is a pasted log or code, not a statement."""
MAX_TEXT = 2000
"""Characters of a memory read for claims (a long excerpt's tail is rarely shown)."""
MAX_CHANGE = 220
"""Characters: a change is told in a short sentence; in a longer one (a report, a file list) a
change word and two values of one shape meet by chance."""
MAX_VALUES = 8
"""A sentence naming more values is a list (files, commands), not a statement of one."""
RECORDS = ("Files changed for ",)
"""Typed memories that record what was done (event records): never replaced."""
_ENUMERATOR = re.compile(r"(?:^|(?<=\s))\d{1,2}[.)](?=\s)|\s\d{1,2}\.$", re.M)
"""A list's numbering ("1. ", "2) "): no value, and where a statement ends."""
_LIST_START = re.compile(r"(?:^|[:\s])1[.)]\s", re.M)
_LINE_ENUMERATOR = re.compile(r"^\s*\d{1,2}[.)](?=\s)", re.M)


def _unnumbered(text: str) -> str:
    """``text`` with a list's numbers as line breaks: anywhere when a list starts ("1. "), else
    only at a line's start ("instead of 3. Set…" keeps its 3)."""
    pattern = _ENUMERATOR if _LIST_START.search(text) else _LINE_ENUMERATOR
    return pattern.sub("\n", text)


_HANDLE = re.compile(
    r"(?<![\w.-])@[\w-]+/[\w.-]*\w|[#@][\w-]+|(?<![\w.:-])[A-Za-z]\w*(?:[-_]\w+)+\b"
)
"""A handle, a channel or a compound name: a team's handle whole (``@acme/backend``, no
person ``@acme``), as a scoped package's (``@bugsnag/js``); a mail's domain (``@tallyhq`` of
``support@tallyhq.com``) tells two addresses of one job apart."""
_QUESTION = re.compile(r"[?？]\s*$")
_CJK_RUN = re.compile(f"[{RANGES}]+")
_CJK_STOP = re.compile(f"[{stopwords.SUBJECT_CJK_CHARS}]")


GENERIC = stopwords.SUBJECT_GENERIC
"""Words too common in coding talk to say two sentences are about the same subject."""
_NAME = re.compile(
    r"(?P<at>^|[.:!?;]\s+|\s)(?P<w>[A-ZÀ-ÖØ-Þ][a-zß-öø-ÿ]+(?:[A-Z]\w*)?)\b(?=\s*(?P<next>\S*))"
)
_SUBJECT_VERB = listed("is was owns has are runs uses handles leads manages")
_POSSESSIVE = re.compile(r"(?<=\w)'s\b")
_APOSTROPHE = re.compile(r"(?<=\w)'(?=\w)")
_TYPE_EXPR = re.compile(r"\b[A-Z]\w*\[[\w\s,.|\[\]]*\]")
"""A type in code (`List[Path]`, `Dict[str, Any]`): its words are no values."""


@dataclass(frozen=True)
class Claim:
    """A sentence and what it states: its values, the words it is about, the values it says
    are no longer current, whether it says a change."""

    text: str
    values: frozenset[str]
    anchors: frozenset[str]
    retired: frozenset[str]
    cue: bool
    also: bool
    families: frozenset[str] = frozenset()
    """Keys shared by values of one thing (:func:`family`): how an index finds "3.12" for
    "3.11"."""
    counted: int = 0
    """How many of its values it states outside an aside in parentheses ("workers = 8 (commit
    4e1c2aa by Femi)" states one): what tells a statement from a list."""
    who: str = ""  # who says it, in a chat between named people ("Caroline: I've known ...")
    refs: frozenset[str] = frozenset()
    """The PRs, MRs and branches it names (:func:`memd.store.proposals.refs`)."""
    diffed: frozenset[str] = frozenset()
    """The values of :attr:`retired` that a diff of it takes away (a line removed, a line
    added in its place): no mere mention, so a number needs no shared word around it."""


_NUMBER_WORD = re.compile(
    r"\b(?:one|two|three|four|five|six|seven|eight|nine|ten|twelve|single|double)\b(?= \w)"
)
NUMBER_WORDS = listed("one two three four five six seven eight nine ten twelve single double")
_ASIDE = re.compile(r"[(（][^()（）]*[)）]")
_REF = re.compile(r"(?:#|\b(?:pr|issue|pull request|bead|ticket)s? #?)(\d+)\b")
_FLAG = re.compile(r"(?<![\w-])--[a-z][\w-]+")
_NUMBER = re.compile(r"[v~^<>=]*\d[\d.,:x/_-]*(?:e[-+]?\d+)?[a-z%]{0,3}")


def shape(value: str) -> str:
    """number (a time, a version, a size), path (a file, a host), channel, flag, or name."""
    if _NUMBER.fullmatch(value) or value in NUMBER_WORDS:
        return "number"
    if value.startswith("--"):
        return "flag"  # (``--fix`` is no name a tool had: "eslint --fix" / "ESLint 和 …")
    if "/" in value or "." in value.strip("."):
        return "path"
    if value.startswith(("#", "@")):
        return "channel"
    return "name"


def fold(value: str) -> str:
    return value.casefold().strip("`'\".,:;()[]")


def _bigrams(text: str) -> set[str]:
    """The Chinese character pairs of ``text`` between function characters, and those of the
    glossary words that hold one ("上限" limit, "上线" release)."""
    out: set[str] = set()
    for run in _CJK_RUN.findall(_CJK_STOP.sub(" ", text)):
        out.update(run[i : i + 2] for i in range(len(run) - 1))
    for word in searchterms.kept_words(text):
        out.update(word[i : i + 2] for i in range(len(word) - 1))
    return out - cues.CUE_BIGRAMS


def _names(sentence: str) -> set[str]:
    """Capitalised names ("Marta Kowalczyk", "Kotlin is..."): inside a sentence any, at its start
    only before another name or a verb of which it is the subject."""
    out = set()
    for m in _NAME.finditer(sentence):
        word = m.group("w").lower()
        if statement_stem(word) in GENERIC or word in stopwords.STATEMENT:
            continue
        initial = m.start("w") == 0 or m.group("at").strip() != ""
        following = m.group("next")
        if initial and not (following[:1].isupper() or following.lower() in _SUBJECT_VERB):
            continue
        out.add(word)
    return out


@lru_cache(maxsize=8192)
def claim(sentence: str) -> Claim | None:
    """What ``sentence`` states, or None for a question or a sentence of a word or two."""
    if not sentence or _QUESTION.search(sentence):
        return None
    changed = before_after(sentence) if "|" in sentence and "--" in sentence else []
    if len(sentence) > MAX_CLAIM:
        if "```" not in sentence and not changed:
            return None
        sentence = sentence[:MAX_CODE]
    swaps = sed_swaps(sentence) if "sed" in sentence else []
    read = sed_read(sentence, swaps)  # ("sed -i 's/a\.b/c.d/g'": a.b → c.d)
    f = similar.features(_APOSTROPHE.sub(" ", _POSSESSIVE.sub("", _TYPE_EXPR.sub(" ", read))))
    values = {v for v in f.values if v not in similar._UNIT_NAMES | stopwords.MEASURES}
    values.update(fold(m.group(0)) for m in re.finditer(_HANDLE, sentence))
    values.update(_names(sentence))
    folded = sentence.casefold()
    values.update(w for w in _NUMBER_WORD.findall(folded))
    values -= {m.group(1) for m in _REF.finditer(folded)}  # "#47", "PR 94": which, not how many
    values.update(tool for phrase, tool in roles.PHRASES.items() if phrase in folded)
    values.update(roles.tools_named(folded))
    values.update(m.group(0) for m in _FLAG.finditer(folded))
    values.update(clock.clock_times(sentence))  # "0 8 * * *", "早上 8 点": 08:00
    cjk = _bigrams(sentence)
    words = {w for w in f.words if w not in GENERIC and len(w) > 1} - values
    if not values and len(words) < 2 and len(cjk) < 3:
        return None
    diffed = {fold(v) for v in diff_removed(sentence)} if cues.shows_diff(sentence) else set()
    for _row, before, after in changed:  # a table's "before" cell: as a diff's removed line
        diffed |= {fold(v) for v in cues.retired(f"from {before} to {after}", diffs=False)}
        amount = _AMOUNT.fullmatch(before)
        if amount and _AMOUNT.fullmatch(after):  # "25 MB" → "100 MB": 25, as a sentence has it
            diffed.add(amount.group(1).replace(",", ""))
    diffed |= {fold(was) for _expression, was, _now in swaps}
    retired = {fold(v) for v in cues.retired(sentence, diffs=False)} | diffed
    retired |= {roles.PHRASES[r] for r in retired if r in roles.PHRASES}  # "VS Code": vscode
    plain = _ASIDE.sub(" ", folded) if "(" in folded or "（" in folded else folded
    refs = proposals.refs(sentence)
    return Claim(
        text=sentence,
        values=frozenset(values),
        anchors=frozenset(words | cjk | values | refs),
        retired=frozenset(
            r
            for r in retired
            if (len(r) > 1 or r.isdigit())
            and r not in stopwords.STATEMENT
            and statement_stem(r) not in GENERIC
        ),
        cue=cues.CUE.search(sentence) is not None,
        also=cues.ALSO.search(sentence) is not None,
        families=frozenset(key for v in values for key in family(v)),
        counted=sum(1 for v in values if v in plain and not _inside(v, values)),
        refs=refs,
        diffed=frozenset(diffed),
    )


_AMOUNT = re.compile(r"[~≈<>=]*\s*(\d[\d,]*(?:\.\d+)?)\s*[^\d\s|]{0,8}")
"""A table cell of an amount ("25 MB", "5,000", "30 days", "200 条/秒")."""


def _inside(value: str, values: set[str]) -> bool:
    """Whether ``value`` is a number inside a longer one ("18.19" of "18.19.0",
    ">=18.19"): one version, counted once. (Names and paths still count each: an agent's
    report names many, and a sentence naming many is a list, not a statement.)"""
    return any(value != v and value in v for v in values)


@lru_cache(maxsize=8192)
def claims(text: str) -> tuple[Claim, ...]:
    """The statements of ``text``, as :class:`Claim`\\ s (none for a record of work done). The
    answer to a question carries the question's words too ("Where does ferry write its logs?
    / The unit starts it with --log-file ...": about ferry's logs)."""
    if text.startswith(RECORDS):
        return ()
    out = []
    asked: frozenset[str] = frozenset()
    correction = ""
    agent, who = False, ""  # who says it: Claude's "I" is not the user's
    for raw in _pieces(_unnumbered(text[:MAX_TEXT])):
        turn = _SPEAKER.match(raw.strip())
        if turn is not None and ":" in turn.group(0):
            agent = turn.group(0).strip(" -*•:").lower().endswith(("claude", "agent", "assistant"))
        sentence = _SPEAKER.sub("", raw.strip())
        named = _NAMED.match(sentence)  # "Caroline: I work at ..." (a chat between two people)
        who = named.group(1).lower() if named else who if turn is None else ""
        if correction:  # "I was wrong about the flag service. We run Unleash."
            sentence, correction = f"{correction} {sentence}", ""
        elif (
            not agent  # Claude's "I was wrong last turn" corrects its own reading, not a fact
            and cues.CORRECTION.search(sentence)
            and len(sentence) < MAX_CHANGE // 2
            and (
                _CJK_RUN.search(sentence)
                or re.search(r"\babout\b", sentence)
                or cues.CORRECTED.search(sentence)  # "No, that's the old compose file."
            )
        ):
            said = claim(sentence)
            if said is None or not said.values:
                correction = sentence  # the value it corrects comes next
                continue
        request = cues.REQUEST.search(sentence) if _QUESTION.search(sentence) else None
        if request is not None and len(sentence[: request.start()].split()) >= 4:
            sentence = sentence[: request.start()] + "."  # "I use Sublime, so can you …?"
        if _QUESTION.search(sentence):
            question = claim(_QUESTION.sub(".", sentence))
            asked = question.anchors if question is not None else frozenset()
            used = {v for v in question.values if roles.one_at_a_time(v)} if question else set()
            if question is not None and len(used) == 1 and not agent:  # "GoLand 里怎么配…？"
                out.append(
                    replace(question, text=sentence, values=frozenset(used), cue=False, counted=1)
                )
            continue
        found = claim(sentence)
        if found is not None:
            mine = frozenset() if agent else personal.slots(sentence, who)
            if asked or mine or who:
                found = replace(found, anchors=found.anchors | asked | mine, who=who)
            out.append(found)
        asked = frozenset()
    last = claim(correction) if correction else None
    return (*out, last) if last is not None else tuple(out)


def _pieces(text: str) -> list[str]:
    """``text``'s sentences; a fenced block of code is read whole, with the words that lead into
    it: its lines end in ";" and "." that end no sentence (a diff's removed lines and its added
    ones are read together, a config file's keys each with its value). The words after it are
    a sentence of their own, unless the whole is one short sentence."""
    if "```" not in text:
        return _sentences(text)
    out: list[str] = []
    at = 0
    for m in _FENCED.finditer(text):
        if len(m.group(0)) > MAX_CODE:
            continue  # (a long log or file: cut at its fences as before)
        before = _sentences(text[at : m.start()])
        lead = before.pop() if before and before[-1].rstrip().endswith((":", "：")) else ""
        end = _SENTENCE.search(text, m.end())
        tail = text[m.end() : end.start() if end else len(text)].split("```", 1)[0]
        piece = f"{lead.rstrip()} {m.group(0)}"
        if len(piece) + len(tail) > MAX_CLAIM or _SENTENCE.search(m.group(0)):
            tail = ""  # its own sentence, as where the code's ";" ended one: "``` and set
            # `DB_POOL_MAX=20`, so each pod keeps up to 20 connections." (not a list's item)
        out += before
        out.append(f"{piece}{tail}".strip())
        if _SHELL.match(m.group(0)) and _OPENS.match(tail) and len(tail.strip()) >= 12:
            out.append(tail.strip())  # after a command's output, a statement of its own too
            # ("``` $ promtool check rules … ``` 现在是 CPU 超过 90% 持续 5 分钟才告警。")
        at = m.end() + len(tail)
    return out + _sentences(text[at:])


_FENCED = re.compile(r"```.*?(?:```|\Z)", re.S)
_SHELL = re.compile(r"```\w*\s*\$ ")
"""A block of code that is a shell session (``$ promtool check rules …``)."""
_OPENS = re.compile(f"\\s*(?:[A-Z][a-z]|[{RANGES}])")
"""Words after a block of code that open a sentence (a capital, a Chinese character)."""


def _told(text: str, value: str) -> bool:
    """Whether a long sentence names ``value`` in its words around its code, and those words
    are short ("Used BoltDB (`go.etcd.io/bbolt`), single file at …: ```go …```")."""
    words = _FENCED.sub(" ", text)
    return len(words) <= MAX_CLAIM and mentions(words, value)


MAX_CODE = 1200
"""Characters of a block of code read as one claim, words around it included (a longer block
is cut at its fences as any sentence too long to be a statement, a longer claim cut there)."""


def _sentences(text: str) -> list[str]:
    """``text``'s sentences; one too long to be a statement is cut at its code fences (a
    commit message in a code block of an excerpt's one line is a statement of its own)."""
    out: list[str] = []
    for raw in _SENTENCE.split(text):
        if "|" in raw and _ROW.search(raw) and not before_after(raw):
            out += _ROW.split(raw)  # a table's rows, each a statement (as on their own lines)
            continue
        items = _items(raw) if "```" not in raw else [raw]
        if len(items) > 2:  # a list or a report run onto one line: an item each
            out += items  # (an excerpt's "## Move … - replaces X with Y - sessions live …")
            continue
        if len(raw) <= MAX_CLAIM:
            out.append(raw)
            continue
        for part in raw.split("```"):  # a shell session run together: a command each
            out += _PROMPT.split(part) if len(part) > MAX_CLAIM else [part]
    return [p for p in out if p.strip()]


_ROW = re.compile(r"(?<=\|)[ \t]+(?=\|)")
"""Where a table's row ends and the next starts, in a text whose lines an excerpt ran together
(``| a | b | | c | d |``)."""
_ITEM = re.compile(r"\s+(?=[-*•]\s|#{1,4}\s)")
"""Where a list's item or a heading starts in a text whose lines an excerpt ran together."""
_INLINE_CODE = re.compile(r"`[^`]*`")


def _items(text: str) -> list[str]:
    """``text`` cut where a list's item or a heading starts, outside inline code (a cron
    schedule's `0 2 * * *` is no list)."""
    code = [m.span() for m in _INLINE_CODE.finditer(text)] if "`" in text else []
    cuts = [m.start() for m in _ITEM.finditer(text) if not any(a < m.start() < b for a, b in code)]
    return [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]


_PROMPT = re.compile(r"(?<=\s)(?=\$ \S)")
"""Where a command starts in a shell session whose lines an excerpt ran together."""


_SLOT_TOKEN = re.compile(r"[\w#@][\w.:/#@+-]*")
SLOT_WINDOW = 4
"""Words on each side of a value that say what it is the value of."""


@lru_cache(maxsize=8192)
def slot(sentence: str, value: str) -> frozenset[str]:
    """The content words (stems) near ``value`` in ``sentence``, stop words not counted:
    what it is the value of."""
    tokens = [t.strip(".,:;") for t in _SLOT_TOKEN.findall(sentence.casefold())]
    content = [
        t for t in tokens if (t and t not in stopwords.STATEMENT and len(t) > 1) or t == value
    ]
    out: set[str] = set()
    for i, token in enumerate(content):
        if token != value and not token.endswith(value):
            continue
        for near in content[max(0, i - SLOT_WINDOW) : i] + content[i + 1 : i + 1 + SLOT_WINDOW]:
            if near == value:
                continue
            stem = statement_stem(near)
            if stem not in GENERIC:
                out.add(stem)
    return frozenset(out)


def noun_after(sentence: str, value: str) -> frozenset[str]:
    """The stem of the word after ``value`` in ``sentence`` ("approval" of "two approvals")."""
    m = re.search(rf"(?<![\w-]){re.escape(value)}\s+([a-z][\w-]*)", sentence.casefold())
    return frozenset([statement_stem(m.group(1))]) if m else frozenset()


_KINDS = listed(
    "branch ruleset rule bucket queue topic table cluster database repo repository namespace "
    "workflow image region zone index profile group module package directory folder host "
    "domain environment secret role tag"
)
"""The nouns that say what kind of thing a name is ("the `main` branch", "ruleset
`billing-two-reviews`"): two names of different kinds are not two values of one thing."""
_KIND_AROUND = r"[\s`'\"]+"


def noun_kind(sentence: str, value: str) -> str:
    """The kind noun (:data:`_KINDS`) right after ``value`` in ``sentence``, else right before
    it, or ""."""
    v = re.escape(value)
    folded = sentence.casefold()
    after = re.search(rf"(?<![\w-]){v}{_KIND_AROUND}([a-z]+)", folded)
    if after and after.group(1) in _KINDS:
        return after.group(1)
    before = re.search(rf"\b([a-z]+){_KIND_AROUND}{v}(?![\w-])", folded)
    return before.group(1) if before and before.group(1) in _KINDS else ""


@lru_cache(maxsize=16384)
def may_replace(text: str) -> bool:
    """Whether ``text`` could replace a claim of another (it says a change or retires a
    value): one search, so most candidates are never read sentence by sentence."""
    head = text[:MAX_TEXT]
    return (
        cues.MAY_REPLACE.search(head) is not None or proposals.CALLED_OFF.search(head) is not None
    )


@dataclass(frozen=True)
class Replacement:
    """An older claim (``old``, a sentence of the older memory), the newer sentence that
    replaces it (``new``), and why."""

    old: str
    new: str
    reason: str


_ENVIRONMENTS = (
    ("prod", re.compile(r"(?<![\w-])(?:prod|production)(?![\w-])|生产|线上|正式环境", re.I)),
    ("staging", re.compile(r"(?<![\w-])(?:staging|stg|pre-?prod)(?![\w-])|预发", re.I)),
    (
        "test",
        re.compile(
            r"(?<=[/.])test(?=[/.])|\btest (?:env|environment|cluster|server)s?\b|测试环境|测试集群",
            re.I,
        ),
    ),
    (
        "dev",
        re.compile(
            r"(?<=[/.])dev(?=[/.])|\b(?:dev|development) (?:env|environment|cluster|server|box)s?\b"
            r"|开发环境",
            re.I,
        ),
    ),
)
"""The environments a statement can be about, by the words and the paths that name them
(``config/prod.yaml``, ``kafka-t1.test.x.internal``, "测试环境")."""


@lru_cache(maxsize=16384)
def environments(text: str) -> frozenset[str]:
    """The environments ``text`` names: a change told of one is no change of another's value."""
    read = sed_read(text)  # (not the ".dev/" of "s/x\.dev/x.internal/")
    return frozenset(name for name, pattern in _ENVIRONMENTS if pattern.search(read))


def mentions(text: str, value: str) -> bool:
    if not value:
        return False
    if _CJK_RUN.fullmatch(value):
        return value in text
    return re.search(rf"(?<![\w#@-]){re.escape(value)}(?![\w-])", text, re.I) is not None


@lru_cache(maxsize=65536)
def replaces(new: Claim, old: Claim, cosine: float, model_id: str) -> str:
    """Why ``new`` (said later) replaces ``old``, or "" when it does not."""
    if new.text == old.text or personal.two_people(new.who, old.who):
        return ""  # Melanie's "seven years now" is not Caroline's "for 4 years"
    was, now = environments(old.text), environments(new.text)
    if was and now and not was & now:
        return ""  # "测试环境 kafka 换到 kafka-t3" against `config/prod.yaml`'s brokers
    if ref := proposals.calls_off(new.text, old.text, new.refs & old.refs):
        return f"calls off {ref}"  # "Closed #482 without merging" / "Opened PR #482 that sets …"
    shared = new.anchors & old.anchors
    turned_down = cues.declined(new.text, old.text)
    if turned_down and (shared or mentions(new.text, turned_down)):
        return f"retires {fold(turned_down)!r}"  # "建议…换成飞书" / "不换，…还是钉钉"
    for value in sorted(new.retired - old.retired):  # (sorted: one reason for any hash seed)
        if "_" in value and value not in old.values and mentions(old.text, value.replace("_", " ")):
            value = value.replace("_", " ")  # `priya_raman` in code, "Priya Raman" in words
            if not all(part in old.values for part in value.split()):
                continue
        elif " " in value:  # "from Source Sans 3 to …": every word of the name in the older
            if value.replace(" ", "-") in old.values:
                value = value.replace(" ", "-")  # "Naive UI" of `naive-ui`
            elif not all(part in old.values for part in value.split()):
                continue
        elif not (value in old.values or _CJK_RUN.fullmatch(value)):
            url = sorted(
                v for v in old.values if "://" in v and v.split("://", 1)[1].split("/")[0] == value
            )
            host = value.split("://", 1)[1].split("/")[0].split(":")[0] if "://" in value else ""
            if url:
                value = url[0]  # "staging-api.x.io now returns 301 …" of "https://staging-api.x.io"
            elif host in old.values:
                value = host  # `-REDIS_URL=redis://cache-01.internal:6379/0` of "cache-01.internal"
            else:
                continue
        if len(old.text) > MAX_CLAIM and value.isalpha() and not _told(old.text, value):
            continue  # a block of code names many words ("Finds entire/abc1234 …", branch)
        if mentions(old.text, value):
            dotted = VERSION.match(value) is not None  # "5.1": no list number
            if (
                shape(value) == "number"
                and not dotted
                and not (  # a diff took it away: "-  BaudRate = 115200;", "-limit: 100"
                    value in new.diffed
                    and (len(value) >= 4 or restated.same_key_named(old.text, new.text, value))
                )
                and not cues.CORRECTION.search(new.text)  # "I said 8080 but it's 8081"
                and not slot(old.text, value) & slot(new.text, value)
                and not (_CJK_RUN.search(old.text) and len(shared - {value}) >= 2)  # 日志保留
            ):
                continue  # "instead of 2" against a list's "2.": another number
            swapped = any(shape(v) == shape(value) for v in new.values - old.values)
            named = _CJK_RUN.fullmatch(value) is not None  # "钉钉那个群解散了": a name
            if shared - {value} or len(value) > 3 or swapped or dotted or named:
                return f"retires {value!r}"  # (not "5 retries instead of 3": another number)
    if rolled_back(new.text, new.values, old.values, shared):
        return "rolled back to another version"
    if cues.existing(new.text) & old.values:
        return ""  # "Added a mypy hook next to the existing ruff hook": ruff stays
    moved = any(cues.changed_to(new.text, f) for f in new.values - old.values)  # "改成 X"
    kept = old.values & new.values if cues.KEPT.search(new.text) and not moved else frozenset()
    if new.also or (old.values and kept == old.values):  # "Redis 那层保持不变": it holds
        return restated.RESTATED if new.also and restated.same_key(new, old) else ""
    if mine := personal.changed(new.text, old.text, shared):  # one value at a time
        return f"a change of {mine}"  # "I work at Brightwave" / "I started at Northpeak"
    if new.who and old.who:  # a chat: only a value retired by name or a one-value fact
        return ""  # changes ("Yeah actually - creating gaming content" / "my main hobbies")
    short = max(len(new.text), len(old.text)) <= MAX_CHANGE
    if short and stance.flipped(new.text, old.text) and 2 * len(shared) >= len(old.anchors) >= 4:
        return "a change of mind"  # "I like this idea" / "I actually don't like this idea"
    counted = max(new.counted, old.counted)
    other = new.retired and new.retired.isdisjoint(old.values)  # "instead of defaulting"
    cue = new.cue and not (other and cues.only_instead(new.text))
    if cue and short and counted <= MAX_VALUES:
        fresh = frozenset(
            f
            for f in new.values - old.values - new.retired
            if len(f) > 3 or not any(f in _PARTS.split(o) for o in old.values)
        )  # "a matrix over `[eu, us]`" after "staging-eu", "eu-central-1": said already
        numbers = {v for v in old.values if shape(v) == "number"}
        unsaid = {shape(o) for o in old.values - new.anchors} | {"number"}
        if numbers and numbers <= new.anchors and not any(shape(f) in unsaid for f in fresh):
            fresh = frozenset()  # it says the older's numbers again ("back to JDK 17")
        latin = {x for x in shared if not _CJK_RUN.fullmatch(x)}
        listed = {  # "golangci-lint、hadolint、markdownlint": one more, not another
            f
            for f in fresh
            if shape(f) != "number"  # (a phone's groups are no list)
            and any(
                shape(v) == shape(f) and cues.listed_with(new.text, new.values, v, f)
                for v in old.values & new.values
            )
        }
        for o in sorted(old.values - fresh - kept):
            for f in sorted(fresh - listed):
                if shape(f) != shape(o):
                    continue
                kin = family(f) & family(o)  # 3.11 -> 3.12, stg.x -> stg.eu1.x, yarn -> pnpm
                mail = all(k.startswith("mail:") for k in kin)  # two people's addresses
                if (
                    kin == {"v0"}
                    and _FRACTION.match(o)
                    and _FRACTION.match(f)
                    and not shared - {o, f}
                    and old.text.startswith("|")
                ):
                    continue  # "| 1000 | 0.61 | 17.2 |" / "GPU util is now … → 0.78 s": figures
                if kin and (
                    any(not k.startswith(("job:", "mail:")) for k in kin)
                    or (not mail and (shared - {o, f} or roles.one_at_a_time(o)))
                    or cues.switched_to(new.text, f, place=True)
                    or cues.changed_to(new.text, f)  # "统一换成 Jackson"
                ):  # two tools of one job on no other shared word: ClickHouse beside Postgres
                    return "a new version of the same thing"
                if not shared or roles.different_jobs({f}, {o}):
                    continue
                if _CJK_RUN.search(old.text):  # (no slot to check in Chinese)
                    if cues.CORRECTION.search(new.text) and shared - {o}:
                        return "a correction of the value"  # "我说错了，上限是 300"
                    if cues.lead(old.text, o) & cues.lead(new.text, f):
                        return "a change to a new value"  # "上限 10MB" / "上限改为 50MB"
                    if shape(o) == "number" and cues.unit(old.text, o) != cues.unit(new.text, f):
                        continue  # "召回 top 20 后" / "测试了 30 个问题": two things counted
                    if shape(f) == "number" and _ZH_DATE.search(new.text.replace(f, "#", 1)):
                        continue  # "3 月 29 日那次故障": a day, not an amount
                target = cues.switched_to(new.text, f, place=o.startswith("#")) or (
                    shape(o) in ("name", "channel") and cues.now_is(new.text, f)
                )  # "... to #radar", "our account manager is Tomás now"
                if (
                    shape(o) == "name"
                    and not target
                    and noun_kind(old.text, o) != noun_kind(new.text, f)
                ):
                    continue  # "the `main` branch" / "ruleset `billing-two-reviews`"
                if (
                    not _CJK_RUN.search(old.text)
                    and not target
                    and not slot(old.text, o) & slot(new.text, f)
                ):
                    continue  # two values in different places ("port 8080" / "3 retries")
                if (o in NUMBER_WORDS or f in NUMBER_WORDS) and not (
                    noun_after(old.text, o) & noun_after(new.text, f)
                ):
                    continue  # "one transaction" / "PR 94": not one thing counted twice
                filed = ("/" in o and "://" not in o) or _FILE.match(o)
                if filed and stem_of(o) != stem_of(f):  # another file, not this one moved
                    continue  # ("/data/exports"; resume_test.go / claude/settings.json)
                if cues.CORRECTION.search(new.text) and shared - {o}:
                    return "a correction of the value"  # "我说错了，上限是 300"
                if cues.joined(new.text, old.anchors) or (
                    shape(f) in ("name", "channel") and cues.added(new.text, f)
                ):
                    continue  # "张磊和王芳都要通过" after "需要张磊 review", "加了 @wangfang": one more
                if shape(o) == "name":  # a person, a tool: on two words of subject
                    if o not in new.anchors and len(shared) >= 2 and latin and not kept:
                        return "a change to a new value"
                # A number or a path on one subject word; a #channel on two ("posts releases
                # to #ship-log" / "posts incidents to #inc-bridge": two channels), or on one
                # when the change names it as its target ("switched to #release-train").
                elif len(latin - {o}) >= (2 if o.startswith("#") and not target else 1):
                    return "a change to a new value"
        if len(shared - latin) >= 2 and (fresh or not numbers) and not kept and not listed:
            if cues.joined(new.text, old.anchors) or cues.changes_another(new.text, old.text):
                return ""  # "审批人现在是周涛和林晓": one more; "`notify_url` 改成…": another
            return "a change on the same subject"
    if (short and counted <= MAX_VALUES and restated.restated(new, old, shared)) or (
        restated.same_key(new, old)  # `api_version = "2024-04-10"` in a longer line of output
    ):
        return restated.RESTATED
    if not (cue and short and counted <= MAX_VALUES // 2):
        return ""
    if similar.conflict(new.text, old.text, cosine, model_id).sure:
        return "same subject, another value"
    return ""


_ZH_DATE = re.compile(r"(?<![\d.])#\s*月\s*\d{1,2}\s*[日号]|(?<![\d.])\d{1,2}\s*月\s*#\s*[日号]")
"""A number of a date in Chinese (``#`` in its place): "3 月 29 日"."""
_FRACTION = re.compile(r"^0\.\d+$")
"""A number under one ("0.61"), not a version "0.17.2" or "v0.9"."""
_PARTS = re.compile(r"[-./_:@]")
"""What separates the parts of a value (``staging-eu``, ``eu-central-1``)."""
_FILE = re.compile(r"^(?!\w+://)[\w./-]+\.(?:go|py|tsx?|jsx?|json|ya?ml|toml|md|rs|rb|exs?)$")


def replaced_claim(
    new_text: str, old_text: str, cosine: float, model_id: str
) -> Replacement | None:
    """The first claim of ``old_text`` that a claim of ``new_text`` (said later) replaces."""
    new_claims = claims(new_text)
    if not new_claims:
        return None
    for old in claims(old_text):
        for new in new_claims:
            why = replaces(new, old, cosine, model_id)
            if why and not (why == restated.RESTATED and restated.keeps(new_text, old)):
                return Replacement(old.text, new.text, why)
    return None
