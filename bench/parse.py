"""Transcript parsing throughput (MB/s) on the fixtures replicated to >= 200 MB.

    .venv/bin/python bench/parse.py [--mb 200] [--backfill-mb 20] [--record]

The fixtures (../shared/fixtures/transcripts) are copied into a temp dir until it holds at least
``--mb`` MB, then read file by file (as the tailer and the backfill read them) and measured as:

- ``parse_line``: every line → Turn / Signal / skipped (the per-line cost);
- ``parse_lines``: the same plus folding streamed assistant lines into turns;
- ``json.loads`` alone on every line, as a reference for the floor the parser builds on;
- ``backfill``: parse + segmenting + durable SQLite state (WAL, synchronous=FULL) on
  ``--backfill-mb`` MB of copies whose session ids and uuids are rewritten, so nothing dedupes.

Figures are printed; ``--record`` also appends them to bench/results/log.md. The data is generated at run
time and deleted afterwards; nothing is committed.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from memd.ingest.backfill import backfill
from memd.ingest.transcript import ParseStats, parse_line, parse_lines
from memd.settings import Settings
from memd.state import State

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT.parent / "shared" / "fixtures" / "transcripts"


def replicate(dest: Path, min_bytes: int, rewrite_ids: bool = False) -> list[Path]:
    """Copies of the fixture transcripts under ``dest`` until they hold ``min_bytes``."""
    files = sorted(FIXTURES.glob("*.jsonl"))
    if not files:
        raise SystemExit(f"no fixture transcripts in {FIXTURES}")
    blobs = [(f.name, f.read_bytes()) for f in files]
    out: list[Path] = []
    total = 0
    copy = 0
    while total < min_bytes:
        d = dest / f"-copy-{copy}"
        d.mkdir(parents=True)
        for name, raw in blobs:
            if rewrite_ids:
                tag = f"c{copy}-".encode()
                raw = raw.replace(b'"sessionId":"', b'"sessionId":"' + tag)
                raw = raw.replace(b'"uuid":"', b'"uuid":"' + tag)
            path = d / name.split("__", 1)[1]
            path.write_bytes(raw)
            out.append(path)
            total += len(raw)
        copy += 1
    return out


def timed(fn, repeat: int = 3) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    """Median wall seconds and median CPU seconds of ``repeat`` runs (the machine is shared)."""
    wall, cpu = [], []
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return statistics.median(wall), statistics.median(cpu)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mb", type=float, default=200, help="parse corpus size (MB)")
    ap.add_argument("--backfill-mb", type=float, default=20, help="backfill corpus size (MB)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--record", action="store_true", help="append to bench/results/log.md")
    args = ap.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="memd-bench-parse-"))
    try:
        files = replicate(tmp / "parse", int(args.mb * 1e6))
        size = sum(f.stat().st_size for f in files)
        mb = size / 1e6

        def run_parse_line() -> ParseStats:
            stats = ParseStats()
            for f in files:
                for raw in f.read_bytes().split(b"\n"):
                    parse_line(raw, stats)
            return stats

        def run_parse_lines() -> int:
            n = 0
            for f in files:
                n += len(parse_lines(f.read_bytes().split(b"\n")))
            return n

        def run_json() -> None:
            for f in files:
                for raw in f.read_bytes().split(b"\n"):
                    with contextlib.suppress(ValueError):
                        json.loads(raw)

        stats = run_parse_line()
        turns = run_parse_lines()
        rows = [
            ("parse_line", timed(run_parse_line, args.repeat)),
            ("parse_lines (folded turns)", timed(run_parse_lines, args.repeat)),
            ("json.loads only (reference)", timed(run_json, args.repeat)),
        ]

        bf_files = replicate(tmp / "backfill", int(args.backfill_mb * 1e6), rewrite_ids=True)
        bf_size = sum(f.stat().st_size for f in bf_files)
        settings = Settings(
            home=tmp / "home", transcripts_dir=tmp / "none", config=tmp / "none.toml"
        )
        state = State(tmp / "home" / "state.db")
        t0, c0 = time.perf_counter(), time.process_time()
        report = backfill([tmp / "backfill"], state, settings)
        bf = (time.perf_counter() - t0, time.process_time() - c0)
        t0, c0 = time.perf_counter(), time.process_time()
        again = backfill([tmp / "backfill"], state, settings)
        bf_again = (time.perf_counter() - t0, time.process_time() - c0)
        state.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    lines = [
        f"corpus: {len(files)} files, {mb:.1f} MB ({stats.lines} lines: {stats.turns} turn lines, "
        f"{stats.signals} signals, {stats.skipped_lines} skipped, {stats.bad_lines} bad); "
        f"{turns} folded turns",
        "",
        f"| measure (median of {args.repeat}) | wall s | MB/s (wall) | CPU s | MB/s (CPU) |",
        "|---|---|---|---|---|",
    ]
    for name, (wall, cpu) in rows:
        lines.append(f"| {name} | {wall:.2f} | {mb / wall:.0f} | {cpu:.2f} | {mb / cpu:.0f} |")
    bmb = bf_size / 1e6
    for name, (wall, cpu) in (
        (
            f"backfill {bmb:.1f} MB: {report.turns} turns, {report.segments} segments "
            "(parse + segments + SQLite state)",
            bf,
        ),
        (f"backfill again (adds {again.turns} turns, {again.segments} segments)", bf_again),
    ):
        lines.append(f"| {name} | {wall:.2f} | {bmb / wall:.1f} | {cpu:.2f} | {bmb / cpu:.1f} |")
    body = "\n".join(lines)
    print(body)
    if args.record:
        from common import append_section

        append_section("Transcript parsing throughput (bench/parse.py)", "\n" + body)


if __name__ == "__main__":
    os.environ.setdefault("MEMD_HOME", tempfile.gettempdir())
    main()
