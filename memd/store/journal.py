"""The append-only journal: the source of truth from which the table can be rebuilt.

One JSON object per line: ``{"op": "put", "m": {...}}`` (a whole memory, no vector),
``{"op": "del", "id": ...}`` or ``{"op": "touch", "ids": [...], "at": ...}``. A write is
all or nothing: on any error the file is truncated back to where it was.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from memd.atomic import write_atomic
from memd.errors import StoreError
from memd.models import Memory

log = logging.getLogger(__name__)


class Journal:
    def __init__(self, path: Path) -> None:
        self.path = path

    def append(self, entries: list[dict[str, Any]]) -> None:
        if not entries:
            return
        payload = b"".join(
            json.dumps(e, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"
            for e in entries
        )
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            start = os.fstat(fd).st_size
            try:
                view = memoryview(payload)
                while view:
                    written = os.write(fd, view)
                    view = view[written:]
                os.fsync(fd)
            except OSError as exc:
                os.ftruncate(fd, start)
                raise StoreError(
                    f"journal write failed ({exc.strerror}); nothing was stored"
                ) from exc
        finally:
            os.close(fd)

    def size(self) -> int:
        try:
            return self.path.stat().st_size
        except FileNotFoundError:
            return 0

    def lines(self) -> int:
        try:
            with open(self.path, "rb") as fh:
                return sum(chunk.count(b"\n") for chunk in iter(lambda: fh.read(1 << 20), b""))
        except FileNotFoundError:
            return 0

    def truncate(self, size: int) -> None:
        """Undo an append whose table write failed (truncating needs no free space)."""
        with open(self.path, "r+b") as fh:
            fh.truncate(size)
            os.fsync(fh.fileno())

    def entries(self) -> Iterator[dict[str, Any]]:
        try:
            fh = open(self.path, "rb")
        except FileNotFoundError:
            return
        with fh:
            for lineno, line in enumerate(fh, 1):
                if not line.endswith(b"\n"):
                    log.warning("journal line %d is partial; ignored", lineno)
                    break
                try:
                    yield json.loads(line)
                except ValueError:
                    log.warning("journal line %d is not JSON; ignored", lineno)

    def replay(self) -> dict[str, Memory]:
        """The memories the journal describes, last write wins."""
        state: dict[str, Memory] = {}
        for entry in self.entries():
            op = entry.get("op")
            if op == "put":
                try:
                    memory = Memory.from_dict(entry["m"])
                except Exception as exc:  # a damaged entry must not stop a rebuild
                    log.warning("journal entry skipped: %s", exc)
                    continue
                state[memory.id] = memory
            elif op == "del":
                state.pop(str(entry.get("id")), None)
            elif op == "touch":
                for mid in entry.get("ids", []):
                    if mid in state:
                        state[mid].hits += 1
                        state[mid].last_used_at = entry.get("at", "")
        return state

    def rewrite(self, memories: list[Memory]) -> None:
        """Compact the journal to one put per live memory (atomic replace)."""
        lines = (
            json.dumps({"op": "put", "m": m.to_dict()}, ensure_ascii=False).encode() + b"\n"
            for m in memories
        )
        write_atomic(self.path, lines, mode=0o600)
