"""The writer lock: one process writes to the store per $MEMD_HOME (the daemon, or the CLI)."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from memd.errors import LockedError


class WriterLock:
    """An exclusive, non-blocking flock on $MEMD_HOME/writer.lock, held until ``release()``."""

    def __init__(self, home: Path) -> None:
        self.path = home / "writer.lock"
        self._fd: int | None = None

    def acquire(self, owner: str = "cli") -> WriterLock:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 200, 0).decode(errors="replace").strip()
            os.close(fd)
            raise LockedError(
                f"another memd process holds the writer lock ({holder or 'unknown'}); "
                "is `memd serve` running?"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{owner} pid {os.getpid()}\n".encode(), 0)
        self._fd = fd
        return self

    def release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def __enter__(self) -> WriterLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()
