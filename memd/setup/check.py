"""One `memd doctor` check's outcome: its level (``ok``, ``note``, ``warn`` or ``fail``), what it
found, and the command that fixes it (paths in it quoted with :func:`q`)."""

from __future__ import annotations

import shlex
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

Level = Literal["ok", "note", "warn", "fail"]
"""``note``: a set-up that works as it is, with a suggestion (a daemon run in a terminal)."""


@dataclass
class Check:
    name: str
    level: Level
    detail: str
    fix: str = ""

    @property
    def ok(self) -> bool:
        """Notes and warnings count as ok: only a failure makes doctor exit non-zero."""
        return self.level != "fail"

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "ok": self.ok}


def q(path: Path) -> str:
    return shlex.quote(str(path))
