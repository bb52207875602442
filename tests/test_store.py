"""The store on a real LanceDB in tmp_path with the real offline model."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from memd.daemon.app import App
from memd.errors import ModelMismatch, NotFound, StoreError, UserError
from memd.models import USER_SCOPE, Memory, Source
from memd.settings import load_settings
from memd.store import rebuild, similar
from memd.store.filters import match
from memd.store.journal import Journal
from memd.store.table import MemoryStore
from memd.store.upsert import upsert


def mem(text: str, project: str = "/p/a", kind: str = "fact", **kw) -> Memory:
    return Memory(text=text, kind=kind, project=project, **kw)


def test_add_search_english_and_chinese(app: App) -> None:
    upsert(
        app.store,
        [
            mem("We decided to use PostgreSQL 16 as the main database", kind="decision"),
            mem("我们决定使用 Redis 作为缓存层", kind="decision"),
            mem("The frontend is built with React and Vite"),
        ],
    )
    en = app.search("which database do we use", project="/p/a")["results"]
    assert en[0]["text"].startswith("We decided to use PostgreSQL")
    zh = app.search("缓存", project="/p/a")["results"]
    assert zh[0]["text"] == "我们决定使用 Redis 作为缓存层"
    assert zh[0]["score_breakdown"]["lexical"] > 0
    for field in ("id", "text", "kind", "project", "score", "pinned", "created_at", "sources"):
        assert field in en[0]
    assert set(en[0]["score_breakdown"]) >= {
        "semantic",
        "lexical",
        "recency",
        "importance",
        "total",
    }


def test_project_isolation_and_user_scope(app: App, tmp_path: Path) -> None:
    # Two repositories with the same folder name are different projects.
    one, two = tmp_path / "x" / "api", tmp_path / "y" / "api"
    for root in (one, two):
        (root / ".git").mkdir(parents=True)
        (root / "src").mkdir()
    app.add("The api service listens on port 8080", cwd=str(one / "src"))
    app.add("The api service listens on port 9090", cwd=str(two))
    app.add("I prefer short commit messages", project=USER_SCOPE, kind="preference")
    texts = [
        r["text"] for r in app.search("which port does the api listen on", cwd=str(one))["results"]
    ]
    assert "The api service listens on port 8080" in texts
    assert "The api service listens on port 9090" not in texts
    assert "I prefer short commit messages" not in texts  # not relevant to the question
    prefs = [r["text"] for r in app.search("short commit messages", cwd=str(one))["results"]]
    assert "I prefer short commit messages" in prefs  # the user-wide scope is always searched
    listed = app.list_memories(cwd=str(two))["memories"]
    assert {m["text"] for m in listed} == {
        "The api service listens on port 9090",
        "I prefer short commit messages",
    }
    assert listed[0]["project"] in (str(two), USER_SCOPE)


def test_near_duplicate_merges_sources(app: App) -> None:
    a = mem("The API server is written in FastAPI", sources=[Source("s1", "u1", "t1")])
    b = mem("The API server is written with FastAPI", sources=[Source("s2", "u2", "t2")])
    upsert(app.store, [a])
    result = upsert(app.store, [b])[0]
    assert result.action == "merged" and result.target == a.id
    stored = app.store.get(a.id)
    assert {s.uuid for s in stored.sources} == {"u1", "u2"}
    assert stored.hits == 1
    assert app.store.count() == 1


def test_same_id_replay_is_idempotent(app: App) -> None:
    m = mem("Tests run with pytest -q", sources=[Source("s1", "u1", "t1")])
    upsert(app.store, [m])
    again = mem("Tests run with pytest -q", sources=[Source("s1", "u1", "t1")])
    assert again.id == m.id
    assert upsert(app.store, [again])[0].action == "unchanged"
    assert app.store.count() == 1 and app.store.get(m.id).hits == 0


def test_contradiction_supersedes_and_keeps_history(app: App) -> None:
    old = mem("Use ruff for formatting", kind="decision")
    upsert(app.store, [old])
    new = mem("Switch formatting from ruff to black", kind="decision")
    result = upsert(app.store, [new])[0]
    assert result.superseded == [old.id]
    stored = app.store.get(old.id)
    assert stored.status == "superseded" and stored.superseded_by == new.id
    assert stored.history[-1]["superseded_by"] == new.id
    active = [r["id"] for r in app.search("formatting", project="/p/a")["results"]]
    assert active == [new.id]
    everything = [
        r["id"] for r in app.search("formatting", project="/p/a", include_all=True)["results"]
    ]
    assert old.id in everything
    assert app.show(new.id)["memory"]["supersedes"][0]["id"] == old.id


def test_pinned_is_never_superseded(app: App) -> None:
    old = mem("Use ruff for formatting", kind="decision", pinned=True)
    upsert(app.store, [old])
    upsert(app.store, [mem("Switch formatting from ruff to black", kind="decision")])
    assert app.store.get(old.id).status == "active"


@pytest.mark.parametrize(
    ("new", "old", "expected"),
    [
        ("Switch formatting from ruff to black", "Use ruff for formatting", True),
        ("Use black for formatting", "Use ruff for formatting", True),
        ("We replaced npm with pnpm", "The project uses npm for packages", True),
        ("格式化工具从 ruff 改成 black", "格式化统一用 ruff", True),
        ("Use ruff for linting", "Use black for formatting", False),
        ("Use ruff for formatting", "Use ruff for formatting", False),
    ],
)
def test_contradicts(new: str, old: str, expected: bool) -> None:
    """The trigger-phrase cases that memd.merge used to decide, now in memd.store.similar (the
    cosine does not matter for them: a trigger phrase is sure)."""
    assert similar.conflict(new, old, 0.6, "memd/all-MiniLM-L6-v2-int8").sure is expected


def test_bad_input(app: App) -> None:
    with pytest.raises(UserError, match="empty"):
        app.add("   ")
    with pytest.raises(UserError, match="unknown kind"):
        app.add("x", kind="gossip")
    with pytest.raises(NotFound):
        app.show("deadbeef")
    with pytest.raises(NotFound):
        app.forget("not-an-id")


def test_id_prefix_pin_forget(app: App) -> None:
    added = app.add("Deploys go through GitHub Actions", kind="fact")["memory"]
    assert app.pin(added["id"][:6])["memory"]["pinned"] is True
    assert app.forget(added["id"][:8])["forgotten"] == added["id"]
    assert app.show(added["id"])["memory"]["status"] == "archived"  # forget archives
    assert app.forget(added["id"][:8], purge=True)["purged"] is True
    with pytest.raises(NotFound):
        app.show(added["id"])


def test_secrets_redacted_on_add(app: App) -> None:
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    out = app.add(f"the CI token is {token}")["memory"]
    assert token not in out["text"]
    assert "[REDACTED:" in out["text"]
    assert token not in (app.settings.home / "journal.jsonl").read_text()


def test_rebuild_from_journal_after_damage(app: App) -> None:
    texts = ["Releases are tagged vX.Y.Z", "The build system is make", "CI runs on every push"]
    ids = [app.add(t)["memory"]["id"] for t in texts]
    app.forget(ids[0], purge=True)
    app.pin(ids[1])
    store_dir = app.settings.home / "store"
    # Simulate a power cut: every manifest zero bytes.
    for manifest in store_dir.rglob("*.manifest"):
        manifest.write_bytes(b"")
    app.store.close()
    fresh = MemoryStore(app.settings)
    with pytest.raises(StoreError):
        fresh.open()
        fresh.query(None)
    assert rebuild.rebuild_from_journal(fresh) == 2
    survivors = {m.id: m for m in fresh.query(None)}
    assert set(survivors) == set(ids[1:])
    assert survivors[ids[1]].pinned is True
    assert fresh.text_search("build system", match(status="active"), 5)


def test_model_change_needs_reindex(app: App, monkeypatch: pytest.MonkeyPatch) -> None:
    app.add("Logs go to stderr")
    app.store.close()
    meta = app.settings.home / "store" / "memd-meta.json"
    data = json.loads(meta.read_text())
    data["model_id"] = "some/other-model"
    meta.write_text(json.dumps(data))
    with pytest.raises(ModelMismatch, match="memd reindex"):
        MemoryStore(app.settings).open()
    store = MemoryStore(app.settings).open(check_model=False)
    assert rebuild.reindex(store) == 1
    store.close()
    reopened = MemoryStore(app.settings).open()
    assert reopened.meta()["model_id"] == reopened.embedder.model_id
    assert reopened.count() == 1


def test_journal_ignores_partial_and_garbage_lines(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "j.jsonl")
    journal.append([{"op": "put", "m": mem("kept").to_dict()}])
    with open(journal.path, "ab") as fh:
        fh.write(b'not json\n{"op": "put", "m": {"text": "partial')
    assert [m.text for m in journal.replay().values()] == ["kept"]


FULL_DISK = r"""
import resource, signal, sys
from memd.daemon.app import App
from memd.errors import StoreError
from memd.settings import load_settings

app = App(load_settings()).open(writer=True)
app.add("first memory survives")
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
journal = app.settings.home / "journal.jsonl"
limit = journal.stat().st_size + 40  # room for less than one more entry
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
try:
    app.add("second memory that does not fit " + "x" * 500)
except StoreError as exc:
    print("refused:", exc)
    sys.exit(0)
sys.exit("the write should have failed")
"""


def test_full_disk_write_loses_nothing(tmp_path: Path) -> None:
    """A write that hits 'no space' (RLIMIT_FSIZE here) stores nothing and breaks nothing."""
    run = subprocess.run(
        [sys.executable, "-c", FULL_DISK],
        capture_output=True,
        text=True,
        env=os.environ,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    assert "refused:" in run.stdout
    app = App(load_settings()).open(writer=True)
    try:
        texts = [m.text for m in app.store.query(None)]
        assert texts == ["first memory survives"]
        replayed = [m.text for m in app.store.journal.replay().values()]
        assert replayed == ["first memory survives"]
        app.add("writes work again afterwards")
        assert app.store.count() == 2
    finally:
        app.close()


def test_optimize_compacts_the_journal(app: App) -> None:
    added = app.add("The staging database is called orders_staging")["memory"]
    for _ in range(30):
        app.store.touch([added["id"]])
    journal = app.store.journal
    assert journal.lines() > 30
    assert app.store.compact_journal(slack=3) is False  # under the default 1,000-line slack
    app.store.journal.append([{"op": "touch", "ids": [added["id"]], "at": "x"}] * 1200)
    app.store.optimize()
    assert journal.lines() == 1
    replayed = journal.replay()[added["id"]]
    assert replayed.hits == app.store.get(added["id"]).hits


def test_bulk_import_drops_the_model_only_outside_the_daemon(app: App, tmp_path: Path) -> None:
    from memd.store import importing

    data = tmp_path / "many.jsonl"
    lines = [{"text": f"Service {i} listens on port {8000 + i}."} for i in range(1001)]
    data.write_text("".join(json.dumps(line) + "\n" for line in lines))
    app.store.embedder.load()
    report = importing.import_jsonl(app.store, data, "/p/bulk", app.settings.redact_patterns)
    assert report["bulk"] is True and report["read"] == 1001 and not report["errors"]
    assert not app.store.embedder.loaded  # a one-shot import gave the model back before optimize
    hits = app.search("which port does service 42 listen on", project="/p/bulk")["results"]
    assert hits and "Service 42 " in hits[0]["text"]  # the next search loads it again
    # the daemon keeps its model
    report = importing.import_jsonl(
        app.store, data, "/p/bulk2", app.settings.redact_patterns, resident=True
    )
    assert report["read"] == 1001 and app.store.embedder.loaded


def test_the_daemons_inserts_find_their_neighbours_in_the_vector_cache(
    monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    """With the daemon's vector cache (``store.near``), upsert reads no LanceDB vector search
    and finds the same neighbours, with the same cosines, as the table's search does."""
    from memd.store.upsert import NEIGHBOURS, nearest

    texts = [
        "The API server is written in FastAPI",
        "Use ruff for formatting",
        "The billing database is PostgreSQL 16",
        "Deploys go through the GitHub Actions release workflow",
        "The frontend uses pnpm, never npm",
        "Sessions expire after thirty minutes of inactivity",
        "Images are stored in S3; the database keeps the object key",
        "Logs are structured JSON written to stdout",
        "Feature flags live in LaunchDarkly with an owner each",
        "The staging host runs docker compose",
        "Secrets are kept in Vault under kv/apps",
        "Migrations are written by hand with Alembic",
    ]
    kinds = ["fact", "decision", "preference"]
    app = App(load_settings(), resident=True).open(writer=True)  # the daemon's
    request.addfinalizer(app.close)
    assert app.store.near is not None
    upsert(app.store, [mem(t, kind=kinds[i % 3]) for i, t in enumerate(texts)])
    upsert(app.store, [mem("An excerpt about FastAPI servers", kind="excerpt")])
    upsert(app.store, [mem("Other project: FastAPI too", project="/p/b")])
    vector = app.store.embedder.embed(["Which framework is the API server written in?"])[0]
    wanted = ["fact", "decision"]
    reader = App(load_settings()).open(writer=False)  # a one-shot process: the table's search
    try:
        assert reader.store.near is None
        by_table = nearest(reader.store, vector, "/p/a", wanted)
    finally:
        reader.close()
    by_cache = nearest(app.store, vector, "/p/a", wanted)
    assert [m.id for m, _ in by_cache] == [m.id for m, _ in by_table]
    assert len(by_cache) == min(NEIGHBOURS, sum(1 for i in range(12) if i % 3 != 2))
    for (_, a), (_, b) in zip(by_cache, by_table, strict=True):
        assert a == pytest.approx(b, abs=1e-5)
    assert all(m.kind in wanted and m.project == "/p/a" for m, _ in by_cache)

    def no_table_search(*args: object, **kwargs: object) -> None:
        raise AssertionError("the insert path searched the table")

    monkeypatch.setattr(app.store, "vector_search", no_table_search)
    merged = upsert(app.store, [mem("The API server is written with FastAPI")])[0]
    assert merged.action == "merged" and merged.target == mem(texts[0]).id
    replaced = upsert(app.store, [mem("Switch formatting from ruff to black", kind="decision")])
    assert replaced[0].superseded == [mem(texts[1], kind="decision").id]
