"""Shared pieces of the benchmark harnesses: machine, commit, tables, recorded sections.

Figures reach bench/results/log.md only through :func:`append_section`, which appends one dated section
with the machine, the commit and the exact command. Nothing here is ever rewritten in place.
"""

from __future__ import annotations

import contextlib
import os
import platform
import random
import shlex
import subprocess
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCHMARKS = ROOT / "bench" / "results" / "log.md"
"""Where ``--record`` appends; BENCHMARKS.md holds the current table, updated by hand."""
CACHE = ROOT / "bench" / ".cache"
"""Git-ignored: embeddings and generated transcripts live here between runs."""


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def memory_gib() -> float:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) / (1 << 20)
    except OSError:
        pass
    return 0.0


def machine_info() -> str:
    """One line: CPU, cores, RAM, OS and Python."""
    return (
        f"{cpu_model()}, {os.cpu_count()} cores, {memory_gib():.0f} GiB RAM, "
        f"{platform.system()} {platform.release()}, Python {platform.python_version()}"
    )


def git_commit(root: Path = ROOT) -> str:
    """Short commit hash, with ``+dirty`` when tracked files under memd/ or bench/ changed."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=root,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no", "--", "memd", "bench"],
            cwd=root,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return f"{head}+dirty" if dirty else head


def command_line() -> str:
    """The command as a user would type it from the repository root."""
    exe = Path(sys.executable)
    try:
        exe_s = str(exe.relative_to(ROOT))
    except ValueError:
        exe_s = str(exe)
    argv = list(sys.argv)
    with contextlib.suppress(ValueError):
        argv[0] = str(Path(argv[0]).resolve().relative_to(ROOT))
    return " ".join(shlex.quote(a) for a in [exe_s, *argv])


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    def cell(value: object) -> str:
        if isinstance(value, float):
            return f"{value:.3f}"
        return str(value)

    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def percentile(values: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile, ``q`` in [0, 100]; 0.0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100
    lo = int(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def bootstrap_ci(
    values: Sequence[float], rounds: int = 2000, seed: int = 7, alpha: float = 0.05
) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean."""
    if not values:
        return (0.0, 0.0)
    rng = random.Random(seed)
    n = len(values)
    means = sorted(sum(values[rng.randrange(n)] for _ in range(n)) / n for _ in range(rounds))
    return (means[int(rounds * alpha / 2)], means[int(rounds * (1 - alpha / 2)) - 1])


def section(title: str, body: str, command: str | None = None) -> str:
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    head = [
        f"## {title} ({stamp})",
        "",
        f"- machine: {machine_info()}",
        f"- commit: `{git_commit()}`",
        f"- command: `{command or command_line()}`",
        "",
    ]
    return "\n".join(head) + "\n" + body.strip("\n") + "\n"


def append_section(
    title: str, body: str, command: str | None = None, path: Path = BENCHMARKS
) -> str:
    """Append one section to bench/results/log.md (creating it if needed); the text written."""
    text = section(title, body, command)
    existing = path.read_text() if path.exists() else ""
    sep = "" if not existing else ("\n" if existing.endswith("\n") else "\n\n")
    with path.open("a") as fh:
        fh.write(sep + text)
    return text


def wait_for_daemon(
    sock: str, proc: subprocess.Popen[bytes], log: Path | str, timeout: float = 180.0
) -> None:
    """Wait until the daemon ``proc`` answers a ping on ``sock``; RuntimeError (naming its
    ``log``) when it exits first or does not answer within ``timeout`` seconds."""
    from memd import protocol

    deadline = time.monotonic() + timeout
    while True:
        try:
            if protocol.request(sock, {"cmd": "ping"}, timeout=2).get("ok"):
                return
        except (OSError, ValueError):
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"memd serve did not start; see {log}")
        time.sleep(0.1)


def stop_daemon(proc: subprocess.Popen[bytes], timeout: float = 60.0) -> int:
    """Stop the daemon ``proc`` (SIGTERM, then SIGKILL after ``timeout`` s); its exit code."""
    if proc.poll() is None:
        proc.terminate()
    try:
        return proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.wait(10)
