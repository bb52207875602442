"""Times of day a sentence gives in other shapes than "02:30": a cron schedule's
(``0 8 * * *``) and Chinese hours (早上 8 点, 6 点半), as "HH:MM", so that a schedule told
one way and changed another way are two values of one kind (:mod:`memd.store.current`)."""

from __future__ import annotations

import re

_CRON = re.compile(r"(?<![\w*/,-])([0-5]?\d) ([01]?\d|2[0-3])((?: [\d*][\d*,/-]*){3})(?![\w*/,-])")
"""A cron schedule with a fixed minute and hour ("30 4 * * *", "0 2 * * 1-5")."""
_CJK_HOUR = re.compile(r"(?<![\d:])([01]?\d|2[0-3])\s*点\s*(?:(半)|([0-5]?\d)\s*分)?")
"""An hour in Chinese ("8 点", "6 点半", "9点15分")."""


def clock_times(sentence: str) -> set[str]:
    """The times of day ``sentence`` gives as a cron schedule or a Chinese hour, as "HH:MM"."""
    out = {f"{int(h):02d}:{int(m):02d}" for m, h, rest in _CRON.findall(sentence) if "*" in rest}
    for h, half, m in _CJK_HOUR.findall(sentence):
        out.add(f"{int(h):02d}:{30 if half else int(m or 0):02d}")
    return out
