"""Upgrades keep the store: the fixture written by main before schema versions opens, migrates
(after a backup, once, logged) and loses nothing; a store from a newer memd is refused untouched.

The fixture (tests/upgrade_fixture/, made by make_fixture.py there) is always copied to tmp first.
"""

from __future__ import annotations

import hashlib
import json
import logging
import sqlite3
import subprocess
import tarfile
from pathlib import Path
from typing import Any

import lancedb
import pytest
from daemon_process import MEMD, DaemonProcess, daemon_env, remove_socket_dir, short_socket_path

from memd.daemon.app import App
from memd.errors import SchemaTooNew
from memd.settings import Settings
from memd.setup.doctor import Doctor
from memd.state import STATE_VERSION, State
from memd.store import migrations, rebuild
from memd.store.table import META_FILE, STORE_VERSION, MemoryStore

FIXTURE = Path(__file__).parent / "upgrade_fixture"
EXPECTED: dict[str, Any] = json.loads((FIXTURE / "expected.json").read_text())
OLD_SECRET = b"Tr0ub4dor&3"
"""A password the old code left unredacted in the fixture's pending turns."""


def unpack(home: Path) -> Settings:
    home.mkdir(parents=True)
    with tarfile.open(FIXTURE / "home-v0.tar.gz") as tar:
        if hasattr(tarfile, "data_filter"):  # Python 3.11.4+
            tar.extractall(home, filter="data")
        else:  # pragma: no cover - our own fixture: plain files and directories
            tar.extractall(home)
    return Settings(home=home)


def digest(root: Path) -> dict[str, str]:
    """Every data file's hash (the writer lock file only names its holder)."""
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name != "writer.lock"
    }


def as_expected(memory: Any) -> dict[str, Any]:
    return {
        "text": memory.text,
        "kind": memory.kind,
        "project": memory.project,
        "status": memory.status,
        "pinned": memory.pinned,
        "superseded_by": memory.superseded_by,
        "hits": memory.hits,
        "sources": [[s.session_id, s.uuid, s.timestamp] for s in memory.sources],
        "history": memory.history,
    }


def check_unchanged(store: MemoryStore) -> None:
    memories = {m.id: m for m in store.query(None)}
    assert len(memories) == EXPECTED["counts"]["total"] == len(EXPECTED["memories"])
    assert sorted(memories) == sorted(EXPECTED["memories"])  # the same ids
    for mid, want in EXPECTED["memories"].items():
        assert as_expected(memories[mid]) == want, mid
    counts = EXPECTED["counts"]
    assert sum(m.pinned for m in memories.values()) == counts["pinned"] > 0
    assert sum(m.status == "superseded" for m in memories.values()) == counts["superseded"] > 0
    assert sum(len(m.sources) > 1 for m in memories.values()) == counts["multi_source"] > 0
    assert sum(bool(m.history) for m in memories.values()) == counts["with_history"] > 0


def test_fixture_is_what_main_wrote() -> None:
    """The fixture is small, and really unversioned (else the migration test proves nothing)."""
    assert (FIXTURE / "home-v0.tar.gz").stat().st_size < 5 << 20
    assert 200 <= EXPECTED["counts"]["total"] <= 1000
    assert EXPECTED["state_user_version"] == 0


def test_fixture_store_migrates_with_nothing_lost(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    settings = unpack(tmp_path / "memd")
    before = digest(settings.home)
    assert migrations.store_version(settings) == 0 and migrations.state_version(settings) == 0
    assert [(s.part, s.to) for s in migrations.pending(settings)] == [
        ("store", 1),
        ("store", 2),
        ("state", 1),
    ]
    check = Doctor(settings).check_schema()
    assert check.level == "warn" and "store v0, state v0; pending:" in check.detail

    caplog.set_level(logging.INFO, logger="memd.store.migrations")
    app = App(settings).open(writer=True)
    try:
        check_unchanged(app.store)
        # Version 2's columns are there, empty in every old row.
        assert {"subject", "value"} <= set(app.store.table.schema.names)
        assert {(m.subject, m.value) for m in app.store.query(None)} == {("", "")}
        # The journal (what a rebuild replays) agrees with the table.
        replayed = app.store.journal.replay()
        assert {m: as_expected(v) for m, v in replayed.items()} == EXPECTED["memories"]
    finally:
        app.close()
    logged = caplog.text
    assert "backup in" in logged and "store v0 → v1" in logged and "state v0 → v1" in logged
    assert "store v1 → v2" in logged

    # Versions recorded; nothing pending; doctor agrees.
    assert json.loads((settings.home / "store" / META_FILE).read_text())["schema_version"] == 2
    assert migrations.state_version(settings) == STATE_VERSION
    assert migrations.pending(settings) == []
    assert Doctor(settings).check_schema().detail == "store v2, state v1; no migration pending"

    # One backup with the old store, byte for byte; its state copy redacted like the DB.
    (backup,) = (settings.home / "backups").iterdir()
    assert backup.name.endswith("store-v0-state-v0")
    kept = digest(backup)
    for name, sha in before.items():
        if name.startswith(("store/", "journal")):
            assert kept[name] == sha, name

    # The state: segments as they were, the pending turns kept but redacted, everywhere.
    state = State(settings.home / "state.db")
    for key, want in EXPECTED["segments"].items():
        assert (state.segment_info(key) or {})["status"] == want["status"]
        turns = state.segment_turns(key)
        assert [t.uuid for t in turns] == want["turns"]
    pending = state.segment_turns("sess-pending:0:sess-pending-u1")
    assert "[REDACTED:password]" in pending[1].text and "PostgreSQL 16" in pending[1].text
    state.close()
    for path in settings.home.rglob("*"):
        if path.is_file():
            assert OLD_SECRET not in path.read_bytes(), path

    # Idempotent: opening again migrates nothing and backs up nothing.
    app = App(settings).open(writer=True)
    check_unchanged(app.store)
    app.close()
    assert len(list((settings.home / "backups").iterdir())) == 1


def test_every_step_is_idempotent(tmp_path: Path) -> None:
    settings = unpack(tmp_path / "memd")
    for step in migrations.STEPS:
        step.apply(settings)
    once = (
        migrations.store_version(settings),
        migrations.state_version(settings),
        State(settings.home / "state.db").segment_turns("sess-pending:0:sess-pending-u1"),
    )
    for step in migrations.STEPS:  # an interrupted migration runs again from the start
        step.apply(settings)
    again = (
        migrations.store_version(settings),
        migrations.state_version(settings),
        State(settings.home / "state.db").segment_turns("sess-pending:0:sess-pending-u1"),
    )
    assert once == again and once[:2] == (STORE_VERSION, STATE_VERSION)


def test_a_v1_store_is_read_before_and_written_after_migrating(tmp_path: Path) -> None:
    """A reader opening a version-1 store (no subject and value columns) reads its rows; the
    writer adds the columns, and a memory's subject and value are kept from then on."""
    from memd.models import Memory
    from memd.store.upsert import upsert

    settings = unpack(tmp_path / "memd")
    App(settings).open(writer=True).close()
    lancedb.connect(settings.home / "store").open_table("memories").drop_columns(
        ["subject", "value"]
    )
    path = settings.home / "store" / META_FILE
    path.write_text(json.dumps({**json.loads(path.read_text()), "schema_version": 1}))

    reader = App(settings).open(writer=False)
    try:
        assert len(reader.store.query(None)) == EXPECTED["counts"]["total"]
    finally:
        reader.close()
    app = App(settings).open(writer=True)
    try:
        assert migrations.store_version(settings) == 2
        said = Memory(
            text="The nightly batch starts at 02:30 UTC.",
            project="/p",
            subject="nightly batch start time",
            value="02:30 UTC",
        )
        upsert(app.store, [said])
        (back,) = [m for m in app.store.query(None) if m.id == said.id]
        assert (back.subject, back.value) == ("nightly batch start time", "02:30 UTC")
    finally:
        app.close()


def test_the_daemon_migrates_the_fixture_at_start(tmp_path: Path) -> None:
    sock = short_socket_path()
    env = daemon_env(tmp_path, sock)
    unpack(Path(env["MEMD_HOME"]))
    daemon = DaemonProcess(env, tmp_path / "serve.log")
    try:
        daemon.start()
        reply = daemon.request({"cmd": "list", "all_projects": True, "include_all": True})
        assert reply["total"] == EXPECTED["counts"]["total"]
        assert {m["id"] for m in reply["memories"]} == set(EXPECTED["memories"])
        pinned = {m["id"] for m in reply["memories"] if m["pinned"]}
        assert pinned == {k for k, v in EXPECTED["memories"].items() if v["pinned"]}
    finally:
        code = daemon.stop()
        remove_socket_dir(sock)
    assert code == 0
    log = daemon.log()
    assert "migrating" in log and "migration done" in log
    assert migrations.pending(Settings(home=Path(env["MEMD_HOME"]))) == []


def newer(settings: Settings, part: str) -> None:
    if part == "store":
        path = settings.home / "store" / META_FILE
        meta = json.loads(path.read_text())
        path.write_text(json.dumps({**meta, "schema_version": STORE_VERSION + 1}))
    else:
        db = sqlite3.connect(settings.home / "state.db")
        db.execute(f"PRAGMA user_version = {STATE_VERSION + 1}")
        db.close()


@pytest.mark.parametrize("part", ["store", "state"])
def test_a_newer_store_is_refused_and_never_rewritten(tmp_path: Path, part: str) -> None:
    settings = unpack(tmp_path / "memd")
    App(settings).open(writer=True).close()  # migrated to today's versions
    newer(settings, part)
    before = digest(settings.home)

    with pytest.raises(SchemaTooNew, match="written by a newer memd"):
        App(settings).open(writer=True)
    with pytest.raises(SchemaTooNew):
        App(settings).open(writer=False) if part == "store" else State(settings.home / "state.db")
    check = Doctor(settings).check_schema()
    assert check.level == "fail" and "newer memd" in check.detail
    if part == "store":
        assert Doctor(settings).check_store().level == "fail"
        with pytest.raises(SchemaTooNew):
            rebuild.rebuild_from_journal(MemoryStore(settings))  # what `doctor --repair` calls
    env = daemon_env(tmp_path, short_socket_path(), MEMD_HOME=str(settings.home))
    out = subprocess.run(
        [MEMD, "serve"], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert out.returncode == 4 and "written by a newer memd" in out.stderr
    remove_socket_dir(env["MEMD_SOCKET"])
    assert digest(settings.home) == before  # not one byte changed


def test_old_backups_are_pruned_and_nothing_else(tmp_path: Path) -> None:
    base = tmp_path / "backups"
    base.mkdir()
    names = [f"2026010{d}T000000Z-store-v1-state-v1" for d in range(1, 7)]
    for name in [*names, "20260107T000000Z-store-v1-state-v2.partial", "my-own-copy"]:
        (base / name).mkdir()
        (base / name / "f").write_text("x")
    (base / "notes.txt").write_text("mine")
    removed = migrations.prune_backups(base, keep=3)
    left = sorted(p.name for p in base.iterdir())
    assert left == sorted([*names[-3:], "my-own-copy", "notes.txt"])
    assert len(removed) == 4
