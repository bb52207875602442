"""A text's search terms, the same for a prompt and a memory, in English and Chinese: English
words lower-cased and lightly stemmed ("deploys" and "deploy" meet), identifiers and versions
kept whole ("v0.5.0", "make_deploy"), stop words dropped (:data:`memd.text.stopwords.SEARCH`),
and Chinese runs cut into character bigrams between stop characters and function words
("怎么", "应该": the counterparts of English stop words), never inside a glossary word that
holds one ("功能", "请求").
"""

from __future__ import annotations

import re
from functools import lru_cache

from memd.text import TEXT_CACHE, stopwords
from memd.text.chinese import CJK_CHAR, RANGES
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
def glossary_words() -> frozenset[str]:
    """The Chinese words of the zh<->en glossary (``data/glossary_zh_en.tsv``)."""
    from importlib import resources

    text = resources.files("memd").joinpath("data", GLOSSARY).read_text(encoding="utf-8")
    words = {line.split("\t", 1)[0].strip() for line in text.splitlines() if line[:1] not in "#"}
    return frozenset(w for w in words if w)


@lru_cache(maxsize=1)
def _kept_words() -> re.Pattern[str] | None:
    """The words of the glossary that hold a function character or word ("功能" feature, "请求"
    request, "上线" release, "用户" user), longest first: no cut inside them."""
    kept = sorted((w for w in glossary_words() if _CJK_STOP.search(w)), key=len, reverse=True)
    return re.compile("|".join(kept)) if kept else None


def kept_words(text: str) -> list[str]:
    """The glossary words in ``text`` that hold a function character ("上限" limit, "用户"
    user): words a cut at function characters would break."""
    pattern = _kept_words()
    return pattern.findall(text) if pattern is not None and _CJK_STOP.search(text) else []


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


@lru_cache(maxsize=TEXT_CACHE)
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
_CAMEL = re.compile(r"[a-z][A-Z]")
"""A lower-case letter before a capital: every code name of :data:`_IDENTIFIER` holds one or an
underscore. Looking for those first spares most texts the full search, which backtracks at
every letter (~5 against ~40 µs on a memory's text)."""


@lru_cache(maxsize=TEXT_CACHE)
def subword_terms(text: str) -> frozenset[str]:
    """The words inside a text's code names (:data:`_IDENTIFIER`), as terms: ``BadMapError``
    gives bad, map, error; ``SPOTTER_OTEL_ENABLED`` spotter, otel, enabled;
    ``traces_exporter`` trace, exporter. A prompt says "a map error" where the memory wrote
    the exception's name."""
    out: set[str] = set()
    if "_" not in text and _CAMEL.search(text) is None:
        return frozenset(out)
    for name in _IDENTIFIER.findall(text):
        for part in _PART.findall(name):
            term = _word_term(part.lower())
            if term is not None and len(part) > 2:
                out.add(term)
    return frozenset(out)


_JOINED = re.compile(r"(?<![A-Za-z0-9])[A-Za-z0-9]++(?:[._][A-Za-z0-9]++)+")
"""A name of two to four words joined by dots or underscores (``bootstrap_servers``,
``max.poll.records``)."""


def joined_variants(text: str) -> frozenset[str]:
    """The names of :data:`_JOINED` in ``text`` as terms, written with each of the other
    joiners: a prompt asks for ``bootstrap.servers`` (Kafka's Java name) where the config says
    ``bootstrap_servers``, or for ``max_poll_records`` where it says ``max.poll.records``."""
    out: set[str] = set()
    if "_" not in text and "." not in text:
        return frozenset(out)
    for name in set(_JOINED.findall(text)):
        parts = re.split(r"[._]", name.lower())
        if not 2 <= len(parts) <= 4 or not all(p[:1].isalpha() and p.isascii() for p in parts):
            continue
        for joiner in "._":
            term = _word_term(joiner.join(parts))
            if term is not None:
                out.add(term)
    return frozenset(out)


@lru_cache(maxsize=TEXT_CACHE)
def term_set(text: str) -> frozenset[str]:
    """The distinct terms of ``text``, of the words inside its code names and of its joined
    names written with the other joiners (:func:`joined_variants`), cached: a hook scores the
    same candidate texts prompt after prompt (~40 per prompt), and a set costs more to build
    than to look up."""
    return frozenset(terms(text)) | subword_terms(text) | joined_variants(text)
