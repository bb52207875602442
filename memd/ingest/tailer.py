"""Live tailing of Claude Code's transcript directory (watchdog: inotify / FSEvents).

Per file, memd tracks ``(inode, offset)`` in :class:`memd.state.State`. On every event it reads
from the offset to the end of the file and hands complete lines to the
:class:`memd.ingest.session.SessionTracker`; the turns and the new offset commit in one transaction, so a
restart resumes exactly where the last commit stopped. A partial last line stays unconsumed until
its newline arrives (the bytes stay in the file, so nothing is buffered across restarts); a last
line that is already a complete JSON object is taken at once.

A file that shrank (truncation) or got a new inode (atomic replace, a moved event) is read again
from 0; uuid dedupe keeps repeated lines out. Deleted files lose their offsets. A periodic rescan
(``settings.rescan_seconds``) is the safety net for lost events and new project folders; the same
thread closes segments idle for ``session_idle_seconds`` (checked every 30 s).

On the very first start (no ``tailer.initialized`` key in state), existing files that have been
quiet for ``session_idle_seconds`` are history: the tailer marks them read and lists them in
:attr:`Tailer.history`, which the daemon backfills as finished sessions in the background
(``settings.backfill_history``; :data:`HISTORY_KEY` keeps its progress). Files that are still
active, and every file that appears later, are read from the start.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from watchdog.events import (
    DirCreatedEvent,
    DirMovedEvent,
    FileCreatedEvent,
    FileDeletedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileSystemEvent,
    FileSystemEventHandler,
)
from watchdog.observers import Observer

from memd.ingest.session import SessionTracker
from memd.ingest.transcript import ParsedLine, ParseStats, parse_line
from memd.settings import Settings
from memd.state import State

log = logging.getLogger(__name__)

CHUNK_BYTES = 4 << 20
"""Bytes read (and committed) per step, so a huge file never sits in memory at once."""
MAX_DEPTH = 4
"""``<project>/<sid>/subagents/agent-*.jsonl`` is the deepest layout Claude Code writes."""
INITIALIZED_KEY = "tailer.initialized"
HISTORY_KEY = "backfill.history"
"""State key: the first start's backfill of existing transcripts, ``{"state": "queued" |
"running" | "done" | "failed", "files_total", "paths"?, ...progress}``."""
BATCH_FILES = 64
"""Queued files read in one transaction (one fsync), e.g. after a restart or a burst."""
IDLE_CHECK_SECONDS = 30.0
"""How often the tailer closes segments idle for ``session_idle_seconds``."""

_EVENTS: list[type[FileSystemEvent]] = [
    FileCreatedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileDeletedEvent,
    DirCreatedEvent,
    DirMovedEvent,
]


def is_transcript(path: str | os.PathLike[str]) -> bool:
    """A ``.jsonl`` transcript memd reads (not the ``agent-acompact-*`` compaction summarizer)."""
    name = os.path.basename(os.fspath(path))
    return name.endswith(".jsonl") and not name.startswith("agent-acompact")


def session_hint(path: str | os.PathLike[str]) -> str:
    """The session id the file's location implies (used only when a line lacks sessionId)."""
    p = Path(path)
    if p.parent.name == "subagents":
        return p.parent.parent.name
    if p.name.startswith("agent-"):
        return ""
    return p.stem


def iter_transcripts(root: str | os.PathLike[str], max_depth: int = MAX_DEPTH) -> Iterator[str]:
    """Every transcript file under ``root`` (a file yields itself), sorted per directory."""
    root = os.fspath(root)
    if os.path.isfile(root):
        if is_transcript(root):
            yield root
        return
    stack = [(root, 0)]
    while stack:
        d, depth = stack.pop()
        try:
            entries = sorted(os.scandir(d), key=lambda e: e.name)
        except OSError:
            continue
        subdirs = []
        for e in entries:
            try:
                if e.is_dir(follow_symlinks=False):
                    if depth + 1 < max_depth:
                        subdirs.append((e.path, depth + 1))
                elif is_transcript(e.name) and e.is_file():
                    yield e.path
            except OSError:
                continue
        stack.extend(reversed(subdirs))


class TranscriptReader:
    """Reads new complete lines of transcript files into the tracker.

    Lock order, everywhere: this reader's lock, then ``tracker.lock``, then the state's lock.
    """

    def __init__(self, state: State, tracker: SessionTracker) -> None:
        self.state = state
        self.tracker = tracker
        self.stats = ParseStats()
        self._lock = threading.Lock()

    def read(self, path: str) -> int:
        """Read ``path`` from its stored offset to EOF; returns turns added."""
        return self.read_many([path])

    def read_many(self, paths: list[str]) -> int:
        """Read several files in one transaction (one fsync); a failing file is skipped alone."""
        added = 0
        with self._lock, self.tracker.lock, self.state.transaction():
            for path in paths:
                try:
                    added += self._read_path(path)
                except Exception:
                    if len(paths) == 1:
                        raise
                    log.exception("reading transcript %s failed", path)
        return added

    def _read_path(self, path: str) -> int:
        try:
            f = open(path, "rb")  # closed by the `with f` below
        except FileNotFoundError:
            self.state.forget_offset(path)
            return 0
        except OSError as exc:
            log.warning("cannot read transcript %s: %s", path, exc)
            return 0
        with f:
            return self._read_open(path, f)

    def _read_open(self, path: str, f) -> int:  # type: ignore[no-untyped-def]
        st = os.fstat(f.fileno())
        rec = self.state.get_offset(path)
        offset = 0
        if rec is not None and rec.inode == st.st_ino and rec.offset <= st.st_size:
            offset = rec.offset
            if offset == st.st_size:
                return 0
        hint = session_hint(path)
        added = 0
        f.seek(offset)
        carry = b""
        while True:
            chunk = f.read(CHUNK_BYTES)
            if not chunk:
                break
            data = carry + chunk
            cut = data.rfind(b"\n")
            if cut < 0:
                carry = data
                continue
            complete, carry = data[: cut + 1], data[cut + 1 :]
            end = offset + len(complete)
            added += self._feed(path, complete[:-1].split(b"\n"), hint, st.st_ino, end, st.st_size)
            offset = end
        if carry.strip() and is_complete_json(carry):
            end = offset + len(carry)
            added += self._feed(path, [carry], hint, st.st_ino, end, st.st_size)
        return added

    def _feed(
        self, path: str, lines: list[bytes], hint: str, inode: int, end: int, size: int
    ) -> int:
        items: list[ParsedLine] = []
        for raw in lines:
            item = parse_line(raw, self.stats, hint)
            if item is not None:
                items.append(item)
        result = self.tracker.feed(
            items, commit=lambda: self.state.set_offset(path, inode, end, max(size, end))
        )
        return result.turns


class Tailer:
    """Watches ``settings.transcripts_dir`` and feeds new lines to the session tracker."""

    def __init__(
        self,
        settings: Settings,
        state: State,
        tracker: SessionTracker,
        *,
        read_existing: bool = False,
        close_idle: bool = True,
    ) -> None:
        self.settings = settings
        self.state = state
        self.tracker = tracker
        # Real paths throughout: hooks report transcript_path, which may go through a symlink.
        self.root = Path(os.path.realpath(Path(settings.transcripts_dir).expanduser()))
        self.read_existing = read_existing
        self.close_idle = close_idle
        """Whether the tailer's periodic thread also calls ``tracker.close_idle()``."""
        self.reader = TranscriptReader(state, tracker)
        self.stopping = threading.Event()
        """Set by ``stop``: the watcher and the periodic thread end."""
        self.started = False
        self.last_rescan = 0.0
        self._pending: dict[str, None] = {}
        self._cond = threading.Condition()
        self._busy = False
        self._observer: Observer | None = None  # type: ignore[valid-type]
        self._watching = False
        self._threads: list[threading.Thread] = []
        self.history: list[str] = []
        """Files that were already quiet at the very first start (to backfill)."""

    # --- lifecycle

    def start(self) -> None:
        """Initial scan, then the observer, the reader thread and the rescan thread."""
        if self.started:
            return
        self.stopping.clear()
        self._first_start()
        self._observer = Observer()
        self._watch()
        self._observer.start()
        for name, target in (("memd-tailer", self._work), ("memd-periodic", self._rescan_loop)):
            t = threading.Thread(target=target, name=name, daemon=True)
            t.start()
            self._threads.append(t)
        self.started = True
        self.rescan()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the threads first (the periodic one may restart the observer), then the observer."""
        self.stopping.set()
        with self._cond:
            self._cond.notify_all()
        for t in self._threads:
            t.join(timeout)
        self._threads.clear()
        if self._observer is not None:
            self._observer.stop()
            if self._observer.is_alive():
                self._observer.join(timeout)
        self._watching = False
        self.started = False

    # --- reading

    def poll(self, path: str | os.PathLike[str]) -> int:
        """Read one file now (e.g. on a session-end hook, before closing the session)."""
        return self.reader.read(self._real(path))

    def rescan(self) -> int:
        """Queue every transcript whose (inode, size) differs from its offset; forget vanished ones.

        Returns how many files were queued.
        """
        self.last_rescan = time.time()
        self._watch()
        known = self.state.offsets()
        queued = 0
        present = set()
        for path in iter_transcripts(self.root):
            present.add(path)
            rec = known.get(path)
            try:
                st = os.stat(path)
            except OSError:
                continue
            if rec is None or rec.inode != st.st_ino or rec.offset != st.st_size:
                self.enqueue(path)
                queued += 1
        root = os.fspath(self.root) + os.sep
        for path in known:
            if path.startswith(root) and path not in present and not os.path.exists(path):
                self.state.forget_offset(path)
        return queued

    def enqueue(self, path: str) -> None:
        """Have the reader thread read ``path`` soon (e.g. on a Stop hook)."""
        path = self._real(path)
        with self._cond:
            self._pending[path] = None
            self._cond.notify()

    def wait_idle(self, timeout: float = 5.0) -> bool:
        """Wait until the queue is empty and no read is running (tests, shutdown)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._pending or self._busy:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(left)
        return True

    # --- internals

    def _first_start(self) -> None:
        if self.state.get(INITIALIZED_KEY) is not None:
            return
        if not self.read_existing and self.root.is_dir():
            quiet_before = time.time() - self.settings.session_idle_seconds
            for path in iter_transcripts(self.root):
                try:
                    st = os.stat(path)
                except OSError:
                    continue
                if st.st_mtime < quiet_before and self.state.get_offset(path) is None:
                    self.state.set_offset(path, st.st_ino, st.st_size, st.st_size)
                    self.history.append(path)
        if self.history:
            self.state.set(
                HISTORY_KEY,
                {
                    "state": "queued" if self.settings.backfill_history else "skipped",
                    "files_total": len(self.history),
                    "paths": self.history if self.settings.backfill_history else [],
                },
            )
        self.state.set(INITIALIZED_KEY, time.time())

    def _watch(self) -> None:
        if self._watching or self._observer is None or not self.root.is_dir():
            return
        handler = _Events(self)
        try:
            self._observer.schedule(handler, str(self.root), recursive=True, event_filter=_EVENTS)
        except OSError as exc:  # e.g. inotify watch limit: the rescan still covers us
            log.warning("cannot watch %s: %s; relying on rescans", self.root, exc)
            return
        self._watching = True

    def _check_observer(self) -> None:
        """Restart the observer if its thread or an emitter thread died (then rescan)."""
        obs = self._observer
        if obs is None or self.stopping.is_set():
            return
        alive = obs.is_alive() and all(e.is_alive() for e in obs.emitters)
        if alive:
            return
        log.warning("the transcript watcher stopped; restarting it")
        with contextlib.suppress(Exception):
            obs.stop()
        self._observer = Observer()
        self._watching = False
        self._watch()
        self._observer.start()
        self.last_rescan = 0.0  # rescan now: events may have been lost

    def _work(self) -> None:
        while not self.stopping.is_set():
            with self._cond:
                while not self._pending and not self.stopping.is_set():
                    self._cond.wait(IDLE_CHECK_SECONDS)  # enqueue() and stop() notify
                if self.stopping.is_set():
                    return
                batch = []
                for path in self._pending:
                    batch.append(path)
                    if len(batch) >= BATCH_FILES:
                        break
                for path in batch:
                    del self._pending[path]
                self._busy = True
            try:
                self.reader.read_many(batch)
            except Exception:  # a bad file must not stop the tailer
                log.exception("reading transcripts %s failed", batch[:3])
            finally:
                with self._cond:
                    self._busy = False
                    self._cond.notify_all()

    def _rescan_loop(self) -> None:
        """Rescan every ``rescan_seconds``; close idle segments every ``IDLE_CHECK_SECONDS``."""
        tick = min(self.settings.rescan_seconds, IDLE_CHECK_SECONDS)
        while not self.stopping.wait(tick):
            self._check_observer()
            if self.close_idle:
                try:
                    self.tracker.close_idle()
                except Exception:
                    log.exception("closing idle sessions failed")
            if time.time() - self.last_rescan >= self.settings.rescan_seconds:
                try:
                    self.rescan()
                except Exception:
                    log.exception("transcript rescan failed")

    def _forget(self, path: str) -> None:
        self.state.forget_offset(path)

    def _real(self, path: str | os.PathLike[str]) -> str:
        raw = os.fspath(path)
        if raw.startswith(os.fspath(self.root) + os.sep):
            return raw  # already under the real root (watchdog's and the rescan's paths)
        return os.path.realpath(raw)


class _Events(FileSystemEventHandler):
    def __init__(self, tailer: Tailer) -> None:
        self.tailer = tailer

    def on_any_event(self, event: FileSystemEvent) -> None:
        t = self.tailer
        src = os.fsdecode(event.src_path)
        if event.is_directory:
            if event.event_type in ("created", "moved"):
                # A new project folder: files may have landed before the watch did.
                where = os.fsdecode(event.dest_path) if event.event_type == "moved" else src
                for path in iter_transcripts(where):
                    t.enqueue(path)
            return
        if event.event_type == "moved":
            if is_transcript(src):
                t._forget(src)
            dest = os.fsdecode(event.dest_path)
            if is_transcript(dest):
                t.enqueue(dest)
        elif event.event_type == "deleted":
            if is_transcript(src):
                t._forget(src)
        elif is_transcript(src):
            t.enqueue(src)


def is_complete_json(tail: bytes) -> bool:
    """Whether an unterminated last line is already a whole JSON object."""
    tail = tail.strip()
    if not (tail.startswith(b"{") and tail.endswith(b"}")):
        return False
    try:
        return isinstance(json.loads(tail), dict)
    except ValueError:
        return False
