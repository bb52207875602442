"""memd.timestamps.parse_time: the one reader of ISO stamps (jobs, sync, retrieval, key index)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from memd.models import now_iso
from memd.recall.retrieve import age_days
from memd.store.sortkeys import stamp_ms
from memd.sync.engine import bump, norm_time
from memd.timestamps import EPOCH, parse_time


@pytest.mark.parametrize(
    ("stamp", "expected"),
    [
        ("2026-11-29T10:00:00.123Z", datetime(2026, 11, 29, 10, 0, 0, 123000, tzinfo=UTC)),
        ("2026-11-29T10:00:00", datetime(2026, 11, 29, 10, tzinfo=UTC)),  # no zone: UTC
        ("2026-11-29", datetime(2026, 11, 29, tzinfo=UTC)),
        (
            "2026-11-29T18:00:00+08:00",
            datetime(2026, 11, 29, 18, tzinfo=timezone(timedelta(hours=8))),
        ),
        ("", None),
        (None, None),
        ("yesterday", None),
        ("2026-13-01T00:00:00Z", None),
    ],
)
def test_parse_time(stamp: str | None, expected: datetime | None) -> None:
    assert parse_time(stamp) == expected
    if expected is not None:
        assert parse_time(stamp).tzinfo is not None  # type: ignore[union-attr]


def test_every_user_reads_stamps_the_same_way() -> None:
    now = now_iso()
    assert parse_time(now) is not None and norm_time(now) == now
    assert norm_time("2026-11-29T18:00:00+08:00") == "2026-11-29T10:00:00.000Z"
    assert norm_time("garbage") == "1970-01-01T00:00:00.000Z" == norm_time(EPOCH.isoformat())
    assert bump("2026-11-29T10:00:00.999Z") == "2026-11-29T10:00:01.000Z"
    assert stamp_ms("1970-01-01T00:00:01.5Z") == 1500 and stamp_ms("garbage") == 0
    later = datetime(2026, 12, 1, 10, tzinfo=UTC)
    assert age_days("2026-11-29T10:00:00Z", later) == 2.0
    assert age_days("garbage", later) == 365.0
