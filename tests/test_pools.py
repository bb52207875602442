"""The daemon's thread pools (:mod:`memd.daemon.pools`): a read that lost a race with a
compaction runs once more; nothing else is retried."""

from __future__ import annotations

import asyncio

import pytest

from memd.daemon.pools import Pools, compacted_under

GONE = (
    "lance error: Not found: tmp/h/store/memories.lance/data/1100100001.lance, "
    "lance-io-13.0.0/src/local.rs:273:40"
)


def flaky(errors: list[Exception]) -> tuple[list[int], object]:
    calls: list[int] = []

    def fn() -> str:
        calls.append(1)
        if len(calls) <= len(errors):
            raise errors[len(calls) - 1]
        return "ok"

    return calls, fn


def test_a_read_over_compacted_files_runs_once_more() -> None:
    pools = Pools(read_threads=1)
    try:
        calls, fn = flaky([RuntimeError(GONE)])
        assert asyncio.run(pools.run("read", fn)) == "ok" and len(calls) == 2
        calls, fn = flaky([RuntimeError(GONE), RuntimeError(GONE)])
        with pytest.raises(RuntimeError):  # once, not forever
            asyncio.run(pools.run("read", fn))
        calls, fn = flaky([RuntimeError(GONE)])
        with pytest.raises(RuntimeError):  # a write is never run twice
            asyncio.run(pools.run("write", fn))
        assert len(calls) == 1
        calls, fn = flaky([RuntimeError("disk full")])
        with pytest.raises(RuntimeError):
            asyncio.run(pools.run("read", fn))
        assert len(calls) == 1
    finally:
        pools.close(5)


def test_only_a_missing_table_file_counts_as_compacted() -> None:
    assert compacted_under(RuntimeError(GONE))
    assert not compacted_under(RuntimeError("Not found: no memory with id abc"))
    assert not compacted_under(OSError("disk full"))
