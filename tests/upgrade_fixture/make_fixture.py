"""Build the upgrade fixture: a MEMD_HOME written by memd as it was before schema versions.

How the committed fixture was made (2026-11-30, from main at commit 83c250f, the code before
schema versions existed; lancedb 0.40.0, pyarrow 26.0.1, the shipped embedding model):

    cd <worktree at 83c250f> && make compile
    .venv/bin/python tests/upgrade_fixture/make_fixture.py tests/upgrade_fixture

It writes ``home-v0.tar.gz`` (``store/``, ``journal.jsonl`` and ``state.db`` of one MEMD_HOME)
and ``expected.json`` (what that code read back: every memory's id, status, pin, sources, history
and hits, and the state DB's segments), which ``tests/test_migrations.py`` compares against what
the current code reads after opening and migrating a copy. Everything is deterministic except the
timestamps, which are recorded as written. Do not regenerate it with newer code: its whole point is
to be a store from the past.

The store holds a few hundred memories across kinds and projects, some pinned, some superseded
(with history), some merged from several sources, some touched (hits), and one forgotten; the
state DB holds one extracted and one pending segment whose turns are still unredacted, as the old
code stored them.
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
import tarfile
import tempfile
from pathlib import Path

PROJECTS = [
    "/home/dev/projects/shop-api",
    "/home/dev/projects/blog-engine",
    "/home/dev/projects/infra",
    "user:global",
]
SUBJECTS = [
    "the payment service",
    "the search indexer",
    "the nightly export job",
    "the login form",
    "the CSV importer",
    "the rate limiter",
    "the image resizer",
    "the audit log",
    "the email queue",
    "the feature flag client",
    "the GraphQL gateway",
    "the websocket hub",
    "the billing cron",
    "the PDF renderer",
    "the cache warmer",
    "the session store",
    "the admin dashboard",
    "the webhook dispatcher",
    "the invoice generator",
    "the migration runner",
]
FACTS = [
    ("fact", "{s} runs on port {n} in the staging cluster."),
    ("decision", "We decided that {s} retries {n} times with exponential backoff."),
    ("bugfix", "The crash in {s} came from an unclosed file handle; fixed in PR #{n}."),
    ("preference", "For {s}, keep functions under {n} lines and prefer dataclasses."),
    ("todo", "TODO: add an integration test for {s} covering case {n}."),
    ("progress", "Finished porting {s} to async; {n} call sites updated."),
    ("summary", "Session summary: reviewed {s}, left {n} comments, merged the cleanup."),
]
SWITCHES = [
    ("We use npm for package management.", "We switched from npm to pnpm for package management."),
    ("We use black for formatting.", "We switched formatting from black to ruff."),
    ("We use Jest for unit tests.", "We moved from Jest to Vitest for unit tests."),
    ("We use MySQL as the main database.", "We migrated from MySQL to PostgreSQL."),
    ("We use Travis for CI.", "We replaced Travis with GitHub Actions."),
    ("We use requests for HTTP calls.", "We use httpx instead of requests."),
]
MULTI_SOURCE = [
    "The staging database is reset every Sunday at 02:00 UTC.",
    "Feature branches are deleted automatically after the merge.",
    "Release notes are generated from the conventional commit messages.",
    "Secrets live in the vault, never in the repository.",
    "Integration tests need the docker compose stack running.",
    "用 uv 管理 Python 依赖，不再使用 pip-tools。",
]


def build(out: Path) -> None:
    os.environ["MEMD_HOME"] = str(Path(tempfile.mkdtemp(prefix="memd-fixture-")) / "memd")
    os.environ["HF_HUB_OFFLINE"] = "1"
    from memd.app import App
    from memd.merge import upsert
    from memd.session import SessionTracker

    from memd.models import Memory, Source, Turn
    from memd.settings import Settings
    from memd.state import State

    settings = Settings()
    home = settings.home
    app = App(settings).open(writer=True)
    store = app.store

    # 1. Plain memories: 20 subjects x 7 kinds x 2 projects, written in batches of 20.
    batch: list[Memory] = []
    n = 0
    for si, subject in enumerate(SUBJECTS):
        for ki, (kind, template) in enumerate(FACTS):
            for pi in (0, 1):
                project = PROJECTS[(si + ki + pi) % len(PROJECTS)]
                n += 1
                text = template.format(s=subject, n=100 + 7 * n)
                text = text[0].upper() + text[1:]
                batch.append(
                    Memory(text=text, kind=kind, project=project, importance=0.3 + (n % 7) / 10)
                )
                if len(batch) == 20:
                    upsert(store, batch)
                    batch = []
    upsert(store, batch)

    # 2. Memories merged from several sources (same text seen in several sessions).
    for i, text in enumerate(MULTI_SOURCE):
        for j in range(2 + i % 3):
            src = Source(
                f"sess-multi-{i}-{j}", f"uuid-multi-{i}-{j}", f"2026-11-{10 + j}T10:00:00Z"
            )
            upsert(store, [Memory(text=text, kind="fact", project=PROJECTS[0], sources=[src])])

    # 3. Superseded memories: an old statement, then the one that replaces it.
    for old, new in SWITCHES:
        src_old = Source("sess-switch", f"uuid-old-{len(old)}", "2026-11-01T09:00:00Z")
        src_new = Source("sess-switch", f"uuid-new-{len(new)}", "2026-11-20T09:00:00Z")
        upsert(store, [Memory(text=old, kind="decision", project=PROJECTS[1], sources=[src_old])])
        upsert(store, [Memory(text=new, kind="decision", project=PROJECTS[1], sources=[src_new])])

    # 4. Pins, hits, one forgotten memory, one restored.
    everything = sorted(store.query(None), key=lambda m: m.id)
    for m in everything[::23]:
        app.pin(m.id)
    store.touch([m.id for m in everything[::5]])
    store.touch([m.id for m in everything[::10]])
    app.forget(everything[7].id, purge=True)
    superseded = [m for m in store.query("status = 'superseded'")]
    superseded.sort(key=lambda m: m.id)
    if superseded:
        app.restore(superseded[0].id)
    store.optimize()

    memories = sorted(store.query(None), key=lambda m: m.id)
    app.close()

    # 5. The state DB: one segment extracted, one pending with its (unredacted) turns.
    state = State.open_default(home)
    tracker = SessionTracker(settings, state)
    cwd = PROJECTS[0]
    for sid, close in (("sess-done", True), ("sess-pending", True)):
        turns = [
            Turn(f"{sid}-u1", sid, "user", "Set up the local database please.", cwd=cwd),
            Turn(
                f"{sid}-a1",
                sid,
                "assistant",
                "Added DATABASE_URL with password=Tr0ub4dor&3 to .env; we use PostgreSQL 16.",
                cwd=cwd,
            ),
        ]
        tracker.feed(turns)
        if close:
            tracker.close_session(sid, "session-end")
    state.mark_extracted(state.segments(session_id="sess-done")[0])
    segments = {}
    for key in state.segments():
        info = state.segment_info(key) or {}
        segments[key] = {
            "status": info["status"],
            "turns": [t.uuid for t in state.segment_turns(key)],
        }
    state.checkpoint()
    state.close()
    con = sqlite3.connect(home / "state.db")
    version = con.execute("PRAGMA user_version").fetchone()[0]
    con.close()

    expected = {
        "made_from": "main at 83c250f (2026-11-30), before schema versions",
        "state_user_version": version,
        "counts": {
            "total": len(memories),
            "active": sum(m.status == "active" for m in memories),
            "superseded": sum(m.status == "superseded" for m in memories),
            "pinned": sum(m.pinned for m in memories),
            "multi_source": sum(len(m.sources) > 1 for m in memories),
            "with_history": sum(bool(m.history) for m in memories),
            "with_hits": sum(m.hits > 0 for m in memories),
        },
        "memories": {
            m.id: {
                "text": m.text,
                "kind": m.kind,
                "project": m.project,
                "status": m.status,
                "pinned": m.pinned,
                "superseded_by": m.superseded_by,
                "hits": m.hits,
                "sources": [[s.session_id, s.uuid, s.timestamp] for s in m.sources],
                "history": m.history,
            }
            for m in memories
        },
        "segments": segments,
    }
    out.mkdir(parents=True, exist_ok=True)
    (out / "expected.json").write_text(json.dumps(expected, ensure_ascii=False, indent=1) + "\n")
    with tarfile.open(out / "home-v0.tar.gz", "w:gz") as tar:
        for name in ("store", "journal.jsonl", "state.db"):
            tar.add(home / name, arcname=name)
    print(json.dumps(expected["counts"]), file=sys.stderr)


if __name__ == "__main__":
    build(Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).parent))
