"""What an extractor said a memory is about: an LLM backend's ``subject`` and ``value``
(:attr:`memd.models.Memory.subject`), and its ``supersedes`` hint.

Two memories that name the same subject with different values are two answers to one question:
the later one replaces the earlier. Two that name subjects with no word in common are about
different things and never replace each other ("formatter" ruff, "package manager" uv,
"type checker" pyright). Anything else is left to the text's own reading
(:mod:`memd.store.current`), as for a memory without a subject.
"""

from __future__ import annotations

import re

from memd.models import Memory
from memd.text import searchterms

EXTRA_TERMS = 1
"""One subject's terms may hold this many more than the other's and still name the same thing
("start of the nightly batch" and "start of the nightly ingest batch")."""
SAME_SHARE = 0.75
"""Or the two share this much of their terms (Jaccard): Chinese subjects are read in bigrams."""
HINT_SHARE = 0.75
"""A ``supersedes`` hint names an older memory when this share of its terms is in that text."""

_VALUE_TOKEN = re.compile(r"\w+(?:[.:]\w+)*")
_FILE = re.compile(r"[\w.-]*/[\w./-]*\w|\b[\w-]+\.[A-Za-z]{1,5}\b")
"""A file a subject names ("ports in config/dev.exs", "versions in package.json")."""


def terms(text: str) -> frozenset[str]:
    return frozenset(searchterms.terms(text))


def same_subject(a: str, b: str) -> bool:
    """Whether two subjects name the same thing."""
    x, y = terms(a), terms(b)
    if not x or not y:
        return False
    if x == y:
        return True
    small, big = sorted((x, y), key=len)
    if len(small) >= 2 and small <= big and len(big - small) <= EXTRA_TERMS:
        return True
    return len(x & y) / len(x | y) >= SAME_SHARE


def same_value(a: str, b: str) -> bool:
    """Whether two values are one ("02:30" and "02:30 UTC", "3.10" and "3.10.4" are)."""
    x, y = _VALUE_TOKEN.findall(a.casefold()), _VALUE_TOKEN.findall(b.casefold())
    if not x or not y:
        return " ".join(a.casefold().split()) == " ".join(b.casefold().split())
    if set(x) <= set(y) or set(y) <= set(x):
        return True
    return len(x) == len(y) and all(
        p.startswith(q + ".") or q.startswith(p + ".") or p == q for p, q in zip(x, y, strict=True)
    )


def declared(new: Memory, old: Memory) -> bool | None:
    """Whether ``new`` replaces ``old`` by the subjects and values their extractors named:
    True (the same subject, another value), False (the same value, subjects without a term in
    common, or subjects naming different files), None (not both named, or subjects that only overlap: the text decides)."""
    if not (new.subject and new.value and old.subject and old.value):
        return None
    files_new, files_old = set(_FILE.findall(new.subject)), set(_FILE.findall(old.subject))
    if files_new and files_old and not files_new & files_old:
        return False  # what two files state: config/dev.exs and config/test.exs both hold
    if same_subject(new.subject, old.subject):
        return not same_value(new.value, old.value)
    if not terms(new.subject) & terms(old.subject):
        return False
    return None


def hinted(hint: str, new: Memory, old: Memory) -> bool:
    """Whether an extractor's ``supersedes`` hint for ``new`` ("Use black for formatting")
    names ``old``: most of the hint's terms are in ``old``, and ``new`` does not say ``old``
    again."""
    wanted = terms(hint)
    if len(wanted) < 2:
        return False
    have = terms(old.text)
    if len(wanted & have) / len(wanted) < HINT_SHARE:
        return False
    return not have <= terms(new.text)
