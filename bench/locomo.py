"""LoCoMo retrieval benchmark: memd's real pipeline against raw-turn baselines, in one run.

Two modes:

- ``--budgeted`` (the headline): for every question of categories 1-4, ask the daemon's
  ``context`` socket command exactly as the prompt hook would (``{"cmd": "context", "cwd":
  <project>, "prompt": <question>}``, event user-prompt-submit: a preview that marks nothing
  injected) and count a gold turn as recalled only when the returned block carries it (60 % of
  its content words; the rule, the stop list and how the baselines are filled are in
  ``bench/locomo_budget.py``). Raw BM25, raw hybrid and an oracle get the same budget (1,500
  characters). Also reported: the share of empty blocks for category-5 (adversarial) questions
  and for 60 unrelated prompts asked in every conversation's project.
- the window mode (no flag): **search/citation recall**: recall@k of the daemon's ``search``
  results, where a result is credited with every turn in its ``sources`` whatever it shows.
  Useful for diagnosis only.

Each conversation (``sample_id``) becomes its own project: a fake git root with one Claude
Code-style session JSONL per ``session_<n>``. Each turn's line uuid is ``uuid5(sample_id +
dia_id)``, so evidence is scored from ``sources[].uuid``. Ingestion runs ``memd ingest`` against
a ``memd serve`` started on a private ``MEMD_HOME`` (decay job off). Conversations 1-5 are half A,
6-10 half B.

Ingestion is slow (minutes), so it is kept: ``--home DIR`` holds ``projects/``, ``transcripts/``,
``home/`` (the MEMD_HOME), ``ingest.json`` (what ingested it, with which commit), ``daemon.log`` and
``runs/`` (per-prompt blocks as JSON lines, for reading by eye). A later ``--reuse`` only starts a
daemon on that home, with the code of the checkout it runs from (or ``--memd``), and asks;
``--daemon-socket PATH`` asks a daemon that is already running on it instead. The raw baselines'
vectors are cached in ``bench/.cache/``. ``--record`` appends the summary to bench/results/log.md.

Commands (from the repository root; ``H`` is a folder outside the repository, e.g. the home
ingested from main ``83c250f``: ``/work/wt/bench-homes/main-20261130``):

    # the whole run: ingest with this checkout's memd into a new home, then ask
    .venv/bin/python bench/locomo.py --budgeted --home H
    # (b) new injection code: a daemon of this checkout on the kept home, ask (~5 min)
    .venv/bin/python bench/locomo.py --budgeted --home H --reuse
    #     the fastest loop while tuning: memd only, one half (the baselines do not change)
    .venv/bin/python bench/locomo.py --budgeted --home H --reuse --skip-baselines --split A
    # (a) new extraction code: ingest into a NEW home. From that checkout once it has this
    #     harness, as above; else with this harness and that checkout's memd (ingest and serve;
    #     the baselines keep this checkout's embedder):
    .venv/bin/python bench/locomo.py --budgeted --home H2 --memd /other/checkout/.venv/bin/memd
    #     and later re-ask it with that checkout's code:
    .venv/bin/python bench/locomo.py --budgeted --home H2 --reuse --memd /other/.venv/bin/memd
    # a daemon you started yourself on H/home (MEMD_HOME=H/home, e.g. under a debugger)
    .venv/bin/python bench/locomo.py --budgeted --home H --daemon-socket H/home/memd.sock
    # the window mode (search/citation recall) on the same home
    .venv/bin/python bench/locomo.py --home H --reuse
    # add --record to append the summary to bench/results/log.md (command, commit, machine)

Per prompt, ``H/runs/budgeted-<time>.jsonl`` keeps the block memd returned and the gold turns it
missed. A home is refused without ``--reuse`` once ingested (``H/ingest.json`` exists).

LoCoMo is CC BY-NC 4.0: it is read in place and nothing derived from it is written into the
repository except figures; transcripts, homes and per-prompt blocks stay in ``--home``.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import re
import sys
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (
    CACHE,
    ROOT,
    append_section,
    bootstrap_ci,
    git_commit,
    markdown_table,
    percentile,
)


def default_data() -> Path:
    """``locomo10.json`` in ``shared/bench/locomo`` next to the checkout or a folder above it
    (``/work/main`` and the worktrees ``/work/wt/NAME`` both find ``/work/shared``)."""
    for base in ROOT.parents:
        path = base / "shared" / "bench" / "locomo" / "locomo10.json"
        if path.exists():
            return path
    return ROOT.parent / "shared" / "bench" / "locomo" / "locomo10.json"


DATA = default_data()
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
KS = (1, 3, 5, 10)
BUDGET_CHARS = 1000
PROMPT_BUDGET = 1500
"""memd's default ``prompt_budget_chars``: the budget of ``--budgeted``."""
"""``r@1000c``: recall of the leading results that fit in this many characters (~250 tokens)."""
NAMESPACE = uuid.UUID("6f1d2c1e-9a57-4c43-9d0b-2f4e8f1a0c11")
TURN_SECONDS = 30
"""Per-turn offset added to the session time, so turns keep their order."""
CLAUDE_VERSION = "2.1.42"
MAX_SPAN = 3
"""For ``strict@k``: results citing more turns than this (summaries) count as covering none."""
DIA_ID = re.compile(r"^D:?(\d+):(\d+)$")


# ---------------------------------------------------------------- data


@dataclass
class Session:
    number: int
    date_time: str
    start: datetime
    turns: list[dict[str, Any]]


@dataclass
class Question:
    text: str
    category: int
    gold: list[str]
    """Evidence dia_ids that resolve to a turn of this conversation."""
    unresolved: list[str] = field(default_factory=list)


@dataclass
class Conversation:
    index: int
    """1-based position in the file: 1-5 are half A, 6-10 half B."""
    sample_id: str
    speaker_a: str
    speaker_b: str
    sessions: list[Session]
    questions: list[Question]
    adversarial: list[str] = field(default_factory=list)
    """Category-5 questions: asked only to see whether the hook abstains."""

    @property
    def half(self) -> str:
        return "A" if self.index <= 5 else "B"

    def dia_ids(self) -> set[str]:
        return {t["dia_id"] for s in self.sessions for t in s.turns}


def parse_session_time(text: str) -> datetime:
    """``"1:56 pm on 8 May, 2023"`` → an aware UTC datetime."""
    return datetime.strptime(" ".join(text.split()), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def normalize_dia_id(ref: str) -> str | None:
    """``D30:05`` → ``D30:5``; ``D:11:26`` → ``D11:26``; anything else → None."""
    m = DIA_ID.match(ref.strip())
    return f"D{int(m.group(1))}:{int(m.group(2))}" if m else None


def parse_evidence(refs: Iterable[str]) -> tuple[list[str], list[str]]:
    """Lenient: split on ``;`` and whitespace, normalise. Returns (ids, refs that did not parse)."""
    ids: list[str] = []
    bad: list[str] = []
    for ref in refs:
        for part in re.split(r"[;\s]+", str(ref)):
            if not part:
                continue
            norm = normalize_dia_id(part)
            if norm is None:
                bad.append(part)
            elif norm not in ids:
                ids.append(norm)
    return ids, bad


def parse_conversation(index: int, sample: dict[str, Any]) -> Conversation:
    conv = sample["conversation"]
    sessions = []
    for key, turns in conv.items():
        m = re.fullmatch(r"session_(\d+)", key)
        if m and isinstance(turns, list) and turns:
            date = conv.get(f"{key}_date_time", "")
            sessions.append(Session(int(m.group(1)), date, parse_session_time(date), turns))
    sessions.sort(key=lambda s: s.number)
    known = {t["dia_id"] for s in sessions for t in s.turns}
    questions = []
    adversarial = []
    for qa in sample.get("qa", []):
        if qa.get("category") == 5:
            adversarial.append(str(qa["question"]))
        if qa.get("category") not in CATEGORIES:
            continue
        ids, bad = parse_evidence(qa.get("evidence") or [])
        gold = [i for i in ids if i in known]
        bad += [i for i in ids if i not in known]
        questions.append(Question(str(qa["question"]), int(qa["category"]), gold, bad))
    return Conversation(
        index,
        sample["sample_id"],
        conv["speaker_a"],
        conv["speaker_b"],
        sessions,
        questions,
        adversarial,
    )


def load_conversations(path: Path, selected: Sequence[int] | None = None) -> list[Conversation]:
    samples = json.loads(path.read_text())
    return [
        parse_conversation(i, s)
        for i, s in enumerate(samples, 1)
        if selected is None or i in selected
    ]


def parse_range(spec: str) -> list[int]:
    """``"1-5"``, ``"1,3,6-8"`` → sorted indices."""
    out: set[int] = set()
    for part in spec.split(","):
        lo, _, hi = part.strip().partition("-")
        out.update(range(int(lo), int(hi or lo) + 1))
    return sorted(out)


# ---------------------------------------------------------------- transcripts


def turn_uuid(sample_id: str, dia_id: str) -> str:
    return str(uuid.uuid5(NAMESPACE, f"{sample_id}/{dia_id}"))


def session_uuid(sample_id: str, number: int) -> str:
    return str(uuid.uuid5(NAMESPACE, f"{sample_id}/session_{number}"))


def turn_text(turn: dict[str, Any]) -> str:
    """What a transcript line says, and what the raw-turn baselines index: ``"Name: text"``."""
    text = f"{turn['speaker']}: {str(turn.get('text') or '').strip()}"
    if turn.get("blip_caption"):
        text += f" [shares a photo: {turn['blip_caption']}]"
    return text


def stamp(moment: datetime) -> str:
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def session_lines(conv: Conversation, session: Session, cwd: str) -> list[dict[str, Any]]:
    """One Claude Code-style JSONL object per turn: speaker_a → user, speaker_b → assistant."""
    sid = session_uuid(conv.sample_id, session.number)
    lines: list[dict[str, Any]] = []
    parent: str | None = None
    for i, turn in enumerate(session.turns):
        line_uuid = turn_uuid(conv.sample_id, turn["dia_id"])
        text = turn_text(turn)
        envelope: dict[str, Any] = {
            "parentUuid": parent,
            "isSidechain": False,
            "userType": "external",
            "cwd": cwd,
            "sessionId": sid,
            "version": CLAUDE_VERSION,
            "gitBranch": "main",
            "entrypoint": "cli",
            "uuid": line_uuid,
            "timestamp": stamp(session.start + timedelta(seconds=TURN_SECONDS * i)),
        }
        if turn["speaker"] == conv.speaker_a:
            envelope["type"] = "user"
            envelope["message"] = {"role": "user", "content": text}
        else:
            envelope["type"] = "assistant"
            envelope["requestId"] = "req_" + line_uuid.replace("-", "")[:24]
            envelope["message"] = {
                "id": "msg_" + line_uuid.replace("-", "")[:24],
                "type": "message",
                "role": "assistant",
                "model": "claude-sonnet-4-5",
                "content": [{"type": "text", "text": text}],
                "stop_reason": "end_turn",
                "usage": {"input_tokens": 0, "output_tokens": 0},
            }
        lines.append(envelope)
        parent = line_uuid
    return lines


def project_slug(cwd: str) -> str:
    """Claude Code's folder name for a project: every ``/`` and ``.`` becomes ``-``."""
    return re.sub(r"[/.]", "-", cwd)


def make_project(conv: Conversation, projects_root: Path) -> str:
    """A fake git root for the conversation; memd's project is its real path."""
    project = projects_root / conv.sample_id
    (project / ".git").mkdir(parents=True, exist_ok=True)
    return os.path.realpath(project)


def write_transcripts(conv: Conversation, project: str, transcripts_root: Path) -> list[Path]:
    folder = transcripts_root / project_slug(project)
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for session in conv.sessions:
        path = folder / f"{session_uuid(conv.sample_id, session.number)}.jsonl"
        body = "".join(
            json.dumps(line, ensure_ascii=False) + "\n"
            for line in session_lines(conv, session, project)
        )
        path.write_text(body)
        paths.append(path)
    return paths


def uuid_to_dia(conv: Conversation) -> dict[str, str]:
    return {
        turn_uuid(conv.sample_id, t["dia_id"]): t["dia_id"] for s in conv.sessions for t in s.turns
    }


# ---------------------------------------------------------------- metrics


@dataclass(frozen=True)
class Hit:
    """One retrieved item: the gold-comparable turn ids it covers and its context length."""

    dia_ids: frozenset[str]
    chars: int


def score(ranked: Sequence[Hit], gold: Iterable[str], ks: Sequence[int] = KS) -> dict[str, float]:
    """recall@k (fraction of gold covered), recall_all@k, hit@k, ctx@k (chars) and rr."""
    want = set(gold)
    if not want:
        raise ValueError("a question without resolvable evidence cannot be scored")
    out: dict[str, float] = {}
    for k in ks:
        top = ranked[:k]
        covered = set().union(*(h.dia_ids for h in top)) & want if top else set()
        out[f"r@{k}"] = len(covered) / len(want)
        out[f"all@{k}"] = float(covered == want)
        out[f"hit@{k}"] = float(bool(covered))
        out[f"ctx@{k}"] = float(sum(h.chars for h in top))
    used = 0
    fit: list[Hit] = []
    for h in ranked:
        used += h.chars
        if used > BUDGET_CHARS:
            break
        fit.append(h)
    out[f"r@{BUDGET_CHARS}c"] = len(set().union(*(h.dia_ids for h in fit)) & want) / len(want)
    out["rr"] = next((1.0 / i for i, h in enumerate(ranked, 1) if h.dia_ids & want), 0.0)
    for k in ks:  # strict: a memory citing more than MAX_SPAN turns (a summary) covers nothing
        top = [h for h in ranked[:k] if len(h.dia_ids) <= MAX_SPAN]
        covered = set().union(*(h.dia_ids for h in top)) & want if top else set()
        out[f"strict@{k}"] = len(covered) / len(want)
    return out


def mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def aggregate(rows: Sequence[dict[str, Any]]) -> dict[str, float]:
    """Means of every metric over question rows (each row holds a ``metrics`` dict)."""
    keys = rows[0]["metrics"].keys() if rows else []
    out = {k: mean([r["metrics"][k] for r in rows]) for k in keys}
    out["n"] = len(rows)
    lat = [r["ms"] for r in rows if r.get("ms") is not None]
    if lat:
        out["p50_ms"] = percentile(lat, 50)
        out["p95_ms"] = percentile(lat, 95)
    return out


# ---------------------------------------------------------------- evaluation

Searcher = Callable[[Conversation, str], tuple[list[Hit], float | None]]
"""(conversation, question) → (ranked hits, latency in ms or None)."""


def evaluate(name: str, convs: Sequence[Conversation], searcher: Searcher) -> list[dict[str, Any]]:
    rows = []
    for conv in convs:
        for q in conv.questions:
            if not q.gold:
                continue
            hits, ms = searcher(conv, q.text)
            rows.append(
                {
                    "system": name,
                    "sample_id": conv.sample_id,
                    "half": conv.half,
                    "category": q.category,
                    "metrics": score(hits, q.gold),
                    "ms": ms,
                }
            )
    return rows


def select(rows: Sequence[dict[str, Any]], **where: Any) -> list[dict[str, Any]]:
    return [r for r in rows if all(r[k] == v for k, v in where.items())]


def overview_table(
    rows: Sequence[dict[str, Any]], systems: Sequence[str], halves: Sequence[str]
) -> str:
    headers = ["system", "half", "n", "R@1", "R@3", "R@5", "R@10", f"R@{BUDGET_CHARS}c", "strict@5",
               "strict@10", "all@5", "all@10", "hit@5", "hit@10", "MRR", "ctx@5", "ctx@10",
               "p50 ms", "p95 ms"]  # fmt: skip
    body = []
    for system in systems:
        for half in halves:
            sub = [
                r for r in rows if r["system"] == system and (half == "all" or r["half"] == half)
            ]
            if not sub:
                continue
            a = aggregate(sub)
            body.append([
                system, half, a["n"], a["r@1"], a["r@3"], a["r@5"], a["r@10"],
                a[f"r@{BUDGET_CHARS}c"], a["strict@5"],
                a["strict@10"], a["all@5"], a["all@10"],
                a["hit@5"], a["hit@10"], a["rr"], round(a["ctx@5"]), round(a["ctx@10"]),
                f"{a['p50_ms']:.1f}" if "p50_ms" in a else "-",
                f"{a['p95_ms']:.1f}" if "p95_ms" in a else "-",
            ])  # fmt: skip
    return markdown_table(headers, body)


def category_table(rows: Sequence[dict[str, Any]], systems: Sequence[str]) -> str:
    headers = ["system", *(f"{CATEGORIES[c]} [c{c}] R@5/R@10" for c in CATEGORIES)]
    body = []
    for system in systems:
        cells: list[object] = [system]
        for cat in CATEGORIES:
            a = aggregate(select(rows, system=system, category=cat))
            cells.append(f"{a.get('r@5', 0):.3f} / {a.get('r@10', 0):.3f} (n={a['n']})")
        body.append(cells)
    return markdown_table(headers, body)


def category_detail_table(rows: Sequence[dict[str, Any]], systems: Sequence[str]) -> str:
    """Every measure of the overview, per category (both halves together)."""
    headers = ["system", "category", "n", "R@1", "R@5", "R@10", "hit@1", "hit@5", "hit@10",
               "MRR", "ctx@1", "ctx@5", "ctx@10", "p50 ms", "p95 ms"]  # fmt: skip
    body = []
    for system in systems:
        for cat, label in CATEGORIES.items():
            sub = select(rows, system=system, category=cat)
            if not sub:
                continue
            a = aggregate(sub)
            body.append([
                system, f"{label} [c{cat}]", a["n"], a["r@1"], a["r@5"], a["r@10"],
                a["hit@1"], a["hit@5"], a["hit@10"], a["rr"],
                round(a["ctx@1"]), round(a["ctx@5"]), round(a["ctx@10"]),
                f"{a['p50_ms']:.1f}" if "p50_ms" in a else "-",
                f"{a['p95_ms']:.1f}" if "p95_ms" in a else "-",
            ])  # fmt: skip
    return markdown_table(headers, body)


def ci_lines(rows: Sequence[dict[str, Any]], systems: Sequence[str]) -> list[str]:
    out = []
    for system in systems:
        sub = select(rows, system=system)
        parts = []
        for k in (5, 10):
            lo, hi = bootstrap_ci([r["metrics"][f"r@{k}"] for r in sub])
            parts.append(f"R@{k} [{lo:.3f}, {hi:.3f}]")
        out.append(f"- {system}: bootstrap 95% CI (all halves) " + ", ".join(parts))
    return out


# ---------------------------------------------------------------- vectors, cached


class VectorCache:
    """Embeddings by text hash, kept in ``bench/.cache/`` (git-ignored) across runs."""

    def __init__(self, embedder: Any, folder: Path = CACHE) -> None:
        self.embedder = embedder
        tag = re.sub(r"[^A-Za-z0-9_.-]+", "_", embedder.model_id)
        self.path = folder / f"vectors-{tag}.npz"
        self.vectors: dict[str, Any] = {}
        self.dirty = False
        if self.path.exists():
            import numpy as np

            with np.load(self.path) as data:
                self.vectors = dict(zip(data["keys"].tolist(), data["vectors"], strict=True))

    @staticmethod
    def key(text: str) -> str:
        return hashlib.sha1(text.encode("utf-8")).hexdigest()[:20]

    def embed(self, texts: Sequence[str]) -> Any:
        import numpy as np

        missing = list(dict.fromkeys(t for t in texts if self.key(t) not in self.vectors))
        if missing:
            for text, vec in zip(missing, self.embedder.embed(missing), strict=True):
                self.vectors[self.key(text)] = np.asarray(vec, dtype=np.float32)
            self.dirty = True
        return np.stack([self.vectors[self.key(t)] for t in texts])

    def save(self) -> None:
        import numpy as np

        if not self.dirty:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        keys = np.array(list(self.vectors))
        np.savez(self.path, keys=keys, vectors=np.stack(list(self.vectors.values())))
        self.dirty = False


# ---------------------------------------------------------------- baselines over raw turns


class RawTurns:
    """One row per turn (same text as the transcript line): BM25, dense and hybrid RRF."""

    def __init__(self, convs: Sequence[Conversation], cache: VectorCache, workdir: Path) -> None:
        import lancedb
        import numpy as np
        from lancedb.index import FTS

        self.cache = cache
        self.turns: dict[str, list[tuple[str, str]]] = {}
        rows = []
        for conv in convs:
            items = [(t["dia_id"], turn_text(t)) for s in conv.sessions for t in s.turns]
            self.turns[conv.sample_id] = items
            rows += [{"sample_id": conv.sample_id, "dia_id": d, "text": x} for d, x in items]
        self.matrix = {sid: cache.embed([x for _, x in items]) for sid, items in self.turns.items()}
        db = lancedb.connect(workdir / "raw-turns")
        self.table = db.create_table("turns", data=rows, mode="overwrite")
        self.table.create_index("text", config=FTS(base_tokenizer="icu", with_position=False))
        self.np = np

    def bm25(self, conv: Conversation, query: str, depth: int) -> list[str]:
        from memd.store.filters import match
        from memd.store.layout import fts_query

        q = fts_query(query)
        if not q:
            return []
        found = (
            self.table.search(q, query_type="fts", fts_columns="text")
            .where(match(sample_id=conv.sample_id).sql, prefilter=True)
            .select(["dia_id", "_score"])
            .limit(depth)
            .to_list()
        )
        return [r["dia_id"] for r in found]

    def dense(self, conv: Conversation, query: str, depth: int) -> list[str]:
        qvec = self.cache.embed([query])[0]
        sims = self.matrix[conv.sample_id] @ qvec
        order = self.np.argsort(-sims)[:depth]
        return [self.turns[conv.sample_id][i][0] for i in order]

    def hybrid(self, conv: Conversation, query: str, depth: int, rrf_k: int = 60) -> list[str]:
        fused: dict[str, float] = defaultdict(float)
        for ranked in (self.dense(conv, query, 40), self.bm25(conv, query, 40)):
            for rank, dia in enumerate(ranked, 1):
                fused[dia] += 1.0 / (rrf_k + rank)
        return sorted(fused, key=lambda d: -fused[d])[:depth]

    def searcher(self, method: str) -> Searcher:
        run = getattr(self, method)

        def search(conv: Conversation, query: str) -> tuple[list[Hit], float | None]:
            texts = dict(self.turns[conv.sample_id])
            ranked = run(conv, query, max(KS))
            return [Hit(frozenset([d]), len(texts[d])) for d in ranked], None

        return search


def oracle(conv: Conversation, question: Question) -> list[Hit]:
    texts = {t["dia_id"]: turn_text(t) for s in conv.sessions for t in s.turns}
    return [Hit(frozenset([d]), len(texts[d])) for d in question.gold]


def memd_hits(conv: Conversation, results: Sequence[dict[str, Any]]) -> list[Hit]:
    """memd search results → hits, by ``sources[].uuid``; counts cross-project leaks."""
    dia = uuid_to_dia(conv)
    hits = []
    for r in results:
        ids = frozenset(dia[s["uuid"]] for s in r.get("sources") or [] if s.get("uuid") in dia)
        hits.append(Hit(ids, len(r.get("text") or "")))
    return hits


# ---------------------------------------------------------------- tuning


def held_out(rows: Sequence[dict[str, Any]], configs: Sequence[str]) -> tuple[str, list[str]]:
    """Pick the best config on each half (by R@5 + R@10), report it on the other half."""
    table = []
    picks = []
    for tune_half, report_half in (("A", "B"), ("B", "A")):

        def goal(cfg: str, half: str = tune_half) -> float:
            a = aggregate([r for r in rows if r["system"] == cfg and r["half"] == half])
            return a.get("r@5", 0.0) + a.get("r@10", 0.0)

        best = max(configs, key=goal)
        a = aggregate([r for r in rows if r["system"] == best and r["half"] == report_half])
        t = aggregate([r for r in rows if r["system"] == best and r["half"] == tune_half])
        table.append([best, tune_half, t.get("r@5", 0.0), t.get("r@10", 0.0), report_half,
                      a.get("r@5", 0.0), a.get("r@10", 0.0), a.get("rr", 0.0)])  # fmt: skip
        picks.append(best)
    text = markdown_table(
        ["picked", "tuned on", "R@5 (tune)", "R@10 (tune)", "reported on", "R@5", "R@10", "MRR"],
        table,
    )
    return text, picks


# ---------------------------------------------------------------- main


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--data", type=Path, default=DATA, help="locomo10.json (read in place)")
    p.add_argument("--conversations", default="1-10", help="e.g. 1-10, 1-5, 2,7")
    p.add_argument("--split", choices=["A", "B", "all"], default="all")
    p.add_argument(
        "--budgeted",
        action="store_true",
        help="headline mode: recall of what the prompt hook injects, at the prompt budget",
    )
    p.add_argument(
        "--home",
        "--workdir",
        dest="home",
        type=Path,
        help="keep projects, transcripts and the ingested MEMD_HOME here (default: a temp dir)",
    )
    p.add_argument(
        "--reuse", action="store_true", help="--home is already ingested: start a daemon, ask"
    )
    p.add_argument(
        "--daemon-socket", help="ask this running daemon instead (with --home for project dirs)"
    )
    p.add_argument("--memd", type=Path, help="memd executable (default: this checkout's .venv)")
    p.add_argument(
        "--budget", type=int, default=PROMPT_BUDGET, help="baselines' characters (--budgeted)"
    )
    p.add_argument("--skip-baselines", action="store_true", help="--budgeted: memd only")
    p.add_argument("--out", type=Path, help="JSON results (default bench/results/…)")
    p.add_argument("--inproc", action="store_true", help="search in-process, not via the daemon")
    p.add_argument("--skip-memd", action="store_true", help="baselines and prototypes only")
    p.add_argument("--tune", action="store_true", help="weight sweep, picked per half")
    p.add_argument("--latency", action="store_true", help="in-process latency per search step")
    p.add_argument("--qnorm", action="store_true", help="with --tune: also drop question lead-ins")
    p.add_argument(
        "--collapse",
        action="store_true",
        help="with --tune: prototypes minus fully covered results",
    )
    p.add_argument("--proto", action="append", default=[], help="prototype excerpts, e.g. w1+0d")
    p.add_argument(
        "--record", action="store_true", help="append the summary to bench/results/log.md"
    )
    p.add_argument("--no-record", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if (args.reuse or args.daemon_socket) and args.home is None:
        p.error("--reuse and --daemon-socket need --home (the ingested folder)")
    return args


INGEST_REPORT = "ingest.json"
"""Written into ``--home`` after ingestion: the ingestion report and the code that did it."""


def prepare(args: argparse.Namespace, convs: Sequence[Conversation]) -> tuple[Path, dict[str, str]]:
    """The work folder and each conversation's project dir; transcripts unless reusing."""
    import tempfile

    workdir = (args.home or Path(tempfile.mkdtemp(prefix="memd-locomo-"))).resolve()
    reusing = args.reuse or args.daemon_socket
    if reusing and not (workdir / "home").is_dir():
        raise SystemExit(f"{workdir} holds no ingested memd home; run once without --reuse")
    if not reusing and (workdir / INGEST_REPORT).exists():
        raise SystemExit(f"{workdir} is already ingested: add --reuse, or pick a new --home")
    workdir.mkdir(parents=True, exist_ok=True)
    print(f"home: {workdir}", flush=True)
    projects = {c.sample_id: make_project(c, workdir / "projects") for c in convs}
    if not reusing:
        for conv in convs:
            write_transcripts(conv, projects[conv.sample_id], workdir / "transcripts")
    return workdir, projects


@contextlib.contextmanager
def memd_client(
    args: argparse.Namespace, workdir: Path, env: dict[str, str], info: dict[str, Any]
) -> Iterator[Any]:
    """A client of the memd under test: ``--daemon-socket``, or a daemon started on the home
    with ``--memd`` (after ingesting the transcripts, unless ``--reuse``)."""
    import locomo_memd as lm

    if args.daemon_socket:
        info["daemon"] = f"running daemon at {args.daemon_socket}"
        info["ingest"] = read_ingest_report(workdir)
        yield lm.Client(args.daemon_socket)
        return
    daemon = lm.Daemon(env, workdir / "daemon.log")
    info["daemon"] = f"`{lm.MEMD} serve` started on the home"
    try:
        if args.reuse:
            info["ingest"] = read_ingest_report(workdir)
        else:
            report = lm.ingest_cli(env, [workdir / "transcripts"])
            daemon.wait_extracted()
            report.update(commit=git_commit(), memd=str(lm.MEMD), finished=time.ctime())
            (workdir / INGEST_REPORT).write_text(json.dumps({"ingest": report}, indent=1))
            info["ingest"] = report
            print(f"ingested: {report}", flush=True)
        yield daemon
    finally:
        daemon.stop()


def read_ingest_report(workdir: Path) -> dict[str, Any]:
    try:
        report = json.loads((workdir / INGEST_REPORT).read_text()).get("ingest", {})
    except (OSError, ValueError):
        return {}
    return report if isinstance(report, dict) else {}


def ingest_line(report: dict[str, Any]) -> str:
    keep = ("commit", "turns", "memories_added", "extraction_failures", "wall_seconds")
    return ", ".join(f"{k} {report[k]}" for k in keep if k in report) or "unknown"


def private_env(workdir: Path) -> dict[str, str]:
    """memd's environment for the bench (its home in ``workdir``), also set in this process."""
    import locomo_memd as lm

    env = lm.memd_env(workdir, workdir / "home")
    os.environ.update({k: v for k, v in env.items() if k.startswith("MEMD_")})
    return env


def budgeted_main(args: argparse.Namespace, convs: Sequence[Conversation]) -> dict[str, Any]:
    """``--budgeted``: every prompt through the daemon's ``context`` command and the baselines."""
    import locomo_budget as lb

    started = time.monotonic()
    workdir, projects = prepare(args, convs)
    env = private_env(workdir)
    info: dict[str, Any] = {}
    raw = None
    if not args.skip_baselines:
        from memd.embedding.embed import Embedder
        from memd.settings import load_settings

        cache = VectorCache(Embedder(load_settings()))
        raw = RawTurns(convs, cache, workdir)
        cache.embed(sorted({p for c in convs for _, p, _ in lb.prompts_of(c)}))
        cache.save()
    runs = workdir / "runs"
    runs.mkdir(exist_ok=True)
    tag = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
    details = runs / f"budgeted-{tag}.jsonl"
    rows: list[lb.Asked] = []
    with contextlib.ExitStack() as stack:
        context = None
        if not args.skip_memd:
            client = stack.enter_context(memd_client(args, workdir, env, info))
            out = stack.enter_context(details.open("w"))

            def context(project: str, prompt: str) -> str:
                ask = {"cmd": "context", "cwd": project, "prompt": prompt}
                reply = client.request({**ask, "event": "user-prompt-submit"})
                return str(reply.get("context") or "")

        rows = lb.run(convs, projects, context, raw, args.budget, out if context else None)
    facts = {
        "memd": info.get("daemon", "skipped"),
        "ingested": ingest_line(info.get("ingest") or {}),
        "home": str(workdir),
        "per-prompt blocks (outside the repo, LoCoMo text)": str(details),
        "wall seconds": round(time.monotonic() - started, 1),
    }
    report = lb.render(rows, convs, args.budget, facts)
    print(report)
    (runs / f"budgeted-{tag}.json").write_text(
        json.dumps({"info": info, "rows": [vars(r) for r in rows]}, default=str)
    )
    if args.record:
        append_section(
            "LoCoMo budgeted recall: what the prompt hook injects (bench/locomo.py --budgeted)",
            report,
        )
    return {"rows": rows, "info": info, "report": report}


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    import locomo_memd as lm

    if args.memd is not None:
        lm.MEMD = args.memd.resolve()
    convs = load_conversations(args.data, parse_range(args.conversations))
    if args.split != "all":
        convs = [c for c in convs if c.half == args.split]
    if args.budgeted:
        return budgeted_main(args, convs)
    return window_main(args, convs)


def window_main(args: argparse.Namespace, convs: Sequence[Conversation]) -> dict[str, Any]:
    """The window mode: citation recall@k of ``search`` results (see the module docstring)."""
    import locomo_memd as lm

    workdir, projects = prepare(args, convs)
    env = private_env(workdir)
    home = workdir / "home"
    from memd.embedding.embed import Embedder
    from memd.recall.retrieve import Weights
    from memd.settings import load_settings

    cache = VectorCache(Embedder(load_settings()))
    rows: list[dict[str, Any]] = []
    notes: list[str] = []
    info: dict[str, Any] = {"conversations": [c.sample_id for c in convs]}
    systems: list[str] = []
    leaks: list[str] = []
    if not args.skip_memd:
        if args.inproc:
            if not args.reuse:
                info["ingest"] = lm.ingest_cli(env, [workdir / "transcripts"])
            store = lm.open_store(home)
            searcher = lm.inproc_searcher(store, projects, leaks)
            path = "in-process `retrieve.search` (incl. query embedding)"
            searcher(convs[0], "warm up")
            rows += evaluate("memd", convs, searcher)
        else:
            with memd_client(args, workdir, env, info) as client:
                searcher = lm.daemon_searcher(client, projects, leaks)
                path = "daemon socket `search` (incl. query embedding and JSON round trip)"
                searcher(convs[0], "warm up")
                rows += evaluate("memd", convs, searcher)
        systems.append("memd")
        notes.append(f"memd search path: {path}; cross-project results seen: {len(leaks)}.")
        store = lm.open_store(home)
        info["store"] = lm.store_profile(store, projects)
        if args.latency:
            lat = lm.latency_breakdown(store, convs, projects)
            info["latency"] = lat
            steps = ("embed", "vector", "fts", "rank", "search", "threaded")
            notes.append(
                f"In-process latency of each search step over {lat['n']} questions "
                f"(ms; threaded = full-text search started while the query embeds; "
                f"result mismatches: {lat['mismatches']}):\n\n"
                + markdown_table(
                    ["", *steps],
                    [[q, *(f"{lat[f'{s}_{q}']:.1f}" for s in steps)] for q in ("p50", "p95")],
                )
            )
        if args.tune:
            lists = lm.Candidates(store, convs, projects, cache)
            names = []
            for cfg, kw in lm.WEIGHT_GRID.items():
                name = f"memd[{cfg}]"
                rows += evaluate(name, convs, lists.searcher(Weights(**kw)))
                names.append(name)
            text, picks = held_out(rows, names)
            info["tuning"] = {"grid": lm.WEIGHT_GRID, "picks": picks}
            if args.qnorm:
                qlists = lm.Candidates(store, convs, projects, cache, lm.normalize_question)
                qnames = []
                for cfg, kw in lm.WEIGHT_GRID.items():
                    name = f"memd+qnorm[{cfg}]"
                    rows += evaluate(name, convs, qlists.searcher(Weights(**kw)))
                    qnames.append(name)
                qtext, _ = held_out(rows, qnames)
                notes.append("Same sweep with question lead-ins dropped (`--qnorm`):\n\n" + qtext)
            notes.append(
                "Weight sweep on memd's store (picked on one half, reported on the other):\n\n"
                + text
            )
    raw = RawTurns(convs, cache, workdir)
    for method in ("bm25", "dense", "hybrid"):
        rows += evaluate(f"raw-{method}", convs, raw.searcher(method))
        systems.append(f"raw-{method}")
    for spec in args.proto:
        store = lm.build_proto_store(convs, projects, workdir / f"proto-{spec}", cache, spec)
        name = f"proto-{spec}"
        warm = lm.inproc_searcher(store, projects, leaks)
        warm(convs[0], "warm up")
        rows += evaluate(name, convs, warm)
        systems.append(name)
        if args.tune:
            names = []
            lists = lm.Candidates(store, convs, projects, cache)
            for cfg, kw in lm.WEIGHT_GRID.items():
                n = f"{name}[{cfg}]"
                rows += evaluate(n, convs, lists.searcher(Weights(**kw)))
                names.append(n)
            text, _ = held_out(rows, names)
            notes.append(f"Weight sweep on {name}:\n\n" + text)
            if args.collapse:
                n = f"{name}+collapse"
                rows += evaluate(n, convs, lists.searcher(Weights(), collapse=True))
                systems.append(n)
    cache.save()
    report = render(rows, systems, convs, notes, info)
    print(report)
    out = args.out or ROOT / "bench" / "results" / f"locomo-{int(time.time())}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"info": info, "rows": rows}, default=str))
    if args.record:
        append_section(
            "LoCoMo window R@k: search/citation recall, categories 1-4 (bench/locomo.py)", report
        )
    return {"rows": rows, "info": info}


def render(
    rows: Sequence[dict[str, Any]],
    systems: Sequence[str],
    convs: Sequence[Conversation],
    notes: Sequence[str],
    info: dict[str, Any],
) -> str:
    dropped = sum(1 for c in convs for q in c.questions if not q.gold)
    unresolved = sum(len(q.unresolved) for c in convs for q in c.questions)
    halves = [h for h in ("A", "B") if any(c.half == h for c in convs)] + ["all"]
    parts = [
        f"Conversations: {', '.join(c.sample_id for c in convs)} (A = 1-5, B = 6-10). "
        f"Questions scored: {len(select(rows, system=systems[0])) if systems else 0}; "
        f"dropped for lack of resolvable evidence: {dropped}; unresolved evidence refs: {unresolved}. "
        "Window mode = search/citation recall: a result is credited with every turn it cites, "
        "whatever it shows (the headline is `--budgeted`). "
        "R@k = mean fraction of gold turns covered by the top k (LoCoMo's definition); "
        "strict@k = R@k ignoring results that cite more than 3 turns (summaries); "
        "all@k = all gold covered; hit@k = any gold covered; ctx@k = mean characters of the top k; "
        f"R@{BUDGET_CHARS}c = R over the leading results whose texts fit in {BUDGET_CHARS} characters.",
        "",
        overview_table(rows, systems, halves),
        "",
        "Per category (all halves):",
        "",
        category_table(rows, systems),
        "",
        "Every measure per category (all halves):",
        "",
        category_detail_table(rows, systems),
        "",
        *ci_lines(rows, systems),
    ]
    store = info.get("store")
    if store:
        total = sum(s["memories"] for s in store.values())
        chars = sum(s["chars"] for s in store.values())
        kinds: dict[str, int] = defaultdict(int)
        for s in store.values():
            for k, n in s["kinds"].items():
                kinds[k] += n
        spm = mean([s["sources_per_memory"] for s in store.values()])
        parts += [
            "",
            f"memd store: {total} memories ({dict(kinds)}), {chars} characters, "
            f"{spm:.2f} sources per memory on average.",
        ]
    ingest = info.get("ingest")
    if ingest:
        parts.append(
            f"Ingestion (`memd ingest`, via {ingest.get('via', 'in-process')}): "
            f"{ingest.get('turns')} new turns, {ingest.get('memories_added')} new memories, "
            f"{ingest.get('wall_seconds')} s wall for {len(convs)} conversations."
        )
    for note in notes:
        parts += ["", note]
    return "\n".join(parts)


if __name__ == "__main__":
    main()
