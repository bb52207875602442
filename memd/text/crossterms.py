"""How a memory's terms carry across languages: the words inside its compound terms, and the
share of its terms a prompt in the other language carries (:mod:`memd.text.bridge` builds
what a prompt carries; these read a memory against it)."""

from __future__ import annotations

import re
from functools import lru_cache

from memd.text import searchterms
from memd.text.chinese import CJK_CHAR
from memd.text.stems import search_stem

_CJK_CHAR = CJK_CHAR
_PART_SPLIT = re.compile(r"[-_./]+")


@lru_cache(maxsize=8192)
def parts(term: str) -> tuple[str, ...]:
    """The words inside a compound term, as terms: "report-generation" -> ("report",
    "generation"), "test_upload_resume" -> ("test", "upload", "resume"), "api/export" ->
    ("api", "export"); () for a plain term. Stop words and single letters are left out."""
    if not _PART_SPLIT.search(term) or _CJK_CHAR.search(term):
        return ()
    out = [
        search_stem(p)  # the same stems as searchterms.terms
        for p in _PART_SPLIT.split(term)
        if len(p) > 1 and p.isalpha() and p not in searchterms.STOP
    ]
    return tuple(dict.fromkeys(out)) if len(out) > 1 or out != [term] else ()


@lru_cache(maxsize=4096)
def with_parts(have: frozenset[str]) -> frozenset[str]:
    """A memory's terms plus the words inside its compound terms (:func:`parts`): across
    languages an identifier ("api/export", "test_upload_resume") says what it is about in
    words the other side translates. Within one language terms stay whole."""
    extra = [p for term in have for p in parts(term)]
    return have.union(extra) if extra else have


REVERSE_MIN_TERMS = 3
"""A memory needs this many distinct terms for :func:`reverse_coverage` to count."""


def reverse_coverage(terms: tuple[str, ...], reach: frozenset[str]) -> float:
    """The share of a memory's distinct terms (``terms``, :func:`searchterms.terms` of its text, in
    order) that a prompt in the other language carries, itself or through a translation
    (``reach``: the prompt's terms and its translations' :attr:`memd.text.bridge.Bridged.reach_terms`).

    Across languages the prompt's coverage is bounded by what the glossary knows of it: a
    Chinese statement holds many words the glossary has no entry for, so a short English
    memory that says exactly what it is about ("Which web framework does the backend use?")
    covers little of it. Asked the other way round, every word of that memory is in the
    prompt. A Chinese bigram across two words ("库备" of "数据库备份") is carried when the
    bigrams on both sides are. A memory of fewer than :data:`REVERSE_MIN_TERMS` terms gets
    0: one shared word would be half of it.
    """
    distinct = dict.fromkeys(terms)
    if len(distinct) < REVERSE_MIN_TERMS:
        return 0.0
    carried = {t for t in distinct if t in reach or _half_carried(t, reach)}
    for before, term, after in zip(terms, terms[1:], terms[2:], strict=False):
        if (
            term not in carried
            and before in reach
            and after in reach
            and len(term) == 2
            and before[-1] == term[0]
            and term[-1] == after[0]
            and _CJK_CHAR.match(term) is not None
        ):
            carried.add(term)
    return len(carried) / len(distinct)


def _half_carried(term: str, reach: frozenset[str]) -> bool:
    """Whether at least half the words of a compound term (:func:`parts`) are in ``reach``."""
    inner = parts(term)
    return bool(inner) and 2 * sum(p in reach for p in inner) >= len(inner)
