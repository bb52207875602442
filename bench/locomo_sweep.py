"""Tune the injection's weights on one LoCoMo half of an ingested ``--home``, in-process.

    .venv/bin/python bench/locomo_sweep.py --home H --split A [--grid default|wide|lines]

Every prompt is recalled once, with a permissive threshold (the candidates and their signals do
not depend on the weights); then each configuration re-scores the candidates, makes the
relevance decision, chooses and renders the block exactly as the prompt hook does
(``memd.recall.choose.choose`` / ``memd.recall.block.render``), and judges it with
``bench/locomo_budget.py``'s rule. The ``lines`` grid varies how the block is filled instead
(``memd.recall.choose.LINE_MATCH`` and ``memd.recall.block.WHOLE_TURN_CHARS``). It prints, per configuration,
the budgeted recall of categories 1-4 and the share of empty blocks for unrelated prompts, best
first. Pick on one half; report the other with ``bench/locomo.py --budgeted --reuse``.

Nothing from LoCoMo is written anywhere but stdout.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from locomo import DATA, load_conversations, parse_range
from locomo_budget import UNRELATED_PROMPTS, Judge

from memd.recall.block import WHOLE_TURN_CHARS
from memd.recall.choose import LINE_MATCH
from memd.recall.retrieve import BROAD_KINDS
from memd.text import searchterms

GRIDS: dict[str, dict[str, list[Any]]] = {
    "default": {
        "threshold": [0.30, 0.35, 0.45],
        "excerpt_margin": [0.0, 0.10],
        "semantic": [0.3, 0.5],
        "rank_mix": [0.25, 0.6],
        "unrelated": [0.15, 0.25],
    },
    "final": {
        "threshold": [0.30, 0.35],
        "excerpt_margin": [0.05],
        "semantic": [0.5],
        "rank_mix": [0.6],
        "unrelated": [0.21],
    },
    "lines": {
        "threshold": [0.30],
        "excerpt_margin": [0.05],
        "semantic": [0.5],
        "rank_mix": [0.6],
        "line_match": [0.0, 0.1, 0.3, 0.5, 0.8, 1.0],
        "whole_turn": [280, 320, 400, 500],
    },
    "wide": {
        "threshold": [0.2, 0.25, 0.3, 0.35, 0.4, 0.45],
        "excerpt_margin": [0.0, 0.05, 0.1, 0.15],
        "semantic": [0.3, 0.4, 0.5, 0.6, 0.7],
        "rank_mix": [0.0, 0.25, 0.5, 0.75],
    },
}


def rescore(results: list[Any], weights: Any, calibration: Any) -> list[Any]:
    """The candidates (:class:`memd.recall.hits.Hit`) scored and decided as ``retrieve.rank``
    would with ``weights``."""
    out = []
    for r in results:
        b = r.breakdown
        semantic = calibration.scale(b.cosine)
        relevance = max(semantic, weights.semantic * semantic + weights.lexical * b.lexical)
        margin = weights.excerpt_margin if r.kind in BROAD_KINDS else 0.0
        need = weights.threshold + margin
        total = (
            weights.relevance * ((1 - weights.rank_mix) * relevance + weights.rank_mix * b.rrf)
            + weights.importance * b.importance
            + weights.recency * b.recency
            + (weights.pinned if b.pinned else 0.0)
        )
        b = replace(b, semantic=semantic, relevance=relevance, threshold=need, total=total)
        out.append(replace(r, score=total, relevant=relevance >= need, breakdown=b))
    out.sort(key=lambda r: (-r.score, r.id))
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--home", type=Path, required=True, help="an ingested bench/locomo.py --home")
    p.add_argument("--split", choices=["A", "B"], default="A")
    p.add_argument("--grid", choices=sorted(GRIDS), default="default")
    p.add_argument("--budget", type=int, default=1500)
    p.add_argument("--top", type=int, default=15)
    p.add_argument(
        "--projects", type=Path, help="the project dirs as ingested (default HOME/projects)"
    )
    args = p.parse_args()

    import os

    os.environ["HF_HUB_OFFLINE"] = "1"
    from memd.daemon.app import App
    from memd.recall import block, choose, inject, retrieve
    from memd.settings import Settings
    from memd.store.upsert import SUPERSEDABLE

    convs = [c for c in load_conversations(DATA, parse_range("1-10")) if c.half == args.split]
    home = args.home.resolve()
    settings = Settings(home=home / "home", config=home / "none.toml")
    app = App(settings).open(writer=False)
    vectors, queries = app.recall_cache()
    calibration = retrieve.calibration_of(app.store.embedder)
    model_id = app.store.embedder.model_id
    permissive = replace(retrieve.DEFAULT_WEIGHTS, threshold=0.0, excerpt_margin=0.0)
    asked: list[tuple[Judge, int, list[str], tuple[str, ...], list[Any], dict]] = []
    t0 = time.perf_counter()
    for conv in convs:
        project = str((args.projects or home / "projects") / conv.sample_id)
        judge = Judge(conv)
        prompts = [(q.category, q.text, q.gold) for q in conv.questions if q.gold]
        prompts += [(0, text, []) for text in UNRELATED_PROMPTS]
        for category, prompt, gold in prompts:
            results = retrieve.recall(
                app.store,
                prompt,
                [project],
                depth=inject.SEARCH_DEPTH,
                weights=permissive,
                vectors=vectors,
                embed_query=queries.embed_one,
            )
            typed = [r.id for r in results if r.kind in SUPERSEDABLE]
            vecs = vectors.vectors_of([project], typed) if len(typed) > 1 else {}
            terms = searchterms.terms(retrieve.normalize_query(prompt))
            asked.append((judge, category, gold, terms, results, vecs))
    print(f"recalled {len(asked)} prompts in {time.perf_counter() - t0:.0f} s", file=sys.stderr)

    grid = GRIDS[args.grid]
    rows = []
    for values in itertools.product(*grid.values()):
        params = dict(zip(grid, values, strict=True))
        params["lexical"] = 1 - params["semantic"]
        calib = replace(calibration, unrelated=params.pop("unrelated", calibration.unrelated))
        # How the block is filled (memd.recall.choose's and memd.recall.block's constants), not the scores.
        choose.LINE_MATCH = params.pop("line_match", LINE_MATCH)
        block.WHOLE_TURN_CHARS = params.pop("whole_turn", WHOLE_TURN_CHARS)
        weights = replace(retrieve.DEFAULT_WEIGHTS, **params)
        params.update(unrelated=calib.unrelated, line_match=choose.LINE_MATCH)
        params["whole_turn"] = block.WHOLE_TURN_CHARS
        recalls, empty, unrelated, chars = [], 0, 0, []
        for judge, category, gold, terms, results, vecs in asked:
            scored = rescore(results, weights, calib)
            plan = choose.choose(scored, set(), args.budget, terms, False, vecs, model_id)
            text = block.render(plan.items, plan.footer)
            if category == 0:
                unrelated += 1
                empty += text == ""
                continue
            chars.append(len(text))
            recalls.append(judge.score(gold, text)[0])
        print(f"{sum(recalls) / len(recalls):.3f} {params}", file=sys.stderr, flush=True)
        rows.append(
            (
                sum(recalls) / len(recalls),
                empty / max(1, unrelated),
                sum(chars) / len(chars),
                params,
            )
        )
    rows.sort(key=lambda r: -r[0])
    print(f"half {args.split}: budgeted recall (cat 1-4), unrelated empty share, mean chars")
    for recall, empty_share, mean_chars, params in rows[: args.top]:
        shown = ", ".join(f"{k}={v}" for k, v in params.items() if k != "lexical")
        print(f"{recall:.3f}  {empty_share:.2f}  {mean_chars:5.0f}  {shown}")
    app.close()


if __name__ == "__main__":
    main()
