"""The readable archive: every memory the cleanup job archives is appended to a Markdown file.

``$MEMD_HOME/archive/<YYYY-MM>.md``, one section per memory, written *before* the table marks the
memory ``archived``: nothing leaves the active set without a readable trace. The memory itself
stays in the table with status ``archived``; ``memd restore ID`` brings it back.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from memd.models import Memory


@dataclass(frozen=True)
class ArchiveEntry:
    """One memory on its way to the archive, and why."""

    memory: Memory
    reason: str


def archive_dir(home: Path) -> Path:
    return home / "archive"


def archive_path(home: Path, when: datetime) -> Path:
    return archive_dir(home) / f"{when.astimezone(UTC):%Y-%m}.md"


def render(entry: ArchiveEntry, at: str) -> str:
    m = entry.memory
    lines = [
        f"## {m.id} · {m.kind} · archived {at}",
        "",
        f"- project: {m.project}",
        f"- reason: {entry.reason}",
        f"- importance: {m.importance:.2f} · score: {m.score:.3f} · hits: {m.hits}",
        f"- created: {m.created_at} · last used: {m.last_used_at or 'never'}",
    ]
    if m.topic:
        lines.append(f"- topic: {m.topic}")
    if m.keywords:
        lines.append(f"- keywords: {', '.join(m.keywords)}")
    for s in m.sources[:10]:
        lines.append(f"- source: session {s.session_id} line {s.uuid} at {s.timestamp}")
    if len(m.sources) > 10:
        lines.append(f"- … and {len(m.sources) - 10} more sources")
    lines.append(f"- restore: `memd restore {m.id}`")
    lines.append("")
    lines.extend(f"> {line}" if line else ">" for line in m.text.splitlines())
    lines.append("")
    return "\n".join(lines) + "\n"


def append(home: Path, entries: list[ArchiveEntry], now: datetime, at: str) -> Path | None:
    """Append ``entries`` to this month's archive file (0600 in a 0700 dir) and fsync it."""
    if not entries:
        return None
    path = archive_path(home, now)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.parent.chmod(0o700)
    fresh = not path.exists()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    with os.fdopen(fd, "a", encoding="utf-8") as out:
        if fresh:
            out.write(
                f"# memd archive {now.astimezone(UTC):%Y-%m}\n\n"
                "Memories archived by the cleanup job. They are still in the store with status\n"
                "`archived`; `memd restore ID` makes one active again.\n\n"
            )
        for entry in entries:
            out.write(render(entry, at))
        out.flush()
        os.fsync(out.fileno())
    return path
