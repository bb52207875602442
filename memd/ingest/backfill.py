"""``memd ingest PATH...``: read transcripts now, as finished sessions.

Files are read in *units*: a session file together with its ``<sid>/subagents/`` files, merged by
timestamp, so a subagent's turns sit where they happened. Each unit's turns, the files' offsets
and the closing (reason ``ingest``) of every session it mentions are written together; units
commit in batches (up to 32 units or 16 MB per transaction). A crash loses at most the batch in
flight, and uuid dedupe makes a second run add nothing.
"""

from __future__ import annotations

import heapq
import os
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from memd.ingest.session import SessionTracker
from memd.ingest.tailer import is_complete_json, iter_transcripts, session_hint
from memd.ingest.transcript import ParsedLine, ParseStats, parse_line
from memd.settings import Settings
from memd.state import State


@dataclass
class BackfillReport:
    """What a backfill read and produced. ``segments`` are the keys that became pending."""

    files: int = 0
    bytes: int = 0
    sessions: int = 0
    segments: int = 0
    turns: int = 0
    bad_lines: int = 0
    duplicates: int = 0
    seconds: float = 0.0
    files_total: int = 0
    bytes_total: int = 0
    segment_keys: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("segment_keys")
        return d

    @property
    def eta_seconds(self) -> float | None:
        """Estimated seconds left, from the byte rate so far."""
        if not self.bytes or not self.seconds:
            return None
        return max(0.0, (self.bytes_total - self.bytes) * self.seconds / self.bytes)


ProgressCallback = Callable[[BackfillReport], None]


BATCH_UNITS = 32
BATCH_BYTES = 16 << 20
BACKFILL_DEPTH = 16
"""``memd ingest`` accepts any folder of transcripts, e.g. a repository's test data."""


def transcript_units(paths: Iterable[str | os.PathLike[str]]) -> list[list[str]]:
    """Files under ``paths`` grouped into units: a session file plus its subagent files."""
    files: list[str] = []
    seen: set[str] = set()
    for p in paths:
        for f in iter_transcripts(
            os.path.realpath(os.path.expanduser(os.fspath(p))), BACKFILL_DEPTH
        ):
            if f not in seen:
                seen.add(f)
                files.append(f)
    mains = {}
    for f in files:
        fp = Path(f)
        if fp.parent.name != "subagents" and not fp.name.startswith("agent-"):
            mains[(str(fp.parent), fp.stem)] = f
    units: dict[str, list[str]] = {f: [f] for f in mains.values()}
    for f in files:
        fp = Path(f)
        if f in units:
            continue
        if fp.parent.name == "subagents":
            main = mains.get((str(fp.parent.parent.parent), fp.parent.parent.name))
        else:  # legacy layout: the parent is named only inside the lines
            main = mains.get((str(fp.parent), _peek_session_id(f)))
        if main is not None:
            units[main].append(f)
        else:
            units[f] = [f]
    return list(units.values())


def _peek_session_id(path: str, limit: int = 1 << 16) -> str:
    """The sessionId of the first line that has one, read from the file's head."""
    try:
        with open(path, "rb") as f:
            head = f.read(limit)
    except OSError:
        return ""
    for raw in head.split(b"\n")[:20]:
        item = parse_line(raw)
        if item is not None and item.session_id:
            return item.session_id
    return ""


def backfill(
    paths: Iterable[str | os.PathLike[str]],
    state: State,
    settings: Settings,
    progress_cb: ProgressCallback | None = None,
    tracker: SessionTracker | None = None,
) -> BackfillReport:
    """Ingest every transcript under ``paths`` as finished sessions. Idempotent.

    Pass the daemon's ``tracker`` when it runs, so live tailing and backfill share one lock.
    """
    tracker = tracker or SessionTracker(settings, state)
    units = transcript_units(paths)
    report = BackfillReport()
    sizes = {}
    for unit in units:
        for f in unit:
            try:
                sizes[f] = os.path.getsize(f)
            except OSError:
                sizes[f] = 0
    report.files_total = len(sizes)
    report.bytes_total = sum(sizes.values())
    started = time.monotonic()
    sessions: set[str] = set()
    for batch in _batches(units, sizes):
        # One transaction (one fsync) per batch; a crash loses at most the batch in flight.
        with tracker.lock, state.transaction():
            for unit in batch:
                _ingest_unit(unit, state, tracker, report, sessions)
                report.files += len(unit)
                report.bytes += sum(sizes[f] for f in unit)
                report.sessions = len(sessions)
                report.seconds = time.monotonic() - started
                if progress_cb is not None:
                    progress_cb(report)
    report.segments = len(report.segment_keys)
    report.seconds = time.monotonic() - started
    return report


def _batches(units: list[list[str]], sizes: dict[str, int]) -> Iterator[list[list[str]]]:
    batch: list[list[str]] = []
    size = 0
    for unit in units:
        batch.append(unit)
        size += sum(sizes[f] for f in unit)
        if len(batch) >= BATCH_UNITS or size >= BATCH_BYTES:
            yield batch
            batch, size = [], 0
    if batch:
        yield batch


def _ingest_unit(
    unit: list[str],
    state: State,
    tracker: SessionTracker,
    report: BackfillReport,
    sessions: set[str],
) -> None:
    stats = ParseStats()
    ends: list[tuple[str, int, int, int]] = []
    streams = []
    for path in unit:
        read = _read_file(path, stats)
        if read is None:
            continue
        items, inode, end, size = read
        ends.append((path, inode, end, size))
        streams.append(items)
    if len(streams) == 1:
        merged: Iterator[ParsedLine] = iter(streams[0])
    else:
        merged = heapq.merge(*streams, key=lambda it: it.timestamp)
    items = list(merged)
    mentioned = {it.session_id for it in items if it.session_id}

    def commit() -> None:
        for path, inode, end, size in ends:
            rec = state.get_offset(path)
            if rec is not None and rec.inode == inode and rec.offset > end:
                continue  # the live tailer is already further along
            state.set_offset(path, inode, end, size)

    result = tracker.feed(items, commit=commit, close=sorted(mentioned), close_reason="ingest")
    report.turns += result.turns
    report.duplicates += result.duplicates
    report.bad_lines += stats.bad_lines
    report.segment_keys.extend(result.closed)
    sessions.update(mentioned)


def _read_file(path: str, stats: ParseStats) -> tuple[list[ParsedLine], int, int, int] | None:
    """All items of the file's complete lines; an unterminated tail counts only if it is JSON."""
    try:
        with open(path, "rb") as f:
            st = os.fstat(f.fileno())
            data = f.read()
    except OSError:
        return None
    hint = session_hint(path)
    cut = data.rfind(b"\n") + 1
    body, tail = data[:cut], data[cut:]
    items = []
    for raw in body[:-1].split(b"\n") if body else ():
        item = parse_line(raw, stats, hint)
        if item is not None:
            items.append(item)
    end = cut
    if tail.strip():
        if is_complete_json(tail):
            item = parse_line(tail, stats, hint)
            if item is not None:
                items.append(item)
            end = len(data)
        else:
            stats.bad_lines += 1  # left unread: it may still be completing
    return items, st.st_ino, end, st.st_size
