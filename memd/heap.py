"""Giving freed memory back to the operating system (glibc keeps it otherwise)."""

from __future__ import annotations

import contextlib
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
_SPECIAL = ("[heap]", "[stack]", "[vdso]", "[vvar]", "[vsyscall]")


def library_mappings(smaps: str) -> list[tuple[int, int, int, int]]:
    """``(start, end, inode, rss_bytes)`` of the mappings :func:`release_library_pages` may drop.

    Only read-only mappings of a shared library (a path containing ``.so``: libc, pyarrow's and
    lancedb's libraries, Python extension modules) with resident pages, not one of them
    copy-on-write (``Anonymous: 0 kB``) and none locked. ``smaps`` is the text of
    ``/proc/self/smaps``.
    """
    found: list[tuple[int, int, int, int]] = []
    current: tuple[int, int, int] | None = None
    fields: dict[str, int] = {}

    def close() -> None:
        if current is not None and fields.get("Rss", 0) > 0:
            if fields.get("Anonymous", -1) == 0 and fields.get("Locked", 0) == 0:
                found.append((*current, fields["Rss"] * 1024))

    for line in smaps.splitlines():
        head = line.split(None, 5)
        if head and "-" in head[0] and len(head) >= 5 and not head[0].endswith(":"):
            close()  # a new mapping: "start-end perms offset dev inode [path]"
            current, fields = None, {}
            perms, path = head[1], head[5] if len(head) > 5 else ""
            if (
                ".so" in path
                and path.startswith("/")
                and path not in _SPECIAL
                and "w" not in perms
                and head[4] != "0"  # an inode: backed by a file
            ):
                lo, _, hi = head[0].partition("-")
                current = (int(lo, 16), int(hi, 16), int(head[4]))
        elif current is not None and len(head) >= 2 and head[0].endswith(":"):
            with contextlib.suppress(ValueError):
                fields[head[0][:-1]] = int(head[1])
    close()
    return found


def release_library_pages() -> int:
    """Unmap the resident pages of the shared libraries' read-only mappings; bytes released.

    The daemon maps ~240 MiB of native libraries (lancedb's 185 MB ``_lancedb.abi3.so``,
    pyarrow, onnxruntime). When a library's file is in the page cache, every page fault maps a
    64 KiB block around the page it needs (fault-around), so code run once at start-up (imports,
    loading the model, building the key index, opening LanceDB) stays in the daemon's RSS for
    good. ``madvise(MADV_DONTNEED)`` drops those pages from this process's page tables; the code
    a later request runs faults back in from the page cache (a minor fault, no disk read while
    the file stays cached) with the same contents.

    Why that is safe: only mappings that are read-only (no ``w``), backed by a ``.so`` file and
    without one copy-on-write page (``Anonymous: 0 kB``: every resident page is the file's own,
    clean page) are touched, exactly the pages the kernel may reclaim from any process under
    memory pressure. Writable, anonymous, ``[heap]``/``[stack]``-like and other files' mappings
    never are. The mappings are read again from ``/proc/self/maps`` right before the calls and a
    range is only dropped if it is still mapped from the same file with the same permissions
    (nothing in CPython unloads a library in between: extension modules stay loaded).

    What it costs: reading ``/proc/self/smaps`` (a few ms for the daemon's ~2,000 mappings) and
    minor faults when the code runs again, paid by the next request. 0 where this is not Linux
    or anything fails: it never raises.
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
    except (OSError, AttributeError, ValueError):
        return 0


def _readonly_library_ranges(maps: str) -> set[tuple[int, int, int]]:
    """The read-only ``.so`` file mappings listed in ``/proc/self/maps`` text."""
    ranges = set()
    for line in maps.splitlines():
        head = line.split(None, 5)
        if len(head) == 6 and ".so" in head[5] and "w" not in head[1] and head[4] != "0":
            lo, _, hi = head[0].partition("-")
            ranges.add((int(lo, 16), int(hi, 16), int(head[4])))
    return ranges
