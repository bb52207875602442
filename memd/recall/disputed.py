"""Two answers to one question: an older statement that a newer one answers differently is
marked "may be outdated", and the newer is brought in ahead of it.

:mod:`memd.recall.stale` marks what a newer statement replaces, when the two say so in words
it can read (a change, a shared subject). Many changes are told without either: "Terraform for
prod should use eu-west-1 as the primary region", and a month later "the primary is
eu-central-1 now". The prompt says what they are about. When it asks for one value as it is now ("Which AWS
region hosts the primary production stack?"; not "Which regions...?", "... and ...?" or "When
did we first ...?"), and two of the best relevant candidates, from different sessions, each
give a value of the same kind next to the prompt's words (two regions, two sizes in MB, two
stores, two hosts of one domain; any two tools of a job the prompt names, "Which CI ...?"),
neither naming the other's, the older one is marked with the newer's date and value
("[may be outdated: 2026-02-12 says eu-central-1]"). Nothing is dropped: both may hold, and
Claude sees both, the newer first.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import replace
from functools import lru_cache

from memd.recall import stale, synonyms
from memd.recall.hits import Hit
from memd.store import clock, cues, current, families, roles
from memd.store.values import listed
from memd.text import TEXT_CACHE, stopwords
from memd.text.chinese import RANGES
from memd.text.stems import statement_stem

_LIST = re.compile(
    r"\b(?:and|both|respectively|between|all)\b|\bwho(?:'s|\s+is|\s+are)\s+on\b|\bwho\s+are\b"
    r"|\b(?:which|what)\s+(?:[\w-]+\s+){0,2}?"
    r"(?:ports|regions|linters|tools|databases|channels|queues|instances|checkers|checks|topics"
    r"|services|buckets|hosts|servers|libraries|frameworks|stores|teams|owners|people"
    r"|reviewers|versions|branches|environments|devices|phones|machines|providers|clusters"
    r"|platforms|browsers|languages|registries|mirrors|caches|images|runners|packages|plugins"
    r"|dependencies|endpoints|domains|nodes|workers|repos|repositories|accounts|zones|urls"
    r"|addresses|sites|stacks|apis|specs|prefixes|locales|certificates|keys|secrets)\b"
    r"(?!\s+(?:the|a|an|our|my|this|its|your)\b)"  # "which region hosts the ...": a verb
    r"|哪些|哪几|有谁|分别|各自|各个|都|和|以及|跟",
    re.IGNORECASE,
)
"""A prompt that asks for several values: each of them may hold."""
_REGION = re.compile(r"^[a-z]{2}-[a-z]+-\d$|^(?:cn|ap|us|eu)-[a-z]+(?:-\d)?$")
COMPARED = 8
"""How many of the best relevant candidates are compared: a block shows about that many, and
:mod:`memd.recall.stale` reads the claims of as many (reading a long text's claims the first
time costs up to a few milliseconds)."""
_PAST = re.compile(
    r"\b(?:when (?:did|was|were|had)|first|ever|used to|originally|before|previous(?:ly)?"
    r"|how many times|how long (?:has|have|had|did|was)|since when|last time)\b"
    r"|以前|之前|最早|第一次|当初|原来|上次|多久了|什么时候开始",
    re.IGNORECASE,
)
"""A prompt about the past: an older value is its answer, not a stale one."""
_KINDED = re.compile(
    r"(?<![\w.])\d+(?:[.:]\d+)*\s?[a-z%]|\b[a-z]{2}-[a-z]+-\d\b|\b(?:cn|ap|us|eu)-[a-z]+"
    r"|\w\.[\w-]+\.[a-z]{2,}\b|\w:\w|\b[a-z][a-z0-9]*(?:[-_][a-z][a-z0-9]*)*[-_]\d|\bport|端口"
    r"|(?<![\w.])@[a-z]|负责人|值班|对接人|on[- ]call|\bowner\b|in charge|\bowns\b"
    r"|\b(?:takes|took|taken) over|负责|接手|更新成|-Xmx\d",
    re.IGNORECASE,
)
"""What a text with a value of a kind holds: a number with a unit or a time, a region, a host,
an image's tag, a @handle (a known tool is looked up apart)."""
_STORES = frozenset(["job:database", "job:cache"])
_TIME = re.compile(r"^\d{1,2}:\d{2}$")
_SERIAL = re.compile(r"^([a-z][a-z0-9]*(?:[-_][a-z][a-z0-9]*)*)[-_]\d[\w.]*$")
"""A name with a serial part ("sms-ak-2024", "sms-ak-2025q3"): one thing's editions."""
_UNIT = re.compile(r"(?<=\d)[a-z%]{1,3}$")
_TOKEN = re.compile(r"[\w#@][\w.:/#@+-]*")
_END = re.compile(r"[.!?;。！？；]+$")
_CJK_RUN = re.compile(f"[{RANGES}]{{2,}}")


def asks_for_one(query: str) -> bool:
    """Whether ``query`` asks for one value as it is now (not a list, not two things at
    once, not what happened when: "When did Nate get his first two turtles?")."""
    return _LIST.search(query) is None and _PAST.search(query) is None


def _words(query: str) -> tuple[frozenset[str], frozenset[str]]:
    """The prompt's content stems, and the character pairs of its Chinese."""
    folded = query.casefold()
    stems = {
        statement_stem(t.strip(".,:;?"))
        for t in _TOKEN.findall(folded)
        if t not in stopwords.STATEMENT and len(t) > 1
    }
    pairs = {run[i : i + 2] for run in _CJK_RUN.findall(folded) for i in range(len(run) - 1)}
    return frozenset(stems - current.GENERIC), frozenset(pairs)


def _about(near: frozenset[str], stems: frozenset[str], pairs: frozenset[str]) -> bool:
    """Whether the words next to a value (:func:`current.slot`) are the prompt's."""
    return not near.isdisjoint(stems) or not _pairs(near).isdisjoint(pairs)


_MAX_HEAP = re.compile(r"^-?xmx\d+[kmgt]?$", re.I)
"""A JVM's maximum heap flag, as a claim's value ("xmx2g" of ``-Xmx2g``)."""
_MAJOR = re.compile(r"^v\d+$")
"""A version's family (:func:`families.family`: "v18" for 18.19.0)."""
_KIND_ASKED = {
    "region": re.compile(r"\bregion\b|地域|区域|可用区", re.I),
    "port": re.compile(r"\bport\b|端口", re.I),
    "time": re.compile(r"\bwhat time\b|\bwhen (?:does|do|is|will)\b|几点|什么时间", re.I),
    "person": re.compile(r"\bwho(?:m|se)?\b|谁", re.I),
    "day": synonyms.DAY_ASKED,
    "registry": synonyms.REGISTRY_ASKED,
    "heap": re.compile(r"\bheap\b|xmx|堆内存|最大堆", re.I),
}
"""Kinds of value a prompt asks for by name: every value of the kind answers it, whatever
the words beside it ("Which AWS region ...?": `region = "eu-central-1"`)."""
_HANDLE = re.compile(r"^@[a-z][\w-]+$")
_ROLE_ZH = r"(?:负责人|值班|对接人|owner)"
_OWNER_ZH = re.compile(
    rf"(?P<before>[{RANGES}]{{2,3}})(?=是(?:这块|这个|这边|该模块)?的?{_ROLE_ZH})"
    rf"|{_ROLE_ZH}(?:人)?[：:是为]?\s*(?P<after>[{RANGES}]{{2,3}})(?=[，,。；;、\s）)]|$)"
    rf"|@(?P<at>[{RANGES}]{{2,3}})(?![{RANGES}])"
    rf"|(?:是|由|归|(?<=[，,。；;：:\s])|^)(?P<by>[{RANGES}]{{2,3}}?)(?:下周|本周|明天|今天)?(?:开始)?"
    r"(?:负责(?!人)|接手|来管)"
    rf"|{_ROLE_ZH}[^，,。；;]{{0,16}}?(?:更新成|改成|换成|指向|写上)了?(?P<to>[{RANGES}]{{2,3}})"
    rf"(?![{RANGES}])"
)
"""A person a Chinese sentence names as the owner or the one on call (Chinese names are no
claim values: nothing else tells one from a word)."""
_DUTY_EN = r"(?:on[- ]call|the owner|owner|in charge)"
_TAKES_EN = r"owns|takes over|took over|has taken over"
"""Verbs after an owner's name only ("Marcus takes over", not "takes over Billing")."""
_OWNER_EN = re.compile(
    rf"\b(?P<before>[A-Z][a-z]+)(?=(?:'s| is| was| as)? (?:now )?{_DUTY_EN}\b| (?:{_TAKES_EN})\b)"
    rf"|\b{_DUTY_EN}(?: is| now is|:)? (?P<after>[A-Z][a-z]+)\b(?! [A-Z])"
)
"""A person an English sentence names as the owner or the one on call."""
_OWNED = listed("code product project data service module package feature file repo process")
"""Words before "owner" that say what is owned ("Code owner approval"), not who owns it."""
_REGISTRY = re.compile(
    r"(?:^|\.)registry\.|^(?:docker\.io|ghcr\.io|quay\.io|gcr\.io)\b|\.dkr\.ecr\."
)
_HOSTED = re.compile(r"^(?:[a-z][\w+.-]*://)?[a-z0-9-]+(?:\.[a-z0-9-]+)*\.[a-z]{2,}(?:[/:]|$)")
_REGISTRY_WORD = re.compile(r"registry|index-url|mirror|源", re.IGNORECASE)
_PORT_URL = re.compile(r"^[a-z][\w+.-]*://[^/\s]*:\d{2,5}(?:/|$)")
_PORT_WORD = r"(?:port\(?s?\)?\s*[:=]?|端口(?:号)?(?:是|为|改成|改为)?|listen(?:s|ing)? on)"


_WEEKDAY = re.compile(
    r"(?<![\w-])(?:mon|tues|wednes|thurs|fri|satur|sun)days?(?![\w-])|(?:周|星期|礼拜)[一二三四五六日天]",
    re.IGNORECASE,
)
_DAY = frozenset(["day"])
_PERSON = frozenset(["person"])


def _is_port(sentence: str, value: str) -> bool:
    """Whether ``value`` is a port: a URL's, or a number the sentence calls one."""
    if _PORT_URL.match(value):
        return True
    if not value.isdigit() or not 2 <= len(value) <= 5:
        return False
    v = re.escape(value)
    return re.search(rf"{_PORT_WORD}\s*{v}\b|\b{v}\s*(?:端口|port\b)", sentence, re.I) is not None


def _kinds(sentence: str, value: str) -> frozenset[str]:
    """What a value is a value of, as far as its shape tells: a region, a time, a number of a
    unit ("10 MB"), or its family (:func:`families.family`: a tool's job, a host's domain, an
    image); empty when the shape says nothing."""
    kinds = set(families.family(value))
    if kinds & _STORES:
        kinds.add("store")  # sessions kept in Redis, then in DynamoDB
    serial = _SERIAL.match(value)
    if serial and not _REGION.match(value):
        kinds.add("id:" + serial.group(1))
    if _is_port(sentence, value):
        kinds.add("port")
    if _REGISTRY.search(value):
        kinds.add("job:container registry")  # Docker Hub, later registry.cn-hangzhou.aliyuncs.com
    if _HOSTED.search(value) and _REGISTRY_WORD.search(sentence):
        kinds.add("registry")  # .npmrc's registry.npmmirror.com, later 私有源 npm.acme-inc.cn
    if _HANDLE.match(value):
        kinds.add("person")  # CODEOWNERS' @priya-s, later @marcus-lee
    if _MAX_HEAP.match(value):
        kinds.add("heap")  # JAVA_OPTS' -Xmx2g, later -Xmx6g
    if _REGION.match(value):
        kinds.add("region")
    elif _TIME.match(value):
        kinds.add("time")
    elif current.shape(value) == "number" and value[:1].isdigit():  # not "three dogs"
        unit = _UNIT.search(value)
        if unit:
            kinds.add("n:" + unit.group(0))
        kinds.update("n:" + unit for unit in current.noun_after(sentence, value))
        v = re.escape(value)  # "10% of users", "rollout_percent: 50", "调到 30%"
        percent = rf"(?<![\d.]){v}\s*(?:%|％|percent)|percent\w*\W{{1,3}}{v}\b"
        if re.search(percent, sentence, re.I):
            kinds.add("n:%")
    return frozenset(kinds)


Value = tuple[str, str, frozenset[str], frozenset[str]]
"""A value a text states with a kind: (its sentence, the value, its kinds, the words next to
it)."""


def read_ahead(text: str) -> None:
    """Read the values ``text`` states into the cache :func:`mark_disputed` reads (for a prompt
    that asks for no version: most of them)."""
    _values(text, False)  # positional, as mark_disputed calls it: the cache's key


@lru_cache(maxsize=TEXT_CACHE)
def _values(text: str, versions: bool = False) -> tuple[Value, ...]:
    """The values ``text`` states with a kind; with ``versions`` (the prompt asks for a
    version), any two versions are of one kind (18.19.0 and 20.11.1; else only those of one
    major version are). Remembered: a prompt's best candidates come up again prompt after
    prompt, and reading them cost ~0.2 ms each even when their claims were remembered."""
    folded = text.casefold()
    if not (
        _KINDED.search(text)
        or roles.tools_named(folded)
        or any(phrase in folded for phrase in roles.PHRASES)  # "GitHub Actions"
        or roles.named_as_tool(text)  # "Drone"
        or clock.clock_times(text)  # "0 2 * * *", "8 点"
        or _WEEKDAY.search(text)
    ):
        return ()  # (one search spares reading the claims of most texts)
    out = []
    for c in current.claims(text):
        for value in sorted(c.values):  # (a set: in one order, whatever the hash seed)
            kinds = _kinds(c.text, value)
            if versions and any(_MAJOR.match(k) for k in kinds):
                kinds |= {"version"}
            if kinds:
                out.append((c.text, value, kinds, current.slot(c.text, value)))
        for m in _OWNER_ZH.finditer(c.text):  # "王磊是这块的负责人", "负责人：陈思远"
            name = next(n for n in m.group("before", "after", "at", "by", "to") if n)
            out.append((c.text, name, _PERSON, current.slot(c.text, name)))
        for m in _OWNER_EN.finditer(c.text):  # "Priya's on call", "shows Marcus as on-call"
            name = m.group("before") or m.group("after")
            if name.lower() not in stopwords.STATEMENT | _OWNED:  # not "The owner", "Code owner"
                out.append((c.text, name.lower(), _PERSON, current.slot(c.text, name.lower())))
        for m in _WEEKDAY.finditer(c.text):  # "每周四下午发版", later "每周二发版"
            out.append((c.text, m.group(0), _DAY, current.slot(c.text, m.group(0).lower())))
    return tuple(out)


def _pairs(words: frozenset[str]) -> frozenset[str]:
    """The character pairs of the Chinese words among ``words``."""
    return frozenset(
        run[i : i + 2] for run in words if _CJK_RUN.match(run) for i in range(len(run) - 1)
    )


def mark_disputed(results: list[Hit], query: str) -> list[Hit]:
    """``results`` with each older relevant statement that a newer one answers differently
    marked, and the newer ranked just above it (changed results are copies; order kept).

    The older value must sit next to the prompt's words; the newer next to the prompt's
    words or the older's ("上限 10MB" / "上限改为 50MB" for "单个文件最大能传多大？")."""
    if not asks_for_one(query):
        return results
    hits = sorted(
        (r for r in results if r.status == "active" and r.relevant), key=lambda r: -r.score
    )[:COMPARED]
    if len(hits) < 2:
        return results
    stems, pairs = _words(query)
    jobs = tuple(f"job:{role}" for role, _, _ in roles.asked(query))  # "Which CI ...?"
    jobs += tuple(kind for kind, ask in _KIND_ASKED.items() if ask.search(query))  # "Which port?"
    said = {r.id: r.said_at()[:10] for r in hits}
    versions = synonyms.VERSION_ASKED.search(query) is not None  # "Which Node version ...?"
    by_kind: dict[str, list[tuple[Hit, str, frozenset[str]]]] = defaultdict(list)
    values: dict[str, tuple[Value, ...]] = {}
    for r in hits:
        values[r.id] = _values(r.memory.text, versions)
        for sentence, value, kinds, near in values[r.id]:
            if cues.named_old(sentence, value):
                continue  # "cn-hangzhou 的旧 SLB 还没释放": no answer of what holds now
            for kind in kinds:
                by_kind[kind].append((r, value, near))
    changed: dict[str, Hit] = {}
    for old in hits:
        for sentence, value, kinds, near in values[old.id]:
            asked = any(k.startswith(jobs) for k in kinds) if jobs else False
            if not (asked or _about(near, stems, pairs)):
                continue
            subject = (stems | near, pairs | _pairs(near))
            newer = [  # (the newest first; of one day, one said beside the prompt's words)
                (said[new.id], _about(around, stems, pairs), new, other)
                for kind in sorted(kinds)
                for new, other, around in by_kind[kind]
                if said[new.id] > said[old.id]
                and current.fold(other) != current.fold(value)
                and not stale.same_session(new, old)
                and (asked or _about(around, *subject))
                and not _names(new.memory.text, value)
                and not _names(old.memory.text, other)
                and not cues.added(new.memory.text, other)  # "加了 @wangfang": one more
            ]
            if not newer:
                continue
            date, _, new, other = max(newer, key=lambda n: n[:2])
            if any(said[h.id] >= date and _names(h.memory.text, value) for h in hits):
                continue  # said again as late as the other value: both hold
            mine = changed.get(old.id) or old
            if _marked(mine.text, sentence):
                continue
            mark = f" [may be outdated: {date} says {_as_written(new.memory.text, other)}]"
            changed[old.id] = replace(mine, marked=stale.annotate(mine.text, sentence, mark))
            top = changed.get(new.id) or new
            changed[new.id] = replace(top, score=max(top.score, old.score + 0.001))
    if not changed:
        return results
    return [changed.get(r.id, r) for r in results]


def _names(text: str, value: str) -> bool:
    """Whether ``text`` names ``value`` other than as code that calls into it: "replaced a
    leftover `jest.useFakeTimers()` with `vi.useFakeTimers()`" does not name Jest as the
    runner beside Vitest."""
    if "://" in value and _names(text, value.split("://", 1)[1]):
        return True  # "staging-eu.quillhq.dev is unchanged" names https://staging-eu.quillhq.dev
    if not current.mentions(text, value):
        return False
    if any(current.fold(v) == current.fold(value) for v in cues.retired(text)):
        return False  # "Priya is going on parental leave…Marcus takes over": not beside it
    calls = len(re.findall(rf"(?<![\w#@-]){re.escape(value)}\.[a-z_]\w*\(", text, re.I))
    return (
        calls == 0
        or len(re.findall(rf"(?<![\w#@-]){re.escape(value)}(?![\w-])", text, re.I)) > calls
    )


def _as_written(text: str, value: str) -> str:
    """``value`` as ``text`` spells it (claims fold their values: "dynamodb"), as a name
    where it is one ("Drone", not ".drone.yml")."""
    found = [m.group(0) for m in re.finditer(re.escape(value), text, re.IGNORECASE)]
    if not found:  # a tool written in two words or in Chinese: "Naive UI", "神策"
        phrases = (p for p, tool in roles.PHRASES.items() if tool == value)
        found = [m.group(0) for p in phrases for m in re.finditer(re.escape(p), text, re.I)]
    return next((f for f in found if f[:1].isupper()), found[0] if found else value)


def _marked(text: str, sentence: str) -> bool:
    """Whether ``sentence`` of ``text`` already carries a mark (here or :mod:`stale`'s)."""
    bare = _END.sub("", sentence.strip())
    at = text.find(bare)
    return at >= 0 and text[at + len(bare) :].lstrip().startswith("[")
