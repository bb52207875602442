"""Are two memories the same statement, or does a newer one contradict an older one?

Pure text features (English and Chinese) combined with the cosine the caller already has, so the
decision costs a few microseconds per pair and never calls the model:

- :func:`normalize` folds case, full-width forms, punctuation, whitespace and articles.
- :func:`features` splits a text into content words (English word stems, CJK character bigrams),
  *values* (numbers, versions, paths, identifiers, tool names: the part a fact is about) and a
  polarity (negated or not).
- :func:`duplicate_score` / :func:`is_duplicate`: same statement, worded differently. A different
  value ("PostgreSQL 16" / "15", "port 8080" / "8081") or a flipped polarity ("use pnpm" / "never
  use pnpm") is never a duplicate, however close the vectors are.
- :func:`conflict`: same subject, different value or polarity ("the billing database is MySQL 8
  now" against "we use PostgreSQL 16 for the billing database"), with or without trigger words.
  It returns a :class:`Conflict` with a confidence: supersede at ``>= CONFLICT_SURE``, show both
  (newer first, marked) at ``>= CONFLICT_UNSURE``.

Cosines are not comparable across models: :mod:`memd.store.profiles` says how to read each model's.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

from memd.store import roles
from memd.store.profiles import profile_for
from memd.text import TEXT_CACHE, stopwords
from memd.text.chinese import RANGES
from memd.text.stems import statement_stem

# ---- text features


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_ALIASES = {
    "postgresql": "postgres", "pg": "postgres", "k8s": "kubernetes", "nodejs": "node",
    "node.js": "node", "golang": "go", "js": "javascript", "ts": "typescript", "db": "database",
    "dbs": "database", "repo": "repository", "repos": "repository", "pr": "pull request",
    "prs": "pull request", "env": "environment", "config": "configuration", "e2e": "end-to-end",
    "min": "minute", "mins": "minute", "sec": "second", "secs": "second", "hr": "hour",
    "hrs": "hour", "jwts": "jwt", "令牌": "token",
}  # fmt: skip
"""Function words and light verbs: paraphrases swap them freely ("we use X" / "X is used")."""
_UNITS = {
    "ms": "ms", "millisecond": "ms", "second": "second", "minute": "minute", "hour": "hour",
    "day": "day", "week": "week", "month": "month", "year": "year", "kb": "kb", "mb": "mb",
    "gb": "gb", "tb": "tb", "time": "time", "percent": "percent", "line": "line",
    "request": "request", "partition": "partition", "process": "process", "cpu": "cpu",
    "core": "core", "retry": "retry", "nightly": "day", "daily": "day", "hourly": "hour",
    "weekly": "week", "秒": "second", "分钟": "minute", "小时": "hour", "天": "day", "次": "time",
}  # fmt: skip
_UNIT_NAMES = frozenset(_UNITS.values())
_CJK_SYNONYMS = {
    "喜欢": "偏好", "倾向于": "偏好", "最大": "上限", "最多": "上限", "有效期": "过期",
    "存放": "存储", "保存": "存储", "命名为": "名", "命名": "名",
}  # fmt: skip
"""Common near-synonyms in Chinese coding notes, folded before the characters are compared."""
_CJK_SYNONYM_RX = re.compile("|".join(sorted(_CJK_SYNONYMS, key=len, reverse=True)))
_CJK_UNITS = re.compile("|".join(u for u in _UNITS if len(u) > 1 and not u.isascii()))
"""A unit alone is no value ("run nightly"); a unit against another unit is ("5 minutes" / "5
seconds")."""
_TECH = _words(
    """
    python typescript javascript node rust go java ruby kotlin swift php pytest jest vitest mocha
    rspec unittest ruff black isort prettier eslint flake8 pylint mypy pyright npm pnpm yarn bun
    poetry uv pip pip-tools cargo docker podman kubernetes helm terraform ansible postgres mysql
    sqlite redis mongodb lancedb clickhouse elasticsearch opensearch cassandra dynamodb pgbouncer
    rabbitmq kafka celery sidekiq nginx caddy loki promtail grafana prometheus datadog sentry
    rollbar sendgrid postmark mailgun launchdarkly unleash vault fastapi django flask react vue
    angular svelte nextjs nuxt express sqlalchemy alembic pydantic zustand redux pinia vuex vite
    webpack turborepo nx lerna playwright cypress selenium httpx requests aiohttp structlog loguru
    travis jenkins gitlab circleci github tailwind bootstrap graphql grpc rest s3 gcs oss cos
    jwt rs256 hs256 es256 json yaml toml xml csv protobuf utc main master develop trunk tabs
    spaces swagger openapi vitepress storybook electron tauri flutter ios android linux macos
    windows ghcr ecr wsl chrome firefox safari elmessage antd element-plus
    """
)
"""Names that are a fact's value even when written in lower case ("use pnpm", "use black")."""
_NEG_EN = re.compile(
    r"\b(?:not|no|never|cannot|without|avoid|avoids|avoided|stop|disable|disabled|disables|"
    r"forbid|forbidden|forbids|prohibit|prohibited|nor|neither)\b|n't\b",
)
_CONTRAST_NOT = re.compile(r",\s*not\b|\bnot\s+\w+\s*,|\bnot\s+only\b")
_NEG_ZH = re.compile(r"不(?!同|仅|只|断|少|久)|别(?![的名人])|禁止|勿|没有|无需|避免|关闭|禁用")
_CHANGE = re.compile(
    r"\b(?:now|no longer|anymore|instead|from now on|switch\w*|migrat\w*|replac\w*|mov(?:e|ed)\b"
    r"|changed?\b|moving)|现在|改|换|迁移|不再|调整|切换|以后|今后|提高到|降低到",
)
_ALSO = re.compile(r"\b(?:also|too|as well|additionally|in addition|both)\b|同时|也|还(?!原)|另外")
_CJK_STOP = re.compile(stopwords.STATEMENT_CJK)
_CJK = RANGES
_TOKEN = re.compile(
    rf"(?P<w>[a-z0-9_@~$][a-z0-9_]*(?:(?:[.\-/:+#@~]|://)+[a-z0-9_]+)*[+#]*)|(?P<c>[{_CJK}]+)"
)
_QUOTED = re.compile(r"`([^`]+)`|'([^'\s][^']*)'|\"([^\"]+)\"")
_HAS_CJK = re.compile(f"[{_CJK}]")
_LATIN_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]*")
_VALUE_SHAPE = re.compile(r"[0-9._/:#+@]")
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}\b)")
_NOT = re.compile(r"(?<=[a-z])n't\b")


@lru_cache(maxsize=8192)
def _fold(text: str) -> str:
    """NFKC (full-width letters, digits and punctuation become ASCII), casefold."""
    text = unicodedata.normalize("NFKC", text).casefold().replace("’", "'")
    return _NOT.sub(" not", _THOUSANDS.sub("", text))


def _clean(token: str) -> str:
    """Trim trailing ``+`` from numbers ("iOS 16+"), keep it on names ("c++")."""
    if token[-1] in "+#" and not token.rstrip("+#").isalpha():
        token = token.rstrip("+#")
    return _ALIASES.get(token, token)


def normalize(text: str) -> str:
    """Case-, width-, punctuation- and whitespace-insensitive form, without articles."""
    out = []
    for m in _TOKEN.finditer(_fold(text)):
        tok = m.group(0)
        if m.group("w"):
            tok = _clean(tok)
            if tok in stopwords.ARTICLES:
                continue
        out.append(tok)
    return " ".join(out)


@dataclass(frozen=True)
class Features:
    """What one text says, as sets: content words (stems and CJK bigrams), values, polarity."""

    norm: str
    words: frozenset[str]
    values: frozenset[str]
    negated: bool
    change: bool
    also: bool
    cjk: bool


def _cjk_units(run: str) -> list[str]:
    """The characters of a CJK run, without function words, light verbs and units.

    Single characters, not bigrams: Chinese paraphrases reorder words ("用 pnpm 管理依赖" /
    "依赖管理使用 pnpm"), and bigrams across word boundaries then count as differences.
    """
    run = _CJK_SYNONYM_RX.sub(lambda m: _CJK_SYNONYMS[m.group(0)], run)
    return [c for part in _CJK_STOP.split(run) for c in part]


_STOPPED, _UNIT, _VALUE, _WORD = range(4)


@lru_cache(maxsize=8192)
def _word_token(raw: str) -> tuple[str, bool, int, str]:
    """What a Latin token is, whatever the text around it: (cleaned token, whether an article,
    stopped / unit / value / word, the unit or the stem). Remembered: most of a text's words
    were seen before, and working them out was most of :func:`features`' time."""
    tok = _clean(raw)
    article = tok in stopwords.ARTICLES
    if tok in stopwords.STATEMENT:
        return tok, article, _STOPPED, ""
    stem = statement_stem(tok)
    unit = _UNITS.get(tok) or _UNITS.get(tok[:-1] if tok.endswith("s") else tok) or _UNITS.get(stem)
    if unit:
        return tok, article, _UNIT, unit
    if _VALUE_SHAPE.search(tok) or tok in _TECH:
        return tok, article, _VALUE, tok
    return tok, article, _WORD, stem


@lru_cache(maxsize=TEXT_CACHE)
def features(text: str) -> Features:
    folded = _fold(text)
    original = unicodedata.normalize("NFKC", text)
    has_cjk = _HAS_CJK.search(folded) is not None
    # Values by shape in the original casing: PostgreSQL, iOS, JWTs, GitHub (not "The", "Use").
    cased: set[str] = set()
    for m in _LATIN_WORD.finditer(original):
        w = m.group(0)
        if w.islower():
            continue
        i = m.start() - 1
        while i >= 0 and original[i].isspace():
            i -= 1
        initial = i < 0 or original[i] in ".!?;:。！？；：-*•"
        if w[1:] != w[1:].lower() or not initial:
            cased.add(_clean(w.lower()))
    quoted: set[str] = set()
    for m in _QUOTED.finditer(folded):
        inner = next(g for g in m.groups() if g)
        quoted.update(_clean(t.group(0)) for t in _TOKEN.finditer(inner) if t.group("w"))
    words: set[str] = set()
    values: set[str] = set()
    norm: list[str] = []
    for m in _TOKEN.finditer(folded):
        run = m.group("c")
        if run:
            norm.append(run)
            values.update(_UNITS[u] for u in _CJK_UNITS.findall(run))
            words.update(_cjk_units(run))
            continue
        tok, article, kind, unit_or_stem = _word_token(m.group(0))
        if not article:
            norm.append(tok)
        if kind == _UNIT:
            values.add(unit_or_stem)
        elif kind == _VALUE or (kind == _WORD and (tok in cased or tok in quoted or has_cjk)):
            values.add(tok)
        elif kind == _WORD:
            words.add(unit_or_stem)
    negated = _NEG_EN.search(_CONTRAST_NOT.sub(" ", folded)) is not None
    negated = negated or _NEG_ZH.search(folded) is not None
    return Features(
        norm=" ".join(norm),
        words=frozenset(words),
        values=frozenset(values),
        negated=negated,
        change=_CHANGE.search(folded) is not None,
        also=_ALSO.search(folded) is not None,
        cjk=has_cjk,
    )


# ---- duplicates


def _dice(a: frozenset[str], b: frozenset[str]) -> float:
    if not a and not b:
        return 1.0
    return 2 * len(a & b) / (len(a) + len(b))


def _shared_values(fa: Features, fb: Features) -> tuple[frozenset[str], frozenset[str]]:
    """Values only in ``fa`` and only in ``fb``; a value written as a word on the other side
    (``Sentry`` at the start of a sentence, ``sentry`` elsewhere) counts as shared."""
    # Set operations only (a hook checks a dozen pairs per prompt): a unit name counts only
    # when the other side names a unit too.
    only_a = fa.values - fb.values - fb.words
    only_b = fb.values - fa.values - fa.words
    if fb.values.isdisjoint(_UNIT_NAMES):
        only_a = only_a - _UNIT_NAMES
    if fa.values.isdisjoint(_UNIT_NAMES):
        only_b = only_b - _UNIT_NAMES
    return only_a, only_b


EXTRA_VALUE_PENALTY = 0.15
SUBSTITUTION_PENALTY = 0.3
"""Per word swapped for another (the vector cannot tell "billing service" from "auth service":
MiniLM 0.70, e5 0.97; paraphrases mostly add or drop words instead)."""


def duplicate_score(a: str, b: str, cosine: float, model_id: str) -> float:
    """0..1: how surely ``a`` and ``b`` state the same thing. 0.0 when a value or the polarity
    differs; 1.0 when the normalised texts are equal."""
    fa, fb = features(a), features(b)
    if fa.norm == fb.norm:
        return 1.0 if fa.norm else 0.0
    if fa.negated != fb.negated:
        return 0.0
    only_a, only_b = _shared_values(fa, fb)
    if only_a and only_b:
        return 0.0  # "PostgreSQL 16" / "PostgreSQL 15", "ruff" / "black"
    profile = profile_for(model_id)
    words_a = fa.words - fb.values
    words_b = fb.words - fa.values
    overlap = _dice(words_a | fa.values, words_b | fb.values)
    weight = profile.weight if profile.cjk or not (fa.cjk or fb.cjk) else 0.0
    score = weight * profile.scale(cosine) + (1 - weight) * overlap
    extra_a, extra_b = words_a - words_b, words_b - words_a
    if only_a or only_b:
        score -= EXTRA_VALUE_PENALTY  # one side names something the other does not
    # A word on each side that the other lacks: "billing" / "auth service", "订单" / "用户";
    # or a value against words: "UTC" / "北京时间".
    score -= SUBSTITUTION_PENALTY * min(len(extra_a), len(extra_b))
    if (only_a and extra_b) or (only_b and extra_a):
        score -= SUBSTITUTION_PENALTY
    return max(0.0, min(1.0, score))


def is_duplicate(a: str, b: str, cosine: float, model_id: str) -> bool:
    return duplicate_score(a, b, cosine, model_id) >= profile_for(model_id).threshold


# ---- conflicts

TERM = r"[\w.+#/-]+"
CHANGE_PATTERNS = [
    # "switch formatting from ruff to black", "migrated from npm to pnpm"
    re.compile(
        rf"\b(?:switch|switched|switching|move|moved|moving|migrate|migrated|migrating|"
        rf"change|changed|changing|go|went|convert|converted)\b[^.\n]{{0,40}}?\bfrom\s+"
        rf"(?P<old>{TERM})\s+(?:to|over to|in favou?r of)\s+(?P<new>{TERM})",
        re.I,
    ),
    re.compile(
        rf"\b(?:use|using|prefer|chose|choose)\s+(?P<new>{TERM})\s+instead of\s+(?P<old>{TERM})",
        re.I,
    ),
    re.compile(rf"\breplac(?:e|ed|ing)\s+(?P<old>{TERM})\s+with\s+(?P<new>{TERM})", re.I),
    re.compile(rf"\b(?:chose|choose|picked|pick)\s+(?P<new>{TERM})\s+over\s+(?P<old>{TERM})", re.I),
    re.compile(
        rf"\b(?:no longer use|stop using|stopped using|drop|dropped)\s+(?P<old>{TERM})", re.I
    ),
    re.compile(
        r"(?:从|由)?(?P<old>[\w.+#-]+?)\s*(?:改成|改为|换成|换为|切换到|切换成|迁移到)\s*(?P<new>[\w.+#-]+)"
    ),
    re.compile(r"不再(?:用|使用)\s*(?P<old>[\w.+#-]+)"),
    re.compile(r"用\s*(?P<new>[\w.+#-]+?)\s*(?:代替|替代|取代)\s*(?P<old>[\w.+#-]+)"),
]
"""Trigger phrases, moved from ``memd.merge``: the new text names the old value it replaces."""
_MAY_TRIGGER = re.compile(
    r"\bfrom\b|instead of|replac|\bover\b|no longer use|stop|drop|改成|改为|换成|换为|切换到|切换成|"
    r"迁移到|不再|代替|替代|取代"
)
"""What every trigger phrase holds: one search rules most texts out before the eight."""
USE_FOR = re.compile(
    rf"\b(?:use|uses|using)\s+(?P<tool>{TERM})\s+(?:for|as)\s+(?P<subject>[^.\n]+)", re.I
)

_NUMBER = re.compile(r"^\d+(?:[.,]\d+)*$")
CONFLICT_SURE = 0.75
"""Supersede the older memory at or above this confidence."""
CONFLICT_UNSURE = 0.55
"""Below :data:`CONFLICT_SURE` but at or above this: keep both, show the newer first, marked."""


@dataclass(frozen=True)
class Conflict:
    """How surely a newer text contradicts an older one (0..1), and why."""

    score: float
    reason: str = ""

    @property
    def sure(self) -> bool:
        return self.score >= CONFLICT_SURE

    @property
    def possible(self) -> bool:
        return self.score >= CONFLICT_UNSURE

    def __bool__(self) -> bool:
        return self.possible


NO_CONFLICT = Conflict(0.0)


@lru_cache(maxsize=4096)
def _replacements(new: str) -> tuple[tuple[str, str], ...]:
    """(replaced, added) for every trigger phrase in ``new``."""
    folded = _fold(new)
    if _MAY_TRIGGER.search(folded) is None:
        return ()
    out = []
    for pattern in CHANGE_PATTERNS:
        m = pattern.search(folded)
        if m:
            replaced = m.group("old").strip(".,")
            out.append((replaced, (m.groupdict().get("new") or "").strip(".,")))
    return tuple(out)


def _trigger(new: str, old: str) -> str:
    """The replaced term when ``new`` says it replaces something ``old`` mentions, else ""."""
    found = _replacements(new)
    if not found:
        return ""
    old_l = _fold(old)
    for replaced, added in found:
        if replaced in stopwords.STATEMENT:
            continue  # "drop the implementation sketch" replaces no "the"
        if replaced and re.search(rf"(?<![a-z0-9_]){re.escape(replaced)}(?![a-z0-9_])", old_l):
            # The old statement must be about the replaced thing, not already the new one.
            if not added or added not in old_l or replaced in old_l:
                return replaced
    return ""


@lru_cache(maxsize=8192)
def _use_for_parts(text: str) -> tuple[str, frozenset[str]] | None:
    """A "use X for S" rule's tool (lower-cased) and its subject's words, or None. Remembered:
    an injection compares each shown memory with several others."""
    m = USE_FOR.search(text)
    if m is None:
        return None
    subject = features(m.group("subject"))
    return m.group("tool").lower(), subject.words | subject.values


def _use_for(new: str, old: str) -> bool:
    """The old rule: "use X for S" against "use Y for S" (same subject words)."""
    a = _use_for_parts(new)
    if a is None:
        return False
    b = _use_for_parts(old)
    if b is None or a[0] == b[0]:
        return False
    return _dice(a[1], b[1]) >= 0.66


POLARITY_CHARS = 220
"""A negation flips a short statement ("No open PR yet" / "PR #531 is this branch"); in a longer
text (an agent's report, several findings) a "not" somewhere negates none of the others."""


def _names(values: frozenset[str]) -> bool:
    """Whether ``values`` hold a code name or a version (``opentelemetry_ash``, ``0.1.3``)."""
    return any("_" in v or any(ch.isdigit() for ch in v) for v in values)


_PARTS = re.compile(r"\n+|\s[-*•]\s|(?<=[.!?;。！？；])\s+")


def _negates(text: str, shared: frozenset[str] | set[str]) -> bool:
    """Whether a negation in ``text`` falls on what it shares with the other text: the list
    item or sentence that is negated holds a shared word or value ("Trigger: Now runs on all
    pushes (not just main branch) - Steps: ... ruff format check" negates nothing of "Formatting
    runs with uv run ruff format")."""
    parts = [p for p in _PARTS.split(text) if p.strip()]
    if len(parts) < 2:
        return True
    for part in parts:
        f = features(part)
        if f.negated and (f.words | f.values) & shared:
            return True
    return False


def conflict(new: str, old: str, cosine: float, model_id: str) -> Conflict:
    """Does ``new`` contradict ``old`` (same subject, different value or polarity)?"""
    replaced = _trigger(new, old)
    if replaced:
        return Conflict(0.95, f"replaces {replaced!r}")
    if _use_for(new, old):
        return Conflict(0.9, "same purpose, another tool")
    fn, fo = features(new), features(old)
    if fn.norm == fo.norm:
        return NO_CONFLICT
    profile = profile_for(model_id)
    related = profile.scale(cosine)
    only_new, only_old = _shared_values(fn, fo)
    frame_new, frame_old = fn.words - fo.values, fo.words - fn.values
    shared = frame_new & frame_old
    shared_values = (fn.values & fo.values) | (fn.values & fo.words) | (fo.values & fn.words)
    extra_new, extra_old = frame_new - frame_old, frame_old - frame_new
    subject = _dice(frame_new, frame_old)
    short = max(len(new), len(old)) <= POLARITY_CHARS
    if (
        fn.negated != fo.negated
        and short
        and not (_names(only_new) and _names(only_old))
        and _negates(new if fn.negated else old, shared | shared_values)
    ):
        # (each side naming a thing the other lacks: "opentelemetry_ash 0.1.3" and
        # "opentelemetry_exporter 1.10.0 (NOT deprecated)" are two, not one and its negation)
        core = len(shared) + len(shared_values)
        if core >= 2 and (shared_values or subject >= 0.5):
            cover = core / max(1, min(len(fn.words | fn.values), len(fo.words | fo.values)))
            score = 0.45 + 0.3 * min(1.0, cover) + 0.15 * related + 0.1 * fn.change
            if fo.values and fo.values <= fn.values | fn.words:
                score += 0.15  # the new one names everything the old one is about
            return Conflict(min(score, 0.95), "polarity flips on the same subject")
        return NO_CONFLICT
    if not (shared or shared_values):
        return NO_CONFLICT
    if (
        len(only_new) >= 2
        and len(only_old) >= 2
        and all(_NUMBER.match(v) for v in only_new | only_old)
    ):
        return NO_CONFLICT  # "service 42 on port 8042" / "service 511 on port 8511": two things
    if roles.different_jobs(only_new, only_old):
        return NO_CONFLICT  # "uses ruff" / "uses uv": a linter and a package manager
    if only_new and only_old:  # "PostgreSQL 16" -> "MySQL 8"
        score = 0.35 + 0.45 * subject + 0.15 * related
    elif (only_new and extra_old) or (only_old and extra_new):  # "JSON" -> "纯文本"
        score = 0.15 + 0.35 * subject + 0.15 * related
    else:
        return NO_CONFLICT  # one side only adds something: compatible
    score -= 0.3 * min(len(extra_new), len(extra_old))  # "analytics" / "billing database"
    score -= 0.05 * max(len(extra_new), len(extra_old))  # the new one talks of more
    if fn.change:
        score += 0.15
    if fn.also:
        score -= 0.3
    return Conflict(max(0.0, min(score, 0.9)), "same subject, another value")
