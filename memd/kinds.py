"""The kinds of memory: one spec per kind, from which every per-kind table of memd is derived.

Plain data with no imports, so the CLI (and anything the hook may read) pays nothing for it at
start. Adding a kind is one :class:`Kind` in :data:`KINDS` plus the extraction rule that makes
it; ``tests/test_kinds.py`` renders, exports, decays and injects every kind.
"""

from __future__ import annotations


class Kind:
    """One kind of memory and everything memd does differently for it."""

    __slots__ = (
        "addable",
        "block_rank",
        "brief_base",
        "brief_limit",
        "broad",
        "closes_todos",
        "code_checked",
        "colour",
        "durable",
        "half_life_days",
        "heading",
        "importance",
        "llm",
        "llm_aliases",
        "llm_meaning",
        "meaning",
        "name",
        "raw",
        "section",
        "statement",
        "supersedable",
        "tint",
    )

    name: str
    section: str
    """Its section's title in an injected block ("Decisions")."""
    block_rank: int
    """Where its section stands in a block (the pinned section comes before every kind)."""
    heading: str
    """Its heading in a Markdown export ("Key decisions")."""
    importance: float
    """The importance extraction gives it unless a rule says otherwise."""
    half_life_days: float
    """How fast an unused one decays, in days (the ``half_life_days`` setting may say otherwise)."""
    colour: str
    """Its colour in the viewer's charts."""
    tint: str
    """The background of its label in the viewer's pages."""
    durable: bool
    """Never archived for its age alone, and kept longest at a project's cap."""
    supersedable: bool
    """A later memory may supersede it, and a block marks two that disagree."""
    statement: bool
    """A statement of how things are: a newer one that retires its value supersedes it on insert."""
    closes_todos: bool
    """A later one may say that an open TODO is done."""
    broad: bool
    """Raw turns or an overview: it needs the excerpt margin more relevance to be injected."""
    code_checked: bool
    """The files and symbols it names are checked against the working tree when it is shown."""
    brief_limit: int
    """How many the session brief considers (0: not in the brief)."""
    brief_base: float
    """Its section's base score in the session brief."""
    llm: bool
    """The LLM extractors may return it."""
    llm_aliases: tuple[str, ...]
    """Other names an LLM writes for it ("task" for todo)."""
    addable: bool
    """``memd add``, the MCP ``memory_add`` tool and ``/remember`` offer it."""
    raw: bool
    """Stored turns rather than knowledge: the viewer's knowledge view leaves it out."""
    meaning: str
    """What it is, in a few words, for the texts that list the kinds to a model or a person."""
    llm_meaning: str
    """What it is, as the LLM extraction prompt explains it (for the kinds an LLM may return)."""

    def __init__(
        self,
        name: str,
        *,
        section: str,
        block_rank: int,
        heading: str,
        importance: float,
        half_life_days: float,
        colour: str,
        tint: str,
        meaning: str,
        llm_meaning: str = "",
        durable: bool = False,
        supersedable: bool = False,
        statement: bool = False,
        closes_todos: bool = False,
        broad: bool = False,
        code_checked: bool = False,
        brief_limit: int = 0,
        brief_base: float = 0.0,
        llm: bool = True,
        llm_aliases: tuple[str, ...] = (),
        addable: bool = False,
        raw: bool = False,
    ) -> None:
        values = dict(locals())
        del values["self"]
        for key, value in values.items():
            object.__setattr__(self, key, value)

    def __setattr__(self, key: str, value: object) -> None:
        raise AttributeError(f"a Kind is read-only ({key})")

    def __repr__(self) -> str:
        return f"Kind({self.name!r})"


KINDS: tuple[Kind, ...] = (
    Kind(
        "decision",
        section="Decisions",
        block_rank=2,
        heading="Key decisions",
        importance=0.75,
        half_life_days=365.0,
        colour="#4e79a7",
        tint="#dbe6f5",
        meaning="a choice made",
        llm_meaning="a choice made, with its reason when the turns give one",
        durable=True,
        supersedable=True,
        statement=True,
        closes_todos=True,
        brief_limit=8,
        brief_base=2.0,
        llm_aliases=("decisions", "choice"),
        addable=True,
    ),
    Kind(
        "preference",
        section="Preferences",
        block_rank=4,
        heading="Preferences and conventions",
        importance=0.8,
        half_life_days=365.0,
        colour="#f28e2b",
        tint="#fde3cc",
        meaning="a rule or habit (always, never, prefer, use X)",
        llm_meaning="how the user wants work done: code, tools, style, process, things to always or never do; a remark about their life is not a preference",
        durable=True,
        supersedable=True,
        statement=True,
        closes_todos=True,
        code_checked=True,
        brief_limit=6,
        brief_base=1.5,
        llm_aliases=("prefs", "preferences", "convention", "conventions", "rule"),
        addable=True,
    ),
    Kind(
        "fact",
        section="Facts",
        block_rank=5,
        heading="Facts",
        importance=0.55,
        half_life_days=120.0,
        colour="#59a14f",
        tint="#dcefd9",
        meaning="how things are: the stack, where things live, how to run them",
        llm_meaning="tech stack, project structure, commands run, where things live; facts a person states about themselves",
        durable=True,
        supersedable=True,
        statement=True,
        closes_todos=True,
        code_checked=True,
        llm_aliases=("facts", "note", "info", "excerpt"),
        addable=True,
    ),
    Kind(
        "todo",
        section="Open TODOs",
        block_rank=3,
        heading="TODO",
        importance=0.6,
        half_life_days=7.0,
        colour="#e15759",
        tint="#f9d9da",
        meaning="work still to do",
        llm_meaning="open items still to do; a sentence saying something is done is progress, never a todo",
        brief_limit=8,
        brief_base=2.5,
        llm_aliases=("task", "tasks", "todos", "open_item", "next_step"),
        addable=True,
    ),
    Kind(
        "progress",
        section="Progress",
        block_rank=7,
        heading="Progress",
        importance=0.5,
        half_life_days=7.0,
        colour="#76b7b2",
        tint="#dcefee",
        meaning="what was completed",
        llm_meaning="what was completed",
        closes_todos=True,
        brief_limit=1,
        brief_base=2.9,
        llm_aliases=("done", "status"),
    ),
    Kind(
        "bugfix",
        section="Fixes",
        block_rank=6,
        heading="Bug fixes",
        importance=0.7,
        half_life_days=120.0,
        colour="#edc948",
        tint="#fbf1c7",
        meaning="the cause of a bug and its fix",
        llm_meaning="the cause of a bug and its fix",
        brief_limit=3,  # the latest fixes, after the checks' commands (read on real work)
        brief_base=1.2,
        durable=True,
        supersedable=True,
        closes_todos=True,
        llm_aliases=("bug", "fix", "bug_fix", "bugfixes"),
        addable=True,
    ),
    Kind(
        "summary",
        section="Last session",
        block_rank=1,
        heading="Summary",
        importance=0.5,
        half_life_days=60.0,
        colour="#b07aa1",
        tint="#ecdde8",
        meaning="what a session worked on",
        llm_meaning="exactly one: one short line on what this piece worked on, the requests and files; do not repeat the decisions, fixes and todos listed separately, and skip greetings and small talk",
        closes_todos=True,
        broad=True,
        brief_limit=1,
        brief_base=3.0,
        llm_aliases=("overview",),
    ),
    Kind(
        "excerpt",
        section="Excerpts",
        block_rank=8,
        heading="Excerpts",
        importance=0.3,
        half_life_days=30.0,
        colour="#9c755f",
        tint="#e9e1da",
        meaning="the turns of a request and its outcome, redacted",
        closes_todos=True,
        broad=True,
        llm=False,
        raw=True,
    ),
)
"""Every kind, in memd's order (the CLI's choices, the list's grouping)."""

BY_NAME: dict[str, Kind] = {k.name: k for k in KINDS}
NAMES: tuple[str, ...] = tuple(k.name for k in KINDS)


def names(flag: str) -> tuple[str, ...]:
    """The kinds whose boolean ``flag`` is set, in memd's order (``names("durable")``)."""
    return tuple(k.name for k in KINDS if getattr(k, flag))


def listed(flag: str = "", last: str = "or") -> str:
    """The kinds (with ``flag`` set) as words: "decision, preference, todo, bugfix or fact"."""
    found = list(names(flag)) if flag else list(NAMES)
    return found[0] if len(found) == 1 else f"{', '.join(found[:-1])} {last} {found[-1]}"
