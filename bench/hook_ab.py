"""The daemon's share of a prompt hook, this tree against another, side by side on one store.

    .venv/bin/python bench/hook_ab.py --baseline /work/main [--size 10000] [--calls 400]

A store is filled once (``bench/hook_latency.py``'s fill: 3,000 embedded texts, the rest their
vectors plus noise, 20 projects) and copied; two ``memd serve`` run on the copies at the same
time, one importing this tree and one ``--baseline`` (through ``PYTHONPATH``). Each round sends
the same ``user-prompt-submit`` hook request to both, the order alternating, so both share the
machine's noise; the figures are each side's p50 / p95, the median of the paired
differences, and each daemon's RSS and peak RSS after the rounds. (``bench/hook_latency.py`` run once per tree is the same measure, but minutes
apart on a shared machine its p50 moved by more than the effect looked for.)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import ROOT, markdown_table, percentile
from hook_latency import Daemon, bench_env, fill_store, payload


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--baseline", required=True, help="the other checkout (its repository root)")
    p.add_argument("--size", type=int, default=10_000)
    p.add_argument("--calls", type=int, default=400)
    p.add_argument("--distinct", type=int, default=3000)
    args = p.parse_args()
    work = Path(tempfile.mkdtemp(prefix="memd-ab-", dir="/tmp"))
    trees = {"this tree": str(ROOT), "baseline": str(Path(args.baseline).resolve())}
    envs = {}
    for n, (name, tree) in enumerate(trees.items()):
        (work / str(n)).mkdir()
        envs[name] = {**bench_env(work / str(n)), "PYTHONPATH": tree}
    daemons: dict[str, Daemon] = {}
    try:
        first, second = list(envs)
        # Filled by the baseline: a newer tree migrates an older store, never the other way.
        fill_store(envs[second], 0, args.size, args.distinct)
        shutil.copytree(envs[second]["MEMD_HOME"], envs[first]["MEMD_HOME"])
        for name, env in envs.items():
            daemons[name] = Daemon(env, Path(env["MEMD_HOME"]).parent / "daemon.log")
        took: dict[str, list[float]] = {name: [] for name in daemons}
        for i in range(-40, args.calls):
            request = {
                "cmd": "hook",
                "event": "user-prompt-submit",
                "payload": json.loads(payload(i)),
            }
            order = list(daemons) if i % 2 else list(reversed(daemons))
            for name in order:
                started = time.perf_counter()
                daemons[name].request(request)
                if i >= 0:  # the first 40 rounds warm both
                    took[name].append((time.perf_counter() - started) * 1000)
        a, b = took[first], took[second]
        diffs = [x - y for x, y in zip(a, b, strict=True)]
        rss = {name: d.rss_mib() for name, d in daemons.items()}
        rows = [
            [
                name,
                f"{percentile(v, 50):.2f} / {percentile(v, 95):.2f}",
                f"{rss[name][0]:.0f} / {rss[name][1]:.0f}",
            ]
            for name, v in took.items()
        ]
        rows.append(
            [
                "this tree − baseline, paired",
                f"{percentile(diffs, 50):+.2f} (median)",
                f"{rss[first][0] - rss[second][0]:+.0f} / {rss[first][1] - rss[second][1]:+.0f}",
            ]
        )
        heads = ["daemon side of a prompt hook", "p50 / p95 ms", "RSS / peak MiB after"]
        print(markdown_table(heads, rows))
        print(
            f"\n{args.calls} rounds at {args.size:,} memories, baseline {trees['baseline']}; "
            f"load average {os.getloadavg()[0]:.2f} at the end."
        )
    finally:
        for d in daemons.values():
            d.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
