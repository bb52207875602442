"""What counts as Chinese: the one character class memd uses everywhere (search, dedupe,
supersession, TODO closing, extraction), its runs, and the language test of a text."""

from __future__ import annotations

import re

RANGES = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
"""CJK Unified Ideographs, Extension A and the Compatibility Ideographs, for use inside a
regular expression's brackets (``f"[a-z{RANGES}]"``)."""
CJK_CLASS = f"[{RANGES}]"
"""One Chinese (CJK) character, as a regular expression class (also for LanceDB's and Arrow's
regular expressions)."""
CJK_CHAR = re.compile(CJK_CLASS)
CJK_RUN = re.compile(CJK_CLASS + "+")
_LATIN = re.compile(r"[A-Za-z]")


def is_chinese(text: str) -> bool:
    """True when CJK characters make up more than 30 % of the letters (code words don't count)."""
    if CJK_CHAR.search(text) is None:  # most texts of an English project: no counting
        return False
    cjk = len(CJK_CHAR.findall(text))
    return cjk > 0 and cjk / (cjk + len(_LATIN.findall(text))) > 0.3


def has_chinese(text: str) -> bool:
    """Whether ``text`` holds a Chinese character at all."""
    return CJK_CHAR.search(text) is not None
