"""Lexical relevance: how much of what a prompt asks about a memory's text carries.

The full-text index ranks memories (BM25), but its scores are relative to each query and cannot
say "this is unrelated". Injection needs an absolute measure, so this module gives one: the
share of the prompt's meaningful terms (:mod:`memd.text.searchterms`) that appear in the memory
(``coverage``). Across languages, :mod:`memd.text.bridge` says which of a prompt's terms a memory
carries through a translation.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from memd.text.searchterms import term_set, terms


def idf_weights(n_docs: int, counts: dict[str, int]) -> dict[str, float]:
    """Inverse document frequency of each term in a project of ``n_docs`` memories: a term
    that most memories hold (a speaker's name, the project's name) weighs little."""
    import math

    return {t: math.log((n_docs + 1) / (df + 0.5)) for t, df in counts.items()}


def weighted_terms(
    query_terms: Iterable[str], idf: dict[str, float] | None = None
) -> tuple[tuple[tuple[str, float], ...], float]:
    """Each distinct query term with its weight, and their sum (see :func:`coverage_of`)."""
    pairs = []
    total = 0.0
    for term in dict.fromkeys(query_terms):
        weight = 2.0 if any(c.isdigit() or c in "._/#+" for c in term) else 1.0
        if idf is not None:
            weight *= max(0.05, idf.get(term, 1.0))
        total += weight
        pairs.append((term, weight))
    return tuple(pairs), total


def _covered(pairs: tuple[tuple[str, float], ...], total: float, have: frozenset[str]) -> float:
    hit = 0.0
    for term, weight in pairs:
        if term in have:
            hit += weight
    return hit / total if total else 0.0


_SEGMENT = re.compile(r"\n+|(?<=[.!?;。！？；])\s+")
SEGMENTS_KEPT = 3
SEGMENT_FACTOR = 0.9


_WHEN_ASKED = re.compile(
    r"\b(?:these days|nowadays|day[- ]to[- ]day|right now|at the moment|at present)\b", re.I
)
"""Words of a question that say it asks about now, not about days: no memory carries them."""


def query_terms(
    query: str, own: frozenset[str] = frozenset()
) -> tuple[tuple[str, ...], list[tuple[str, ...]]]:
    """The terms of a whole query, and of its first and last few sentences or lines.

    A long prompt (pasted logs, then the question) has many terms that no memory carries; its
    question alone is what a memory should cover. Segments with fewer than two terms are
    ignored. "These days" and its kin are no terms ("Which shell do I use day to day?"), nor
    ``own``, the project's own name (:func:`own_names`).
    """
    query = _WHEN_ASKED.sub(" ", query)
    parts = [p for p in _SEGMENT.split(query) if p.strip()]
    if len(parts) > 2 * SEGMENTS_KEPT:
        parts = parts[:SEGMENTS_KEPT] + parts[-SEGMENTS_KEPT:]
    segments = [t for t in (_without(terms(p), own) for p in parts) if len(set(t)) >= 2]
    return _without(terms(query), own), segments if len(segments) > 1 else []


def _without(found: tuple[str, ...], own: frozenset[str]) -> tuple[str, ...]:
    kept = tuple(t for t in found if t not in own) if own else found
    return kept or found  # (a prompt of the project's name alone keeps it)


def own_names(projects: Iterable[str]) -> frozenset[str]:
    """The terms of the names of the git roots among ``projects`` (``/src/meridian``:
    meridian), of four characters or more: asked in meridian, "what's meridian's default
    branch called?" has nothing to cover in the name, since every memory searched is of
    meridian, though few say so (an ``api`` folder's name is a word of many prompts)."""
    return frozenset(
        t
        for p in projects
        if p.startswith("/") and len(name := p.rstrip("/").rsplit("/", 1)[-1]) >= 4
        for t in terms(name)
    )


def coverage_of(
    whole: tuple[str, ...],
    segments: list[tuple[str, ...]],
    idf: dict[str, float] | None = None,
) -> Callable[[frozenset[str]], float]:
    """A scorer for one query: the weighted share of its distinct terms a text's terms hold
    (0 when it has none), each term weighing its ``idf`` in the project (1 without one), with
    identifiers and numbers ("v0.5.0", "8080", "make_deploy") counting double; the coverage of
    the whole query, or a little less than that of its best-covered sentence. The weights are
    worked out once: a recall scores every candidate with it."""
    first = weighted_terms(whole, idf)
    rest = [weighted_terms(segment, idf) for segment in segments]

    def score(text_terms: frozenset[str]) -> float:
        best = _covered(*first, text_terms)
        for pairs, total in rest:
            best = max(best, SEGMENT_FACTOR * _covered(pairs, total, text_terms))
        return best

    return score


LOCAL_FLOOR = 0.5
"""The least weight :func:`local_weights` gives a query term: one that most candidates carry
(a speaker's or the project's name) still tells a turn on the subject from one that is not.
Picked on LoCoMo half A (0.35-0.7 within 0.001 of each other, +0.006 over no floor)."""


def local_weights(
    query: Iterable[str], texts: Iterable[str], floor: float = LOCAL_FLOOR
) -> dict[str, float]:
    """A weight per distinct query term from how many of ``texts`` (the candidates of one
    recall) carry it: a term every candidate has (a speaker's name, the project's name) tells
    the candidates apart less than a term only one has, but weighs at least ``floor``. Used to
    pick what to show of a memory, never to decide whether it is relevant."""
    import math

    wanted = list(dict.fromkeys(query))
    sets = [term_set(t) for t in texts]
    n = len(sets)
    return {
        t: max(floor, math.log((n + 1) / (sum(1 for s in sets if t in s) + 0.5))) for t in wanted
    }


def weighted_match(weights: dict[str, float], text: str) -> float:
    """The summed weight of the query terms ``text`` carries."""
    have = term_set(text)
    return sum(w for t, w in weights.items() if t in have)
