"""Readable Markdown export per project, plus ``index.json``; and the imports that read it back.

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
from memd.errors import UserError
from memd.heap import trim_heap
from memd.models import KINDS, USER_SCOPE, Memory, now_iso
from memd.store.table import MemoryStore
from memd.store.upsert import upsert

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


def parse_markdown(text: str) -> list[tuple[str, str, str, str | None, bool]]:
    """(topic, kind, text, id, pinned) for each list item under a known kind heading."""
    topic, kind = "General", None
    items = []
    for raw in text.splitlines():
        line = raw.rstrip()
        if line.startswith("## "):
            topic, kind = line[3:].strip(), None
        elif line.startswith("### "):
            kind = HEADING_TO_KIND.get(line[4:].strip().lower())
        elif kind and line.startswith("- "):
            m = ITEM.match(line)
            if not m:
                continue
            body = m.group("body").strip()
            pinned = body.startswith(PIN_MARK)
            body = body.removeprefix(PIN_MARK).strip()
            if body:
                items.append((topic, kind, body, m.group("id"), pinned))
    return items


def import_dir(store: MemoryStore, source: Path, redact_patterns: list[str]) -> dict[str, Any]:
    """Apply an edited export: changed lines update their memory, new lines are added (their
    text redacted with ``redact_patterns`` besides the built-in ones).

    Atomic against other writers: it reads memories and writes them back changed.
    """
    with store.write_lock:
        return _import_dir(store, source, redact_patterns)


def _import_dir(store: MemoryStore, source: Path, redact_patterns: list[str]) -> dict[str, Any]:
    from memd.extract.redact import redact

    index_path = source / "index.json"
    if not index_path.is_file():
        raise UserError(f"{source} has no index.json: not a directory written by `memd export`")
    try:
        index = json.loads(index_path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise UserError(f"{index_path}: not valid JSON: {exc}") from exc
    errors: list[str] = []
    report: dict[str, Any] = {
        "updated": 0,
        "added": 0,
        "unchanged": 0,
        "restored_from_index": 0,
        "errors": errors,
    }
    # Memories in the index but missing from the store (an import into a fresh home).
    known = {m.id for m in store.query(None)}
    missing = [
        Memory.from_dict({k: v for k, v in rec.items() if k != "file"})
        for mid, rec in index.get("memories", {}).items()
        if mid not in known
    ]
    if missing:
        store.write(missing, {})
        report["restored_from_index"] = len(missing)
    for project, meta in index.get("projects", {}).items():
        path = source / meta["file"]
        if not path.is_file():
            errors.append(f"{path}: missing; skipped")
            continue
        changed: list[Memory] = []
        new: list[Memory] = []
        for topic, kind, text, mid, pinned in parse_markdown(path.read_text(encoding="utf-8")):
            text = redact(text, redact_patterns)
            if mid is None:
                new.append(
                    Memory(text=text, kind=kind, project=project, topic=topic, pinned=pinned)
                )
                continue
            try:
                memory = store.get(mid)
            except UserError:
                new.append(
                    Memory(text=text, kind=kind, project=project, topic=topic, pinned=pinned)
                )
                continue
            same_topic = topic == (memory.topic or "General")
            if one_line(memory.text) == text and (memory.kind, memory.pinned) == (kind, pinned):
                if same_topic:
                    report["unchanged"] += 1
                    continue
            if one_line(memory.text) != text:
                memory.history.append({"at": now_iso(), "edited_from": memory.text})
                memory.text = text
            memory.kind, memory.pinned = kind, pinned
            memory.topic = "" if topic == "General" else topic
            memory.updated_at = now_iso()
            changed.append(memory)
        if changed:
            store.write(changed, {})
            report["updated"] += len(changed)
        for result in upsert(store, new):
            report["added" if result.action == "inserted" else "unchanged"] += 1
    return report


BULK_LINES = 1000
"""Files with more lines than this are imported in bulk: near-duplicates wait for the dedupe job."""
BATCH = 512
TRIM_EVERY_BATCHES = 20
"""A bulk import hands freed heap back to the OS every this many batches."""


def import_jsonl(
    store: MemoryStore,
    path: Path,
    default_project: str,
    redact_patterns: list[str],
    *,
    resident: bool = False,
) -> dict[str, Any]:
    """One memory object per line; only ``text`` is required. Bad lines are reported by number.

    The file is streamed in batches, so memory stays bounded whatever its size. A bulk import
    gives the model's memory back before the index build unless it is ``resident`` (the
    daemon's, which keeps its model).
    """
    from memd.extract.redact import redact
    from memd.project import resolve_project

    try:
        with open(path, "rb") as raw:
            lines_total = sum(1 for _ in raw)
        fh = open(path, encoding="utf-8", errors="replace")
    except OSError as exc:
        raise UserError(f"cannot read {path}: {exc.strerror}") from exc
    bulk = lines_total > BULK_LINES
    errors: list[str] = []
    actions: dict[str, int] = defaultdict(int)
    batch: list[Memory] = []
    read = 0

    flushes = 0

    def flush() -> None:
        nonlocal flushes
        for result in upsert(store, batch, near_dups=not bulk):
            actions[result.action] += 1
        batch.clear()
        flushes += 1
        if bulk and flushes % TRIM_EVERY_BATCHES == 0:
            trim_heap()

    with fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                try:
                    raw = json.loads(line)
                except ValueError as exc:
                    raise ValueError(f"not valid JSON ({exc})") from exc
                if not isinstance(raw, dict):
                    raise ValueError("not a JSON object")
                if not isinstance(raw.get("text"), str):
                    raise ValueError("missing 'text'")
                raw["text"] = redact(raw["text"], redact_patterns)
                proj = raw.get("project")
                raw["project"] = resolve_project(proj) if proj else default_project
                batch.append(Memory.from_dict(raw))
                read += 1
            except (ValueError, TypeError, UserError) as exc:
                errors.append(f"line {lineno}: {str(exc)[:200]}")
            if len(batch) >= BATCH:
                flush()
    if batch:
        flush()
    if bulk:
        if not resident:  # nothing left to embed: the index build gets the model's memory
            store.embedder.unload()
            trim_heap()
        store.optimize()
    return {"read": read, **actions, "bulk": bulk, "errors": errors}
