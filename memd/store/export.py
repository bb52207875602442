"""Readable Markdown export per project, plus ``index.json`` (read back by
:mod:`memd.store.importing`).

Each memory is one list item ending in a marker comment: ``- text <!-- memd:ID -->``. Editing the
text (or moving the line to another kind's section, or adding ``[pinned]``) and running
``memd import DIR`` updates that memory in place. Lines without a marker become new memories.
Import never deletes: a line removed from the file leaves its memory alone (use `memd forget`).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

from memd import kinds
from memd.atomic import write_atomic
from memd.models import KINDS, USER_SCOPE, Memory, now_iso
from memd.store.table import MemoryStore

SECTIONS = {k.name: k.heading for k in kinds.KINDS}
HEADING_TO_KIND = {v.lower(): k for k, v in SECTIONS.items()}
ITEM = re.compile(r"^- (?P<body>.*?)(?:\s*<!-- memd:(?P<id>[0-9a-f]{4,64}) -->)?\s*$")
PIN_MARK = "[pinned] "
EXPORT_MARK = "<!-- Exported by memd."
"""The first words of the comment at the top of every exported Markdown file."""


def project_file_name(project: str) -> str:
    if project == USER_SCOPE:
        return "user-wide.md"
    base = re.sub(r"[^\w.-]+", "-", project.strip("/")).strip("-")[-60:] or "root"
    digest = hashlib.sha256(project.encode()).hexdigest()[:8]
    return f"{base}-{digest}.md"


def one_line(text: str) -> str:
    return " ".join(text.split())


def render_project(project: str, memories: list[Memory]) -> str:
    by_topic: dict[str, dict[str, list[Memory]]] = defaultdict(lambda: defaultdict(list))
    keywords: dict[str, list[str]] = defaultdict(list)
    for m in memories:
        topic = m.topic or "General"
        by_topic[topic][m.kind].append(m)
        keywords[topic].extend(m.keywords)
    lines = [f"# {project}", ""]
    lines.append(f"{EXPORT_MARK} Edit a line's text and run `memd import DIR` to update it. -->")
    lines.append("")
    for topic in sorted(by_topic):
        lines += [f"## {topic}", ""]
        kw = list(dict.fromkeys(keywords[topic]))[:20]
        if kw:
            lines += [f"Keywords: {', '.join(kw)}", ""]
        for kind in KINDS:
            items = by_topic[topic].get(kind)
            if not items:
                continue
            lines += [f"### {SECTIONS[kind]}", ""]
            for m in sorted(items, key=lambda m: m.created_at):
                pin = PIN_MARK if m.pinned else ""
                lines.append(f"- {pin}{one_line(m.text)} <!-- memd:{m.id} -->")
            lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def export_dir(store: MemoryStore, target: Path) -> dict[str, Any]:
    """Write one Markdown file per project (active memories) and index.json (all of them)."""
    target.mkdir(parents=True, exist_ok=True)
    memories = store.query(None)
    by_project: dict[str, list[Memory]] = defaultdict(list)
    for m in memories:
        by_project[m.project].append(m)
    index: dict[str, Any] = {"version": 1, "exported_at": now_iso(), "projects": {}, "memories": {}}
    for project, items in sorted(by_project.items()):
        name = project_file_name(project)
        active = [m for m in items if m.status == "active"]
        write_private(target / name, render_project(project, active))
        index["projects"][project] = {"file": name, "active": len(active), "total": len(items)}
        for m in items:
            record = m.to_dict()
            record["file"] = name
            index["memories"][m.id] = record
    write_private(target / "index.json", json.dumps(index, ensure_ascii=False, indent=1))
    return {"dir": str(target), "projects": len(by_project), "memories": len(memories)}


def write_private(path: Path, text: str) -> None:
    """A new export file is private (0600); one already there keeps its mode and links."""
    write_atomic(path, text, mode=0o600, through_symlink=True)
