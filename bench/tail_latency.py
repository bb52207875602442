"""Append-to-visible latency of the live tailer, and the idle cost of watching many files.

    .venv/bin/python bench/tail_latency.py [--appends 200] [--files 10000] [--idle-seconds 30]

- latency: a real watchdog observer (inotify on Linux) on a temp transcripts dir; one line is
  appended to a live session file, and the clock stops when its turn is committed to the state
  (visible through ``SessionTracker.open_turns``). p50/p95/max over ``--appends`` appends.
- idle: ``--files`` transcript files in 100 project folders, already read; the tailer then sits
  idle for ``--idle-seconds`` with rescans every 10 s (the default is 60 s, so this overstates
  the cost), and the process CPU time over that window is reported as a % of one core.

Figures are printed; ``--record`` also appends them to bench/results/log.md. Data lives in a temp dir.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from memd.ingest.session import SessionTracker
from memd.ingest.tailer import Tailer
from memd.settings import Settings
from memd.state import State

SID = "bench-latency-0001"


def line(i: int, sid: str = SID) -> bytes:
    obj = {
        "type": "user" if i % 2 == 0 else "assistant",
        "uuid": f"{sid}-{i}",
        "sessionId": sid,
        "cwd": "/work/bench-project",
        "timestamp": "2026-03-01T10:00:00.000Z",
        "message": {
            "id": f"msg-{sid}-{i}",
            "role": "user" if i % 2 == 0 else "assistant",
            "content": [{"type": "text", "text": f"line {i}: " + "lorem ipsum " * 20}],
        },
    }
    return (json.dumps(obj) + "\n").encode()


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    k = (len(values) - 1) * q / 100
    lo = int(k)
    hi = min(lo + 1, len(values) - 1)
    return values[lo] + (values[hi] - values[lo]) * (k - lo)


def measure_latency(tmp: Path, appends: int) -> list[float]:
    root = tmp / "projects"
    (root / "-work-bench-project").mkdir(parents=True)
    settings = Settings(
        home=tmp / "home",
        transcripts_dir=root,
        segment_max_turns=appends * 2,
        session_idle_seconds=3600,
        config=tmp / "none.toml",  # not the user's config file
    )
    state = State(tmp / "home" / "state.db")
    tracker = SessionTracker(settings, state)
    tailer = Tailer(settings, state, tracker)
    tailer.start()
    path = root / "-work-bench-project" / f"{SID}.jsonl"
    out: list[float] = []
    try:
        with open(path, "ab") as f:
            for i in range(appends):
                data = line(i)
                want = f"{SID}-{i}"
                t0 = time.perf_counter()
                f.write(data)
                f.flush()
                deadline = t0 + 10
                while time.perf_counter() < deadline:
                    seg = tracker.open_turns(SID)
                    if seg and seg[-1].uuid == want:
                        break
                    time.sleep(0.001)
                else:
                    raise SystemExit(f"append {i} not visible within 10 s")
                out.append(time.perf_counter() - t0)
                time.sleep(0.01)
    finally:
        tailer.stop()
        state.close()
    return out


def measure_idle(tmp: Path, files: int, seconds: float) -> tuple[float, float, int]:
    root = tmp / "idle-projects"
    per = max(1, files // 100)
    n = 0
    for d in range(100):
        proj = root / f"-home-user-project-{d}"
        proj.mkdir(parents=True)
        for k in range(per):
            if n >= files:
                break
            sid = f"idle-{d}-{k}"
            (proj / f"{sid}.jsonl").write_bytes(line(0, sid) + line(1, sid))
            n += 1
    settings = Settings(
        home=tmp / "idle-home",
        transcripts_dir=root,
        rescan_seconds=10,
        session_idle_seconds=3600,
        config=tmp / "none.toml",
    )
    state = State(tmp / "idle-home" / "state.db")
    tracker = SessionTracker(settings, state)
    tailer = Tailer(settings, state, tracker, read_existing=True)
    t0 = time.perf_counter()
    tailer.start()
    tailer.wait_idle(600)
    first_read = time.perf_counter() - t0
    c0, w0 = time.process_time(), time.perf_counter()
    time.sleep(seconds)
    cpu = time.process_time() - c0
    wall = time.perf_counter() - w0
    tailer.stop()
    state.close()
    return 100 * cpu / wall, first_read, n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--appends", type=int, default=200)
    ap.add_argument("--files", type=int, default=10_000)
    ap.add_argument("--idle-seconds", type=float, default=30)
    ap.add_argument("--record", action="store_true", help="append to bench/results/log.md")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="memd-bench-tail-"))
    try:
        lat = measure_latency(tmp, args.appends)
        idle_pct, first_read, n = measure_idle(tmp, args.files, args.idle_seconds)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    ms = [x * 1000 for x in lat]
    body = "\n".join(
        [
            "| measure | value |",
            "|---|---|",
            f"| append → visible in session state, p50 ({len(ms)} appends, inotify) "
            f"| {statistics.median(ms):.1f} ms |",
            f"| append → visible, p95 | {pct(ms, 95):.1f} ms |",
            f"| append → visible, max | {max(ms):.1f} ms |",
            f"| first read of {n} files (2 lines each) | {first_read:.1f} s |",
            f"| idle CPU watching {n} files, rescan every 10 s, over {args.idle_seconds:.0f} s "
            f"| {idle_pct:.2f} % of one core |",
        ]
    )
    print(body)
    if args.record:
        from common import append_section

        append_section("Live tailing latency and idle cost (bench/tail_latency.py)", "\n" + body)


if __name__ == "__main__":
    main()
