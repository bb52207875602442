"""Concurrent read-modify-writes on ONE memory lose nothing (issue 15, defect 3).

A real `memd serve` gets, all at once and against a single memory:

- adds through its socket (``App.add`` on the writer thread): case variants of the memory's text,
  each a near-duplicate that merges into it (one more hit and one history entry each);
- prompt hooks that inject it, whose queued hits the flush loop writes (``Injector.flush`` →
  ``MemoryStore.touch``, also on the writer thread);
- pins (``update_fields``);
- ``ingest`` of transcripts whose segments state the memory again (``Pipeline.process`` on the
  extraction thread): each cites a new source that must be united into it.

Afterwards the memory holds every source, every merge in its history, and exactly as many hits as
merges plus journaled touches. Concurrent ``memd add`` CLI processes of one text (10 in the suite,
30 under ``MEMD_STRESS``) end as one active memory.

The in-suite run is small. ``MEMD_STRESS=10`` multiplies every count (hundreds of each); the fix
of issue 15 was checked with that, 20 runs in a row.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from daemon_process import (
    MEMD,
    DaemonProcess,
    served,
)

from memd.settings import Settings
from memd.store.filters import match
from memd.store.journal import Journal
from memd.store.table import MemoryStore

SCALE = max(1, int(os.environ.get("MEMD_STRESS", "1")))
TEXT = "We decided to use PostgreSQL 16 as the primary database for the shop."
PROMPT = "Which database do we use as the primary database for the shop?"


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DaemonProcess]:
    # Flush queued hits every 20 ms, so touches interleave with the other writes.
    with served(tmp_path_factory.mktemp("concurrency"), MEMD_FLUSH_SECONDS="0.02") as proc:
        yield proc


def variant(i: int) -> str:
    """The memory's text with word j upper-cased when bit j of ``i`` is set (same vector)."""
    words = [w for w in TEXT.split() if w.upper() != w.lower()]
    assert i < 2 ** len(words)
    cased = iter(w.upper() if (i >> j) & 1 else w.lower() for j, w in enumerate(words))
    return " ".join(next(cased) if w.upper() != w.lower() else w for w in TEXT.split())


def write_transcript(path: Path, session: str, cwd: str, n: int) -> tuple[str, str]:
    user = f"{session}-u"
    lines = [
        {
            "type": "user",
            "sessionId": session,
            "uuid": user,
            "cwd": cwd,
            "timestamp": f"2026-11-30T08:{n // 60 % 60:02d}:{n % 60:02d}.000Z",
            "message": {"role": "user", "content": TEXT},
        },
        {
            "type": "assistant",
            "sessionId": session,
            "uuid": f"{session}-a",
            "cwd": cwd,
            "timestamp": f"2026-11-30T08:{n // 60 % 60:02d}:{n % 60:02d}.500Z",
            "message": {
                "id": f"msg-{session}",
                "role": "assistant",
                "content": [{"type": "text", "text": "Noted, PostgreSQL 16 it is."}],
            },
        },
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return session, user


def request(daemon: DaemonProcess, payload: dict[str, Any]) -> dict[str, Any]:
    # No deadline: under load a request may queue behind hundreds of writes (the writer and
    # the extraction threads run one job at a time); what counts is that nothing is lost.
    reply = daemon.request(payload, timeout=None)
    assert reply.get("ok"), reply
    return reply


def run_all(jobs: list[Callable[[], Any]], workers: int) -> list[Any]:
    """Run ``jobs`` on ``workers`` threads, all released at once."""
    go = threading.Event()

    def gated(job: Callable[[], Any]) -> Any:
        go.wait(timeout=30)
        return job()

    with ThreadPoolExecutor(workers) as pool:
        futures = [pool.submit(gated, job) for job in jobs]
        go.set()
        return [f.result() for f in futures]


def touches_of(journal: Journal, memory_id: str) -> int:
    return sum(
        1 for e in journal.entries() if e.get("op") == "touch" and memory_id in e.get("ids", [])
    )


def test_concurrent_adds_hits_pins_and_extraction_lose_nothing(
    daemon: DaemonProcess, tmp_path: Path
) -> None:
    n_adds, n_segments, n_hooks, n_pins = 16 * SCALE, 8 * SCALE, 16 * SCALE, 2 * SCALE
    shop = tmp_path / "shop"
    (shop / ".git").mkdir(parents=True)
    first = request(daemon, {"cmd": "add", "text": TEXT, "project": str(shop), "kind": "decision"})
    target = first["memory"]["id"]

    inbox = tmp_path / "inbox"
    sources = []
    for n in range(n_segments):
        (inbox / f"part{n % 4}").mkdir(parents=True, exist_ok=True)
        path = inbox / f"part{n % 4}" / f"sess-{n:04d}.jsonl"
        sources.append(write_transcript(path, f"sess-{n:04d}", str(shop), n))

    def add(i: int) -> Callable[[], Any]:
        payload = {"cmd": "add", "text": variant(i), "project": str(shop), "kind": "decision"}
        return lambda: request(daemon, payload)["result"]

    def hook(i: int) -> Callable[[], Any]:
        payload = {"session_id": f"hook-{i}", "prompt": PROMPT, "cwd": str(shop)}
        return lambda: request(
            daemon, {"cmd": "hook", "event": "user-prompt-submit", "payload": payload}
        )

    def pin() -> Any:
        return request(daemon, {"cmd": "pin", "id": target})

    def ingest(part: int) -> Callable[[], Any]:
        return lambda: request(daemon, {"cmd": "ingest", "paths": [str(inbox / f"part{part}")]})

    jobs: list[Callable[[], Any]] = [ingest(p) for p in range(4)]
    jobs += [add(i) for i in range(1, n_adds + 1)]
    jobs += [hook(i) for i in range(n_hooks)]
    jobs += [pin] * n_pins
    # Interleave the kinds of work, so each kind runs during all the others.
    jobs = jobs[:4] + [j for k in range(3) for j in jobs[4 + k :: 3]]
    results = run_all(jobs, workers=16)

    adds = [r for r in results if isinstance(r, dict) and "action" in r]
    assert len(adds) == n_adds
    assert {r["target"] for r in adds} == {target}, "an add did not merge into the memory"
    merged_adds = sum(r["action"] == "merged" for r in adds)
    assert merged_adds == n_adds  # every variant is a distinct near-duplicate
    extracted = [r for r in results if isinstance(r, dict) and "segments_extracted" in r]
    assert sum(r["segments_extracted"] for r in extracted) == n_segments

    # Every queued hit written: none queued, and a write behind any flush still running (the
    # writer thread runs one job at a time, in order).
    deadline = time.monotonic() + 60
    while request(daemon, {"cmd": "status"})["injections"]["queued_touches"]:
        assert time.monotonic() < deadline, "queued hits were never flushed"
        time.sleep(0.05)
    pin()
    store = MemoryStore(Settings(home=Path(daemon.env["MEMD_HOME"]))).open()
    memory = store.get(target)
    active = store.query(match(kind="decision", status="active", project=str(shop)))

    assert [m.id for m in active] == [target], [m.text for m in active]
    have = {(s.session_id, s.uuid) for s in memory.sources}
    lost = [s for s in sources if s not in have]
    assert not lost, f"{len(lost)} of {len(sources)} extraction sources lost"
    merged_ids = [h["merged"] for h in memory.history if "merged" in h]
    assert len(merged_ids) == len(set(merged_ids)) == n_adds + n_segments, "history lost"
    touches = touches_of(store.journal, target)
    assert touches > 0, "no hook injected the memory: the test would prove nothing"
    assert memory.hits == n_adds + n_segments + touches, (
        f"hits {memory.hits} != {n_adds} adds + {n_segments} segments + {touches} touches"
    )
    assert memory.pinned
    # The journal (what a rebuild replays) agrees with the table.
    replayed = store.journal.replay()[target]
    assert replayed.hits == memory.hits
    assert {(s.session_id, s.uuid) for s in replayed.sources} == have
    store.close()


def test_thirty_concurrent_cli_adds_end_as_one_memory(
    daemon: DaemonProcess, tmp_path: Path
) -> None:
    # Each CLI process costs ~0.5 s of CPU to start: 10 in the suite, 30 under MEMD_STRESS.
    n = 30 if SCALE > 1 else 10
    shop = tmp_path / "shop"
    (shop / ".git").mkdir(parents=True)
    args = [MEMD, "add", "--json", "--project", str(shop), "--kind", "decision", TEXT]
    procs = [
        subprocess.Popen(args, env=daemon.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        for _ in range(n)
    ]
    outs = [p.communicate(timeout=180) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1][-300:] for o in outs]
    replies = [json.loads(o[0]) for o in outs]
    ids = {r["memory"]["id"] for r in replies}
    assert len(ids) == 1
    actions = sorted(r["result"]["action"] for r in replies)
    assert actions.count("inserted") == 1, actions
    listed = request(daemon, {"cmd": "list", "project": str(shop), "kind": "decision"})
    assert [m["id"] for m in listed["memories"]] == list(ids)
