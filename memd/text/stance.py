"""A stance taken back: "I very much like this idea" and, later, "I actually don't like much
this idea". Shared by extraction (a session summary leaves out what the user took back) and by
:mod:`memd.store.current` (the later sentence replaces the older)."""

from __future__ import annotations

import re

from memd.text import searchterms

_STANCE = r"like|love|enjoy|prefer|want|need|use|trust|recommend|support"
_SAID = re.compile(rf"\b(?:{_STANCE})\b|喜欢|推荐|想用|在用", re.I)
_DENIED = re.compile(
    rf"\b(?:don'?t|doesn'?t|do not|does not|no longer|never|not|won'?t)\s+(?:\w+\s+){{0,2}}?"
    rf"(?:{_STANCE})\b|不(?:再|太|怎么)?(?:喜欢|推荐|想用|用)",
    re.I,
)
_CHANGE_OF_MIND = re.compile(
    r"\b(?:actually|no longer|any ?more|changed my mind|on second thought|after all|now)\b"
    r"|其实|不再|改主意|想了想",
    re.I,
)


def flipped(new: str, old: str) -> bool:
    """Whether ``new`` takes back the stance ``old`` states ("I very much like this idea" /
    "I actually don't like much this idea"; "我们在用 Poetry" / "我们不再用 Poetry"), or the
    other way round, told as a change of mind (actually, no longer, 其实, 不再)."""
    denied_new, denied_old = _DENIED.search(new), _DENIED.search(old)
    if bool(denied_new) == bool(denied_old) or not _CHANGE_OF_MIND.search(new):
        return False
    return _SAID.search(old if denied_new else new) is not None


def taken_back(new: str, old: str) -> bool:
    """Whether ``new`` takes back ``old``'s stance on the same thing: :func:`flipped`, on at
    least half of ``old``'s terms (three or more)."""
    if not flipped(new, old):
        return False
    mine = set(searchterms.terms(old))
    return len(mine) >= 3 and 2 * len(mine & set(searchterms.terms(new))) >= len(mine)
