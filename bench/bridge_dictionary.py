"""What the zh<->en dictionary behind the bridge costs: load time, RSS, and per prompt.

    .venv/bin/python bench/bridge_dictionary.py [--runs 3] [--record]

Load: in a fresh process per run, :func:`memd.text.dictionary.get` from the package (parse of the
gzipped CC-CEDICT) and from the parsed copy kept under MEMD_HOME (a daemon's later starts), with
the process RSS before and after (the glossary loaded before, as a daemon has it). Per prompt: the
Chinese prompts of the four tuning sets (tests/labelled/crosslingual_*.jsonl, never held-out-4),
each bridged afresh (:func:`memd.text.bridge.bridge` without its cache) and extended over the other
language's side of its set plus the distractors (what a recall does for every candidate), with
the glossary alone and with the dictionary, interleaved; medians in ms.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import ROOT, append_section, markdown_table

SETS = (
    "crosslingual_zh_en.jsonl",
    "crosslingual_heldout.jsonl",
    "crosslingual_heldout2.jsonl",
    "crosslingual_heldout3.jsonl",
)
LOAD = """
import json, sys, time
from pathlib import Path
def rss():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS"):
            return int(line.split()[1]) / 1024
from memd.text import bridge, dictionary
bridge.glossary()
before = rss()
dictionary.configure(Path(sys.argv[1]), preload=False)
started = time.perf_counter()
assert dictionary.get() is not None
print(json.dumps([time.perf_counter() - started, rss() - before]))
"""


def load_runs(runs: int) -> list[list[object]]:
    out: list[list[object]] = []
    cold: list[list[float]] = []
    warm: list[list[float]] = []
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as home:
            for kept in (cold, warm):  # first: no copy yet; then: the copy just written
                done = subprocess.run(
                    [sys.executable, "-c", LOAD, home], capture_output=True, text=True, check=True
                )
                kept.append(json.loads(done.stdout.strip().splitlines()[-1]))
    for name, got in (
        ("from the package (first start)", cold),
        ("from the copy in MEMD_HOME", warm),
    ):
        seconds = statistics.median(g[0] for g in got)
        mib = statistics.median(g[1] for g in got)
        out.append([name, runs, f"{seconds:.2f}", f"{mib:.0f}"])
    return out


def per_prompt(rounds: int) -> list[list[object]]:
    from memd.text import bridge, dictionary, searchterms

    d = dictionary.get()
    assert d is not None
    distractors = [
        json.loads(x)["text"]
        for x in (ROOT / "tests/labelled/crosslingual_distractors.jsonl").read_text().splitlines()
        if x.strip()
    ]
    cases = []
    for name in SETS:
        pairs = [
            json.loads(x)
            for x in (ROOT / "tests/labelled" / name).read_text().splitlines()
            if x.strip()
        ]
        memories = [p["en"] for p in pairs] + distractors
        prepared = [(m, searchterms.term_set(m)) for m in memories]
        cases += [(p["zh"], prepared) for p in pairs]
    times: dict[str, list[float]] = {"glossary": [], "glossary + dictionary": []}
    for _ in range(rounds):
        for query, prepared in cases:
            for label, use in (("glossary", None), ("glossary + dictionary", d)):
                bridge._bridge.cache_clear()
                started = time.perf_counter()
                found = bridge._bridge(query, use)
                for text, have in prepared:
                    found.extend(text, have)
                times[label].append((time.perf_counter() - started) * 1000)
    n = f"{min(len(c[1]) for c in cases)}-{max(len(c[1]) for c in cases)}"
    return [
        [
            label,
            len(cases),
            n,
            f"{statistics.median(t):.2f}",
            f"{sorted(t)[int(0.95 * len(t))]:.2f}",
        ]
        for label, t in times.items()
    ]


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=3, help="fresh processes per load figure")
    ap.add_argument("--rounds", type=int, default=3, help="passes over the prompts")
    ap.add_argument(
        "--record", action="store_true", help="append a section to bench/results/log.md"
    )
    args = ap.parse_args(argv)
    body = "\n\n".join(
        [
            markdown_table(["load", "runs", "median s", "RSS +MiB"], load_runs(args.runs)),
            markdown_table(
                [
                    "bridge",
                    "Chinese prompts",
                    "memories extended per prompt",
                    "median ms",
                    "p95 ms",
                ],
                per_prompt(args.rounds),
            ),
            "- Load: a fresh process per run, the glossary loaded first; RSS = VmRSS after minus "
            "before. Per prompt: bridging a Chinese prompt afresh and extending it over every "
            "memory of its set (the English side plus the distractors), as a recall does for its "
            "candidates (a daemon caches the bridge per prompt). An English prompt in a project "
            "without Chinese never loads the dictionary and pays nothing. The machine is shared "
            "(2 cores, other jobs running): the figures are noisy, compare within a row.",
        ]
    )
    print(body)
    if args.record:
        append_section("zh<->en dictionary cost (bench/bridge_dictionary.py)", body)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
