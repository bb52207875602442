"""Store benchmark: import N memories (embeddings included), then hybrid search latency.

    .venv/bin/python bench/store.py [--rows 100000] [--queries 200]

Measures, on a fresh temporary MEMD_HOME:
- `memd import` of N synthetic memories from JSONL: wall time, texts/s, peak RSS of the process;
- hybrid search p50/p95 at N rows, excluding the query embedding (vectors are computed first),
  with the ANN index that the import's final optimize builds past ``ann_index_min_rows``, and
  side by side the same queries as a flat (no ANN index) search.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SUBJECTS = [
    "the billing service",
    "the API gateway",
    "the mobile app",
    "the data pipeline",
    "the CI job",
    "the auth module",
    "the search index",
    "the admin panel",
    "the deploy script",
    "the cache layer",
    "the payment worker",
    "the email sender",
    "the report generator",
    "the docs site",
    "the CLI",
]
VERBS = [
    "uses",
    "depends on",
    "was migrated to",
    "should switch to",
    "is tested with",
    "logs through",
    "is deployed with",
    "stores its data in",
    "is configured by",
    "talks to",
]
OBJECTS = [
    "PostgreSQL 16",
    "Redis",
    "Kafka",
    "S3",
    "pytest",
    "GitHub Actions",
    "Terraform",
    "Docker",
    "FastAPI",
    "React",
    "Celery",
    "RabbitMQ",
    "SQLite",
    "nginx",
    "Prometheus",
    "OpenTelemetry",
    "ruff",
    "black",
    "mypy",
    "poetry",
    "uv",
    "pnpm",
    "Vite",
    "Go 1.22",
    "Rust",
    "gRPC",
]
REASONS = [
    "because it is faster",
    "after the outage in March",
    "to cut costs",
    "as agreed with the team",
    "since the old setup leaked memory",
    "for simpler local development",
    "until the rewrite lands",
    "because the vendor dropped support",
    "to match the other services",
    "per the security review",
]
KINDS = ["fact", "decision", "preference", "todo", "bugfix", "progress", "summary", "excerpt"]


def synthetic(n: int, seed: int = 7) -> list[dict[str, object]]:
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        text = (
            f"{rng.choice(SUBJECTS).capitalize()} {rng.choice(VERBS)} {rng.choice(OBJECTS)} "
            f"{rng.choice(REASONS)} (note {i})"
        )
        rows.append({"text": text, "kind": rng.choice(KINDS), "project": "/bench/project"})
    return rows


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def search_latency(home: Path, queries: list[str], flat: bool) -> tuple[float, float]:
    os.environ["MEMD_HOME"] = str(home)
    from memd.recall.retrieve import search
    from memd.settings import load_settings
    from memd.store.table import MemoryStore

    store = MemoryStore(load_settings()).open()
    vectors = store.embedder.embed(queries)
    if flat:
        names = [i.name for i in store.table.list_indices() if i.columns == ["vector"]]
        for name in names:
            store.table.drop_index(name)
    for q, v in zip(queries[:10], vectors[:10], strict=True):  # warm caches
        search(store, q, ["/bench/project"], limit=10, vector=v)
    times = []
    for q, v in zip(queries, vectors, strict=True):
        t = time.perf_counter()
        search(store, q, ["/bench/project"], limit=10, vector=v)
        times.append((time.perf_counter() - t) * 1000)
    store.close()
    return statistics.median(times), pct(times, 0.95)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--reuse", type=Path, help="Skip the import: search this MEMD_HOME.")
    args = parser.parse_args()
    if args.reuse:
        rng = random.Random(11)
        queries = [
            f"what does {rng.choice(SUBJECTS)} use for {rng.choice(OBJECTS)}"
            for _ in range(args.queries)
        ]
        p50, p95 = search_latency(args.reuse, queries, flat=False)
        print(
            f"| hybrid search p50 / p95 at {args.reuse}, query embedding excluded | {p50:.1f} / {p95:.1f} ms |"
        )
        return

    tmp = Path(tempfile.mkdtemp(prefix="memd-bench-store-"))
    home = tmp / "home"
    data = tmp / "memories.jsonl"
    with open(data, "w") as fh:
        for row in synthetic(args.rows):
            fh.write(json.dumps(row) + "\n")
    env = {**os.environ, "MEMD_HOME": str(home), "MEMD_CONFIG": str(tmp / "none.toml")}
    memd = Path(sys.executable).parent / "memd"
    started = time.perf_counter()
    run = subprocess.run(
        [str(memd), "import", str(data), "--json"], env=env, capture_output=True, text=True
    )
    wall = time.perf_counter() - started
    if run.returncode != 0:
        sys.exit(f"import failed: {run.stderr}")
    peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    report = json.loads(run.stdout)
    rng = random.Random(11)
    queries = [
        f"what does {rng.choice(SUBJECTS)} use for {rng.choice(OBJECTS)}"
        for _ in range(args.queries)
    ]
    ann_p50, ann_p95 = search_latency(home, queries, flat=False)
    flat_p50, flat_p95 = search_latency(home, queries, flat=True)
    lines = [
        f"### Store: import and hybrid search at {args.rows:,} memories",
        "",
        f"Command: `.venv/bin/python bench/store.py --rows {args.rows} --queries {args.queries}`",
        "",
        "| measure | value |",
        "|---|---|",
        f"| `memd import` of {report['read']:,} memories (embeddings included) | {wall:.0f} s |",
        f"| import throughput | {report['read'] / wall:.0f} memories/s |",
        f"| peak RSS of the import process | {peak_mb:.0f} MB (target ≤ 600) |",
        f"| hybrid search p50 / p95, ANN index, query embedding excluded | {ann_p50:.1f} / {ann_p95:.1f} ms (target p50 ≤ 15) |",
        f"| same queries without the ANN index (flat vector scan) | {flat_p50:.1f} / {flat_p95:.1f} ms |",
        f"| ratio flat / ANN (p50) | {flat_p50 / ann_p50:.1f}× |",
        "",
    ]
    print("\n".join(lines))


if __name__ == "__main__":
    main()
