"""memd.atomic.write_atomic: whole or nothing, modes kept, symlinks written through or replaced."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from memd.atomic import write_atomic


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_text_bytes_and_chunks_with_modes(tmp_path: Path) -> None:
    path = tmp_path / "new" / "dir" / "file.txt"
    write_atomic(path, "héllo\n")
    assert path.read_bytes() == "héllo\n".encode() and mode(path) == 0o600
    path.chmod(0o640)
    write_atomic(path, b"bytes", mode=0o600)
    assert path.read_bytes() == b"bytes" and mode(path) == 0o640  # the old file's mode is kept
    write_atomic(tmp_path / "public", (b"a\n", b"b\n"), mode=0o644)
    assert (tmp_path / "public").read_bytes() == b"a\nb\n" and mode(tmp_path / "public") == 0o644
    assert sorted(p.name for p in path.parent.iterdir()) == ["file.txt"]  # no temp file left


def test_symlinks_are_written_through_or_replaced(tmp_path: Path) -> None:
    real = tmp_path / "dotfiles" / "settings.json"
    real.parent.mkdir()
    real.write_text("old")
    real.chmod(0o644)
    link = tmp_path / "settings.json"
    link.symlink_to(real)
    write_atomic(link, "through", through_symlink=True)
    assert link.is_symlink() and real.read_text() == "through" and mode(real) == 0o644

    write_atomic(link, "replaced", mode=0o600)  # e.g. a rewritten model over a packaged one
    assert not link.is_symlink() and link.read_text() == "replaced" and mode(link) == 0o600
    assert real.read_text() == "through"  # the file it pointed to is untouched


def test_a_failed_write_keeps_the_old_file_whole(tmp_path: Path) -> None:
    path = tmp_path / "j" / "journal.jsonl"
    path.parent.mkdir()
    path.write_bytes(b"line 1\n")

    def chunks() -> Iterator[bytes]:
        yield b"partial\n"
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError, match="No space"):
        write_atomic(path, chunks())
    assert path.read_bytes() == b"line 1\n"
    assert os.listdir(path.parent) == ["journal.jsonl"]
