"""Which project a directory belongs to: its git root, else the directory itself.

Never the folder's basename alone: two repositories named ``api`` are two projects.
Standard library only, since the daemon resolves every hook's ``cwd`` with it.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

from memd.names import USER_SCOPE

WORKTREES = "/.claude/worktrees/"
"""Where Claude Code puts the git worktrees of its agents, inside the repository."""


@lru_cache(maxsize=4096)
def resolve_project(cwd: str | os.PathLike[str] | None) -> str:
    """The absolute git root above ``cwd`` (a ``.git`` dir or file), else ``cwd`` itself.

    A linked git worktree belongs to its repository: its root is the main work tree's (the
    parent of the git common directory), so one repository's memory is not split across
    worktrees. A path inside an agent worktree (``<repo>/.claude/worktrees/<name>/``) that
    does not exist here (a transcript from another machine) maps to ``<repo>``."""
    if not cwd:
        return USER_SCOPE
    raw = str(cwd)
    if raw == USER_SCOPE or raw.startswith("user:"):
        return raw
    path = os.path.realpath(os.path.expanduser(raw))
    probe = path
    while True:
        if os.path.exists(os.path.join(probe, ".git")):
            return main_worktree(probe)
        parent = os.path.dirname(probe)
        if parent == probe:
            cut = path.find(WORKTREES)
            return path[:cut] if cut > 0 else path
        probe = parent


def session_project(cwd: str | None) -> str:
    """The project of a cwd that Claude Code reported (a hook's payload, a transcript line).

    An absolute one resolves as :func:`resolve_project`; a relative one (a sanitized or
    hand-made transcript) names no directory on this machine, so it is the project as written,
    the same at ingest and at recall, never resolved against the daemon's own directory."""
    if cwd and not os.path.isabs(os.path.expanduser(cwd)):
        return cwd
    return resolve_project(cwd or None)


def main_worktree(root: str) -> str:
    """The main work tree of the repository whose (possibly linked) work tree is ``root``."""
    gdir = git_dir(root)
    if gdir is None or os.path.basename(gdir) == ".git":
        return root
    try:
        with open(os.path.join(gdir, "commondir"), encoding="utf-8") as fh:
            common = os.path.normpath(os.path.join(gdir, fh.read().strip()))
    except OSError:
        return root  # a submodule (no commondir): a repository of its own
    if os.path.basename(common) != ".git":
        return root  # a bare repository's worktree: its own root is all we know
    return os.path.realpath(os.path.dirname(common))


def repo_relative(path: str, root: str) -> str:
    """``path`` relative to the repository ``root``, agent worktrees folded into the
    repository (``<root>/.claude/worktrees/agent-1/src/a.py`` -> ``src/a.py``); absolute
    when outside ``root``."""
    root = root.rstrip("/")
    if root and (path == root or path.startswith(root + "/")):
        rel = path[len(root) + 1 :]
    else:
        return path
    if rel.startswith(".claude/worktrees/"):
        parts = rel.split("/", 3)
        rel = parts[3] if len(parts) > 3 else ""
    return rel


def git_dir(root: str) -> str | None:
    """The git directory of a work tree root (``.git`` itself, or where a ``.git`` file points)."""
    dot = os.path.join(root, ".git")
    if os.path.isdir(dot):
        return dot
    try:
        with open(dot, encoding="utf-8") as fh:
            first = fh.readline().strip()
    except OSError:
        return None
    if not first.startswith("gitdir:"):
        return None
    target = first[len("gitdir:") :].strip()
    return os.path.normpath(os.path.join(root, target))


def remote_urls(root: str) -> dict[str, str]:
    """``{remote name: url}`` from the repository's config (a linked worktree reads the main
    repository's config through ``commondir``). Standard library only, no `git` process."""
    import configparser

    gdir = git_dir(root)
    if gdir is None:
        return {}
    try:
        with open(os.path.join(gdir, "commondir"), encoding="utf-8") as fh:
            gdir = os.path.normpath(os.path.join(gdir, fh.read().strip()))
    except OSError:
        pass
    parser = configparser.RawConfigParser(strict=False)
    try:
        parser.read(os.path.join(gdir, "config"), encoding="utf-8")
    except (configparser.Error, UnicodeDecodeError):
        return {}
    urls = {}
    for section in parser.sections():
        name = section.strip()
        if name.startswith("remote ") and parser.has_option(section, "url"):
            urls[name[len("remote ") :].strip().strip('"')] = parser.get(section, "url").strip()
    return urls


def normalise_remote(url: str) -> str | None:
    """One spelling for every form of the same repository's URL, without credentials:
    ``https://user:tok@GitHub.com/acme/app.git``, ``git@github.com:acme/app`` and
    ``ssh://git@github.com:22/acme/app/`` all give ``github.com/acme/app``."""
    import re
    from urllib.parse import urlsplit

    url = url.strip()
    if not url:
        return None
    scp = re.fullmatch(r"(?:[^@/]+@)?([^:/]+):(?!//)(.+)", url)
    if scp and "://" not in url:
        host, path, port = scp.group(1), scp.group(2), None
    elif "://" in url:
        parts = urlsplit(url)
        if parts.scheme == "file":
            return None
        try:
            port = parts.port
        except ValueError:
            port = None
        host, path = parts.hostname or "", parts.path
        if port in (22, 80, 443, 9418):
            port = None
    else:
        return None  # a local path: not portable
    path = path.strip("/")
    path = re.sub(r"\.git$", "", path).strip("/")
    path = re.sub(r"/{2,}", "/", path)
    if not host or not path:
        return None
    host = host.lower() + (f":{port}" if port else "")
    return f"{host}/{path}"


def portable_project(root: str) -> str:
    """The identity of a project across machines: ``git:<normalised remote>`` (``origin``, else
    the first remote by name), else ``path:<root>`` (which only matches the same path)."""
    if root.startswith("user:"):
        return root
    urls = remote_urls(root)
    for name in ["origin", *sorted(urls)]:
        if name in urls:
            normal = normalise_remote(urls[name])
            if normal:
                return f"git:{normal}"
    return f"path:{root}"


def project_of(cwd: str | None = None, project: str | None = None) -> str:
    """The project for a request: an explicit project dir, else the cwd, resolved to its git root."""
    return resolve_project(project or cwd or str(Path.cwd()))
