"""Giving freed memory back to the operating system (glibc keeps it otherwise)."""

from __future__ import annotations

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
