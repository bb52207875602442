"""memd under test for bench/locomo.py: a private daemon, ``memd ingest``, and search clients.

Also the prototypes measured by ``--proto``: excerpt sets built by the harness and written through
memd's real store, then searched with memd's real ``retrieve.search``, to size extraction changes
before they are made in ``memd/extract``.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from common import ROOT, stop_daemon, wait_for_daemon
from locomo import KS, Conversation, Hit, Searcher, mean, memd_hits

# ---------------------------------------------------------------- memd under test

MEMD = ROOT / ".venv" / "bin" / "memd"


def memd_env(workdir: Path, home: Path) -> dict[str, str]:
    """A private memd: its own home, an empty watched dir, no user config, no decay job."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMD_")}
    env.update(
        MEMD_HOME=str(home),
        MEMD_TRANSCRIPTS_DIR=str(workdir / "watched"),
        MEMD_CONFIG=str(workdir / "memd.toml"),
        # No decay while the bench daemon lives: the store stays what ingestion made of it.
        MEMD_DECAY_INTERVAL_MINUTES="525600",
    )
    (workdir / "watched").mkdir(parents=True, exist_ok=True)
    return env


class Client:
    """Requests to a memd daemon's socket; a refusal raises."""

    def __init__(self, socket: str) -> None:
        self.socket = socket

    def request(self, payload: dict[str, Any], timeout: float = 60) -> dict[str, Any]:
        from memd import protocol

        reply = protocol.request(self.socket, payload, timeout=timeout)
        if not reply.get("ok"):
            raise RuntimeError(f"daemon refused {payload.get('cmd')}: {reply.get('error')}")
        return reply


class Daemon(Client):
    """``memd serve`` (the executable :data:`MEMD`) as a child process on its own home; stopped
    with SIGTERM."""

    def __init__(self, env: dict[str, str], log: Path) -> None:
        import subprocess

        super().__init__(str(Path(env["MEMD_HOME"]) / "memd.sock"))
        self.log = log.open("ab")
        self.proc = subprocess.Popen(
            [str(MEMD), "serve"], env=env, stdout=self.log, stderr=self.log
        )
        try:
            wait_for_daemon(self.socket, self.proc, log, timeout=90)
        except RuntimeError:
            self.stop()
            raise

    def wait_extracted(self, timeout: float = 3600) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            status = self.request({"cmd": "status"})
            if not (status.get("sessions") or {}).get("pending"):
                return status
            if time.monotonic() > deadline:
                raise RuntimeError(f"extraction still pending after {timeout}s: {status}")
            time.sleep(0.5)

    def stop(self) -> None:
        stop_daemon(self.proc, timeout=30)
        self.log.close()


def ingest_cli(env: dict[str, str], paths: Sequence[Path]) -> dict[str, Any]:
    """``memd ingest PATH... --json``; returns its JSON report (or the raw output)."""
    import subprocess

    started = time.monotonic()
    done = subprocess.run(
        [str(MEMD), "ingest", *map(str, paths), "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=7200,
    )
    if done.returncode != 0:
        raise RuntimeError(f"memd ingest failed ({done.returncode}): {done.stderr[-2000:]}")
    try:
        report = json.loads(done.stdout)
    except ValueError:
        report = {"output": done.stdout[-500:]}
    report["wall_seconds"] = round(time.monotonic() - started, 2)
    return report


def has_ingest_cli(env: dict[str, str]) -> bool:
    import subprocess

    done = subprocess.run([str(MEMD), "ingest", "--help"], env=env, capture_output=True)
    return done.returncode == 0


def ingest_inproc(paths: Sequence[Path]) -> dict[str, Any]:
    """The same backfill + pipeline in this process (before ``memd ingest`` existed)."""
    from memd.daemon.app import App
    from memd.daemon.pipeline import Pipeline
    from memd.ingest.backfill import backfill
    from memd.settings import load_settings
    from memd.state import State

    started = time.monotonic()
    settings = load_settings()
    state = State.open_default(settings.home)
    app = App(settings).open(writer=True, owner="bench")
    try:
        report = backfill(paths, state, settings)
        pipeline = Pipeline(app, state, settings)
        while pipeline.process_pending(50):
            pass
        app.store.optimize()
        out = {**report.to_dict(), **pipeline.stats}
    finally:
        app.close()
        state.close()
    out["wall_seconds"] = round(time.monotonic() - started, 2)
    return out


def daemon_searcher(daemon: Client, projects: dict[str, str], leaks: list[str]) -> Searcher:
    def search(conv: Conversation, query: str) -> tuple[list[Hit], float | None]:
        project = projects[conv.sample_id]
        t0 = time.perf_counter()
        reply = daemon.request({"cmd": "search", "query": query, "cwd": project, "limit": max(KS)})
        ms = (time.perf_counter() - t0) * 1000
        results = reply["results"]
        leaks.extend(r["id"] for r in results if r.get("project") not in (project, "user:global"))
        return memd_hits(conv, results), ms

    return search


def inproc_searcher(
    store: Any, projects: dict[str, str], leaks: list[str], weights: Any = None
) -> Searcher:
    from memd.recall import retrieve
    from memd.recall.hits import hit_json

    w = weights or retrieve.DEFAULT_WEIGHTS

    def search(conv: Conversation, query: str) -> tuple[list[Hit], float | None]:
        project = projects[conv.sample_id]
        t0 = time.perf_counter()
        found = retrieve.search(store, query, [project], limit=max(KS), weights=w)
        results = [hit_json(h) for h in found]
        ms = (time.perf_counter() - t0) * 1000
        leaks.extend(r["id"] for r in results if r.get("project") not in (project, "user:global"))
        return memd_hits(conv, results), ms

    return search


def open_store(home: Path) -> Any:
    from memd.settings import load_settings
    from memd.store.table import MemoryStore

    return MemoryStore(load_settings(home=str(home))).open()


def store_profile(store: Any, projects: dict[str, str]) -> dict[str, dict[str, Any]]:
    """Per conversation: memories by kind, stored characters, mean sources per memory."""
    out = {}
    for sid, project in projects.items():
        from memd.store.filters import match

        mems = store.query(match(project=project, status="active"))
        kinds: dict[str, int] = defaultdict(int)
        for m in mems:
            kinds[m.kind] += 1
        out[sid] = {
            "memories": len(mems),
            "kinds": dict(kinds),
            "chars": sum(len(m.text) for m in mems),
            "sources_per_memory": mean([len(m.sources) for m in mems]),
        }
    return out


# ---------------------------------------------------------------- prototypes


def parse_proto(spec: str) -> tuple[int, int, bool, bool]:
    """``"w1+0dk"`` → (turns before, turns after, dated, key only).

    ``w0+0`` is one excerpt per turn. ``d`` puts the session date first. ``k``: the window is
    only the key (vector and full-text), the stored text and provenance stay the single turn.
    """
    m = re.fullmatch(r"w(\d+)\+(\d+)(d?)(k?)", spec)
    if not m:
        raise ValueError(f"bad --proto spec {spec!r}; expected like w1+0, w1+1d or w1+1k")
    return int(m.group(1)), int(m.group(2)), bool(m.group(3)), bool(m.group(4))


def proto_memories(conv: Conversation, project: str, spec: str) -> list[tuple[Any, str]]:
    """One excerpt per turn with its key text: (memory, text to embed), see :func:`parse_proto`.

    Key-only windows put the neighbours in ``topic``, which memd's full-text index reads.
    """
    from locomo import TURN_SECONDS, session_uuid, stamp, turn_text, turn_uuid

    from memd.models import Memory, Source

    before, after, dated, key_only = parse_proto(spec)
    out = []
    for session in conv.sessions:
        sid = session_uuid(conv.sample_id, session.number)
        date = session.start.strftime("%-d %B %Y")
        for i in range(len(session.turns)):
            lo, hi = max(0, i - before), min(len(session.turns), i + after + 1)
            window = range(lo, hi)
            key = "\n".join(turn_text(session.turns[j]) for j in window)
            if dated:
                key = f"[{date}] {key}"
            cited = [i] if key_only else list(window)
            sources = [
                Source(
                    sid,
                    turn_uuid(conv.sample_id, session.turns[j]["dia_id"]),
                    stamp(session.start + _seconds(TURN_SECONDS * j)),
                )
                for j in cited
            ]
            own = turn_text(session.turns[i])
            memory = Memory(
                text=own if key_only else key,
                kind="excerpt",
                project=project,
                topic=key if key_only else "",
                importance=0.3,
                sources=sources,
                created_at=stamp(session.start + _seconds(TURN_SECONDS * i)),
            )
            out.append((memory, key))
    return out


def _seconds(n: int) -> Any:
    from datetime import timedelta

    return timedelta(seconds=n)


def build_proto_store(
    convs: Sequence[Conversation],
    projects: dict[str, str],
    home: Path,
    cache: Any,
    spec: str,
) -> Any:
    """A memd store holding only the prototype excerpts, written by memd's real store."""
    store = open_store(home)
    pairs = [p for c in convs for p in proto_memories(c, projects[c.sample_id], spec)]
    memories = [m for m, _ in pairs]
    vectors = cache.embed([key for _, key in pairs])
    store.write(memories, {m.id: v.tolist() for m, v in zip(memories, vectors, strict=True)})
    store.optimize()
    return store


def query_vectors(
    cache: Any, convs: Sequence[Conversation], normalize: Any = None
) -> dict[str, list[float]]:
    """Vectors of the normalised questions, as ``retrieve.search`` would embed them."""
    from memd.recall.retrieve import normalize_query

    norm = normalize or normalize_query
    texts = sorted({norm(q.text) for c in convs for q in c.questions if q.gold})
    return {t: v.tolist() for t, v in zip(texts, cache.embed(texts), strict=True)}


def cosines_of(store: Any, vector: Any, by_vec: list[Any], by_text: list[Any]) -> dict[str, float]:
    """Every candidate's cosine to the query, as :func:`memd.recall.retrieve.recall` gets them."""
    cosines = {m.id: sim for m, sim in by_vec}
    missing = [m.id for m, _ in by_text if m.id not in cosines]
    if missing:
        cosines.update(store.cosines(vector, missing))
    return cosines


def idf_of(store: Any, query: str, where: Any) -> dict[str, float] | None:
    """The query terms' weights by their rarity in the searched projects, as recall gets them
    from the table (:func:`memd.recall.lexical.idf_weights`)."""
    from memd.recall import lexical

    whole, segments = lexical.query_terms(query)
    wanted = list(dict.fromkeys([*whole, *(t for seg in segments for t in seg)]))
    stats = store.document_frequencies(where, wanted) if wanted else None
    return lexical.idf_weights(*stats) if stats else None


def relevant(ranked: list[Any]) -> list[Any]:
    """The results ``search`` returns: the relevant ones, best first, at most ``max(KS)``."""
    return [r for r in ranked if r.relevant][: max(KS)]


class Candidates:
    """Each question's vector and full-text candidates, fetched once, ranked per weight setting.

    ``retrieve.search`` = normalise, embed, fetch both candidate lists, ``retrieve.rank``; only the
    last step depends on the weights, so a sweep re-ranks cached lists (the same results).
    """

    def __init__(
        self,
        store: Any,
        convs: Sequence[Conversation],
        projects: dict[str, str],
        cache: Any,
        normalize: Any = None,
    ) -> None:
        from memd.models import USER_SCOPE
        from memd.recall import retrieve

        normalize = normalize or retrieve.normalize_query
        self.embedder = store.embedder
        self.lists: dict[
            tuple[str, str], tuple[list[Any], list[Any], str, dict[str, float], Any]
        ] = {}
        qvecs = query_vectors(cache, convs, normalize)
        depth = max(max(KS) * 4, 40)
        for conv in convs:
            scope = [projects[conv.sample_id], USER_SCOPE]
            where = retrieve.where_clause(scope, None, ("active",))
            for q in conv.questions:
                if not q.gold:
                    continue
                norm = normalize(q.text)
                by_vec = store.vector_search(qvecs[norm], where, depth)
                by_text = store.text_search(norm, where, depth)
                cosines = cosines_of(store, qvecs[norm], by_vec, by_text)
                idf = idf_of(store, norm, where)
                self.lists[(conv.sample_id, q.text)] = (by_vec, by_text, norm, cosines, idf)

    def searcher(self, weights: Any, collapse: bool = False) -> Searcher:
        """``collapse``: skip a result whose turns are all covered by better results already."""
        from memd.recall import retrieve
        from memd.recall.hits import hit_json

        calibration = retrieve.calibration_of(self.embedder)

        def search(conv: Conversation, query: str) -> tuple[list[Hit], float | None]:
            by_vec, by_text, norm, cosines, idf = self.lists[(conv.sample_id, query)]
            depth = 40 if collapse else max(KS)
            ranked = retrieve.rank(by_vec, by_text, norm, cosines, weights, calibration, idf=idf)
            hits = memd_hits(conv, [hit_json(r) for r in ranked if r.relevant][:depth])
            if collapse:
                covered: set[str] = set()
                kept = []
                for h in hits:
                    if h.dia_ids and h.dia_ids <= covered:
                        continue
                    covered |= h.dia_ids
                    kept.append(h)
                hits = kept
            return hits[: max(KS)], None

        return search


WEIGHT_GRID: dict[str, dict[str, float]] = {
    f"v{v:g}-t{t:g}{'-np' if np_ else ''}": {
        "vector": v,
        "text": t,
        **({"importance": 0.0, "recency": 0.0} if np_ else {}),
    }
    for v, t in ((1, 1), (1, 2), (1, 3), (1, 4), (1, 6), (1, 10), (0, 1))
    for np_ in (False, True)
}
"""Fusion settings tried by ``--tune`` (only the vector:text ratio matters; ``-np``: no
importance/recency prior); each is picked on one half and reported on the other."""

QUESTION_LEADIN = re.compile(
    r"^(?:(?:what|when|where|who|whom|whose|which|why|how)(?:\s+(?:many|much|long|often|old|far))?"
    r"(?:\s+(?:is|are|was|were|do|does|did|has|have|had|will|would|could|can|should|might))?"
    r"|(?:is|are|was|were|do|does|did|has|have|had|will|would|could|can|should|might))\b\s*",
    re.I,
)


def normalize_question(query: str) -> str:
    """memd's normalisation, then the question lead-in ("When did", "Would") and "?" dropped."""
    from memd.recall.retrieve import normalize_query

    q = normalize_query(query).rstrip(" ?")
    return QUESTION_LEADIN.sub("", q).strip() or q


def latency_breakdown(
    store: Any, convs: Sequence[Conversation], projects: dict[str, str], n: int = 300
) -> dict[str, float]:
    """p50 ms of each step of ``retrieve.search`` in-process, and of a threaded variant.

    The threaded variant starts the full-text search while the query is being embedded, then
    runs the vector search: same results (checked), less wall time when a core is free.
    """
    from concurrent.futures import ThreadPoolExecutor

    from common import percentile

    from memd.models import USER_SCOPE
    from memd.recall import retrieve

    pool = ThreadPoolExecutor(2)
    steps: dict[str, list[float]] = defaultdict(list)
    mismatches = 0
    asked = [(c, q.text) for c in convs for q in c.questions if q.gold][:n]
    for conv, text in asked:
        project = projects[conv.sample_id]
        where = retrieve.where_clause([project, USER_SCOPE], None, ("active",))
        t0 = time.perf_counter()
        query = retrieve.normalize_query(text)
        vec = store.embedder.embed_one(query)
        t1 = time.perf_counter()
        by_vec = store.vector_search(vec, where, 40)
        t2 = time.perf_counter()
        by_text = store.text_search(query, where, 40)
        t3 = time.perf_counter()
        idf = idf_of(store, query, where)
        cosines = cosines_of(store, vec, by_vec, by_text)
        calibration = retrieve.calibration_of(store.embedder)
        ranked = relevant(
            retrieve.rank(by_vec, by_text, query, cosines, calibration=calibration, idf=idf)
        )
        t4 = time.perf_counter()
        full = retrieve.search(store, text, [project], limit=max(KS))
        t5 = time.perf_counter()
        fts = pool.submit(store.text_search, query, where, 40)
        vec2 = store.embedder.embed_one(query)
        by_vec2 = store.vector_search(vec2, where, 40)
        by_text2 = fts.result()
        cosines2 = cosines_of(store, vec2, by_vec2, by_text2)
        threaded = relevant(
            retrieve.rank(by_vec2, by_text2, query, cosines2, calibration=calibration, idf=idf)
        )
        t6 = time.perf_counter()
        ids = [r.id for r in threaded]
        mismatches += ids != [r.id for r in full] or ids != [r.id for r in ranked]
        for name, dt in (("embed", t1 - t0), ("vector", t2 - t1), ("fts", t3 - t2),
                         ("rank", t4 - t3), ("search", t5 - t4), ("threaded", t6 - t5)):  # fmt: skip
            steps[name].append(dt * 1000)
    pool.shutdown()
    out = {f"{k}_p50": percentile(v, 50) for k, v in steps.items()}
    out.update({f"{k}_p95": percentile(v, 95) for k, v in steps.items()})
    out["mismatches"] = mismatches
    out["n"] = len(asked)
    return out
