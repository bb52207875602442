"""The cross-lingual pairs that recall misses, with their scores: a tuning aid for the bridge.

    .venv/bin/python bench/xl_failures.py [--model e5] [--sets dev,held-out,held-out-2]
                                          [--dirs zh-en,en-zh] [--work /tmp/memd-xlf] [--all]

The same projects as ``bench/crosslingual.py --daemon`` (written once into ``--work`` and
reused), searched in this process through the daemon's recall path (:func:`memd.recall.retrieve.recall`
with the vector cache and the relevance decision), so a change to the bridge or the glossary is
measured without a daemon restart. For every miss: the gold's breakdown (cosine, semantic,
lexical, relevance, rank) and the top 5 shown instead. Only the tuning sets are offered.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import ROOT

TUNING_SETS = ("dev", "held-out", "held-out-2")


def prepare(work: Path, model: str) -> dict[str, str]:
    import crosslingual
    from hook_latency import bench_env

    work.mkdir(parents=True, exist_ok=True)
    env = {**bench_env(work), "MEMD_EMBEDDING_MODEL": crosslingual.MODELS.get(model, model)}
    if not (work / "ids.json").exists():
        code = f"import sys; sys.path.insert(0, {str(ROOT / 'bench')!r}); import crosslingual; "
        code += f"crosslingual.daemon_fill({str(work)!r})"
        subprocess.run([sys.executable, "-c", code], env=env, check=True)
    return env


def short(b: dict[str, Any]) -> str:
    return (
        f"cos {b['cosine']:.3f} sem {b['semantic']:.2f} lex {b['lexical']:.2f} "
        f"rel {b['relevance']:.2f} rrf {b['rrf']:.2f} tot {b['total']:.3f}"
    )


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="e5")
    ap.add_argument("--sets", default=",".join(TUNING_SETS))
    ap.add_argument("--dirs", default="zh-en,en-zh")
    ap.add_argument("--work", type=Path, default=Path("/tmp/memd-xlf"))
    ap.add_argument("--all", action="store_true", help="print the hits too")
    ap.add_argument("--quiet", action="store_true", help="only the recall figures")
    ap.add_argument(
        "--foreign",
        action="store_true",
        help="ask each set's prompts in the next set's project (no gold there): how many "
        "prompts get a result at all, and how many results",
    )
    ap.add_argument(
        "--same",
        action="store_true",
        help="same-language runs: each pair's same_lang_prompt against its memory's side",
    )
    ap.add_argument("--dump", type=Path, help="write every candidate's breakdown here (jsonl)")
    args = ap.parse_args(argv)
    sets = [s for s in args.sets.split(",") if s]
    if any(s not in TUNING_SETS for s in sets):
        raise SystemExit(f"only the tuning sets: {', '.join(TUNING_SETS)}")
    work = args.work / args.model
    env = prepare(work, args.model)
    os.environ.update(env)
    import crosslingual

    from memd.daemon.app import App
    from memd.project import project_of
    from memd.recall import retrieve
    from memd.recall.hits import hit_json
    from memd.settings import load_settings
    from memd.text import bridge

    ids = json.loads((work / "ids.json").read_text())
    app = App(load_settings()).open(writer=False)
    vectors, _ = app.recall_cache()
    weights = retrieve.weights_from(app.settings)
    embed = app.store.embedder
    embed_query = getattr(embed, "embed_queries", None)
    cache_file = work / "query_vectors.json"
    known: dict[str, list[float]] = (
        json.loads(cache_file.read_text()) if cache_file.exists() else {}
    )

    def vector_of(text: str) -> list[float]:
        if text not in known:
            vec = embed_query([text])[0] if embed_query else embed.embed_one(text)
            known[text] = [float(x) for x in vec]
        return known[text]

    summary = []
    dump = args.dump.open("w") if args.dump else None
    try:
        for name in sets:
            pairs, _ = crosslingual.load_set(name)
            for direction in args.dirs.split(","):
                src, dst = direction.split("-")
                if args.same:
                    src, direction = "same_lang_prompt", f"same-{dst}"
                where = TUNING_SETS[(TUNING_SETS.index(name) + 1) % 3] if args.foreign else name
                project = project_of(str(work / f"{where}-{dst}"))
                found = 0
                others = 0
                asked = 0
                for p in pairs:
                    if args.same and p["memory"] != dst:
                        continue
                    asked += 1
                    gold = "" if args.foreign else ids[f"{name}-{dst}"][p[dst]]
                    vec = vector_of(retrieve.normalize_query(p[src]))
                    res = [hit_json(h) for h in retrieve.recall(
                        app.store, p[src], [project], depth=40, weights=weights,
                        vector=vec, vectors=vectors,
                    )]  # fmt: skip
                    top = [r for r in res if r["relevant"]][:5]
                    if dump is not None:
                        for r in res:
                            row = {"set": name, "dir": direction, "query": p[src]}
                            row.update(gold=r["id"] == gold, text=r["text"], **r["score_breakdown"])
                            dump.write(json.dumps(row, ensure_ascii=False) + "\n")
                    hit = gold in [r["id"] for r in top]
                    found += hit if not args.foreign else bool(top)
                    others += sum(1 for r in top if r["id"] != gold)
                    if args.quiet or (hit and not args.all):
                        continue
                    g = next((r for r in res if r["id"] == gold), None)
                    rank = next((i for i, r in enumerate(res, 1) if r["id"] == gold), None)
                    print(f"\n{'HIT ' if hit else 'MISS'} [{name} {src}->{dst}] {p[src]}")
                    print(f"   gold: {p[dst]}")
                    bt = bridge.bridge(retrieve.normalize_query(p[src]))
                    print(f"   bridge words: {' '.join(bt.words)[:200]}")
                    if g is None:
                        print("   gold not among the candidates")
                    else:
                        print(f"   gold rank {rank} {short(g['score_breakdown'])}")
                    for r in top:
                        if r["id"] != gold:
                            print(f"   > {short(r['score_breakdown'])} | {r['text'][:70]}")
                summary.append(f"{args.model} {name} {src}->{dst}: {found}/{asked} = "
                               f"{found / max(1, asked):.3f}; others shown per prompt "
                               f"{others / max(1, asked):.2f}")  # fmt: skip
    finally:
        if dump is not None:
            dump.close()
        app.close()
        cache_file.write_text(json.dumps(known))
    print()
    print("\n".join(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
