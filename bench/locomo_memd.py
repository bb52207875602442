"""memd under test for bench/locomo.py: a private daemon, ``memd ingest``, and search clients.

Also the prototypes measured by ``--proto``: excerpt sets built by the harness and written through
memd's real store, then searched with memd's real ``retrieve.search``, to size extraction changes
before they are made in ``memd/extract``.
"""

from __future__ import annotations

import json
import os
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from common import ROOT
from locomo import KS, Conversation, Hit, Searcher, mean, memd_hits

# ---------------------------------------------------------------- memd under test

MEMD = ROOT / ".venv" / "bin" / "memd"


def memd_env(workdir: Path, home: Path) -> dict[str, str]:
    """A private memd: its own home, an empty watched dir, no user config."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMD_")}
    env.update(
        MEMD_HOME=str(home),
        MEMD_TRANSCRIPTS_DIR=str(workdir / "watched"),
        MEMD_CONFIG=str(workdir / "memd.toml"),
    )
    (workdir / "watched").mkdir(parents=True, exist_ok=True)
    return env


class Daemon:
    """``memd serve`` as a child process on its own home; stopped with SIGTERM."""

    def __init__(self, env: dict[str, str], log: Path) -> None:
        import subprocess

        from memd import protocol

        self.socket = str(Path(env["MEMD_HOME"]) / "memd.sock")
        self.log = log.open("ab")
        self.proc = subprocess.Popen(
            [str(MEMD), "serve"], env=env, stdout=self.log, stderr=self.log
        )
        deadline = time.monotonic() + 90
        while True:
            try:
                if protocol.request(self.socket, {"cmd": "ping"}, timeout=2).get("ok"):
                    break
            except (OSError, ValueError):
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"memd serve did not come up; see {log}")
            time.sleep(0.2)

    def request(self, payload: dict[str, Any], timeout: float = 60) -> dict[str, Any]:
        from memd import protocol

        reply = protocol.request(self.socket, payload, timeout=timeout)
        if not reply.get("ok"):
            raise RuntimeError(f"daemon refused {payload.get('cmd')}: {reply.get('error')}")
        return reply

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
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except Exception:
                self.proc.kill()
                self.proc.wait(10)
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
    from memd.app import App
    from memd.backfill import backfill
    from memd.pipeline import Pipeline
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


def daemon_searcher(daemon: Daemon, projects: dict[str, str], leaks: list[str]) -> Searcher:
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
    from memd import retrieve

    w = weights or retrieve.DEFAULT_WEIGHTS

    def search(conv: Conversation, query: str) -> tuple[list[Hit], float | None]:
        project = projects[conv.sample_id]
        t0 = time.perf_counter()
        results = retrieve.search(store, query, [project], limit=max(KS), weights=w)
        ms = (time.perf_counter() - t0) * 1000
        leaks.extend(r["id"] for r in results if r.get("project") not in (project, "user:global"))
        return memd_hits(conv, results), ms

    return search


def open_store(home: Path) -> Any:
    from memd.settings import load_settings
    from memd.store import MemoryStore

    return MemoryStore(load_settings(home=str(home))).open()


def store_profile(store: Any, projects: dict[str, str]) -> dict[str, dict[str, Any]]:
    """Per conversation: memories by kind, stored characters, mean sources per memory."""
    out = {}
    for sid, project in projects.items():
        from memd.store import sql_str

        mems = store.query(f"project = {sql_str(project)} AND status = 'active'")
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


def parse_proto(spec: str) -> tuple[int, int, bool]:
    """``"w1+0d"`` → (turns before, turns after, dated). ``w0+0`` is one excerpt per turn."""
    import re

    m = re.fullmatch(r"w(\d+)\+(\d+)(d?)", spec)
    if not m:
        raise ValueError(f"bad --proto spec {spec!r}; expected like w1+0 or w1+1d")
    return int(m.group(1)), int(m.group(2)), bool(m.group(3))


def proto_memories(
    conv: Conversation, project: str, before: int, after: int, dated: bool
) -> list[Any]:
    """One excerpt per turn whose text (and provenance) is the turn plus its neighbours."""
    from locomo import TURN_SECONDS, session_uuid, stamp, turn_text, turn_uuid

    from memd.models import Memory, Source

    out = []
    for session in conv.sessions:
        sid = session_uuid(conv.sample_id, session.number)
        date = session.start.strftime("%-d %B %Y")
        for i in range(len(session.turns)):
            lo, hi = max(0, i - before), min(len(session.turns), i + after + 1)
            window = range(lo, hi)
            text = "\n".join(turn_text(session.turns[j]) for j in window)
            if dated:
                text = f"[{date}] {text}"
            sources = [
                Source(
                    sid,
                    turn_uuid(conv.sample_id, session.turns[j]["dia_id"]),
                    stamp(session.start + _seconds(TURN_SECONDS * j)),
                )
                for j in window
            ]
            out.append(
                Memory(
                    text=text,
                    kind="excerpt",
                    project=project,
                    importance=0.3,
                    sources=sources,
                    created_at=sources[i - lo].timestamp,
                )
            )
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
    before, after, dated = parse_proto(spec)
    store = open_store(home)
    memories = [
        m for c in convs for m in proto_memories(c, projects[c.sample_id], before, after, dated)
    ]
    vectors = cache.embed([m.text for m in memories])
    store.write(memories, {m.id: v.tolist() for m, v in zip(memories, vectors, strict=True)})
    store.optimize()
    return store


def query_vectors(cache: Any, convs: Sequence[Conversation]) -> dict[str, list[float]]:
    """Vectors of the normalised questions, as ``retrieve.search`` would embed them."""
    from memd.retrieve import normalize_query

    texts = sorted({normalize_query(q.text) for c in convs for q in c.questions if q.gold})
    return {t: v.tolist() for t, v in zip(texts, cache.embed(texts), strict=True)}


def sweep_searcher(
    store: Any, projects: dict[str, str], qvecs: dict[str, list[float]], weights: Any
) -> Searcher:
    """In-process search with given weights and a precomputed query vector (tuning only)."""
    from memd import retrieve

    def search(conv: Conversation, query: str) -> tuple[list[Hit], float | None]:
        vec = qvecs.get(retrieve.normalize_query(query))
        results = retrieve.search(
            store, query, [projects[conv.sample_id]], limit=max(KS), weights=weights, vector=vec
        )
        return memd_hits(conv, results), None

    return search


WEIGHT_GRID: dict[str, dict[str, float]] = {
    "default": {},
    "v1.5": {"vector": 1.5},
    "v2": {"vector": 2.0},
    "t1.5": {"text": 1.5},
    "v1.5-noprior": {"vector": 1.5, "importance": 0.0, "recency": 0.0},
    "noprior": {"importance": 0.0, "recency": 0.0},
    "t1.5-noprior": {"text": 1.5, "importance": 0.0, "recency": 0.0},
}
"""Fusion settings tried by ``--tune``; each is picked on one half and reported on the other."""
