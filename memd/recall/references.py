"""Which paths and code names of its project a memory refers to, read from its text.

A reference is a repo-relative path, with the symbol (function, class, config key, CLI flag)
the memory says lives there, or a symbol alone. Only what a code change can falsify is a
reference: event records (a bug fixed, a decision taken, a session's summary) are not read
at all, and hub files (CLAUDE.md, READMEs, changelogs, TODO lists, CI config, lock files) are
references only when the memory names something in them. Standard library only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from memd import kinds
from memd.extract.codenames import distinctive
from memd.project import repo_relative

CHECKED_KINDS = frozenset(kinds.names("code_checked"))
"""The kinds that say how things are now; the other kinds record events (``bugfix``,
``decision``, ``progress``, ``summary``), plans (``todo``) or raw turns (``excerpt``)."""
MAX_REFERENCES = 6
"""At most this many references are read from one memory (the first ones it names)."""

_EXTENSIONS_TEXT = """py pyi rs go ts tsx js jsx mjs cjs java kt kts scala rb php c h cc cpp hpp cs swift m
    ex exs erl hs ml clj lua r jl dart vue svelte sql sh bash zsh fish ps1 toml yaml yml json
    ini cfg conf env proto graphql tf nix cmake gradle md rst txt html css scss"""
_HUBS_TEXT = """claude.md agents.md gemini.md readme readme.md readme.rst readme.txt changelog
    changelog.md changes.md history.md news.md todo todo.md todos.md notes.md contributing.md
    license license.md copying makefile justfile dockerfile .gitignore .gitattributes
    .gitlab-ci.yml .travis.yml appveyor.yml azure-pipelines.yml jenkinsfile codeowners
    .pre-commit-config.yaml tox.ini noxfile.py"""
CODE_EXTENSIONS = frozenset(_EXTENSIONS_TEXT.split())
HUB_NAMES = frozenset(_HUBS_TEXT.split())
LOCK_SUFFIXES = (".lock", "-lock.json", "-lock.yaml", ".sum")
CI_DIRS = (".github/", ".circleci/", ".gitlab/", ".buildkite/")

_PATH = re.compile(
    r"(?<![\w@$/.-])((?:\.{1,2}/|/|~/)?(?:[\w.@+-]+/)*[\w@+-][\w.@+-]*\.([A-Za-z]\w{0,9}))\b"
)
_TICKED = re.compile(r"`([^`\n]{2,200})`")
_NAME = re.compile(r"--[A-Za-z][\w-]+|[A-Za-z_$][\w$]*(?:(?:\.|::)[A-Za-z_$][\w$]*)*")
_CODE_LIKE = re.compile(
    r"--[A-Za-z][\w-]+|[A-Za-z_$][\w$]*(?:_[\w$]|[a-z][A-Z]|(?:\.|::)[A-Za-z_$])[\w$]*"
    r"(?:(?:\.|::)[A-Za-z_$][\w$]*)*"
)
"""A token that can be a code name unquoted: with an underscore, a camelCase hump, a dot or
``::`` inside, or a ``--flag`` (the plain words of a sentence are not even looked at)."""
_HINT = re.compile(r"[`/]|\w\.[A-Za-z]|\w_|_\w|--\w|[a-z][A-Z]|::")
"""Whatever a reference needs: text without any of these has none (most memories)."""
_LISTED = re.compile(r"`([^`\n]+)`\s*\(([^()\n]{1,300})\)")
"""A path with the names an edit gave it: ``src/a.py`` (limit_rate, Bucket)."""
_FLAG = re.compile(r"--[A-Za-z][\w-]+")
_KEY = re.compile(r"[a-z][a-z0-9]*(?:-[a-z0-9]+)+")
_SENTENCE = re.compile(r"(?<=[.!?;])\s+(?=[A-Z`])|\n+")


@dataclass(frozen=True)
class Reference:
    """A place a memory names: ``path`` (repo-relative, "" when only a symbol is named) and
    ``symbol`` ("" for the file itself). ``recorded``: the symbol came from an edit record
    (the file had it when the memory was made)."""

    path: str = ""
    symbol: str = ""
    recorded: bool = False

    @property
    def key(self) -> str:
        return f"{self.path}#{self.symbol}"


def is_hub(path: str) -> bool:
    """A file every piece of work touches (instructions, docs, CI, locks): its changes say
    nothing about a memory that only mentions it."""
    low = path.lower()
    base = low.rsplit("/", 1)[-1]
    return base in HUB_NAMES or low.endswith(LOCK_SUFFIXES) or low.startswith(CI_DIRS)


def as_path(token: str, root: str) -> str:
    """``token`` as a repo-relative path, or "" when it is not a file of the project (a URL,
    a version number, a module written with dots, a file outside ``root``)."""
    token = token.strip().rstrip(".,:;)")
    m = _PATH.fullmatch(token)
    if not m or m.group(2).lower() not in CODE_EXTENSIONS or "://" in token:
        return ""
    if token.startswith("~"):
        return ""
    if token.startswith("/"):
        rel = repo_relative(token, root) if root else token
        return "" if rel.startswith("/") else rel
    while token.startswith("./"):
        token = token[2:]
    return "" if token.startswith("../") else token


def symbol_of(token: str, ticked: bool = False) -> str:
    """The name a code token defines: ``Bucket.refill`` -> ``refill``, ``--dry-run`` stays;
    "" for a plain or capitalised word (``PostgreSQL``), an acronym, a module path
    (``memd.recall.block``). ``ticked``: the memory quoted it as code (``RateLimiter``, a
    ``line-length`` key), or an edit record named it."""
    token = token.strip().rstrip("(),:;").removesuffix("()")
    if token.startswith("--"):
        return token if _FLAG.fullmatch(token) else ""
    if ticked and _KEY.fullmatch(token):
        return token
    if not _NAME.fullmatch(token):
        return ""
    parts = re.split(r"\.|::", token)
    if len(parts) == 2 and parts[0][:1].isupper():
        token = parts[1]  # Class.method, Type::function
    elif len(parts) > 1:
        return ""
    if ticked:
        return token if (len(token) >= 3 and not token.isupper()) or "_" in token else ""
    if not distinctive(token) or (token.isupper() and "_" not in token):
        return ""
    return "" if token[:1].isupper() and "_" not in token else token


@lru_cache(maxsize=8192)
def references(text: str, kind: str, root: str = "") -> tuple[Reference, ...]:
    """The references of a memory of ``kind`` saying ``text``, in project ``root``: each
    path it names with the symbols named with it (in the same sentence, or listed after it
    as an edit's names), and the symbols it names with no path; () for an event record."""
    if kind not in CHECKED_KINDS or not _HINT.search(text):
        return ()
    out: dict[str, Reference] = {}
    for sentence in _SENTENCE.split(text):
        listed = {m.group(1): m.group(2) for m in _LISTED.finditer(sentence)}
        ticked = [t.strip() for t in _TICKED.findall(sentence)]
        paths: list[str] = []
        names: list[str] = []
        for token in [*ticked, *(m.group(1) for m in _PATH.finditer(sentence))]:
            path = as_path(token, root)
            if path:
                paths.append(path)
            elif token in ticked:
                names.append(symbol_of(token, ticked=True))
        for m in _CODE_LIKE.finditer(_TICKED.sub(" ", _PATH.sub(" ", sentence))):
            names.append(symbol_of(m.group(0)))
        names = list(dict.fromkeys(n for n in names if n))
        paths = list(dict.fromkeys(paths))
        for path in paths:
            raw = listed.get(path) or listed.get(f"./{path}") or ""
            recorded = [symbol_of(n, ticked=True) for n in raw.split(",")]
            mine = [(n, True) for n in recorded if n] or [(n, False) for n in names]
            if not mine and not is_hub(path):
                out.setdefault(f"{path}#", Reference(path))
            for name, from_edit in mine if len(paths) == 1 or raw else []:
                out.setdefault(f"{path}#{name}", Reference(path, name, from_edit))
        if not paths or (len(paths) > 1 and not listed):  # which file has which name is unsaid
            for name in names:
                out.setdefault(f"#{name}", Reference("", name))
    return tuple(list(out.values())[:MAX_REFERENCES])
