"""Daemon footprint: peak RSS of `memd serve` at 10k and 100k memories, and its idle CPU.

    .venv/bin/python bench/memory.py [--sizes 10000,100000] [--idle-seconds 30] [--no-record]

The store is filled by this process (as the writer, before the daemon starts) with
``MemoryStore.write`` in batches of 10,000, then optimized (which also builds the ANN index past
``ann_index_min_rows``), as the daemon's jobs would. Embedding 100k texts at a few hundred per
second would take many minutes, so only ``--distinct`` texts (default 3,000) are embedded; every
other memory reuses one of those vectors plus small Gaussian noise (sigma 0.01 per dimension,
renormalised), under its own distinct text. Memories are spread over 20 projects.

For each size the daemon is started on that home, warmed with 50 searches over the socket,
and then measured from ``/proc/<pid>/status`` (VmRSS now, VmHWM peak, and VmRSS's file-backed
and anonymous parts) and ``/proc/<pid>/stat`` (utime + stime over ``--idle-seconds`` of
idleness). After the idle measurement 20 more hooks are sent and RSS is read again: the
working set that comes back once requests arrive again, not only the low point.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (
    ROOT,
    append_section,
    markdown_table,
    percentile,
    stop_daemon,
    wait_for_daemon,
)
from ingest import synthetic_text, vocabulary

MEMD = ROOT / ".venv" / "bin" / "memd"
PROJECTS = 20
MORE_HOOKS = 20
KINDS = ("fact", "decision", "preference", "todo", "progress", "bugfix", "summary", "excerpt")


def proc_status(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM in KiB, and VmRSS's file-backed part (RssFile: pages of the mapped
    libraries, ~100 MiB more with a freshly written venv, whose files are all in the page cache,
    than with one the kernel has partly evicted) and anonymous part (RssAnon)."""
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM", "RssFile", "RssAnon"):
            out[key] = int(value.split()[0])
    return out


def cpu_seconds(pid: int) -> float:
    """utime + stime of the process (all threads), in seconds."""
    raw = Path(f"/proc/{pid}/stat").read_text()
    fields = raw[raw.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def fill(home: Path, start: int, stop: int, distinct: int, cache: dict[int, Any]) -> float:
    """Write memories ``start..stop`` into the store under ``home``; returns seconds."""
    import numpy as np

    from memd.daemon.app import App
    from memd.models import Memory, Source
    from memd.settings import load_settings

    settings = load_settings(home=str(home))
    app = App(settings).open(writer=True, owner="bench")
    rng = np.random.default_rng(start)
    started = time.perf_counter()
    try:
        base_ids = [i for i in range(distinct) if i not in cache]
        if base_ids:
            vecs = app.store.embedder.embed([synthetic_text(i, 24) for i in base_ids])
            cache.update(
                {i: np.asarray(v, dtype=np.float32) for i, v in zip(base_ids, vecs, strict=True)}
            )
        for lo in range(start, stop, 10_000):
            batch = []
            vectors = {}
            for i in range(lo, min(stop, lo + 10_000)):
                base = cache[i % distinct]
                vec = base + rng.normal(0, 0.01, base.shape).astype(np.float32)
                vec /= np.linalg.norm(vec)
                m = Memory(
                    text=synthetic_text(i, 24),
                    kind=KINDS[i % len(KINDS)],
                    project=f"/bench/project-{i % PROJECTS:02d}",
                    importance=0.3 + (i % 7) / 10,
                    sources=[Source(f"s{i // 50}", f"u{i}", "2026-01-01T00:00:00.000Z")],
                )
                batch.append(m)
                vectors[m.id] = vec.tolist()
            app.store.write(batch, vectors)
        app.store.optimize()
    finally:
        app.close()
    return time.perf_counter() - started


def hook(sock: str, i: int) -> None:
    from memd import protocol

    payload = {
        "session_id": f"mem-bench-{i}",
        "cwd": f"/bench/project-{i % PROJECTS:02d}",
        "prompt": synthetic_text(950_000 + i, 12),
    }
    protocol.request(sock, {"cmd": "hook", "event": "user-prompt-submit", "payload": payload}, 30)


def measure(home: Path, idle_seconds: float, workdir: Path) -> dict[str, Any]:
    from memd import protocol

    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMD_")}
    env.update(
        MEMD_HOME=str(home),
        MEMD_TRANSCRIPTS_DIR=str(workdir / "watched"),
        MEMD_CONFIG=str(workdir / "memd.toml"),
    )
    (workdir / "watched").mkdir(exist_ok=True)
    sock = str(home / "memd.sock")
    log = (workdir / "daemon.log").open("ab")
    proc = subprocess.Popen([str(MEMD), "serve"], env=env, stdout=log, stderr=log)
    try:
        wait_for_daemon(sock, proc, workdir / "daemon.log", timeout=120)
        started_rss = proc_status(proc.pid)
        latencies = []
        for i in range(50):
            t0 = time.perf_counter()
            protocol.request(
                sock,
                {"cmd": "search", "query": synthetic_text(900_000 + i, 8),
                 "cwd": f"/bench/project-{i % PROJECTS:02d}", "limit": 10},
                timeout=30,
            )  # fmt: skip
            latencies.append((time.perf_counter() - t0) * 1000)
        for i in range(3 * PROJECTS):  # hooks too: each project's vector cache gets built
            hook(sock, i)
        busy_rss = proc_status(proc.pid)
        status = protocol.request(sock, {"cmd": "status"}, timeout=30)
        time.sleep(2)
        before = cpu_seconds(proc.pid)
        t0 = time.monotonic()
        time.sleep(idle_seconds)
        idle_cpu = (cpu_seconds(proc.pid) - before) / (time.monotonic() - t0)
        rss = proc_status(proc.pid)
        for i in range(MORE_HOOKS):  # what comes back once requests arrive again
            hook(sock, 3 * PROJECTS + i)
        again = proc_status(proc.pid)
        return {
            "memories": (status.get("memories") or {}).get("total"),
            "rss_start_mib": started_rss["VmRSS"] / 1024,
            "rss_busy_mib": busy_rss["VmRSS"] / 1024,
            "rss_busy_file_mib": busy_rss.get("RssFile", 0) / 1024,
            "rss_busy_anon_mib": busy_rss.get("RssAnon", 0) / 1024,
            "rss_mib": rss["VmRSS"] / 1024,
            "rss_file_mib": rss.get("RssFile", 0) / 1024,
            "rss_anon_mib": rss.get("RssAnon", 0) / 1024,
            "rss_again_mib": again["VmRSS"] / 1024,
            "rss_again_file_mib": again.get("RssFile", 0) / 1024,
            "rss_again_anon_mib": again.get("RssAnon", 0) / 1024,
            "peak_rss_mib": again["VmHWM"] / 1024,
            "idle_cpu_pct": idle_cpu * 100,
            "search_p50_ms": percentile(latencies, 50),
            "search_p95_ms": percentile(latencies, 95),
        }
    finally:
        stop_daemon(proc, timeout=30)
        log.close()


def main(argv: list[str] | None = None) -> str:
    p = argparse.ArgumentParser(description="memd daemon memory and idle CPU")
    p.add_argument("--sizes", default="10000,100000")
    p.add_argument("--distinct", type=int, default=3000)
    p.add_argument("--idle-seconds", type=float, default=30)
    p.add_argument("--no-record", action="store_true")
    args = p.parse_args(argv)
    sizes = sorted(int(s) for s in args.sizes.split(","))
    workdir = Path(tempfile.mkdtemp(prefix="memd-mem-bench-"))
    home = workdir / "home"
    cache: dict[int, Any] = {}
    rows = []
    have = 0
    for size in sizes:
        seconds = fill(home, have, size, min(args.distinct, size), cache)
        have = size
        m = measure(home, args.idle_seconds, workdir)
        rows.append([f"{size:,}", m["memories"], f"{m['rss_start_mib']:.0f}",
                     f"{m['rss_busy_mib']:.0f}",
                     f"{m['rss_busy_file_mib']:.0f} / {m['rss_busy_anon_mib']:.0f}",
                     f"{m['rss_mib']:.0f}", f"{m['rss_file_mib']:.0f}", f"{m['rss_anon_mib']:.0f}",
                     f"{m['rss_again_mib']:.0f}",
                     f"{m['rss_again_file_mib']:.0f} / {m['rss_again_anon_mib']:.0f}",
                     f"{m['peak_rss_mib']:.0f}", f"{m['idle_cpu_pct']:.2f}",
                     f"{m['search_p50_ms']:.1f} / {m['search_p95_ms']:.1f}", f"{seconds:.0f}"])  # fmt: skip
        print(rows[-1], flush=True)
    body = markdown_table(
        ["memories", "daemon reports", "RSS at start (MiB)", "RSS after searches and hooks",
         "of which file-backed / anonymous",
         f"RSS after {args.idle_seconds:.0f} s idle (MiB)", "of which file-backed (MiB)",
         "anonymous (MiB)", f"RSS after {MORE_HOOKS} more hooks",
         "of which file-backed / anonymous", "peak RSS (MiB)", f"idle CPU % over {args.idle_seconds:.0f} s",
         "search p50 / p95 ms (50 warm)", "fill s"],
        rows,
    )  # fmt: skip
    body += (
        f"\n\nTexts: 24 words each, drawn Zipf-like from the fixture transcripts' vocabulary "
        f"({len(vocabulary())} words). Vectors: {args.distinct} distinct embedded texts, the rest "
        f"reuse them with N(0, 0.01) noise; {PROJECTS} projects; 50 searches of 8 words, then "
        f"{3 * PROJECTS} prompt hooks of 12 words, the idle wait, {MORE_HOOKS} more hooks; "
        f"load average {os.getloadavg()[0]:.2f} at the end."
    )
    print(body)
    if not args.no_record:
        append_section("Daemon memory and idle CPU (bench/memory.py)", body)
    return body


if __name__ == "__main__":
    main()
