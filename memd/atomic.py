"""Replace a file atomically and durably: a reader sees the old file or the whole new one.

The one way memd rewrites a file in place (settings it merges into, the journal when compacted,
the store's metadata, rewritten model graphs): a temporary file in the same directory, written
and fsynced, given the old file's mode (or ``mode`` for a new file), ``os.replace``d over the
target, then the directory fsynced so the rename itself survives a crash. Standard library only.
"""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Iterable
from contextlib import suppress
from pathlib import Path


def write_atomic(
    path: Path,
    data: str | bytes | Iterable[bytes],
    *,
    mode: int = 0o600,
    through_symlink: bool = False,
) -> None:
    """Write ``data`` (text as UTF-8, bytes, or chunks of bytes) to ``path`` atomically.

    An existing file keeps its permission bits; a new one gets ``mode``. With
    ``through_symlink`` a symlinked ``path`` (dotfile managers) is written through and stays a
    link; without it, the link itself is replaced by a new file (mode ``mode``).
    """
    link = path.is_symlink()
    target = path.resolve() if through_symlink and link else path
    target.parent.mkdir(parents=True, exist_ok=True)
    if through_symlink or not link:  # a replaced link's new file gets ``mode``
        with suppress(FileNotFoundError):
            mode = stat.S_IMODE(target.stat().st_mode)
    chunks = (
        [data.encode("utf-8")]
        if isinstance(data, str)
        else [data]
        if isinstance(data, bytes)
        else data
    )
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            for chunk in chunks:
                fh.write(chunk)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        with suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    fsync_dir(target.parent)


def fsync_dir(path: Path) -> None:
    """Make a rename (or a new file) in ``path`` durable."""
    dir_fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
