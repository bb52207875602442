"""Which project a directory belongs to: its git root, else the directory itself.

Never the folder's basename alone: two repositories named ``api`` are two projects.
Standard library only, since the daemon resolves every hook's ``cwd`` with it.
"""

from __future__ import annotations

import os
from functools import lru_cache

from memd.names import USER_SCOPE


@lru_cache(maxsize=4096)
def resolve_project(cwd: str | os.PathLike[str] | None) -> str:
    """The absolute git root above ``cwd`` (a ``.git`` dir or file), else ``cwd`` itself."""
    if not cwd:
        return USER_SCOPE
    raw = str(cwd)
    if raw == USER_SCOPE or raw.startswith("user:"):
        return raw
    path = os.path.realpath(os.path.expanduser(raw))
    probe = path
    while True:
        if os.path.exists(os.path.join(probe, ".git")):
            return probe
        parent = os.path.dirname(probe)
        if parent == probe:
            return path
        probe = parent
