"""Lexical relevance: how much of what a prompt asks about a memory's text carries.

The full-text index ranks memories (BM25), but its scores are relative to each query and cannot
say "this is unrelated". Injection needs an absolute measure, so this module gives one: the
share of the prompt's meaningful terms that appear in the memory (``coverage``). Terms are the
same for English and Chinese: English words lower-cased and lightly stemmed ("deploys" and
"deploy" meet), identifiers and versions kept whole ("v0.5.0", "make_deploy"), stop words
dropped, and Chinese runs cut into character bigrams between stop characters and function words
("怎么", "应该": the counterparts of English stop words; the ICU index does the same job for the
ranking). Across languages, :mod:`memd.recall.bridge` says which of a prompt's terms a memory carries
through a translation.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from functools import lru_cache

from memd.text import stopwords
from memd.text.chinese import CJK_CHAR as CJK_CHAR
from memd.text.chinese import RANGES
from memd.text.stems import search_stem

_TOKEN = re.compile(
    rf"[{RANGES}]+"  # a Chinese run
    rf"|[^\W_{RANGES}]+(?:[._+#/-][^\W_{RANGES}]+)*[+#]*"
)
_CJK_STOP = re.compile(
    "(?:"
    + "|".join(sorted(stopwords.SEARCH_CJK_WORDS, key=len, reverse=True))
    + f")|[{stopwords.SEARCH_CJK_CHARS}]"
)
_CJK_STOP_RUN = re.compile(
    "(?=["
    + "".join(sorted({w[0] for w in stopwords.SEARCH_CJK_WORDS} | set(stopwords.SEARCH_CJK_CHARS)))
    + "])"
    f"(?:{_CJK_STOP.pattern})+"
)
"""Runs of function words; the lookahead on their first characters lets the engine skip the
other positions without trying every word (3x faster)."""
GLOSSARY = "glossary_zh_en.tsv"


@lru_cache(maxsize=1)
def _kept_words() -> re.Pattern[str] | None:
    """The words of the zh<->en glossary (``data/glossary_zh_en.tsv``) that hold a function
    character or word ("功能" feature, "请求" request, "上线" release, "用户" user), longest
    first: no cut inside them."""
    from importlib import resources

    text = resources.files("memd").joinpath("data", GLOSSARY).read_text(encoding="utf-8")
    words = {line.split("\t", 1)[0].strip() for line in text.splitlines() if line[:1] not in "#"}
    kept = sorted((w for w in words if w and _CJK_STOP.search(w)), key=len, reverse=True)
    return re.compile("|".join(kept)) if kept else None


def cjk_pieces(run: str) -> list[tuple[int, int]]:
    """The (start, end) spans of a Chinese run between its function words, 2+ characters long:
    the parts :func:`terms` cuts into bigrams. A function character inside a glossary word
    that holds it (found from the left, longest first) is no cut."""
    kept = _kept_words()
    spans = [m.span() for m in kept.finditer(run)] if kept is not None else []
    parts = []
    start = 0
    for cut in _CJK_STOP_RUN.finditer(run):
        a, b = cut.span()
        for first, last in spans:  # what of the cut lies inside a kept word is no cut
            if first < b and a < last:
                if a < first:
                    parts.append((start, a))
                    start = first
                a = max(a, last)
        if a < b:
            parts.append((start, a))
            start = b
    parts.append((start, len(run)))
    return [(a, b) for a, b in parts if b - a >= 2]


STOP = stopwords.SEARCH


@lru_cache(maxsize=8192)
def terms(text: str) -> tuple[str, ...]:
    """The meaningful terms of ``text``, in order, repeats kept."""
    out: list[str] = []
    for token in _TOKEN.findall(text.lower()):
        if CJK_CHAR.match(token):
            kept = _kept_words()
            if kept is None or kept.search(token) is None:  # most runs: cut at every stop
                for run in _CJK_STOP_RUN.split(token):
                    out.extend([run[i : i + 2] for i in range(len(run) - 1)])
            else:
                for a, b in cjk_pieces(token):
                    out.extend([token[i : i + 2] for i in range(a, b - 1)])
            continue
        term = _word_term(token)
        if term is not None:
            out.append(term)
    return tuple(out)


@lru_cache(maxsize=1 << 16)
def _word_term(token: str) -> str | None:
    """The term of one token that is not Chinese (None: a stop word, a lone letter), remembered:
    a text's words were mostly seen before, in other texts."""
    token = token.strip(".-/")
    if not token or token in STOP:
        return None
    if len(token) == 1 and not token.isdigit():
        return None
    return search_stem(token)


_IDENTIFIER = re.compile(
    r"[A-Za-z][A-Za-z0-9]*(?:_+[A-Za-z0-9]+)+|[a-z]+[A-Z][A-Za-z0-9]*|[A-Z][a-z]+[A-Z][A-Za-z0-9]*"
)
"""A code name made of words: ``snake_case``, ``CONSTANT_CASE``, ``camelCase``, ``PascalCase``.
A path or a hyphenated word stays whole within one language ("export" does not meet
"/api/export"; :mod:`memd.recall.crossterms` splits those for a prompt in the other one)."""
_PART = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")


@lru_cache(maxsize=8192)
def subword_terms(text: str) -> frozenset[str]:
    """The words inside a text's code names (:data:`_IDENTIFIER`), as terms: ``BadMapError``
    gives bad, map, error; ``SPOTTER_OTEL_ENABLED`` spotter, otel, enabled;
    ``traces_exporter`` trace, exporter. A prompt says "a map error" where the memory wrote
    the exception's name."""
    out: set[str] = set()
    for name in _IDENTIFIER.findall(text):
        for part in _PART.findall(name):
            term = _word_term(part.lower())
            if term is not None and len(part) > 2:
                out.add(term)
    return frozenset(out)


@lru_cache(maxsize=8192)
def term_set(text: str) -> frozenset[str]:
    """The distinct terms of ``text`` and of the words inside its code names, cached: a hook
    scores the same candidate texts prompt after prompt (~40 per prompt), and a set costs more
    to build than to look up."""
    return frozenset(terms(text)) | subword_terms(text)


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


def query_terms(query: str) -> tuple[tuple[str, ...], list[tuple[str, ...]]]:
    """The terms of a whole query, and of its first and last few sentences or lines.

    A long prompt (pasted logs, then the question) has many terms that no memory carries; its
    question alone is what a memory should cover. Segments with fewer than two terms are
    ignored.
    """
    parts = [p for p in _SEGMENT.split(query) if p.strip()]
    if len(parts) > 2 * SEGMENTS_KEPT:
        parts = parts[:SEGMENTS_KEPT] + parts[-SEGMENTS_KEPT:]
    segments = [t for t in (terms(p) for p in parts) if len(set(t)) >= 2]
    return terms(query), segments if len(segments) > 1 else []


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
