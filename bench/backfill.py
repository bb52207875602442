"""Backfill throughput: real-shaped Claude Code history ingested through the daemon (#30).

    .venv/bin/python bench/backfill.py [--mb 200] [--record]

The history is built from the real sessions of ``tests/real_sessions`` (the labelled realwork
sessions and transcripts), copied until it holds ``--mb`` MB. Each copy is a history of its
own, as a user with many projects has: every UUID (sessions, turns, parents) mapped to a new one,
the working directory given a suffix everywhere it is written, laid out as Claude Code lays it
out (``<encoded cwd>/<session>.jsonl``). A private daemon (``memd serve`` on a temporary home)
ingests it over its socket (``ingest``: parse, segment, redact, extract, embed, dedupe, store),
as ``memd ingest`` does; the figure is the wall time of that request. ``MEMD_BENCH_CHECKOUT``
runs another checkout's daemon (a before/after on one machine).
"""

from __future__ import annotations

import argparse
import functools
import gzip
import json
import re
import shutil
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT, append_section, git_commit, machine_info, markdown_table
from realwork import Daemon, main_cwd

SESSIONS = ROOT / "tests" / "real_sessions"
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def sources() -> list[tuple[str, str, str]]:
    """(file name, cwd, text) of every real session, decompressed."""
    out = []
    for path in sorted(SESSIONS.glob("*/*.jsonl.gz")):
        text = gzip.decompress(path.read_bytes()).decode()
        lines = [json.loads(line) for line in text.splitlines() if line.strip()]
        out.append((path.name.removesuffix(".gz"), main_cwd(lines), text))
    if not out:
        raise SystemExit(f"no real sessions under {SESSIONS}")
    return out


def _renamed(ns: uuid.UUID, m: re.Match[str]) -> str:
    return str(uuid.uuid5(ns, m.group(0)))


def build(root: Path, min_bytes: int) -> tuple[int, int]:
    """Copies of the real sessions under ``root`` until it holds ``min_bytes``: (files, bytes)."""
    originals = sources()
    files = total = copy = 0
    while total < min_bytes:
        ns = uuid.uuid5(uuid.NAMESPACE_URL, f"memd-backfill/{copy}")
        for name, cwd, text in originals:
            moved = f"{cwd or '/home/user/project'}-{copy:04d}"
            if cwd:
                text = text.replace(cwd, moved)
            text = _UUID.sub(functools.partial(_renamed, ns), text)
            folder = root / re.sub(r"[^A-Za-z0-9]", "-", moved)
            folder.mkdir(parents=True, exist_ok=True)
            data = text.encode()
            (folder / f"{copy:04d}-{name}").write_bytes(data)
            files += 1
            total += len(data)
            if total >= min_bytes:
                break
        copy += 1
    return files, total


def run(mb: float, keep: Path | None) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="memd-backfill-", dir=keep))
    try:
        files, size = build(work / "history", int(mb * 1e6))
        daemon = Daemon(work)
        try:
            started = time.monotonic()
            reply = daemon.request(
                {"cmd": "ingest", "paths": [str(work / "history")]}, timeout=4 * 3600
            )
            seconds = time.monotonic() - started
            stats = daemon.request({"cmd": "status"}).get("memories") or {}
        finally:
            daemon.stop()
    finally:
        if keep is None:
            shutil.rmtree(work, ignore_errors=True)
    return {
        "files": files,
        "bytes": size,
        "turns": reply.get("turns", 0),
        "segments": reply.get("segments", 0),
        "memories": reply.get("memories_added", stats.get("total", 0)),
        "seconds": seconds,
    }


def table(r: dict[str, Any]) -> str:
    mb = r["bytes"] / 1e6
    rows = [
        ("history", f"{mb:.1f} MB, {r['files']} files, {r['turns']:,} turns"),
        ("memories stored", f"{r['memories']:,}"),
        ("ingest through the daemon (wall)", f"{r['seconds']:.1f} s"),
        ("throughput", f"**{mb / r['seconds']:.2f} MB/s**"),
        ("turns/s", f"{r['turns'] / r['seconds']:.0f}"),
        ("memories/s", f"{r['memories'] / r['seconds']:.1f}"),
    ]
    return markdown_table(("measure", "value"), rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mb", type=float, default=200.0, help="size of the history (MB)")
    ap.add_argument("--keep", type=Path, help="keep the work folder under this directory")
    ap.add_argument("--record", action="store_true", help="append to bench/results/log.md")
    args = ap.parse_args()
    result = run(args.mb, args.keep)
    text = f"- machine: {machine_info()}\n- commit: `{git_commit()}`\n\n{table(result)}"
    print(text)
    if args.record:
        append_section("Backfill through the daemon (bench/backfill.py)", text)


if __name__ == "__main__":
    main()
