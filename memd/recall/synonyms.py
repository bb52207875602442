"""Words of a prompt that a memory carries in other words: the tools of a job a prompt names,
and the everyday synonyms of coding talk.

"Which package manager should I use?" is answered by "We switched to pnpm"; "How do I run the
server with tracing switched off?" by "SPOTTER_OTEL_ENABLED environment variable for opt-out".
Neither memory holds the prompt's words. :func:`expansions` gives, for each such word of a
prompt, the terms that carry it; recall counts a memory holding one of them as holding the
prompt's word (lexical coverage) and searches the full text for them too. Mostly English, small
on purpose: a general glossary (the zh<->en bridge is :mod:`memd.text.bridge`).
"""

from __future__ import annotations

import re
from functools import lru_cache

from memd.store import personal, roles
from memd.text import searchterms

SYNONYMS: dict[str, tuple[str, ...]] = {
    r"tracing|traces?": ("otel", "opentelemetry", "span", "spans", "tracer"),
    r"(?:usage )?analytics|metrics collection": ("telemetry", "posthog", "tracking"),
    r"turn(?:ed|ing)? off|switch(?:ed|ing)? off|disabl(?:e|ed|ing)|opt(?:ing)? out": (
        "opt-out",
        "optout",
        "disabled",
        "enabled",
        "off",
    ),
    r"macs?|macos|os x": ("darwin", "macos", "mac"),
    r"windows": ("win32", "goos", "windows"),
    r"release notes?|changelog": ("changelog", "release"),
    r"dev server|local server": ("phx.server", "localhost", "dev", "server"),
    r"env(?:ironment)? var(?:iable)?s?": ("env", "environment", "getenv"),
    r"login|log in|sign in|signin": ("auth", "authentication", "login", "session"),
    r"credentials?|secrets?": ("token", "api_key", "password", "secret"),
    r"deploy(?:ment|s|ed|ing)?|ship(?:ped|ping)? to prod": ("deploy", "release", "production"),
    r"flaky|intermittent(?:ly)?": ("flaky", "race", "timeout", "intermittent"),
    r"slow(?:ness|er)?|performance|latency": ("slow", "latency", "performance", "ms"),
    r"crash(?:es|ed|ing)?": ("panic", "exception", "error", "crash"),
    r"jump ?(?:host|box|server)s?|bastion(?: host)?|跳板机|堡垒机|中转机": (
        "bastion",
        "jump",
        "跳板机",
        "堡垒机",
        "中转机",
    ),
    r"pull requests?|prs?": ("pr", "pull"),
    r"git hooks?": ("pre-commit", "pre-push", "prepare-commit-msg", "hook", "hooks"),
    # A person's own facts, said in passing ("I moved from Lisbon to Berlin", "I report to...")
    r"cit(?:y|ies)|town": ("moved", "based", "relocated", "city", "live", "living"),
    r"liv(?:e|es|ing) in|based in|reside": ("moved", "based", "relocated", "live", "living"),
    r"(?:line )?manager|boss": ("manager", "report", "reports", "boss"),
    r"employer|company|work(?:ing)? (?:at|for)|where (?:do|does|did) \w+ work": (
        "joined",
        "started",
        "company",
        "employer",
        "job",
    ),
    r"phone|mobile|cell": ("phone", "number", "mobile", "call"),
}
"""A prompt's words (a pattern) and the terms of a memory that carry them."""


@lru_cache(maxsize=1024)
def expansions(query: str) -> tuple[tuple[frozenset[str], frozenset[str]], ...]:
    """(carrier terms, the prompt's terms they carry) for each job or synonym ``query`` names."""
    folded = query.casefold()
    out = []
    for role, tools, asked_with in roles.asked(query):
        # (a tool named by an everyday word carries the job only written as a name: carried)
        out.append(
            (_tool_terms(tools), searchterms.term_set(role) | searchterms.term_set(asked_with))
        )
    for pattern, words in SYNONYMS.items():
        m = re.search(rf"(?<![a-z0-9_-])(?:{pattern})(?![a-z0-9_-])", folded)
        if m is not None:
            carried = searchterms.term_set(m.group(0))
            held = frozenset(t for c in words for t in searchterms.terms(c)) - carried
            if carried and held:
                out.append((held, carried))
    return tuple(out)


SCOPE = re.compile(r"(?<![\w-])(?:this|the|our|my) (?:project|repo|repository|codebase)(?![\w-])")
"""A prompt's words for the project it is asked in: every memory searched is of it."""


@lru_cache(maxsize=1024)
def scope_terms(query: str) -> frozenset[str]:
    """The terms of ``query`` that name its own project ("this repo"), carried by every
    memory searched ("Which databases does the project use?" is answered by "Our main
    database is PostgreSQL 16")."""
    return frozenset(
        t for m in SCOPE.finditer(query.casefold()) for t in searchterms.terms(m.group(0))
    )


def carried(have: frozenset[str], query: str, text: str = "") -> frozenset[str]:
    """A memory's terms ``have`` plus the prompt's terms it carries in other words; a memory
    (``text``) that gives a person's fact the prompt asks for carries the words it asks with
    ("我现在是架构师了" answers "我现在是什么职位？")."""
    have = have | scope_terms(query)
    for key, asked_with in personal.asked(query):
        if text and key in personal.slots(text):
            have = have | searchterms.term_set(asked_with)
    for carriers, words in expansions(query):
        if not have.isdisjoint(carriers) or any(
            t.split(".")[0] in carriers
            for t in have
            if "." in t  # esbuild.build()
        ):
            have = have | words
    if text and VERSION_ASKED.search(query) and _gives_version(text, query):
        have = have | _version_words(query)
    for words in _jobs_named_in(text, query) if text else ():
        have = have | words
    return have


def _jobs_named_in(text: str, query: str) -> list[frozenset[str]]:
    """For each job ``query`` asks for that ``text`` names by an everyday word written as a
    name or by two words (:func:`_named_jobs`), the prompt's terms it carries."""
    folded, out = "", []
    for names, phrases, words in _named_jobs(query):
        if phrases and not folded:
            folded = " ".join(text.casefold().split())
        if roles.named_as_tool(text, names) or any(p in folded for p in phrases):
            out.append(words)
    return out


@lru_cache(maxsize=1024)
def _named_jobs(
    query: str,
) -> tuple[tuple[tuple[str, ...], tuple[str, ...], frozenset[str]], ...]:
    """For each job ``query`` asks for whose tools are written as everyday words (Go, Fly,
    Drone) or in two words ("GitHub Actions"): those, and the prompt's terms a memory naming
    one of them carries."""
    out = []
    for role, tools, asked_with in roles.asked(query):
        names = tuple(t for t in tools if t in roles.WORDS)
        phrases = tuple(p for p, tool in roles.PHRASES.items() if tool in tools)
        if names or phrases:
            words = searchterms.term_set(role) | searchterms.term_set(asked_with)
            out.append((names, phrases, words))
    return tuple(out)


@lru_cache(maxsize=256)
def _tool_terms(tools: tuple[str, ...]) -> frozenset[str]:
    """The terms of a job's ``tools``, but those named by everyday words (:data:`roles.WORDS`,
    looked up as names by :func:`_jobs_named_in`)."""
    return frozenset(
        t for tool in tools if tool not in roles.WORDS for t in searchterms.terms(tool)
    )


def asks_for(query: str) -> bool:
    """Whether ``query`` asks for a job's tool, a person's one-value fact, a port or a
    version by name."""
    return bool(
        roles.asked(query)
        or personal.asked(query)
        or PORT_ASKED.search(query)
        or VERSION_ASKED.search(query)
        or DAY_ASKED.search(query)
        or WHO_ASKED.search(query)
        or REGISTRY_ASKED.search(query)
        or JUMP_ASKED.search(query)
        or REGION_ASKED.search(query)
        or DOMAIN_ASKED.search(query)
    )


PORT_ASKED = re.compile(r"(?<![\w-])ports?(?![\w-])|端口", re.IGNORECASE)
_PORT_GIVEN = re.compile(
    r"(?:localhost|\d+\.\d+\.\d+\.\d+|[a-z][\w-]*(?:\.[\w-]+)+):\d{2,5}(?!\d)"
    r"|(?<![\w-])port\s*[:=]?\s*\d{2,5}(?!\d)|端口(?:号)?\s*(?:是|为|改成|改为)?\s*\d{2,5}",
    re.IGNORECASE,
)
"""A port a text gives: a host's (``localhost:5173``, ``db.internal:5432``), "port 8080"."""


DAY_ASKED = re.compile(
    r"哪天|哪一天|周几|星期几|礼拜几|(?<![\w-])(?:which|what) days?(?![\w-])"
    r"(?! (?:did|was|were|had)\b)",  # (what day something happened is no schedule)
    re.IGNORECASE,
)
_DAY_GIVEN = re.compile(
    r"(?<![\w-])(?:mon|tues|wednes|thurs|fri|satur|sun)days?(?![\w-])"
    r"|(?:周|星期|礼拜)[一二三四五六日天]",
    re.IGNORECASE,
)
WHO_ASKED = re.compile(r"(?<![\w-])who(?:m|se)?(?![\w-])|谁", re.IGNORECASE)
_OWNER_GIVEN = re.compile(
    r"负责|在管|维护|值班|对接|接手|(?<![\w-])(?:owners?|owns|owned|maintainers?|on[- ]call"
    r"|takes over|took over|taken over"
    r"|approvers?)(?![\w-])",
    re.IGNORECASE,
)
REGISTRY_ASKED = re.compile(
    r"(?<![\w-])registr(?:y|ies)(?![\w-])|index[- ]url|镜像源|哪个源|什么源|(?:npm|pip|maven|docker) ?源",
    re.IGNORECASE,
)
_REGISTRY_GIVEN = re.compile(
    r"\A(?=.*(?:registry|index-url|mirror|源))(?=.*\b[a-z0-9-]+(?:\.[a-z0-9-]+)*\.[a-z]{2,}\b)",
    re.IGNORECASE | re.DOTALL,
)
_JUMP = r"跳板机|堡垒机|中转机|jump ?(?:host|box|server)s?|bastion|proxyjump"
JUMP_ASKED = re.compile(rf"(?<![a-z0-9_-])(?:{_JUMP})", re.IGNORECASE)
_JUMP_GIVEN = re.compile(
    rf"\A(?=.*(?:{_JUMP}))(?=.*\b[a-z0-9-]+(?:\.[a-z0-9-]+)*\.[a-z]{{2,}}\b)",
    re.IGNORECASE | re.DOTALL,
)
REGION_ASKED = re.compile(
    r"(?<![\w-])regions?(?![\w-])|地域|哪个区|哪些区|哪个可用区|(?:哪个|哪些)机房", re.IGNORECASE
)
_REGION_GIVEN = re.compile(
    r"(?<![\w-])(?:[a-z]{2}-[a-z]+-\d|cn-[a-z]+(?:-\d)?)(?![\w-])", re.IGNORECASE
)
DOMAIN_ASKED = re.compile(r"(?<![\w-])(?:domains?|hostnames?)(?![\w-])|域名", re.IGNORECASE)
_DOMAIN_GIVEN = re.compile(
    r"(?<![\w.@/-])(?:[a-z0-9-]+\.)+(?:com|net|org|io|co|dev|app|shop|ai|cn|me|cloud|site|tech"
    r"|xyz|de|uk|fr|jp|eu|us|internal|local)(?![\w.-])",
    re.IGNORECASE,
)
"""A prompt that asks for a day ("哪天上线？"), a person ("上架找谁？"), a package registry
("装 npm 包走的是哪个源？"), a jump host ("要经过哪台中转机？") or a region ("部署在哪些地域？"), and
a text that gives one (a weekday; someone who owns or is on call for something; a host beside a
registry's word or a jump host's; a cloud region, ``cn-hangzhou``, ``eu-central-1``), or a
domain ("what domains does the storefront answer on?": ``store.brindle.co``)."""


_GIVEN = (
    (DAY_ASKED, _DAY_GIVEN, False),
    (WHO_ASKED, _OWNER_GIVEN, False),
    (REGISTRY_ASKED, _REGISTRY_GIVEN, False),
    (JUMP_ASKED, _JUMP_GIVEN, True),  # (the jump host is the whole subject)
    (REGION_ASKED, _REGION_GIVEN, False),
    (DOMAIN_ASKED, _DOMAIN_GIVEN, False),
)


def _gives_on_subject(
    given: re.Pattern[str], asked: re.Pattern[str], query: str, text: str, have: frozenset[str]
) -> bool:
    """Whether ``text`` gives what ``asked`` asks for (``given``) on a subject of ``query``
    beside it: its terms (``have``) share one of the prompt's other terms ("Which port does
    the frontend come up on?": a frontend's "localhost:5173", not the admin API's port)."""
    if not given.search(text):
        return False
    return not have.isdisjoint(searchterms.term_set(asked.sub(" ", query)))


def answers(
    have: frozenset[str], query: str, text: str, carried: frozenset[str] | None = None
) -> bool:
    """Whether a memory (its terms ``have``, its ``text``) names a tool of a job ``query``
    asks for by name, or gives the person's fact it asks for: "If I want to add a dependency,
    which package manager do I run?" is answered by "I ran pnpm install to regenerate
    pnpm-lock.yaml", "我现在在哪个组？" by "我上周调到数据组了", "Which port does the frontend
    use?" by a frontend's "localhost:5173", "Which Python version?" by "python:3.12-slim",
    whatever else either says.
    Recall counts such a memory relevant."""
    if any(key in personal.slots(text) for key, _ in personal.asked(query)):
        return True
    jobs = roles.asked(query)
    if any(not have.isdisjoint(_tool_terms(tools)) for _, tools, _ in jobs):
        return True
    if jobs and "." in text:  # "org.apache.rocketmq.client...", "https://sqs.eu-west-1..."
        named = roles.tools_named(text.casefold())
        if any(not named.isdisjoint(tools) for _, tools, _ in jobs):
            return True
    if PORT_ASKED.search(query) and _gives_on_subject(_PORT_GIVEN, PORT_ASKED, query, text, have):
        return True
    if VERSION_ASKED.search(query) and _names_version(text, query):
        return True  # "哪个 Python 版本？": "python:3.12-slim"
    words = have if carried is None else carried
    for asked, given, alone in _GIVEN:
        if asked.search(query) and (
            given.search(text) if alone else _gives_on_subject(given, asked, query, text, words)
        ):
            return True  # "这周的版本哪天上线？": "每周二发版"
    return bool(_jobs_named_in(text, query))


VERSION_ASKED = re.compile(r"(?<![a-z0-9_-])versions?(?![a-z0-9_-])|版本", re.IGNORECASE)
"""A prompt that asks for a version ("Which Node version ...?", "哪个 Python 版本")."""
_DOTTED = re.compile(r"(?<![\w.])v?\d+\.\d+(?:\.\d+)*(?!\w|\.\d)", re.IGNORECASE)
_NAMED_NUMBER = re.compile(r"([a-z][\w.+-]*)[ :@]v?\d{1,3}(?:\.\d+)*(?![\w%]|\.\d)", re.IGNORECASE)


def _gives_version(text: str, query: str) -> bool:
    """Whether ``text`` gives a version: a dotted number ("20.11.1"), or a number right
    after a name the prompt says (:func:`_names_version`)."""
    return _DOTTED.search(text) is not None or _names_version(text, query)


def _names_version(text: str, query: str) -> bool:
    """Whether ``text`` gives a version right after a name the prompt says ("Postgres 16",
    "postgres:16-alpine" for "Which Postgres version ...?")."""
    asked = searchterms.term_set(query)
    return any(
        not asked.isdisjoint(searchterms.terms(m.group(1))) for m in _NAMED_NUMBER.finditer(text)
    )


@lru_cache(maxsize=256)
def _version_words(query: str) -> frozenset[str]:
    return frozenset(
        t for m in VERSION_ASKED.finditer(query) for t in searchterms.terms(m.group(0))
    )


def search_terms(query: str) -> list[str]:
    """The carrier terms to search the full text for, beside the prompt's own."""
    return list(dict.fromkeys(t for carriers, _ in expansions(query) for t in sorted(carriers)))
