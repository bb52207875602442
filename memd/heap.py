"""Giving freed memory back to the operating system (glibc keeps it otherwise)."""

from __future__ import annotations

import re
import sys


def trim_heap() -> bool:
    """Hand freed heap back to the OS (glibc's ``malloc_trim``); False where there is none.

    Building a project's vector cache, answering searches and importing in batches free far
    more than they keep, and glibc holds on to it: at 100k memories the daemon's RSS went from
    513 to 425 MB after one trim (8 ms). Not glibc (macOS, musl): nothing to do.
    """
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        return False
    return True


def use_system_allocator() -> bool:
    """Make pyarrow allocate with malloc instead of its bundled mimalloc; False: not possible.

    mimalloc keeps what Arrow frees (the vector cache's rows when an entry is rebuilt, the key
    index's scans) for itself, where :func:`trim_heap` cannot reach it: at 100k memories the
    daemon held ~10 MiB more after the same work, and dropping the whole vector cache gave
    back nothing of its 33 MiB of rows. With malloc the next trim hands it to the OS.
    """
    try:
        import pyarrow as pa

        pa.set_memory_pool(pa.system_memory_pool())
    except (ImportError, NotImplementedError):
        return False
    return True


MADV_DONTNEED = 4


_MAPPING = re.compile(r"^([0-9a-f]+)-([0-9a-f]+) (\S+) \S+ \S+ (\d+) *(.*)$", re.MULTILINE)
_LIBRARY = re.compile(r"\.so($|[.\s])")
"""A shared library's file name: ``libc.so.6``, ``_lancedb.abi3.so``, ``x.so (deleted)``."""
_FIELD = re.compile(r"^(Rss|Anonymous|Locked): +(\d+) kB$", re.MULTILINE)


def library_mappings(smaps: str) -> list[tuple[int, int, int, int]]:
    """``(start, end, inode, rss_bytes)`` of the mappings :func:`release_library_pages` may drop.

    Only read-only mappings of a shared library file (a path containing ``.so``: libc, pyarrow's
    and lancedb's libraries, Python extension modules) with resident pages, not one of them
    copy-on-write (``Anonymous: 0 kB``) and none locked. ``smaps`` is the text of
    ``/proc/self/smaps``.
    """
    found: list[tuple[int, int, int, int]] = []
    headers = list(_MAPPING.finditer(smaps))
    for i, m in enumerate(headers):
        lo, hi, perms, inode, path = m.groups()
        if not _is_readonly_library(perms, inode, path):
            continue  # writable, anonymous, [heap]/[stack]/[vdso]/..., or not a library
        block = smaps[m.end() : headers[i + 1].start() if i + 1 < len(headers) else len(smaps)]
        fields = {name: int(kib) for name, kib in _FIELD.findall(block)}
        if (
            fields.get("Rss", 0) > 0
            and fields.get("Anonymous", -1) == 0
            and not fields.get("Locked")
        ):
            found.append((int(lo, 16), int(hi, 16), int(inode), fields["Rss"] * 1024))
    return found


def release_library_pages() -> int:
    """Unmap the resident pages of the shared libraries' read-only mappings; bytes released.

    The daemon maps ~240 MiB of native libraries (lancedb's 185 MB ``_lancedb.abi3.so``,
    pyarrow, onnxruntime). When a library's file is in the page cache, every page fault maps a
    block around the page it needs (64 KiB of fault-around, or the whole large folio the page
    is in on kernels that cache files in large folios), so code run once at start-up (imports,
    loading the model, building the key index, opening LanceDB) stays in the daemon's RSS for
    good. ``madvise(MADV_DONTNEED)`` drops those pages from this process's page tables; the code
    a later request runs faults back in from the page cache (a minor fault, no disk read while
    the file stays cached) with the same contents.

    Why that is safe: only mappings that are read-only (no ``w``), backed by a ``.so`` file and
    without one copy-on-write page (``Anonymous: 0 kB``: every resident page is the file's own,
    clean page) are touched, exactly the pages the kernel may reclaim from any process under
    memory pressure. Writable, anonymous, ``[heap]``/``[stack]``-like and other files' mappings
    never are. The mappings are read again from ``/proc/self/maps`` right before the calls and a
    range is only dropped if it is still a read-only mapping of the same file (nothing in
    CPython unloads a library in between: extension modules stay loaded).

    What it costs: ~25 ms of reading and parsing ``/proc/self/smaps`` in the daemon, and minor
    faults (no disk read while the files stay cached) when the code runs again, paid by the
    request that runs it: ~1-2 ms more for the first hook after a release at 10k memories
    (``bench/release_latency.py``). 0 where this is not Linux or anything fails: never raises.
    """
    if not sys.platform.startswith("linux"):
        return 0
    try:
        import ctypes

        with open("/proc/self/smaps", encoding="utf-8", errors="replace") as f:
            candidates = library_mappings(f.read())
        if not candidates:
            return 0
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as f:
            still = _readonly_library_ranges(f.read())
        libc = ctypes.CDLL(None, use_errno=True)
        madvise = libc.madvise
        madvise.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
        madvise.restype = ctypes.c_int
        released = 0
        for start, end, inode, rss in candidates:
            if (start, end, inode) in still and madvise(start, end - start, MADV_DONTNEED) == 0:
                released += rss
        return released
    except Exception:  # best effort: OSError, a ctypes error, an unexpected line
        return 0


def _readonly_library_ranges(maps: str) -> set[tuple[int, int, int]]:
    """The read-only ``.so`` file mappings listed in ``/proc/self/maps`` text."""
    return {
        (int(lo, 16), int(hi, 16), int(inode))
        for lo, hi, perms, inode, path in _MAPPING.findall(maps)
        if _is_readonly_library(perms, inode, path)
    }


def _is_readonly_library(perms: str, inode: str, path: str) -> bool:
    """Not writable, backed by a file (an inode), and that file is a shared library."""
    return (
        "w" not in perms and inode != "0" and path.startswith("/") and bool(_LIBRARY.search(path))
    )
