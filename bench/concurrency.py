"""200 concurrent hook clients: all answered, none dropped, p99 reported.

    .venv/bin/python bench/concurrency.py [--size 10000] [--clients 200] [--record]

A real `memd serve` runs on a temporary home filled like bench/hook_latency.py. Two bursts:

- processes: ``--clients`` `memd-hook user-prompt-submit` processes started at once (then the
  same with the fast form ``python -I -S memd/hookrun.py``), each with its
  own session and a prompt that matches a stored memory, so every answered call prints context.
  A call that prints nothing was dropped (timed out or refused). Latency is spawn to exit, so it
  includes starting 200 interpreters on this machine's cores.
- sockets: ``--clients`` threads that connect together (a barrier) and send the same hook request,
  measuring the daemon alone.

The daemon's own counters (requests, errors) are compared before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import append_section, markdown_table, percentile
from hook_latency import HOOK_FILE, MEMD_HOOK, PROJECTS, Daemon, bench_env, fill_store
from ingest import synthetic_text

FAST_HOOK = [sys.executable, "-I", "-S", HOOK_FILE, "user-prompt-submit"]
FLOOR = [sys.executable, "-I", "-S", "-c", "import _socket"]
"""The bare interpreter, started the same way: what the machine alone needs for the burst."""


def hook_payload(i: int) -> dict[str, Any]:
    """A prompt equal to the text whose embedding stored memory ``i`` holds (true for
    ``i < --distinct``, see ``bench/memory.py``'s fill): it always has something to inject."""
    return {
        "session_id": f"conc-{i}-{time.time_ns()}",
        "transcript_path": f"/nonexistent/{i}.jsonl",
        "cwd": f"/bench/project-{i % PROJECTS:02d}",
        "hook_event_name": "UserPromptSubmit",
        "prompt": synthetic_text(i, 24),
    }


def process_burst(
    env: dict[str, str], clients: int, cmd: list[str], distinct: int
) -> dict[str, Any]:
    results: list[tuple[float, int, bytes]] = []
    lock = threading.Lock()

    def one(i: int) -> None:
        data = json.dumps(hook_payload(i * 37 % distinct)).encode()
        started = time.perf_counter()
        proc = subprocess.Popen(
            cmd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        out, _ = proc.communicate(data, timeout=60)
        took = (time.perf_counter() - started) * 1000
        with lock:
            results.append((took, proc.returncode, out))

    threads = [threading.Thread(target=one, args=(i,)) for i in range(clients)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    wall = (time.perf_counter() - t0) * 1000
    latencies = [r[0] for r in results]
    return {
        "latencies": latencies,
        "answered": sum(1 for r in results if r[1] == 0 and r[2].startswith(b"<memd-context>")),
        "exit_nonzero": sum(1 for r in results if r[1] != 0),
        "wall_ms": wall,
    }


def socket_burst(socket_path: str, clients: int, distinct: int) -> dict[str, Any]:
    from memd import protocol

    barrier = threading.Barrier(clients)
    latencies: list[float] = []
    answered = 0
    failures: list[str] = []
    lock = threading.Lock()

    def one(i: int) -> None:
        nonlocal answered
        payload = hook_payload(i * 41 % distinct)
        request = {"cmd": "hook", "event": "user-prompt-submit", "payload": payload}
        barrier.wait(30)
        started = time.perf_counter()
        try:
            reply = protocol.request(socket_path, request, timeout=30)
        except (OSError, ValueError) as exc:
            with lock:
                failures.append(str(exc))
            return
        took = (time.perf_counter() - started) * 1000
        with lock:
            latencies.append(took)
            answered += bool(reply.get("ok") and reply.get("context"))

    threads = [threading.Thread(target=one, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    return {"latencies": latencies, "answered": answered, "failures": failures}


def main(argv: list[str] | None = None) -> str:
    p = argparse.ArgumentParser(description="concurrent memd-hook clients")
    p.add_argument("--size", type=int, default=10_000)
    p.add_argument("--clients", type=int, default=200)
    p.add_argument("--distinct", type=int, default=3000)
    p.add_argument("--record", action="store_true", help="append to bench/results/log.md")
    args = p.parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="memd-conc-", dir="/tmp"))
    env = bench_env(workdir)
    rows = []
    try:
        fill_store(env, 0, args.size, min(args.distinct, args.size))
        daemon = Daemon(env, workdir / "daemon.log")
        try:
            for i in range(10):  # warm up
                daemon.request(
                    {"cmd": "hook", "event": "user-prompt-submit", "payload": hook_payload(i)}
                )
            before = daemon.request({"cmd": "status"})["requests"]
            distinct = min(args.distinct, args.size)
            floor = process_burst(env, args.clients, FLOOR, distinct)
            time.sleep(3)
            procs = process_burst(env, args.clients, [MEMD_HOOK, "user-prompt-submit"], distinct)
            time.sleep(3)
            fast = process_burst(env, args.clients, FAST_HOOK, distinct)
            time.sleep(3)
            socks = socket_burst(env["MEMD_SOCKET"], args.clients, distinct)
            after = daemon.request({"cmd": "status"})["requests"]
        finally:
            code = daemon.stop()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    bursts = (
        ("floor: `python -I -S -c 'import _socket'` processes (no daemon involved)", floor),
        ("`memd-hook` processes (console script)", procs),
        ("`python -I -S memd/hookrun.py` processes", fast),
        ("socket clients (threads, barrier)", socks),
    )
    for name, burst in bursts:
        lat = burst["latencies"]
        dropped: int | str = args.clients - burst["answered"]
        if burst is floor:
            burst = {**burst, "answered": "-"}
            dropped = "-"
        rows.append(
            [
                name,
                f"{args.size:,}",
                args.clients,
                burst["answered"],
                dropped,
                f"{percentile(lat, 50):.0f}",
                f"{percentile(lat, 95):.0f}",
                f"{percentile(lat, 99):.0f}",
                f"{max(lat, default=0):.0f}",
            ]
        )
    body = markdown_table(
        [
            "clients",
            "memories",
            "concurrent",
            "answered with context",
            "dropped",
            "p50 ms",
            "p95 ms",
            "p99 ms",
            "max ms",
        ],
        rows,
    )
    served = after["requests"] - before["requests"] - 1  # minus the status call itself
    errors = after["errors"] - before["errors"]
    body += (
        f"\n\nThe daemon counted {served} requests and {errors} errors during the bursts; "
        f"the process bursts took {floor['wall_ms']:.0f} (floor), {procs['wall_ms']:.0f} and "
        f"{fast['wall_ms']:.0f} ms wall; "
        f"hooks the daemon skipped because they had waited past their 2 s timeout: "
        f"{after['late'] - before['late']}; daemon exit code {code}; "
        f"load average {os.getloadavg()[0]:.2f} at the end."
    )
    print(body)
    if args.record:
        append_section("Concurrent hook clients", body)
    return body


if __name__ == "__main__":
    main()
