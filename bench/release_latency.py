"""The first hook after the daemon released its library pages, against one after the same pause.

    .venv/bin/python bench/release_latency.py [--size 10000] [--rounds 30] [--pause 1.5]

``memd.heap.release_library_pages`` drops the resident pages of the daemon's read-only shared
library mappings; the next request faults the code it runs back in from the page cache. This
measures what that costs the next hook, daemon side (an in-process socket client, as in
``bench/hook_latency.py``).

A real ``memd serve`` runs on a temporary home filled by ``bench/memory.py``'s ``fill``, in a
wrapper that adds one thing: a thread that waits for SIGUSR2 and then calls
``release_library_pages()`` (so a release happens exactly when asked, not at the daemon's own
idle times). After 20 warm-up hooks, ``--rounds`` rounds each time two hooks, in alternating
order: one after a pause of ``--pause`` seconds (control) and one right after the same pause
and a release (as in the daemon, where a release comes after the hit counters were flushed),
then a second hook right behind it (is the working set back?). RssFile of the
daemon is read after each. Figures go to stdout; nothing is recorded.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import percentile, stop_daemon, wait_for_daemon
from hook_latency import bench_env, fill_store, payload

from memd import protocol

WRAPPER = """
import signal, sys, threading, time
from pathlib import Path

signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR2})  # every later thread inherits it
out = Path(sys.argv[1])

def releaser():
    from memd.heap import release_library_pages
    n = 0
    while True:
        signal.sigwait({signal.SIGUSR2})
        t0 = time.perf_counter()
        released = release_library_pages()
        n += 1
        out.write_text(f"{n} {released} {(time.perf_counter() - t0) * 1000:.2f}")

threading.Thread(target=releaser, daemon=True).start()
sys.argv = ["memd", "serve", "--log-level", "WARNING"]
from memd.cli import main
sys.exit(main())
"""


def rss_file_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("RssFile:"):
            return int(line.split()[1]) / 1024
    return 0.0


def hook_ms(sock: str, i: int) -> float:
    request = {"cmd": "hook", "event": "user-prompt-submit", "payload": json.loads(payload(i))}
    started = time.perf_counter()
    protocol.request(sock, request, timeout=30)
    return (time.perf_counter() - started) * 1000


def release(pid: int, marker: Path, n: int) -> tuple[int, float]:
    """Ask the daemon for release number ``n``; (bytes released, ms it took)."""
    os.kill(pid, signal.SIGUSR2)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        parts = marker.read_text().split() if marker.exists() else []
        if parts and int(parts[0]) == n:
            return int(parts[1]), float(parts[2])
        time.sleep(0.01)
    raise RuntimeError("the daemon did not release its library pages")


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description="first hook after a library page release")
    p.add_argument("--size", type=int, default=10_000)
    p.add_argument("--distinct", type=int, default=3000)
    p.add_argument("--rounds", type=int, default=30)
    p.add_argument("--pause", type=float, default=1.5)
    args = p.parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="memd-rel-", dir="/tmp"))
    env = bench_env(workdir)
    marker = workdir / "released"
    fill_store(env, 0, args.size, min(args.distinct, args.size))
    with (workdir / "daemon.log").open("ab") as log:
        proc = subprocess.Popen(
            [sys.executable, "-c", WRAPPER, str(marker)], env=env, stdout=log, stderr=log
        )
    sock = env["MEMD_SOCKET"]
    try:
        wait_for_daemon(sock, proc, workdir / "daemon.log")
        for i in range(20):
            hook_ms(sock, -1 - i)
        control: list[float] = []
        first: list[float] = []
        second: list[float] = []
        released: list[float] = []
        took: list[float] = []
        rss_control: list[float] = []
        rss_low: list[float] = []
        rss_after: list[float] = []
        n = 0
        for r in range(args.rounds):
            for kind in ("control", "release") if r % 2 == 0 else ("release", "control"):
                if kind == "control":
                    time.sleep(args.pause)
                    control.append(hook_ms(sock, 1000 + r))
                    rss_control.append(rss_file_mib(proc.pid))
                    continue
                time.sleep(args.pause)  # queued hit counters get flushed, as before a release
                n += 1
                size, ms = release(proc.pid, marker, n)
                released.append(size / 2**20)
                took.append(ms)
                rss_low.append(rss_file_mib(proc.pid))
                first.append(hook_ms(sock, 2000 + r))
                rss_after.append(rss_file_mib(proc.pid))
                second.append(hook_ms(sock, 3000 + r))
        print(f"{args.rounds} rounds at {args.size:,} memories, pause {args.pause} s")
        for name, values in (
            ("hook after a pause (control) ms", control),
            ("first hook after a release ms", first),
            ("second hook after a release ms", second),
            ("released MiB", released),
            ("release took ms", took),
            ("RssFile after a control hook MiB", rss_control),
            ("RssFile right after a release MiB", rss_low),
            ("RssFile after the first hook MiB", rss_after),
        ):
            print(
                f"{name}: p50 {percentile(values, 50):.2f}  p90 {percentile(values, 90):.2f}  "
                f"min {min(values):.2f}  max {max(values):.2f}"
            )
        diffs = sorted(f - c for f, c in zip(first, control, strict=True))
        print(f"paired difference first - control ms: median {percentile(diffs, 50):.2f}")
        print(f"load average {os.getloadavg()[0]:.2f}")
    finally:
        stop_daemon(proc)
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
