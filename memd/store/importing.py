"""What `memd import` was given, recognised before anything is read into the store: a directory
written by `memd export`, one of its files, a JSON Lines file, or something else, which is
refused with one clear error (and nothing imported).

Both imports then answer the same summary: ``read``, ``added``, ``updated``, ``unchanged`` and
``skipped``, with the first bad lines in ``errors``; a file in which no line is a memory is an
error too (nothing was written).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from memd.errors import UserError
from memd.store import export
from memd.store.table import MemoryStore

HEAD_BYTES = 64 * 1024
SAMPLE_LINES = 5
"""A file is JSON Lines when one of its first few non-blank lines is a JSON object."""
ERRORS_KEPT = 20
USAGE = (
    'memd import takes a JSON Lines file (one memory object per line; only "text" is '
    "required) or a directory written by `memd export`"
)


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
    if export.EXPORT_MARK in text:
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
        report = export.import_dir(store, path, redact_patterns)
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
        report = export.import_jsonl(
            store, path, default_project, redact_patterns, resident=resident
        )
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
