"""A person's own facts that hold one value at a time: where they work, where they live.

"I work at Brightwave Labs" and, months later, "I started at Northpeak Analytics this week"
share no subject word, yet the second replaces the first: one works at one place. Each slot
is a few patterns that find the value in a sentence, in English and Chinese;
:func:`memd.store.current.replaces` asks :func:`changed` when a later sentence says a change.
"""

from __future__ import annotations

import re
from functools import lru_cache

from memd.text.chinese import RANGES

_NAME = r"(?P<v>[A-Z][\w&.'-]*(?: (?:[A-Z][\w&.'-]*|of|de|la))*)"
_CJK_NAME = rf"(?P<v>[{RANGES}]{{2,6}}?)"

SLOTS: dict[str, tuple[re.Pattern[str], ...]] = {
    "employer": (
        re.compile(
            r"\bI(?: now| just)? (?:work|am working|started|joined|began|signed on)"
            rf"(?: (?:at|for|with))? {_NAME}"
        ),
        re.compile(rf"\b[Mm]y (?:new )?(?:employer|company|job) is (?:now )?(?:at )?{_NAME}"),
        re.compile(rf"\b(?:[Ff]irst|[Ss]econd) (?:day|week|month) at {_NAME}"),
        re.compile(rf"\bI(?:'m| am) (?:a|an|the) (?:[a-z]+ ){{1,3}}at {_NAME}"),
        re.compile(rf"\b[Mm]y new (?:job|role|position) at {_NAME}"),
        re.compile(rf"我(?:现在|目前)?在{_CJK_NAME}(?:做|上班|工作|当|任职)"),
        re.compile(
            rf"(?:离职|跳槽)了?[，,]?\s*(?:现在|目前)?(?:在|到|去了|加入了?|入职了?){_CJK_NAME}"
            r"(?=[。，,！!了]|$)"
        ),
        re.compile(rf"(?:入职|加入)了?{_CJK_NAME}(?=[。，,！!了]|$)"),
    ),
    "role": (
        re.compile(
            r"\bI(?:'m| am)(?: now)? (?:a|an|the) (?P<v>(?:[a-z]+ ){0,2}(?:engineer|developer"
            r"|manager|architect|designer|lead|sre|analyst|intern|director|cto))\b"
        ),
        re.compile(
            rf"我(?:现在|目前|这个月|已经)?(?:是|当上了?|升(?:任|为|职为?)了?|转岗(?:做|为|成)?了?)"
            rf"(?P<v>[{RANGES}]{{0,4}}?"
            r"(?:开发|工程师|架构师|经理|主管|负责人|设计师|组长|总监|测试|运维))"
        ),
    ),
    "manager": (
        re.compile(rf"\b[Mm]y (?:new )?(?:manager|boss)(?:,)?(?: is)?(?: now)? {_NAME}"),
        re.compile(rf"\bI(?: now)? report to {_NAME}"),
        re.compile(
            rf"(?<![\w'])(?!(?:This|That|It|He|She|They|There|Here|Who|What|Which)\b){_NAME},? "
            r"(?:(?:she|he|they)(?:'s| is| are)|is) my (?:manager|boss)\b"
        ),  # "address it to Priya, she's my manager"
        re.compile(
            rf"我的?(?:直属)?(?:领导|上级|经理|老板)(?:现在)?(?:是|换成了?|变成了?){_CJK_NAME}(?=[。，,！!了]|$)"
        ),
        re.compile(rf"(?:向|汇报给){_CJK_NAME}汇报"),
    ),
    "team": (
        re.compile(
            r"\bI(?:'m| am)(?: now)? (?:on|in|part of) the (?P<v>[\w-]+(?: [\w-]+)?) team\b"
        ),
        re.compile(
            r"\bI(?:'ve| have)? (?:moved|switched|transferred|joined)(?: over)? (?:to )?the "
            r"(?P<v>[\w-]+(?: [\w-]+)?) team\b"
        ),
        re.compile(
            r"\b[Mm]y (?:new )?team is (?:now )?(?:the )?(?P<v>[\w-]+(?: (?!now\b)[\w-]+)?)"
        ),
        re.compile(
            rf"我(?:现在|目前|已经)?(?:在|调到了?|转到了?|换到了?|加入了?)(?P<v>[{RANGES}A-Za-z]{{1,6}}?)"
            r"(?:组|团队|小组|部门)(?![长员])"
        ),
        re.compile(
            rf"(?:调到|转到|换到)了?(?P<v>[{RANGES}A-Za-z]{{1,6}}?)(?:组|团队|小组|部门)(?![长员])"
        ),
    ),
    "phone": (
        re.compile(
            r"\b[Mm]y (?:new |mobile |cell |phone )*(?:number|phone)(?: is)?(?: now)?:? "
            r"(?P<v>\+?\d[\d ().-]{5,}\d)"
        ),
        re.compile(r"(?P<v>\+?\d[\d ().-]{5,}\d) as my (?:new )?(?:number|phone)"),
        re.compile(
            r"(?:手机号?|电话)(?:号码|号)?(?:现在)?(?:是|改成了?|换成了?|改为)[:：]?\s*(?P<v>\+?\d[\d -]{5,}\d)"
        ),
    ),
    "favourite language": (
        re.compile(rf"{_NAME} is my (?:new )?favou?rite (?:programming )?language"),
        re.compile(rf"\b[Mm]y (?:new )?favou?rite (?:programming )?language is (?:now )?{_NAME}"),
        re.compile(r"最喜欢的(?:编程)?语言(?:现在)?(?:是|变成了?|换成了?)\s*(?P<v>[A-Za-z#+]+)"),
    ),
    "home": (
        re.compile(
            r"\bI(?:'m| am)?(?: now)? (?:based|living|live|located|relocated|moved)"
            rf"(?: back)? (?:in|to) {_NAME}"
        ),
        re.compile(rf"\b(?:[Ss]ince|[Aa]fter) (?:the|my|our) (?:move|relocation) to {_NAME}"),
        re.compile(
            rf"(?:我)?(?:现在|目前)?(?:住在|搬到了?|搬去了?|定居在?){_CJK_NAME}(?=[。，,！!了]|$)"
        ),
    ),
}
"""Each slot and the patterns that give its value (group ``v``)."""


@lru_cache(maxsize=8192)
def slots(sentence: str, who: str = "") -> frozenset[str]:
    """The slots ``sentence`` gives a value of, as anchor keys ("slot:employer"); ``who`` names
    the speaker where a chat has several ("slot:employer@caroline")."""
    at = f"@{who}" if who else ""
    return frozenset(
        f"slot:{key}{at}"
        for key, patterns in SLOTS.items()
        if any(p.search(sentence) for p in patterns)
    )


_LABELS = frozenset(
    [
        "note", "update", "fix", "summary", "todo", "error", "warning", "done", "status", "result",
        "answer", "edit", "reason", "cause", "problem", "solution", "output", "example", "tip",
        "important", "actually", "also", "next"
    ]
)  # fmt: skip
"""Words a sentence may start with as "Update: ..." that name no speaker."""


def two_people(a: str, b: str) -> bool:
    """Whether two speakers' names (lower case, as :func:`slots` takes them) are of two
    people, neither a label like "Update": one does not correct the other's own facts."""
    return bool(a and b and a != b and a not in _LABELS and b not in _LABELS)


def value(sentence: str, key: str) -> str:
    """The value ``sentence`` gives the slot ``key`` ("slot:employer"), folded, or ""."""
    for pattern in SLOTS.get(key.removeprefix("slot:").split("@")[0], ()):
        m = pattern.search(sentence)
        if m:
            return m.group("v").casefold()
    return ""


def changed(new: str, old: str, keys: frozenset[str]) -> str:
    """The slot among ``keys`` that ``new`` gives another value than ``old`` does, or ""."""
    for key in sorted(k for k in keys if k.startswith("slot:")):
        a, b = value(new, key), value(old, key)
        if a and b and a not in b and b not in a:
            return key.removeprefix("slot:").split("@")[0]
    return ""


ASKED: dict[str, str] = {
    "employer": r"where (?:do|does|did) \w+ work|employer|(?:which|what) company"
    r"(?:(?: \w+){0,3}? work(?:ing)?(?: for| at)?)?|哪家公司|什么公司|在哪(?:里|儿)?(?:上班|工作)",
    "home": r"where (?:do|does) \w+ live|(?:which|what) city|\bmy (?:city|hometown|home town)\b"
    r"|住在哪|哪个城市|什么城市|我(?:所在)?的城市",
    "role": r"\b(?:my|his|her) (?:role|position|title|job title)\b|职位|岗位|职务|什么角色",
    "manager": r"\b(?:my|his|her) (?:manager|boss)\b|\breport to\b|领导|上级|向谁汇报",
    "phone": r"\b(?:phone|mobile|cell)(?: number)?\b|\bmy number\b|电话|手机",
    "team": r"\b(?:which|what) team\b|\bmy team\b|哪个组|什么组|哪个团队|哪个部门|哪个小组",
    "favourite language": r"favou?rite (?:programming )?language|最喜欢的(?:编程)?语言",
}
"""The words a question asks for each slot with ("Where do I work these days?", "我现在是什么职位？")."""


@lru_cache(maxsize=1024)
def asked(query: str) -> tuple[tuple[str, str], ...]:
    """The slots ``query`` asks about, each with the words it asks with."""
    folded = query.casefold()
    found = ((key, re.search(pattern, folded)) for key, pattern in ASKED.items())
    return tuple((f"slot:{key}", m.group(0)) for key, m in found if m)
