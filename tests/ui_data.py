"""A store of N plausible memories for the UI tests and bench/ui.py, written in bulk.

Texts, kinds, statuses, pins, hits, sessions and dates vary like a real store's; the vectors of
this filler are random unit vectors (embedding 100k texts takes ~12 minutes here), so semantic
search finds the filler only by chance. Memories a test searches for are added with real
embeddings (``App.add``) on top.
"""

from __future__ import annotations

import json
import os
import random
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from memd.models import USER_SCOPE, Memory, Source

PROJECTS = ["/demo/shop", "/demo/api", "/demo/mobile", "/demo/infra"]
"""Paths with no git root above them, so each resolves to itself."""
SUBJECTS = ["The billing service", "The API gateway", "The mobile app", "The data pipeline"]
SUBJECTS += ["The CI job", "The auth module", "The search index", "The deploy script"]
VERBS = ["uses", "depends on", "was migrated to", "is tested with", "stores its data in"]
OBJECTS = ["PostgreSQL 16", "Redis", "Kafka", "S3", "pytest", "Terraform", "Docker", "FastAPI"]
OBJECTS += ["Celery", "SQLite", "nginx", "Prometheus", "gRPC", "uv", "Vite"]
REASONS = ["because it is faster", "after the outage in March", "to cut costs"]
REASONS += ["as agreed with the team", "per the security review", "until the rewrite lands"]
KINDS = ["fact", "decision", "preference", "todo", "bugfix", "progress", "summary", "excerpt"]
BATCH = 5000


def stamp(when: datetime) -> str:
    return when.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def synthetic(n: int, seed: int = 7, weeks: int = 30) -> list[Memory]:
    rng = random.Random(seed)
    now = datetime.now(UTC)
    out = []
    session = ""
    base = now
    project = PROJECTS[0]
    for i in range(n):
        if i % 25 == 0:  # a session: one project, memories minutes apart
            session = f"sess-{seed}-{i // 25:05d}"
            base = now - timedelta(minutes=rng.randrange(weeks * 7 * 24 * 60))
            project = USER_SCOPE if rng.random() < 0.05 else rng.choice(PROJECTS)
        created = min(now, base + timedelta(minutes=(i % 25) * rng.randrange(1, 6)))
        status = rng.choices(["active", "superseded", "archived"], [85, 10, 5])[0]
        hits = int(rng.expovariate(0.3)) if rng.random() < 0.6 else 0
        used = min(now, created + timedelta(hours=rng.randrange(1, 24 * 14))) if hits else None
        text = (
            f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(OBJECTS)} "
            f"{rng.choice(REASONS)} (note {i})"
        )
        out.append(
            Memory(
                text=text,
                kind=rng.choice(KINDS),
                project=project,
                importance=round(rng.uniform(0.3, 0.9), 2),
                pinned=rng.random() < 0.02,
                status=status,
                created_at=stamp(created),
                updated_at=stamp(used or created),
                last_used_at=stamp(used) if used else "",
                hits=hits,
                sources=[
                    Source(
                        session_id=session, uuid=f"line-{seed}-{i:07d}", timestamp=stamp(created)
                    )
                ],
            )
        )
    return out


def fill(app: Any, n: int, seed: int = 7) -> list[Memory]:
    """Write ``n`` synthetic memories into ``app``'s store (writer held), then optimize it."""
    rng = np.random.default_rng(seed)
    memories = synthetic(n, seed)
    dim = app.store.embedder.dim
    for start in range(0, n, BATCH):
        chunk = memories[start : start + BATCH]
        vecs = rng.standard_normal((len(chunk), dim)).astype(np.float32)
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        app.store.write(chunk, {m.id: v.tolist() for m, v in zip(chunk, vecs, strict=True)})
    app.store.optimize()
    return memories


SHOP = "/demo/shop"
XSS_TEXT = (
    'We deploy the <script>alert(1)</script> shop with " onmouseover="alert(2) blue-green releases'
)
LOCKS_TEXT = "We chose Postgres advisory locks for the shop's job queue instead of Redis locks"
EXCERPT_TEXT = (
    "User: should the job queue use Redis locks?\n"
    "Assistant: Postgres advisory locks are simpler here; we already run Postgres."
)
SESSION = "sess-demo-locks"
LINE = "line-locks-0001"
SAID_USER = "Should the job queue use Redis locks, or something we already run?"
SAID_CLAUDE = (
    "Postgres advisory locks: we already run Postgres, so there is nothing new to operate."
)


def transcript_lines() -> list[dict[str, Any]]:
    """The session the known memories came from, as Claude Code writes it (two turns)."""
    common = {"isSidechain": False, "userType": "external", "cwd": SHOP, "sessionId": SESSION}
    return [
        {
            **common,
            "parentUuid": None,
            "type": "user",
            "message": {"role": "user", "content": SAID_USER},
            "uuid": LINE,
            "timestamp": "2026-11-20T10:00:00.000Z",
        },
        {
            **common,
            "parentUuid": LINE,
            "type": "assistant",
            "message": {
                "id": "msg_locks_1",
                "role": "assistant",
                "model": "claude-opus-4-6",
                "content": [{"type": "text", "text": SAID_CLAUDE}],
            },
            "uuid": "line-locks-0002",
            "timestamp": "2026-11-20T10:00:05.000Z",
        },
    ]


def write_transcript(transcripts_dir: Path) -> Path:
    """The known session's transcript, dated two days back: the daemon's first start notes it as
    read (its backfill of history is off in these homes: :func:`build_home`), so the memories
    built from it are not extracted again."""
    path = transcripts_dir / "-demo-shop" / f"{SESSION}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(line) + "\n" for line in transcript_lines()))
    old = time.time() - 2 * 86400
    os.utime(path, (old, old))
    return path


def known(app: Any) -> dict[str, str]:
    """The memories the tests look for, with real embeddings: ``{name: id}``."""
    from memd.store.upsert import upsert

    src = [
        Source(session_id=SESSION, uuid=LINE, timestamp="2026-11-20T10:00:00.000Z"),
        Source(session_id=SESSION, uuid="line-locks-0002", timestamp="2026-11-20T10:00:05.000Z"),
    ]
    wanted = {
        "xss": Memory(text=XSS_TEXT, kind="decision", project=SHOP, importance=0.8),
        "locks": Memory(text=LOCKS_TEXT, kind="decision", project=SHOP, sources=src),
        "excerpt": Memory(text=EXCERPT_TEXT, kind="excerpt", project=SHOP, sources=src),
    }
    results = upsert(app.store, list(wanted.values()), near_dups=False)
    return {name: r.target for name, r in zip(wanted, results, strict=True)}


def build_home(root: Any, socket_path: str, n: int) -> tuple[dict[str, str], dict[str, str]]:
    """A MEMD_HOME under ``root`` with ``n`` filler memories and the known ones.

    Returns the daemon environment (tests.daemon_process.daemon_env) and the known ids."""
    from daemon_process import daemon_env

    from memd.daemon.app import App
    from memd.settings import load_settings

    env = daemon_env(root, socket_path, MEMD_BACKFILL_HISTORY="false")
    write_transcript(Path(env["MEMD_TRANSCRIPTS_DIR"]))
    settings = load_settings(home=env["MEMD_HOME"], socket=socket_path)
    app = App(settings).open(writer=True)
    try:
        fill(app, n)
        ids = known(app)
    finally:
        app.close()
    return env, ids
