"""Read memd's ISO-8601 timestamps: one parser for every module that compares or ages them.

memd writes UTC stamps like ``2026-11-29T10:00:00.123Z`` (``memd.models.now_iso``); transcripts,
imports and other machines may bring other offsets, no zone at all, or garbage. Standard library
only, so any module can use it.
"""

from __future__ import annotations

from datetime import UTC, datetime
from functools import lru_cache

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def parse_time(stamp: str | None) -> datetime | None:
    """``stamp`` as an aware datetime (UTC when it names no zone); None when empty or unreadable."""
    if not stamp:
        return None
    try:
        when = datetime.fromisoformat(stamp)  # 3.11 reads "Z" and most of ISO 8601
    except (TypeError, ValueError):
        return None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


@lru_cache(maxsize=1 << 14)
def epoch_seconds(stamp: str | None) -> float | None:
    """``stamp`` in seconds since the epoch (None: empty or unreadable), remembered: recall ages
    the same memories prompt after prompt."""
    when = parse_time(stamp)
    return None if when is None else when.timestamp()
