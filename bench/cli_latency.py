"""CLI latency: wall time of `memd` commands against a running daemon, next to the interpreter floor.

    .venv/bin/python bench/cli_latency.py [--memories 10000] [--runs 30] [--baseline DIR] [--record]

A real `memd serve` runs on a temporary home filled with ``--memories`` memories (``bench/memory.py``'s
``fill``: ``--distinct`` embedded texts, the others reuse their vectors with noise, 20 projects).
Each round runs every command once, interleaved so they share the machine's noise:

- the floor, ``python -c pass`` (the same interpreter, with ``site``, as a console script has);
- ``memd --help``, ``memd status``, ``memd search QUERY --project P``, and
  ``memd list --all-projects --json`` (the daemon answers; it prints its first 1,000 rows).

``--baseline DIR`` also times another memd source tree (e.g. ``git archive <commit> memd | tar -x
-C DIR``) with the same interpreter, ``python -c 'sys.path[:0] = [DIR]; memd.cli.main()' ARGS``,
against the same daemon, and this tree the same way, so the two differ only in their code.
Medians (and p90) of the wall time, and the median CPU time of the process, in milliseconds, go to stdout as Markdown; ``--record`` appends them to
bench/results/log.md.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import ROOT, append_section, markdown_table, percentile
from hook_latency import MEMD, Daemon, bench_env, fill_store

PROJECT = "/bench/project-03"
QUERY = "which database do the billing invoices use"
COMMANDS: dict[str, list[str]] = {
    "memd --help": ["--help"],
    "memd status": ["status"],
    "memd search": ["search", QUERY, "--project", PROJECT],
    "memd list --all-projects --json": ["list", "--all-projects", "--json"],
}


def via_source(tree: Path, args: list[str]) -> list[str]:
    code = (
        f"import sys; sys.path[:0] = [{str(tree)!r}]; sys.argv[0] = 'memd'; "
        "from memd.cli import main; main()"
    )
    return [sys.executable, "-c", code, *args]


def timed(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall ms, CPU ms) of one run; CPU is the child's user + system time, which a loaded
    machine inflates far less than the wall time."""
    started = time.perf_counter()
    proc = subprocess.Popen(
        cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd="/tmp"
    )
    assert proc.stderr is not None
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    took = (time.perf_counter() - started) * 1000
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"{cmd[:4]} exited {proc.returncode}: {err[-800:]!r}")
    return took, (usage.ru_utime + usage.ru_stime) * 1000


def main(argv: list[str] | None = None) -> str:
    p = argparse.ArgumentParser(description="memd CLI wall time against a running daemon")
    p.add_argument("--memories", type=int, default=10_000)
    p.add_argument("--distinct", type=int, default=1000)
    p.add_argument("--runs", type=int, default=30)
    p.add_argument("--baseline", type=Path, help="another memd source tree to time as well")
    p.add_argument("--record", action="store_true", help="append to bench/results/log.md")
    args = p.parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="memd-cli-", dir="/tmp"))
    env = bench_env(workdir)
    cmds: dict[str, list[str]] = {"floor `python -c pass`": [sys.executable, "-c", "pass"]}
    for name, words in COMMANDS.items():
        cmds[name] = [MEMD, *words]
    if args.baseline:
        for name, words in COMMANDS.items():
            cmds[f"{name} (this tree, -c)"] = via_source(ROOT, words)
            cmds[f"{name} (baseline, -c)"] = via_source(args.baseline.resolve(), words)
    times: dict[str, list[float]] = {name: [] for name in cmds}
    cpu: dict[str, list[float]] = {name: [] for name in cmds}
    try:
        fill_s = fill_store(env, 0, args.memories, min(args.distinct, args.memories))
        daemon = Daemon(env, workdir / "daemon.log")
        try:
            for cmd in cmds.values():  # warm the page cache and the daemon's caches
                timed(cmd, env)
            for _ in range(args.runs):
                for name, cmd in cmds.items():
                    wall, used = timed(cmd, env)
                    times[name].append(wall)
                    cpu[name].append(used)
        finally:
            code = daemon.stop()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    floor = percentile(times["floor `python -c pass`"], 50)
    rows = [
        [
            f"`{name}`" if not name.startswith("floor") else name,
            f"{percentile(values, 50):.0f}",
            f"{percentile(values, 90):.0f}",
            f"{percentile(values, 50) / floor:.1f}x",
            f"{percentile(cpu[name], 50):.0f}",
        ]
        for name, values in times.items()
    ]
    body = markdown_table(
        ["command", "wall p50 ms", "wall p90 ms", "p50 / floor", "CPU (user+sys) p50 ms"], rows
    )
    body += (
        f"\n\n{args.runs} interleaved rounds against a running daemon on a store of "
        f"{args.memories:,} memories ({args.distinct} embedded texts, 20 projects; fill "
        f"{fill_s:.0f} s, daemon exit {code}); load average {os.getloadavg()[0]:.2f} at the end."
    )
    if args.baseline:
        body += f" Baseline tree: `{args.baseline}`."
    print(body)
    if args.record:
        append_section("CLI latency (memd commands through the daemon)", body)
    return body


if __name__ == "__main__":
    main()
