"""Ingestion throughput: parse MB/s, heuristic extraction turns/s, embedding texts/s, whole pipeline.

    .venv/bin/python bench/ingest.py [--parse-mb 200] [--no-record]

- parse: ``memd.ingest.transcript.parse_lines`` over the fixture transcripts (../shared/fixtures/transcripts)
  replicated to at least ``--parse-mb`` MB in a temp dir, file by file as the backfill reads them.
- extraction: the heuristic extractor over the fixtures' turns, in segments of 40 turns.
- embedding: memd's embedder on short texts (~10 words) and ~200-token texts (~150 words).
- pipeline: ``memd ingest DIR --json`` (no daemon) on one copy of the fixtures into a fresh home:
  parse, segment, redact, extract, embed, dedupe and store.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import ROOT, append_section, markdown_table

FIXTURES = next(
    (
        shared / "fixtures" / "transcripts"
        for shared in (ROOT.parent / "shared", ROOT.parent.parent / "shared")  # checkout, worktree
        if (shared / "fixtures" / "transcripts").is_dir()
    ),
    ROOT.parent / "shared" / "fixtures" / "transcripts",
)
MEMD = ROOT / ".venv" / "bin" / "memd"


def replicate(src: Path, dest: Path, min_bytes: int) -> list[Path]:
    """Copies of every ``*.jsonl`` under ``src`` until ``dest`` holds at least ``min_bytes``."""
    files = sorted(src.glob("*.jsonl"))
    if not files:
        raise SystemExit(f"no fixture transcripts in {src}")
    out: list[Path] = []
    total = 0
    copy = 0
    while total < min_bytes:
        folder = dest / f"copy-{copy:04d}"
        folder.mkdir(parents=True)
        for f in files:
            target = folder / f.name
            shutil.copyfile(f, target)
            out.append(target)
            total += target.stat().st_size
        copy += 1
    return out


def bench_parse(files: list[Path]) -> dict[str, Any]:
    from memd.ingest.transcript import ParseStats, parse_lines

    stats = ParseStats()
    turns = 0
    started = time.perf_counter()
    for f in files:
        turns += len(parse_lines(f.read_bytes().split(b"\n"), stats, session_hint=f.stem))
    seconds = time.perf_counter() - started
    return {
        "files": len(files),
        "mb": stats.bytes / 1e6,
        "lines": stats.lines,
        "turns": turns,
        "seconds": seconds,
        "mb_per_s": stats.bytes / 1e6 / seconds,
        "lines_per_s": stats.lines / seconds,
    }


def fixture_turns() -> list[Any]:
    from memd.ingest.transcript import parse_lines

    turns = []
    for f in sorted(FIXTURES.glob("*.jsonl")):
        turns += parse_lines(f.read_bytes().split(b"\n"), session_hint=f.stem)
    return turns


def bench_extract(turns: list[Any], rounds: int = 5) -> dict[str, Any]:
    from memd.extract.heuristic import HeuristicExtractor
    from memd.models import Segment

    extractor = HeuristicExtractor()
    segments = [
        Segment(t[0].session_id, "/bench/project", t, index=i)
        for i, t in enumerate(turns[i : i + 40] for i in range(0, len(turns), 40))
    ]
    candidates = 0
    started = time.perf_counter()
    for _ in range(rounds):
        for seg in segments:
            candidates += len(extractor.extract(seg))
    seconds = time.perf_counter() - started
    n = len(turns) * rounds
    return {"turns": n, "seconds": seconds, "turns_per_s": n / seconds, "candidates": candidates}


@functools.lru_cache(maxsize=1)
def vocabulary(limit: int = 4000) -> tuple[str, ...]:
    """Words of the fixture transcripts' turns, most frequent first."""
    counts: Counter[str] = Counter()
    for turn in fixture_turns():
        counts.update(re.findall(r"[a-z]{3,}", turn.text.lower()))
    return tuple(w for w, _ in counts.most_common(limit))


def synthetic_text(i: int, words: int) -> str:
    """Deterministic, distinct text of ``words`` words drawn Zipf-like from the fixtures' words."""
    vocab = vocabulary()
    out = [f"note{i}"]
    x = i * 2654435761 % 4294967296
    for _ in range(words - 1):
        x = (x * 1103515245 + 12345) % 2147483648
        u = x / 2147483648
        out.append(vocab[int(len(vocab) * u**3)])
    return " ".join(out) + "."


def bench_embed(count: int = 256) -> dict[str, Any]:
    from memd.embedding.embed import Embedder
    from memd.settings import load_settings

    embedder = Embedder(load_settings()).load()
    embedder.embed(["warm up"] * 16)
    out: dict[str, Any] = {
        "model": embedder.model_id,
        "threads": embedder.settings.embedding_threads,
    }
    for name, words in (("short", 10), ("long", 150)):
        texts = [synthetic_text(i, words) for i in range(count)]
        started = time.perf_counter()
        embedder.embed(texts)
        seconds = time.perf_counter() - started
        out[name] = {"texts": count, "words": words, "seconds": seconds, "per_s": count / seconds}
    started = time.perf_counter()
    for i in range(50):
        embedder.embed_one(synthetic_text(10_000 + i, 12))
    out["one_query_ms"] = (time.perf_counter() - started) / 50 * 1000
    return out


def bench_pipeline(workdir: Path) -> dict[str, Any]:
    """``memd ingest`` without a daemon on one copy of the fixtures, into a fresh home."""
    src = workdir / "pipeline" / "projects"
    replicate(FIXTURES, src, 1)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMD_")}
    env.update(
        MEMD_HOME=str(workdir / "pipeline" / "home"),
        MEMD_TRANSCRIPTS_DIR=str(workdir / "pipeline" / "watched"),
        MEMD_CONFIG=str(workdir / "pipeline" / "memd.toml"),
    )
    started = time.perf_counter()
    done = subprocess.run(
        [str(MEMD), "ingest", str(src), "--json"], env=env, capture_output=True, text=True
    )
    wall = time.perf_counter() - started
    if done.returncode != 0:
        return {"error": done.stderr[-500:]}
    report = json.loads(done.stdout)
    report["wall_seconds"] = wall
    report["turns_per_s"] = report.get("turns", 0) / wall
    return report


def main(argv: list[str] | None = None) -> str:
    p = argparse.ArgumentParser(description="memd ingestion throughput")
    p.add_argument("--parse-mb", type=float, default=200)
    p.add_argument("--no-record", action="store_true")
    args = p.parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="memd-ingest-bench-"))
    rows: list[list[object]] = []
    notes: list[str] = []
    try:
        files = replicate(FIXTURES, workdir / "parse", int(args.parse_mb * 1e6))
        parse = bench_parse(files)
        rows.append(["parse (memd.ingest.transcript)", f"{parse['mb_per_s']:.1f} MB/s",
                     f"{parse['mb']:.0f} MB, {parse['lines']} lines, {parse['turns']} turns, "
                     f"{parse['lines_per_s']:.0f} lines/s"])  # fmt: skip
        shutil.rmtree(workdir / "parse")
        turns = fixture_turns()
        ext = bench_extract(turns)
        rows.append(["heuristic extraction", f"{ext['turns_per_s']:.0f} turns/s",
                     f"{ext['turns']} turns, {ext['candidates']} candidates"])  # fmt: skip
        emb = bench_embed()
        for name in ("short", "long"):
            e = emb[name]
            rows.append([f"embedding, {name} (~{e['words']} words)", f"{e['per_s']:.0f} texts/s",
                         f"{e['texts']} texts, {emb['threads']} threads"])  # fmt: skip
        rows.append(
            ["embedding, one query", f"{emb['one_query_ms']:.1f} ms", "embed_one, 12 words"]
        )
        pipe = bench_pipeline(workdir)
        if "error" in pipe:
            notes.append(f"whole pipeline failed: {pipe['error']}")
        else:
            rows.append(["whole pipeline (`memd ingest`, no daemon)",
                         f"{pipe['turns_per_s']:.0f} turns/s",
                         f"{pipe.get('turns')} turns, {pipe.get('bytes', 0) / 1e6:.1f} MB, "
                         f"{pipe.get('memories_added')} memories, {pipe['wall_seconds']:.1f} s wall "
                         "incl. process start and model load"])  # fmt: skip
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    body = markdown_table(["stage", "throughput", "details"], rows)
    body += f"\n\nLoad average at the end: {os.getloadavg()[0]:.2f} (other work on the machine skews these)."
    for note in notes:
        body += "\n\n" + note
    print(body)
    if not args.no_record:
        append_section("Ingestion throughput (bench/ingest.py)", body)
    return body


if __name__ == "__main__":
    main()
