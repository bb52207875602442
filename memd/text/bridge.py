"""The zh<->en term bridge: which of a query's terms a memory in the other language carries.

A Chinese prompt shares no words with an English memory, so the lexical signal
(:mod:`memd.recall.lexical`) is blind across languages and an English-only embedding model is too. A
hand-written glossary of software-engineering words (``data/glossary_zh_en.tsv``: "数据库" ->
"database", "db"; "部署" -> "deploy", "deployment"; ...) links the two, offline and the same
for every model.

The bridge never adds terms to what a prompt asks: each of the query's own terms (an English
stem, a Chinese character bigram) stays one concept, with the weight it already has, and a
memory carries it when it holds the term itself *or* one of its translations. A Chinese bigram
inside a glossary word ("数据" and "据库" of "数据库") is carried by the word's translations; a
bigram across two glossary words ("库备" of "数据库备份") by a translation of each. Translations
widen what satisfies a concept, never the denominator of the coverage, and a concept weighs
what its term weighs (its rarity in the project, :func:`lexical.idf_weights`).

Words the glossary does not hold fall back on a broad dictionary (CC-CEDICT,
:mod:`memd.text.dictionary`): the glossary segments a Chinese run first; the dictionary's words fill
the rest of each piece between function words (a single character where no longer word fits),
or replace a glossary word by a longer one that holds it whole ("打印机" printer over "打印"
print), never cutting one; English terms the glossary does not know get the dictionary's
Chinese words. The same rule holds: translations widen what carries a concept, never add one.
The dictionary loads on the first Chinese prompt (or, in the background, when an English
prompt meets a Chinese memory): an English-only daemon never reads it.

:func:`bridge` is pure and cached per query; the glossary loads once, on first use, from the
package (nothing is downloaded).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from importlib import resources
from typing import TYPE_CHECKING, Protocol, cast

from memd.errors import MemdError
from memd.text import searchterms
from memd.text.chinese import CJK_CHAR, CJK_RUN, is_chinese
from memd.text.crossterms import parts, with_parts

if TYPE_CHECKING:
    from memd.text.dictionary import Dictionary

GLOSSARY = searchterms.GLOSSARY
MAX_WORDS = 48
"""At most this many translated words go into the full-text query."""
MAX_FALLBACK_FORMS = 2
"""At most this many of a dictionary word's translations go into the full-text query (all of
them, up to :data:`memd.text.dictionary.MAX_FORMS`, still carry its terms)."""
"""A run of Chinese characters."""
_CJK_CHAR = CJK_CHAR

Form = str | frozenset[str]
"""What carries a concept in a memory: a Chinese word (found in its text) or the terms of an
English word or phrase (all found among its terms)."""
Clause = tuple[Form, ...]
"""Satisfied by any one of its forms."""
Alternative = tuple[Clause, ...]
"""Satisfied when every clause is."""
Span = tuple[int, int]


class GlossaryError(MemdError):
    """The packaged glossary has a malformed line (a packaging bug, not a user error)."""


@dataclass(frozen=True)
class Glossary:
    zh: dict[str, tuple[str, ...]]
    """Chinese word -> its English forms, as written."""
    zh_terms: dict[str, tuple[frozenset[str], ...]]
    """Chinese word -> the terms of each English form and of its inflections."""
    en: dict[tuple[str, ...], tuple[str, ...]]
    """The terms of an English form or inflection (stems, in order) -> its Chinese words."""
    zh_longest: int
    en_longest: int

    def has(self, word: str) -> bool:
        return word in self.zh

    def forms(self, word: str) -> tuple[str, ...]:
        return self.zh.get(word, ())

    def terms_of(self, word: str) -> tuple[frozenset[str], ...]:
        return self.zh_terms.get(word, ())


_VOWELS = "aeiou"
_IRREGULAR_TEXT = """
build built|rebuild rebuilt|send sent|resend resent|pay paid|prepay prepaid|spend spent
write wrote written|rewrite rewrote rewritten|overwrite overwrote overwritten|run ran|rerun reran
find found|keep kept|hold held|lose lost|break broke broken|choose chose chosen|hide hid hidden
throw threw thrown|begin began begun|bind bound|catch caught|freeze froze frozen|give gave given
take took taken|drive drove driven|fall fell fallen|forget forgot forgotten|sell sold|lead led
"""
IRREGULAR = {
    forms.split()[0]: tuple(forms.split()[1:])
    for forms in _IRREGULAR_TEXT.replace("\n", "|").split("|")
    if forms.strip()
}
"""The past forms of the irregular verbs of coding work ("built", "sent", "paid", "written")."""


def inflections(form: str) -> list[str]:
    """``form`` and the inflections of its last word ("cache": "caches", "cached", "caching";
    "build": "built"), whose stems :func:`searchterms.terms` does not always bring back to the
    form's."""
    *head, last = form.split()
    if not last.isalpha() or last.endswith(("ing", "ed")):
        return [form]
    irregular = [" ".join([*head, end]) for end in IRREGULAR.get(last, ())]
    if last.endswith("e"):
        ends = [last, last + "s", last + "d", last[:-1] + "ing"]
    elif last.endswith("y") and len(last) > 2 and last[-2] not in _VOWELS:
        ends = [last, last[:-1] + "ies", last[:-1] + "ied", last + "ing"]
    else:
        ends = [last, last + "s", last + "es", last + "ed", last + "ing"]
        if len(last) >= 3 and last[-1] not in _VOWELS + "wxy" and last[-2] in _VOWELS:
            if last[-3] not in _VOWELS:  # commit -> committed, pin -> pinned
                ends += [last + last[-1] + "ed", last + last[-1] + "ing"]
    return [" ".join([*head, end]) for end in ends] + irregular


def form_keys(form: str) -> list[tuple[str, ...]]:
    """The terms of ``form`` and of each of its :func:`inflections`, in order, leaving out an
    inflection that loses a term (a stop word: "used"). The glossary and the dictionary both
    match a form by these."""
    size = len(form.split())
    return [key for key in map(searchterms.terms, inflections(form)) if len(key) == size]


def parse(text: str) -> Glossary:
    """A glossary from TSV lines ``中文<TAB>form|form``; ``#`` starts a comment line."""
    zh: dict[str, dict[str, None]] = {}
    zh_terms: dict[str, dict[frozenset[str], None]] = {}
    en: dict[tuple[str, ...], dict[str, None]] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        word, sep, rest = line.partition("\t")
        word = word.strip()
        forms = [f.strip().lower() for f in rest.split("|") if f.strip()]
        if not sep or not forms or len(word) < 2 or len(_CJK_CHAR.findall(word)) != len(word):
            raise GlossaryError(f"glossary line {number}: want 中文<TAB>english|english: {line!r}")
        for form in forms:
            if len(searchterms.terms(form)) != len(form.split()) or _CJK_CHAR.search(form):
                raise GlossaryError(
                    f"glossary line {number}: {form!r} has a stop word or no English term"
                )
            zh.setdefault(word, {})[form] = None
            for key in form_keys(form):
                zh_terms.setdefault(word, {})[frozenset(key)] = None
                en.setdefault(key, {})[word] = None
    return Glossary(
        zh={w: tuple(f) for w, f in zh.items()},
        zh_terms={w: tuple(f) for w, f in zh_terms.items()},
        en={k: tuple(w) for k, w in en.items()},
        zh_longest=max((len(w) for w in zh), default=0),
        en_longest=max((len(k) for k in en), default=0),
    )


@lru_cache(maxsize=1)
def glossary() -> Glossary:
    """The packaged glossary, read once."""
    return parse(resources.files("memd").joinpath("data", GLOSSARY).read_text(encoding="utf-8"))


@lru_cache(maxsize=4096)
def synonyms(word: str) -> tuple[str, ...]:
    """The glossary's other Chinese words for what ``word`` means: each sharing an English
    form with it, where each one's first form is also the other's ("上线" and "发版", both
    "release"; not "部署", "deploy" first): a Chinese memory says 发版 where the prompt says
    上线."""
    g = glossary()
    forms = g.forms(word)
    if not forms:
        return ()
    found: dict[str, None] = {}
    for form in forms:
        for key in form_keys(form)[:1]:
            found.update(
                dict.fromkeys(
                    other
                    for other in g.en.get(key, ())
                    if other != word and forms[0] in g.forms(other) and g.forms(other)[0] in forms
                )
            )
    return tuple(found)


@dataclass(frozen=True)
class Bridged:
    """One query's bridge: for each of its terms that the glossary knows, what else carries it."""

    alternatives: dict[str, tuple[Alternative, ...]] = field(default_factory=dict)
    words: tuple[str, ...] = ()
    """The translations as words (English forms, Chinese words), for a full-text query."""
    dictionary_pending: bool = False
    """Built without the dictionary (an English query before any Chinese was met)."""
    query_zh: bool = False
    """Whether the query is Chinese: a memory in the other language is also read by the
    parts of its compound terms (:func:`with_parts`)."""

    def search_text(self, query: str) -> str:
        """The query for the full-text index: the prompt and its translations."""
        return f"{query} {' '.join(self.words)}" if self.words else query

    @cached_property
    def search_terms(self) -> tuple[str, ...]:
        """The translations as :func:`searchterms.terms`, for a ranker over terms (BM25): to add to
        the query's own terms."""
        return tuple(dict.fromkeys(t for word in self.words for t in searchterms.terms(word)))

    @cached_property
    def reach_terms(self) -> frozenset[str]:
        """Every term that carries one of the query's terms in the other language: the
        English forms with their inflections ("paid" for 支付), the Chinese words as bigrams."""
        out: set[str] = set()
        for alts in self.alternatives.values():
            for alt in alts:
                for clause in alt:
                    for form in clause:
                        out.update(searchterms.terms(form) if isinstance(form, str) else form)
        return frozenset(out)

    @cached_property
    def _plan(self) -> tuple[tuple[str, _Test | None, tuple[tuple[_Test, ...], ...]], ...]:
        """Per bridged term: one test for every whole-word translation, and a group of tests
        per bigram across two words or per compound term's parts (all must hold; a recall
        runs :meth:`extend` on every candidate)."""
        plan = []
        for term, alts in self.alternatives.items():
            single = [form for alt in alts if len(alt) == 1 for form in alt[0]]
            groups = tuple(tuple(_Test.of(c) for c in alt) for alt in alts if len(alt) >= 2)
            plan.append((term, _Test.of(single) if single else None, groups))
        return tuple(plan)

    @cached_property
    def _any(self) -> _Test:
        """Whether a memory holds any translation of this query at all."""
        return _Test.of(
            form for alts in self.alternatives.values() for alt in alts for form in alt[0]
        )

    def extend(self, text: str, have: frozenset[str]) -> frozenset[str]:
        """A memory's terms plus each query term it carries through a translation. The first
        Chinese memory that an English query with a glossary word meets starts loading the
        dictionary, in the background: the next queries use it. (A query without any
        translation returns at once, as before: an English-only project pays nothing.)"""
        if not self.alternatives:
            return have
        chinese = holds_chinese(text)
        if chinese and self.dictionary_pending:
            from memd.text import dictionary

            dictionary.load_soon()
        if chinese != self.query_zh:  # the other language: its identifiers' words count too
            have = with_parts(have)
        if not self._any.holds(text, have, chinese):
            return have  # no translation at all: most candidates
        extra = [
            term
            for term, test, groups in self._plan
            if term not in have
            and (
                (test is not None and test.holds(text, have, chinese))
                or any(all(t.holds(text, have, chinese) for t in group) for group in groups)
            )
        ]
        return have.union(extra) if extra else have


@lru_cache(maxsize=8192)
def holds_chinese(text: str) -> bool:
    """Whether ``text`` holds a Chinese character, remembered: a recall asks it of the same
    candidates prompt after prompt."""
    return _CJK_CHAR.search(text) is not None


@dataclass(frozen=True)
class _Test:
    """Whether a memory holds any of some forms: Chinese words (substrings of its text), single
    English terms (one set operation), English phrases (all their terms)."""

    words: tuple[str, ...]
    singles: frozenset[str]
    phrases: tuple[frozenset[str], ...]

    @classmethod
    def of(cls, forms: Iterable[Form]) -> _Test:
        # (Plain substring tests, not one compiled alternation: compiling a new pattern for
        # every prompt cost ~0.5 ms, mostly for memories that hold no Chinese at all.)
        forms = list(forms)
        sets = [f for f in forms if not isinstance(f, str)]
        return cls(
            tuple(dict.fromkeys(f for f in forms if isinstance(f, str))),
            frozenset(next(iter(f)) for f in sets if len(f) == 1),
            tuple(f for f in sets if len(f) > 1),
        )

    def holds(self, text: str, have: frozenset[str], chinese: bool) -> bool:
        return (
            not self.singles.isdisjoint(have)
            or (chinese and any(word in text for word in self.words))
            or any(f <= have for f in self.phrases)
        )


NO_BRIDGE = Bridged()
NO_BRIDGE_YET = Bridged(dictionary_pending=True)


class Lexicon(Protocol):
    """What the bridge reads from the glossary and from the dictionary alike."""

    zh_longest: int

    def has(self, word: str) -> bool: ...
    def forms(self, word: str) -> tuple[str, ...]: ...
    def terms_of(self, word: str) -> tuple[frozenset[str], ...]: ...


def _inner(run: str, start: int, end: int, lex: Lexicon) -> list[str]:
    """The glossary words inside ``run[start:end]``, itself included."""
    return [
        run[a:b] for a in range(start, end - 1) for b in range(a + 2, end + 1) if lex.has(run[a:b])
    ]


def _segment_both(
    run: str, g: Glossary, d: Dictionary | None, pieces: list[Span]
) -> dict[Span, Lexicon]:
    """The words of a Chinese run: the glossary's, longest first from the left (anywhere:
    some hold a function character, "请求", "上线"); then the dictionary's, inside the pieces
    between function words, where the glossary has no word, or where a longer dictionary
    word holds a glossary word whole ("打印机" printer over "打印" print). A dictionary word
    never cuts a glossary word."""
    lex_g = cast(Lexicon, g)
    glossary_spans = _segment(run, g)
    if d is None:
        return dict.fromkeys(glossary_spans, lex_g)
    lex_d = cast(Lexicon, d)
    starts = dict(glossary_spans)
    piece_end = {i: last for first, last in pieces for i in range(first, last)}
    spans: dict[Span, Lexicon] = {}
    i = 0
    while i < len(run):
        end = piece_end.get(i, i)
        shortest = starts.get(i, i) + 1  # longer than the glossary's word here
        for j in range(min(i + d.zh_longest, end), shortest - 1, -1):
            if d.has(run[i:j]) and all(
                b <= i or a >= j or (i <= a and b <= j) for a, b in glossary_spans
            ):
                spans[(i, j)] = lex_d
                i = j
                break
        else:
            if i in starts:
                spans[(i, starts[i])] = lex_g
                i = starts[i]
            else:
                i += 1
    return spans


def _segment(run: str, g: Glossary) -> list[Span]:
    """Glossary words in a Chinese run, longest first from the left: (start, end) spans."""
    spans = []
    i = 0
    while i < len(run) - 1:
        for size in range(min(g.zh_longest, len(run) - i), 1, -1):
            if run[i : i + size] in g.zh:
                spans.append((i, i + size))
                i += size
                break
        else:
            i += 1
    return spans


def _covering_forms(g: Lexicon, d: Lexicon | None, words: list[str]) -> Clause:
    """The English forms of the words that hold a bigram: the glossary's for a word it
    holds, then the dictionary's ("问题": the glossary's "issue", then "question",
    "problem", ...)."""
    forms: dict[Form, None] = {}
    for word in words:
        if g.has(word):
            forms.update(dict.fromkeys(g.terms_of(word)))
            # its synonyms too (the glossary's only: the dictionary's senses are too broad)
            forms.update(dict.fromkeys(synonyms(word)))
            if d is not None:  # after the glossary's: more forms carry it, none replaced
                forms.update(dict.fromkeys(d.terms_of(word)))
        elif d is not None and d.has(word):
            forms.update(dict.fromkeys(d.terms_of(word)))
    return tuple(forms)


def bridge(query: str) -> Bridged:
    """The bridge for ``query`` (already normalised as the recall path does): the glossary's
    translations, and the dictionary's (:mod:`memd.text.dictionary`) for the words the glossary
    does not hold. A Chinese query loads the dictionary; an English one uses it once loaded
    (see :meth:`Bridged.extend`), so an English-only daemon never reads it."""
    chinese = _CJK_CHAR.search(query) is not None
    return _bridge(query, _dictionary(load=chinese))


def _dictionary(load: bool) -> Dictionary | None:
    from memd.text import dictionary

    return dictionary.get() if load else dictionary.loaded()


@lru_cache(maxsize=512)
def _bridge(query: str, d: Dictionary | None) -> Bridged:
    g = glossary()
    lex_g = cast(Lexicon, g)
    lex_d = cast(Lexicon, d) if d is not None else None
    alternatives: dict[str, dict[Alternative, None]] = {}
    words: dict[str, None] = {}
    fallback: dict[str, None] = {}

    def add(term: str, alt: Alternative) -> None:
        if all(alt):
            alternatives.setdefault(term, {})[alt] = None

    low = query.lower()
    for match in CJK_RUN.finditer(low):
        run = match.group()
        pieces = searchterms.cjk_pieces(run)
        spans = _segment_both(run, g, d, pieces)
        if not spans:
            continue
        forms = {(a, b): _covering_forms(lex_g, lex_d, [run[a:b]]) for a, b in spans}
        for (a, b), lex in spans.items():
            for word in _inner(run, a, b, lex_g):
                words.update(dict.fromkeys(g.forms(word)))
                words.update(dict.fromkeys(synonyms(word)))
            if lex is not lex_g:
                fallback.update(dict.fromkeys(lex.forms(run[a:b])[:MAX_FALLBACK_FORMS]))
        ordered = sorted(spans)
        for first, last in pieces:
            for i in range(first, last - 1):
                bigram = run[i : i + 2]
                for a, b in spans:
                    if a <= i and i + 2 <= b:
                        covering = [run[p:q] for p in range(a, i + 1) for q in range(i + 2, b + 1)]
                        add(bigram, (_covering_forms(lex_g, lex_d, covering),))
                left = next((s for s in ordered if s[1] == i + 1), None)
                right = next((s for s in ordered if s[0] == i + 1), None)
                if left and right:
                    add(bigram, (forms[left], forms[right]))
    sequence = [t for t in searchterms.terms(low) if not _CJK_CHAR.match(t)]
    i = 0
    while i < len(sequence):
        for size in range(min(g.en_longest, len(sequence) - i), 0, -1):
            key = tuple(sequence[i : i + size])
            if key in g.en:
                for a in range(i, i + size):
                    chinese: dict[str, None] = {}
                    for p in range(i, a + 1):
                        for q in range(a + 1, i + size + 1):
                            chinese.update(dict.fromkeys(g.en.get(tuple(sequence[p:q]), ())))
                    words.update(chinese)
                    if d is not None and size == 1:  # the dictionary's words carry it too
                        chinese.update(dict.fromkeys(d.chinese((sequence[a],))))
                    add(sequence[a], (tuple(chinese),))
                i += size
                break
        else:
            found = _dictionary_chinese(d, sequence, i) if d is not None else None
            if found is None:
                compound = _compound(g, d, sequence[i])
                if compound:
                    add(sequence[i], compound)
                    words.update(dict.fromkeys(str(c[0]) for c in compound))
                i += 1
                continue
            size, chinese_words = found
            for a in range(i, i + size):
                add(sequence[a], (chinese_words,))
            fallback.update(dict.fromkeys(chinese_words[:MAX_FALLBACK_FORMS]))
            i += size
    if not alternatives:
        return NO_BRIDGE if d is not None else NO_BRIDGE_YET
    return Bridged(
        alternatives={t: tuple(alts) for t, alts in alternatives.items()},
        words=tuple([*words, *(w for w in fallback if w not in words)][:MAX_WORDS]),
        dictionary_pending=d is None,
        query_zh=is_chinese(query),
    )


def _compound(g: Glossary, d: Dictionary | None, term: str) -> Alternative:
    """What carries a compound term the glossary and the dictionary do not hold whole
    ("report-generation", "test_upload_resume"): the translations of each of its words
    (:func:`parts`), all of them, when at least half its words have one; else ()."""
    inner = parts(term)
    clauses = []
    for part in inner:
        chinese = dict.fromkeys(g.en.get((part,), ()))
        if d is not None:
            chinese.update(dict.fromkeys(d.chinese((part,))))
        if chinese:
            clauses.append(tuple(chinese))
    return tuple(clauses) if clauses and 2 * len(clauses) >= len(inner) else ()


def _dictionary_chinese(
    d: Dictionary, sequence: list[str], i: int
) -> tuple[int, tuple[str, ...]] | None:
    """The longest English form of the dictionary at ``sequence[i]`` and its Chinese words."""
    for size in range(min(d.en_longest, len(sequence) - i), 0, -1):
        found = d.chinese(tuple(sequence[i : i + size]))
        if found:
            return size, found
    return None
