"""Giving library pages back (memd.heap.release_library_pages): only clean, read-only pages of
shared libraries go; the libraries still work and nothing writable or anonymous is touched."""

from __future__ import annotations

import ctypes
import mmap
import sys
from pathlib import Path

import pytest

from memd import heap

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux /proc, madvise")

SMAPS = """\
7f0000000000-7f0000100000 r--p 00000000 fd:01 1001   /venv/lib/libarrow.so.2600
Rss:                 512 kB
Anonymous:             0 kB
Locked:                0 kB
VmFlags: rd mr mw me
7f0000100000-7f0000200000 r-xp 00100000 fd:01 1001   /venv/lib/libarrow.so.2600
Rss:                1024 kB
Anonymous:             0 kB
Locked:                0 kB
7f0000200000-7f0000210000 r--p 00200000 fd:01 1001   /venv/lib/libarrow.so.2600
Rss:                  64 kB
Anonymous:            64 kB
Locked:                0 kB
7f0000210000-7f0000220000 rw-p 00210000 fd:01 1001   /venv/lib/libarrow.so.2600
Rss:                  64 kB
Anonymous:             0 kB
Locked:                0 kB
7f0000300000-7f0000400000 r-xp 00000000 fd:01 1002   /venv/lib/_lancedb.abi3.so (deleted)
Rss:                 256 kB
Anonymous:             0 kB
Locked:                0 kB
7f0000400000-7f0000500000 r--p 00000000 fd:01 1003   /venv/lib/libmlock.so
Rss:                 256 kB
Anonymous:             0 kB
Locked:              256 kB
7f0000500000-7f0000600000 r--p 00000000 fd:01 1004   /home/u/data.sorted
Rss:                 256 kB
Anonymous:             0 kB
Locked:                0 kB
7f0000600000-7f0000700000 r--p 00000000 00:00 0
Rss:                 256 kB
Anonymous:           256 kB
Locked:                0 kB
7f0000700000-7f0000800000 r-xp 00000000 fd:01 1005   /venv/lib/libidle.so.1
Rss:                   0 kB
Anonymous:             0 kB
Locked:                0 kB
55d000000000-55d000100000 rw-p 00000000 00:00 0      [heap]
Rss:                1024 kB
Anonymous:          1024 kB
7ffc00000000-7ffc00002000 r-xp 00000000 00:00 0      [vdso]
Rss:                   8 kB
Anonymous:             0 kB
"""


def test_only_clean_read_only_library_mappings_are_candidates() -> None:
    found = heap.library_mappings(SMAPS)
    assert found == [
        (0x7F0000000000, 0x7F0000100000, 1001, 512 * 1024),
        (0x7F0000100000, 0x7F0000200000, 1001, 1024 * 1024),
        (0x7F0000300000, 0x7F0000400000, 1002, 256 * 1024),
    ]  # not: a copy-on-write page, writable, locked, not a library, anonymous, no RSS, special


def status_kib() -> dict[str, int]:
    out = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("RssFile", "RssAnon"):
            out[key] = int(value.split()[0])
    return out


@linux_only
def test_release_drops_library_pages_and_leaves_everything_else(tmp_path: Path) -> None:
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    matrix = np.arange(1, 10, dtype=np.float64).reshape(3, 3) + np.eye(3)
    solution = np.linalg.solve(matrix, np.ones(3))
    assert float(pc.sum(pa.array(range(1000))).as_py()) == 499500  # both libraries ran

    # Anonymous memory: 32 MiB of a pattern; dropped pages would read back as zeros.
    anon = bytearray(b"\xa5") * (32 << 20)
    # A writable private mapping of a ".so" file with written (copy-on-write) pages.
    writable_file = tmp_path / "writable.so"
    writable_file.write_bytes(bytes(1 << 20))
    with writable_file.open("r+b") as f:
        writable = mmap.mmap(f.fileno(), 1 << 20, access=mmap.ACCESS_COPY)
    writable[:] = b"w" * (1 << 20)
    # A read-only mapping of a ".so" file holding one copy-on-write page (as a library's RELRO
    # segment does): its perms say r--p, only "Anonymous" tells it apart.
    relro_file = tmp_path / "relro.so"
    relro_file.write_bytes(bytes(1 << 16))
    with relro_file.open("r+b") as f:
        relro = mmap.mmap(f.fileno(), 1 << 16, access=mmap.ACCESS_COPY)
    relro[:4096] = b"r" * 4096
    pointer = ctypes.c_char.from_buffer(relro)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mprotect.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
    assert libc.mprotect(ctypes.addressof(pointer), 1 << 16, mmap.PROT_READ) == 0
    # A clean read-only mapping of a ".so" file: may be dropped, must read back the same.
    clean_file = tmp_path / "clean.so"
    clean_file.write_bytes(b"c" * (1 << 16))
    with clean_file.open("rb") as f:
        clean = mmap.mmap(f.fileno(), 1 << 16, access=mmap.ACCESS_READ)
    assert clean[:] == b"c" * (1 << 16)

    before = status_kib()
    released = heap.release_library_pages()
    after = status_kib()

    assert released > 8 << 20  # numpy's and pyarrow's libraries alone are far more
    assert after["RssFile"] < before["RssFile"] - released // 1024 // 2
    assert after["RssAnon"] > before["RssAnon"] - (8 << 10)  # the 32 MiB are still there
    assert bytes(anon[::4096]) == b"\xa5" * (len(anon) // 4096)
    assert writable[:] == b"w" * (1 << 20)
    assert relro[:4096] == b"r" * 4096 and relro[4096:] == bytes((1 << 16) - 4096)
    assert clean[:] == b"c" * (1 << 16)
    # The libraries fault their code back in and compute the same results.
    assert np.array_equal(np.linalg.solve(matrix, np.ones(3)), solution)
    assert np.allclose(matrix @ solution, np.ones(3))
    assert float(pc.sum(pa.array(range(1000))).as_py()) == 499500

    del pointer
    for mapping in (writable, relro, clean):
        mapping.close()


def test_release_is_a_no_op_off_linux(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(heap.sys, "platform", "darwin")
    assert heap.release_library_pages() == 0
