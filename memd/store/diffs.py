"""What a diff in a sentence takes away: the values its removed lines give that its added lines
give otherwise ("-go 1.21 +go 1.23", "-ACCESS_TOKEN_EXPIRE = timedelta(hours=2)
+ACCESS_TOKEN_EXPIRE = timedelta(minutes=15)"), read by :func:`memd.store.cues.retired`."""

from __future__ import annotations

import re

from memd.store.values import V

_DIFF_LINE = re.compile(
    rf"(?:^|\s)(?P<s>[-+])\s*(?:-\s+)?(?P<k>[A-Za-z_][\w.-]*)\s*[:=]\s*[`'\"]?(?P<v>{V})[`'\"]?",
    re.M,
)
_DIFF_WORDS = re.compile(
    rf"(?:^|\s)(?P<s>[-+])(?P<k>[A-Za-z_][\w.-]*)\s+[`'\"]?(?P<v>{V})[`'\"]?", re.M
)
"""A diff's line of a keyword and its value, the sign against the keyword ("-go 1.21",
"+FROM golang:1.23.2-alpine", "-resource \"tencentcloud_dnspod_record\"")."""
_DIFF_KEY = re.compile(r"(?:^|\s)(?P<s>[-+])\s*\"(?P<k>@?[\w.-]+(?:/[\w.-]+)?)\"\s*:", re.M)
"""A diff's line of a quoted key (a package.json dependency: ``-  "@bugsnag/js": "^7.22.3"``)."""
_VERSION_IN = re.compile(r"(?<![\w.])\d+(?:\.\d+)+")
_SIGNED = re.compile(r"(?:^|(?<=\s))([-+])(?=[^\s+-])(.*?)(?=\s[-+][^\s+-]|\n|\Z)", re.S)
"""A diff's removed or added line, also where an excerpt ran its lines together."""
_TOKEN = re.compile(V)


def _line_pairs(text: str) -> set[str]:
    """What a diff's removed line gives that the added line after it, on the same first word,
    gives otherwise: one or two words ("-ACCESS_TOKEN_EXPIRE = timedelta(hours=2)
    +ACCESS_TOKEN_EXPIRE = timedelta(minutes=15)": hours, 2)."""
    out: set[str] = set()
    removed: dict[str, list[str]] = {}
    for m in _SIGNED.finditer(text):
        words = _TOKEN.findall(m.group(2))
        if not words:
            continue
        if m.group(1) == "-":
            removed.setdefault(words[0], words)
            continue
        before = removed.pop(words[0], None)
        if before is None:
            continue
        gone = [w for w in before if w not in words]
        if 0 < len(gone) <= 2 and any(w not in before for w in words):
            out.update(gone)
    return out


def diff_removed(text: str) -> set[str]:
    """The values a diff's removed lines give a key that its added lines give another
    ("-EMAIL_PROVIDER=sendgrid -SENDGRID_API_KEY=… +EMAIL_PROVIDER=postmark": sendgrid;
    "- - id: pylint + - repo: … + - id: ruff": pylint; "-go 1.21 +go 1.23": 1.21;
    "-FROM golang:1.21.6-alpine +FROM golang:1.23.2-alpine": the image and its 1.21.6), and
    the quoted keys it removes while it adds others (``-"@bugsnag/js": … +"@sentry/react": …``:
    a dependency swapped)."""
    out: set[str] = set()
    for pattern in (_DIFF_LINE, _DIFF_WORDS):
        removed: dict[str, str] = {}
        for m in pattern.finditer(text):
            key, value = m.group("k"), m.group("v")
            if m.group("s") == "-":
                removed.setdefault(key, value)
            elif key in removed and removed[key] != value:
                old = removed[key]
                out.add(old)
                out.update(v for v in _VERSION_IN.findall(old) if v not in value)
    out |= _line_pairs(text)
    keys: dict[str, set[str]] = {"-": set(), "+": set()}
    for m in _DIFF_KEY.finditer(text):
        keys[m.group("s")].add(m.group("k"))
    if keys["+"] - keys["-"]:
        out.update(keys["-"] - keys["+"])
    return out
