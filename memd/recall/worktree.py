"""What a project's working tree holds now: whether a file defines a name (and a fingerprint
of the lines that define it), which files define a name, and where git says a file went.

Reads are cached per file by (size, mtime), and git's answers per repository state (its index
and HEAD) for a few seconds, so a hook never pays twice for the same question. Standard library
only; git is run as a bounded subprocess where the project has it.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from functools import lru_cache

from memd.project import git_dir
from memd.recall.references import CODE_EXTENSIONS

MAX_FILE_BYTES = 2_000_000
MAX_FILES_CACHED = 1024
MAX_BLOCK_LINES = 400
GIT_TIMEOUT = 0.5
"""A git run taking longer is given up (the hook's own timeout is 2 s)."""
GIT_TTL_SECONDS = 10.0
"""git's answers are kept this long at most (edits to the work tree do not touch the index)."""
MAX_DEFINERS = 200
"""At most this many files that mention a name are read to find where it is defined."""
WALK_LIMIT = 5000
"""Without git, at most this many code files are looked at to find where a name is defined."""
MAX_WALK_BYTES = 512_000
SKIP_DIRS = frozenset(
    {".git", "node_modules", ".venv", "venv", "target", "dist", "build", "__pycache__", ".tox"}
)
CONFIG_EXTENSIONS = frozenset({"toml", "yaml", "yml", "json", "ini", "cfg", "conf", "env"})

_MODIFIERS = (
    r"(?:(?:export|pub(?:\([\w:]+\))?|async|static|public|private|protected|default|unsafe"
    r"|abstract|final|override|inline|extern|declare|readonly|open|data|sealed)\s+)*"
)
_KEYWORDS = (
    r"(?:def|class|fn|func|function\*?|struct|enum|trait|interface|type|const|let|var|mod"
    r"|module|object|record|impl|macro_rules!|defp?|defmacro|defmodule|namespace)"
)


@lru_cache(maxsize=4096)
def definition_pattern(name: str, config: bool) -> re.Pattern[str]:
    """Where a file defines ``name``: a ``def``/``class``/``fn``/``func (r T)``/``const``...
    line, a top-level assignment, or in a config file a ``key =``/``key:``; a ``--flag`` is
    defined wherever it is written."""
    n = re.escape(name)
    if name.startswith("--"):
        return re.compile(rf"{n}(?![\w-])", re.M)
    code = rf"^[ \t]*{_MODIFIERS}{_KEYWORDS}[ \t]+(?:\([^)\n]*\)[ \t]*)?\*?{n}\b"
    assign = rf"^{n}[ \t]*(?::[^=\n]*)?=(?!=)"
    key = rf"^[ \t]*[\"']?{n}[\"']?[ \t]*[:=]"
    return re.compile("|".join((code, assign, key) if config else (code, assign)), re.M)


def extension(path: str) -> str:
    base = path.rsplit("/", 1)[-1]
    return base.rsplit(".", 1)[-1].lower() if "." in base else ""


def fingerprint(lines: list[str], start: int) -> str:
    """A hash of the lines that define what starts at line ``start``: that line and the more
    indented ones below it (a signature's closing bracket at the same indent included)."""
    head = lines[start]
    indent = len(head) - len(head.lstrip())
    kept = [head.strip()]
    for line in lines[start + 1 : start + MAX_BLOCK_LINES]:
        text = line.strip()
        if not text:
            continue
        if len(line) - len(line.lstrip()) <= indent:
            if text[0] not in ")]}":
                break
            kept.append(text)
            if not text.endswith((":", "{")):
                break
            continue
        kept.append(text)
    return hashlib.sha1("\n".join(kept).encode("utf-8", "replace")).hexdigest()[:16]


@dataclass
class FileView:
    """One file as read at (size, mtime): its lines and the names looked up in it."""

    key: tuple[int, int]
    text: str
    config: bool
    found: dict[str, str] = field(default_factory=dict)

    def definition(self, name: str) -> str:
        """The fingerprint of ``name``'s definition here, "" when this file does not define it."""
        if name not in self.found:
            m = definition_pattern(name, self.config).search(self.text)
            if m is None:
                self.found[name] = ""
            else:
                line = self.text.count("\n", 0, m.start())
                self.found[name] = fingerprint(self.text.split("\n"), line)
        return self.found[name]

    def mentions(self, name: str) -> bool:
        """Whether the file holds ``name`` as a word (used, if not defined, here)."""
        return re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", self.text) is not None


@dataclass
class GitAnswer:
    at: float
    state: tuple[int, ...]
    value: object


class WorkTree:
    """The cached reader of working trees (one per daemon; thread-safe)."""

    def __init__(self) -> None:
        self._files: OrderedDict[str, FileView] = OrderedDict()
        self._git: OrderedDict[tuple[str, ...], GitAnswer] = OrderedDict()
        self._lock = threading.Lock()
        self.reads = 0
        self.git_runs = 0

    # ---- files
    def view(self, path: str) -> FileView | None:
        """``path`` as it is now, None when it is not a readable file."""
        try:
            st = os.stat(path)
        except OSError:
            return None
        key = (st.st_size, st.st_mtime_ns)
        with self._lock:
            cached = self._files.get(path)
            if cached is not None and cached.key == key:
                self._files.move_to_end(path)
                return cached
        if st.st_size > MAX_FILE_BYTES or not os.path.isfile(path):
            return None
        try:
            with open(path, encoding="utf-8", errors="replace") as fh:
                text = fh.read()
        except OSError:
            return None
        self.reads += 1
        view = FileView(key, text, extension(path) in CONFIG_EXTENSIONS)
        with self._lock:
            self._files[path] = view
            while len(self._files) > MAX_FILES_CACHED:
                self._files.popitem(last=False)
        return view

    def definition(self, root: str, rel: str, name: str) -> str | None:
        """The fingerprint of ``name``'s definition in ``root/rel``: "" when the file does
        not define it, None when there is no such file."""
        view = self.view(os.path.join(root, rel))
        return None if view is None else view.definition(name)

    def mentions(self, root: str, rel: str, name: str) -> bool:
        view = self.view(os.path.join(root, rel))
        return view is not None and view.mentions(name)

    def exists(self, root: str, rel: str) -> bool:
        return os.path.exists(os.path.join(root, rel))

    # ---- searching the tree
    def definers(
        self, root: str, name: str, fresh: bool = True, until: float | None = None
    ) -> list[str]:
        """The repo-relative files under ``root`` that define ``name`` (``git grep`` where
        there is git, else a bounded walk), sorted. ``fresh``: git's answer is at most
        :data:`GIT_TTL_SECONDS` old (else as old as the repository's state). Raises
        :class:`OutOfTime` past ``until`` (a ``time.monotonic()``)."""
        mentions = self.git(root, "grep", name, GIT_TTL_SECONDS if fresh else float("inf"), until)
        if mentions is None:
            mentions = self.walk(root, name, until)
        out = []
        for rel in mentions[:MAX_DEFINERS]:
            if self.definition(root, rel, name):
                out.append(rel)
        return sorted(out)

    def walk(self, root: str, name: str, until: float | None = None) -> list[str]:
        """The code files under ``root`` (at most :data:`WALK_LIMIT`) that mention ``name``."""
        out: list[str] = []
        seen = 0
        for top, dirs, files in os.walk(root):
            dirs[:] = [d for d in dirs if d not in SKIP_DIRS and not d.startswith(".")]
            for f in files:
                if extension(f) not in CODE_EXTENSIONS:
                    continue
                seen += 1
                if seen > WALK_LIMIT:
                    return out
                if until is not None and time.monotonic() > until:
                    raise OutOfTime(name)
                path = os.path.join(top, f)
                try:
                    if os.path.getsize(path) > MAX_WALK_BYTES:
                        continue
                    with open(path, encoding="utf-8", errors="replace") as fh:
                        if name not in fh.read():
                            continue
                except OSError:
                    continue
                out.append(os.path.relpath(path, root))
        return out

    def fate(
        self, root: str, rel: str, fresh: bool = True, until: float | None = None
    ) -> tuple[str, str, str]:
        """What git says became of a file that is gone: ("renamed", new path, day),
        ("deleted", "", day), or ("", "", "") when git never had it (or there is no git);
        ``fresh`` and ``until`` as for :meth:`definers`."""
        found = self.git(root, "fate", rel, GIT_TTL_SECONDS if fresh else float("inf"), until)
        if not found:
            return "", "", ""
        state, new, day = found
        return state, new, day

    # ---- git, cached per repository state
    def git(
        self,
        root: str,
        what: str,
        arg: str,
        ttl: float = GIT_TTL_SECONDS,
        until: float | None = None,
    ) -> list[str] | None:
        """``what`` ("grep": files mentioning ``arg``; "fate": a gone file's rename or
        deletion) answered by git in ``root``; None without git. Raises :class:`OutOfTime`
        when git fails or is not done by ``until`` (no answer is kept)."""
        gdir = git_dir(root)
        if gdir is None:
            return None
        state = repo_state(gdir)
        key = (root, what, arg)
        now = time.monotonic()
        with self._lock:
            cached = self._git.get(key)
            if cached is not None and cached.state == state and now - cached.at < ttl:
                return cached.value  # type: ignore[return-value]
        value = grep(root, arg, until) if what == "grep" else fate(root, arg, until)
        self.git_runs += 1
        if value is None:
            raise OutOfTime(arg)
        with self._lock:
            self._git[key] = GitAnswer(now, state, value)
            while len(self._git) > MAX_FILES_CACHED:
                self._git.popitem(last=False)
        return value


class OutOfTime(Exception):
    """A search that failed or would run past its block's time: tried again on a later prompt."""


def repo_state(gdir: str) -> tuple[int, ...]:
    """What changes when the repository does: the mtimes of its index and HEAD."""
    out = []
    for name in ("index", "HEAD"):
        try:
            out.append(os.stat(os.path.join(gdir, name)).st_mtime_ns)
        except OSError:
            out.append(0)
    return tuple(out)


def run_git(root: str, *args: str, until: float | None = None) -> str | None:
    """git's output, None when it fails or is not done within :data:`GIT_TIMEOUT` (or by
    ``until``)."""
    timeout = GIT_TIMEOUT if until is None else min(GIT_TIMEOUT, until - time.monotonic())
    if timeout <= 0:
        return None
    try:
        done = subprocess.run(
            ["git", "-C", root, *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            env={**os.environ, "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C"},
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode in (0, 1) else None


def grep(root: str, name: str, until: float | None = None) -> list[str] | None:
    """The tracked files of ``root`` that mention ``name`` (as a word, a flag as written)."""
    word = [] if name.startswith("--") else ["-w"]
    out = run_git(root, "grep", "-l", "-I", "-F", *word, "-e", name, until=until)
    return None if out is None else [line for line in out.splitlines() if line]


def fate(root: str, rel: str, until: float | None = None) -> list[str] | None:
    """[state, new path, day] for a file git removed: the commit that removed it, and its
    rename there (followed through later renames, up to 3); [] when git never had it."""
    state, day = "", ""
    for _ in range(3):
        out = run_git(
            root, "log", "-1", "--diff-filter=D", "--format=%H %cs", "--", rel, until=until
        )
        if out is None:
            return None
        if not out.strip():
            break
        commit, day = out.split()[:2]
        state = "deleted"
        diff = run_git(root, "show", "-M", "--name-status", "--format=", commit, until=until)
        if diff is None:
            return None
        renamed = [
            parts[2]
            for parts in (line.split("\t") for line in diff.splitlines())
            if len(parts) == 3 and parts[0].startswith("R") and parts[1] == rel
        ]
        if not renamed:
            break
        state, rel = "renamed", renamed[0]
        if os.path.exists(os.path.join(root, rel)):
            break
    return [state, rel if state == "renamed" else "", day] if state else []
