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
        re.compile(rf"\bmy (?:new )?(?:employer|company|job) is (?:now )?(?:at )?{_NAME}"),
        re.compile(rf"我(?:现在|目前)?在{_CJK_NAME}(?:做|上班|工作|当|任职)"),
        re.compile(
            rf"(?:离职|跳槽)了?[，,]?\s*(?:现在|目前)?(?:在|到|去了|加入了?|入职了?){_CJK_NAME}"
            r"(?=[。，,！!了]|$)"
        ),
        re.compile(rf"(?:入职|加入)了?{_CJK_NAME}(?=[。，,！!了]|$)"),
    ),
    "home": (
        re.compile(
            r"\bI(?:'m| am)?(?: now)? (?:based|living|live|located|relocated|moved)"
            rf"(?: back)? (?:in|to) {_NAME}"
        ),
        re.compile(
            rf"(?:我)?(?:现在|目前)?(?:住在|搬到了?|搬去了?|定居在?){_CJK_NAME}(?=[。，,！!了]|$)"
        ),
    ),
}
"""Each slot and the patterns that give its value (group ``v``)."""


@lru_cache(maxsize=8192)
def slots(sentence: str) -> frozenset[str]:
    """The slots ``sentence`` gives a value of, as anchor keys ("slot:employer")."""
    return frozenset(
        f"slot:{key}"
        for key, patterns in SLOTS.items()
        if any(p.search(sentence) for p in patterns)
    )


def value(sentence: str, key: str) -> str:
    """The value ``sentence`` gives the slot ``key`` ("slot:employer"), folded, or ""."""
    for pattern in SLOTS.get(key.removeprefix("slot:"), ()):
        m = pattern.search(sentence)
        if m:
            return m.group("v").casefold()
    return ""


def changed(new: str, old: str, keys: frozenset[str]) -> str:
    """The slot among ``keys`` that ``new`` gives another value than ``old`` does, or ""."""
    for key in sorted(k for k in keys if k.startswith("slot:")):
        a, b = value(new, key), value(old, key)
        if a and b and a not in b and b not in a:
            return key.removeprefix("slot:")
    return ""
