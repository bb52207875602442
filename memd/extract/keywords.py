"""Keywords and topics from what was said: English words and identifiers, Chinese chunks.

Redaction labels, markup tags, fenced code and URLs are left out first (:func:`keyword_text`), so
a memory's keywords and a segment's topic come from the words a person wrote.
"""

from __future__ import annotations

import re
from collections import Counter
from functools import lru_cache

from memd.extract import vocabulary as vocab
from memd.text import stopwords
from memd.text.chinese import RANGES

_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_.+#/-]{1,40}")
_CJK_RUN = re.compile(rf"[{RANGES}]{{2,}}")
_CJK_STOP = re.compile(f"[{stopwords.KEYWORD_CJK_CHARS}]")


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


_NOT_WORDS = re.compile(
    r"\[REDACTED:[^\]]*\]"  # redaction labels: "github_token" is no topic
    r"|```.*?(?:```|\Z)"  # fenced code
    r"|</?[A-Za-z][\w:-]*(?:\s[^<>]{0,300})?/?>"  # markup tags and their attributes
    r"|\b(?:https?|file|ftp)://\S+"  # URLs
    r"|!?\[([^\]\n]{0,200})\]\([^)\s]{0,300}\)",  # markdown links: keep the label
    re.DOTALL,
)


_NOT_PROSE = re.compile(
    r"\[REDACTED:[^\]]*\]"  # redaction labels
    r"|```.*?(?:```|\Z)"  # fenced code
    r"|</?[A-Za-z][\w:-]*(?:\s[^<>]{0,300})?/?>"  # markup tags and their attributes
    r"|!?\[([^\]\n]{0,200})\]\([^)\s]{0,300}\)",  # markdown links: keep the label
    re.DOTALL,
)


def prose_text(text: str) -> str:
    """``text`` without redaction labels, markup tags and fenced code, its URLs kept: what a
    summary may quote (a sentence whose URL is cut out says something else: "our registry is")."""
    if "[" not in text and "<" not in text and "`" not in text:
        return text
    return _NOT_PROSE.sub(lambda m: f" {m.group(1) or ''} ", text)


@lru_cache(maxsize=1024)
def keyword_text(text: str) -> str:
    """``text`` without redaction labels, markup tags, fenced code and URLs: what words,
    topics and summaries may be taken from."""
    if "[" not in text and "<" not in text and "`" not in text and "://" not in text:
        return text
    return _NOT_WORDS.sub(lambda m: f" {m.group(1) or ''} ", text)


def top_keywords(texts: list[str], n: int = 8) -> list[str]:
    counts: Counter[str] = Counter()
    for t in texts:
        for w in words(keyword_text(t)):
            weight = 2 if ("_" in w or "." in w or "/" in w or w.lower() in vocab.TECH) else 1
            counts[w] += weight
    return [w for w, c in counts.most_common(n * 2) if c >= 1][:n]
