"""`memd import`: what it was given, recognised before anything is read into the store (a
directory written by `memd export`, one of its files, a JSON Lines file, or something else,
which is refused with one clear error and nothing imported), then read into the store.

Both imports then answer the same summary: ``read``, ``added``, ``updated``, ``unchanged`` and
``skipped``, with the first bad lines in ``errors``; a file in which no line is a memory is an
error too (nothing was written).
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from memd.errors import UserError
from memd.heap import trim_heap
from memd.models import Memory, now_iso
from memd.store.export import EXPORT_MARK, HEADING_TO_KIND, ITEM, PIN_MARK, one_line
from memd.store.table import MemoryStore
from memd.store.upsert import upsert

HEAD_BYTES = 64 * 1024
SAMPLE_LINES = 5
"""A file is JSON Lines when one of its first few non-blank lines is a JSON object."""
ERRORS_KEPT = 20
USAGE = (
    'memd import takes a JSON Lines file (one memory object per line; only "text" is '
    "required) or a directory written by `memd export`"
)


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


def recognise(path: Path) -> str:
    """``export-dir`` or ``jsonl``; anything else raises a UserError that says what it is."""
    if path.is_dir():
        if (path / "index.json").is_file():
            return "export-dir"
        raise UserError(
            f"{path} is a directory without index.json, not one written by `memd export`; {USAGE}"
        )
    if not path.is_file():
        raise UserError(f"{path} is not a file or a directory; {USAGE}")
    try:
        with open(path, "rb") as fh:
            head = fh.read(HEAD_BYTES)
    except OSError as exc:
        raise UserError(f"cannot read {path}: {exc.strerror}") from exc
    text = head.decode("utf-8", "replace")
    if EXPORT_MARK in text:
        raise UserError(
            f"{path} is one file of a `memd export` directory; import the whole directory: "
            f"memd import {path.parent}"
        )
    if is_export_index(path, text):
        raise UserError(
            f"{path} is the index of a `memd export` directory; import the whole directory: "
            f"memd import {path.parent}"
        )
    if b"\0" in head:
        raise UserError(f"{path} is a binary file, not JSON Lines; {USAGE}")
    lines = [line.strip() for line in text.splitlines() if line.strip()][:SAMPLE_LINES]
    if not lines:
        raise UserError(f"{path} is empty; {USAGE}")
    if any(is_object(line) for line in lines):
        return "jsonl"
    first = lines[0]
    if first in ("{", "[") or first.startswith("[{"):
        what = "a JSON document spread over several lines"
    else:
        what = f"its first line is not a JSON object: {first[:60]!r}"
    raise UserError(f"{path} is not JSON Lines ({what}); {USAGE}")


def is_object(line: str) -> bool:
    try:
        return isinstance(json.loads(line), dict)
    except ValueError:
        return False


def is_export_index(path: Path, head: str) -> bool:
    start = head.lstrip()[:4096]
    return start.startswith("{") and '"exported_at"' in start and '"projects"' in start


def import_path(
    store: MemoryStore,
    path: Path,
    default_project: str,
    redact_patterns: list[str],
    *,
    resident: bool = False,
) -> dict[str, Any]:
    """Import ``path`` once recognised; the summary of :mod:`memd.store.importing`."""
    kind = recognise(path)
    if kind == "export-dir":
        report = import_dir(store, path, redact_patterns)
        errors = report["errors"]
        summary = {
            "kind": kind,
            "read": sum(report[k] for k in ("updated", "added", "unchanged"))
            + report["restored_from_index"],
            "added": report["added"] + report["restored_from_index"],
            "updated": report["updated"],
            "unchanged": report["unchanged"],
            "skipped": len(errors),
            "restored_from_index": report["restored_from_index"],
        }
    else:
        report = import_jsonl(store, path, default_project, redact_patterns, resident=resident)
        errors = report["errors"]
        summary = {
            "kind": kind,
            "read": report["read"] + len(errors),
            "added": report.get("inserted", 0),
            "updated": report.get("merged", 0),
            "unchanged": report.get("unchanged", 0),
            "skipped": len(errors),
            "bulk": report["bulk"],
        }
        if not report["read"]:
            shown = "; ".join(errors[:3])
            raise UserError(f"{path}: no line is a memory, nothing was imported ({shown})")
    return {**summary, "errors": errors[:ERRORS_KEPT]}
