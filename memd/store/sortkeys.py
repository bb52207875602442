"""Memories' list keys as sortable numbers: ids as 64-bit integers in their own order, ISO
stamps as milliseconds since 1970, and names (projects, kinds, statuses) as small codes with
their string order; one by one and for whole Arrow columns (:mod:`memd.store.keyindex`)."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from memd.timestamps import EPOCH, parse_time

HEX = re.compile(r"[0-9a-f]{1,16}")


def stamp_ms(stamp: str | None) -> int:
    """An ISO stamp as milliseconds since 1970 (UTC when it names no zone); 0 when unreadable,
    so such a memory sorts as the oldest."""
    when = parse_time(stamp)
    return 0 if when is None else (when - EPOCH) // _MS


_MS = datetime(1970, 1, 1, 0, 0, 0, 1000, tzinfo=UTC) - EPOCH


def id_key(mid: str) -> int:
    """An integer in the ids' own order (memd's ids are 16 hex digits): the final tie-break.
    One-to-one for memd's ids (see :func:`regular`); close to their order for any other."""
    if HEX.fullmatch(mid[:16]):
        return int(mid[:16].ljust(16, "0"), 16)
    return int.from_bytes(mid.encode("utf-8")[:8].ljust(8, b"\0"), "big")


def regular(mid: str) -> bool:
    """An id as memd makes them (16 hex digits): kept as its integer, not as a string."""
    return len(mid) == 16 and HEX.fullmatch(mid) is not None


HEX_VALUE = np.zeros(256, dtype=np.uint64)
HEX_VALUE[np.frombuffer(b"0123456789abcdef", dtype=np.uint8)] = np.arange(16, dtype=np.uint64)


def id_keys(ids: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """:func:`id_key` and :func:`regular` of a whole column, without a Python string per id
    when every id is regular (the usual case)."""
    n = len(ids)
    lengths = pc.utf8_length(ids).to_numpy(zero_copy_only=False)
    if n and (lengths == 16).all() and pc.all(pc.match_substring_regex(ids, "^[0-9a-f]+$")).as_py():
        offsets = np.frombuffer(ids.buffers()[1], dtype=np.int32)[ids.offset : ids.offset + n + 1]
        data = np.frombuffer(ids.buffers()[2], dtype=np.uint8)[offsets[0] : offsets[-1]]
        digits = HEX_VALUE[data.reshape(n, 16)]
        keys = np.zeros(n, dtype=np.uint64)
        for j in range(16):
            keys = (keys << np.uint64(4)) | digits[:, j]
        return keys, np.ones(n, dtype=bool)
    values = [str(v) for v in ids.to_pylist()]
    keys = np.fromiter((id_key(v) for v in values), dtype=np.uint64, count=n)
    return keys, np.fromiter((regular(v) for v in values), dtype=bool, count=n)


def stamps_column(column: pa.ChunkedArray) -> np.ndarray:
    """:func:`stamp_ms` of a column: cast in Arrow; one by one only when a stamp will not cast."""
    try:
        cast = pc.cast(column, pa.timestamp("ms", tz="UTC")).cast(pa.int64()).fill_null(0)
        return np.asarray(cast.to_numpy(), dtype=np.int64)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return stamps_ms(column.to_pylist())


class Codes:
    """Strings (projects, kinds, statuses) as small integer codes."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self.index: dict[str, int] = {}

    def code(self, name: str) -> int:
        got = self.index.get(name)
        if got is None:
            got = self.index[name] = len(self.names)
            self.names.append(name)
        return got

    def rank(self) -> np.ndarray:
        """For each code, the rank of its name in string order."""
        out = np.zeros(max(1, len(self.names)), dtype=np.int64)
        for i, code in enumerate(sorted(range(len(self.names)), key=self.names.__getitem__)):
            out[code] = i
        return out


def stamps_ms(stamps: list[str | None]) -> np.ndarray:
    """:func:`stamp_ms` of many stamps; memd's own format (``...T..:..:..mmmZ``) parsed in bulk."""
    out = np.zeros(len(stamps), dtype=np.int64)
    plain = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")
    fast = [i for i, s in enumerate(stamps) if s and plain.fullmatch(s)]
    if fast:
        values = np.array([stamps[i][:-1] for i in fast], dtype="datetime64[ms]")  # type: ignore[index]
        out[fast] = values.astype(np.int64)
    done = set(fast)
    for i, s in enumerate(stamps):
        if i not in done:
            out[i] = stamp_ms(s)
    return out
