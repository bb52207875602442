"""Maintenance jobs on a real LanceDB table in tmp_path with the real offline model."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from memd.cli import main
from memd.daemon import jobs
from memd.daemon.app import App
from memd.daemon.jobs import Scheduler
from memd.embedding.models import MINILM_MODEL
from memd.errors import UserError
from memd.models import Memory, Source
from memd.recall import retrieve
from memd.settings import Settings, load_settings
from memd.state import State
from memd.store import maintenance
from memd.store.filters import match
from memd.store.maintenance import effective_score
from memd.store.table import MemoryStore

P = "/p/jobs"
SEQ = itertools.count()


def ago(days: float) -> str:
    stamp = datetime.now(UTC) - timedelta(days=days)
    return stamp.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def mem(text: str, kind: str = "fact", project: str = P, days: float = 0, **kw: Any) -> Memory:
    stamp = ago(days)
    n = next(SEQ)
    kw.setdefault("sources", [Source(f"session-{n}", f"line-{n}", stamp)])
    return Memory(text=text, kind=kind, project=project, created_at=stamp, **kw)


def put(store: MemoryStore, memories: list[Memory]) -> list[Memory]:
    """Write straight to the table, past insert-time dedupe (what the sweep must catch)."""
    store.write(memories, {})
    return memories


def by_id(store: MemoryStore) -> dict[str, Memory]:
    return {m.id: m for m in store.query(None)}


@pytest.fixture
def make_app() -> Iterator[Callable[..., App]]:
    opened: list[App] = []

    def make(**overrides: Any) -> App:
        app = App(load_settings(**overrides)).open(writer=True)
        opened.append(app)
        return app

    yield make
    for app in opened:
        app.close()


@pytest.fixture
def state(tmp_path: Path) -> Iterator[State]:
    st = State(tmp_path / "state.db")
    yield st
    st.close()


def wait_for(check: Callable[[], bool], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.05)
    raise AssertionError("condition not met in time")


# ---- decay


def test_decay_scores_by_kind_and_age_pinned_untouched(make_app: Callable[..., App]) -> None:
    app = make_app()
    todo, decision, used, pinned = put(
        app.store,
        [
            mem("TODO: rotate the staging TLS certificates", kind="todo", days=21),
            mem("We chose SQLite for the local state database", kind="decision", days=21),
            mem("The CI runner caches the pip wheels directory", days=200, hits=7),
            mem("Always answer in English in this repo", kind="preference", days=900, pinned=True),
        ],
    )
    before = by_id(app.store)
    result = maintenance.decay(app.store, app.settings)
    assert result == {"scanned": 3, "updated": 3}
    after = by_id(app.store)
    # TODOs decay fast (7-day half-life: 3 half-lives), decisions slowly (365 days).
    assert after[todo.id].score == pytest.approx(0.5 * 0.125, abs=0.002)
    assert after[decision.id].score == pytest.approx(0.5 * 0.5 ** (21 / 365), abs=0.002)
    # Hits boost: 7 hits → ×1.45.
    assert after[used.id].score == pytest.approx(0.5 * 0.5 ** (200 / 120) * 1.45, abs=0.002)
    # Pinned: not decayed, not rewritten at all.
    assert after[pinned.id].to_dict() == before[pinned.id].to_dict()
    # Nothing moved since: the second run writes nothing.
    version = app.store.table_stats()["version"]
    assert maintenance.decay(app.store, app.settings)["updated"] == 0
    assert app.store.table_stats()["version"] == version


def test_effective_score_uses_last_activity() -> None:
    settings = load_settings()
    now = datetime.now(UTC)
    old = mem("An old fact", days=240, importance=0.8)
    assert effective_score(old, settings, now) == pytest.approx(0.2, abs=0.002)
    old.last_used_at = ago(0)
    assert effective_score(old, settings, now) == pytest.approx(0.8, abs=0.002)


# ---- dedupe


def test_dedupe_merges_duplicates_keeps_sources_and_history(make_app: Callable[..., App]) -> None:
    app = make_app(embedding_model=MINILM_MODEL)  # dedupe_threshold 0.92 is a MiniLM cosine
    old, dup, other_kind, unrelated = put(
        app.store,
        [
            mem("We use pnpm for package management in this repo", days=30, hits=2),
            mem("We use pnpm for package management in this repository.", days=2, hits=3),
            mem("We use pnpm for package management in this repo.", kind="decision"),
            mem("The API server listens on port 8080 in development"),
        ],
    )
    pin, pin_dup = put(
        app.store,
        [
            mem("Deploys need a green staging run before production", days=1, pinned=True),
            mem("Deploys need a green staging run before production!", days=40, importance=0.9),
        ],
    )
    other_project = put(
        app.store, [mem("We use pnpm for package management in this repo", project="/p/other")]
    )[0]
    pin_before = by_id(app.store)[pin.id]

    result = maintenance.dedupe(app.store, app.settings)

    assert result["merged"] == 2
    assert sorted(result["pairs"]) == sorted([[old.id, dup.id], [pin.id, pin_dup.id]])
    rows = by_id(app.store)
    survivor, loser = rows[old.id], rows[dup.id]
    assert survivor.status == "active"
    assert {s.uuid for s in survivor.sources} == {s.uuid for s in old.sources + dup.sources}
    assert survivor.hits == 2 + 3 + 1
    assert survivor.history[-1]["merged"] == dup.id and survivor.history[-1]["by"] == "dedupe"
    assert survivor.history[-1]["text"] == dup.text
    assert loser.status == "superseded" and loser.superseded_by == old.id
    assert loser.history[-1]["merged_into"] == old.id
    # Another kind and another project are never merged.
    for kept in (other_kind, unrelated, other_project):
        assert rows[kept.id].status == "active"
    # A pinned memory is never the loser, even when the other is older and more important;
    # it keeps its text, importance, score and status, and gains the sources.
    assert rows[pin_dup.id].status == "superseded" and rows[pin_dup.id].superseded_by == pin.id
    kept_pin = rows[pin.id]
    for field in ("text", "importance", "score", "status", "pinned"):
        assert getattr(kept_pin, field) == getattr(pin_before, field)
    assert len(kept_pin.sources) == 2
    # The loser's history is viewable through show().
    shown = app.show(dup.id)["memory"]
    assert shown["superseded_by_text"] == old.text
    # A second sweep finds nothing.
    assert maintenance.dedupe(app.store, app.settings)["merged"] == 0


# ---- cleanup


def test_cleanup_archives_stale_to_readable_file_and_restore(
    make_app: Callable[..., App],
) -> None:
    app = make_app()
    stale, fresh_low, old_important, pinned_stale, old_fact = put(
        app.store,
        [
            mem(
                "The flaky test in auth_spec was skipped on Fridays",
                kind="progress",
                days=400,
                importance=0.2,
            ),
            mem("Lint runs with ruff in pre-commit", days=1, importance=0.04),
            mem("We chose PostgreSQL 16 for the main database", kind="decision", days=400),
            mem("Old pinned note about the VPN", days=900, importance=0.05, pinned=True),
            mem("The staging database lives on db-3", days=400, importance=0.05),
        ],
    )
    pinned_before = by_id(app.store)[pinned_stale.id]
    result = maintenance.cleanup(app.store, app.settings)
    assert result["archived_stale"] == 1 and result["ids"] == [stale.id]
    rows = by_id(app.store)
    assert rows[stale.id].status == "archived"
    assert rows[stale.id].history[-1]["archived"] == "stale"
    # Recent (even with a low score), important, and pinned memories stay; so does durable
    # knowledge (a fact, a decision), whatever its age and score: age alone never archives it.
    assert rows[fresh_low.id].status == "active"
    assert rows[old_important.id].status == "active"
    assert rows[old_fact.id].status == "active"
    assert rows[pinned_stale.id].to_dict() == pinned_before.to_dict()
    # The archive is a readable Markdown file that holds the text and how to restore it.
    archive_file = Path(result["archive_file"])
    assert archive_file.parent == app.settings.home / "archive"
    assert archive_file.stat().st_mode & 0o777 == 0o600
    text = archive_file.read_text()
    assert stale.text in text and f"memd restore {stale.id}" in text
    assert "unused for 400 days" in text
    # Archived memories are no longer found; restore brings one back.
    hits = retrieve.search(app.store, "flaky auth test skipped", [P])
    assert stale.id not in [h.id for h in hits]
    app.restore(stale.id)
    assert app.store.get(stale.id).status == "active"
    assert stale.id in [h.id for h in retrieve.search(app.store, "flaky auth test", [P])]
    # Restoring counts as activity: the next cleanup keeps it.
    assert maintenance.cleanup(app.store, app.settings)["archived_stale"] == 0


def test_cleanup_enforces_project_cap_lowest_scores_first(make_app: Callable[..., App]) -> None:
    app = make_app(project_cap=5)
    regular = put(
        app.store,
        [mem(f"Fact number {i} about module m{i}", importance=0.1 * i) for i in range(1, 9)],
    )
    pinned = put(
        app.store,
        [mem(f"Pinned low note {i}", importance=0.05, pinned=True) for i in range(2)],
    )
    elsewhere = put(app.store, [mem(f"Other project fact {i}", project="/p/b") for i in range(7)])
    result = maintenance.cleanup(app.store, app.settings)
    rows = by_id(app.store)
    active = [m for m in rows.values() if m.project == P and m.status == "active"]
    assert len(active) == 5
    # Both pinned stay, plus the three most important regular ones.
    assert {m.id for m in active} == {m.id for m in pinned} | {m.id for m in regular[-3:]}
    assert result["archived_cap"] == 5 + 2  # five here, two in /p/b
    assert all(rows[m.id].history[-1]["archived"] == "cap" for m in regular[:5])
    # Caps are per project: /p/b has 7 and a cap of 5 too.
    assert sum(rows[m.id].status == "active" for m in elsewhere) == 5


def test_cleanup_closes_todos_a_later_memory_says_are_done(make_app: Callable[..., App]) -> None:
    app = make_app()
    retry, docs, billing, later_only, pinned = put(
        app.store,
        [
            mem("TODO: add retry logic to the upload client", kind="todo", days=3),
            mem("TODO: write docs for the search API", kind="todo", days=3),
            mem("TODO: migrate the billing tables to postgres", kind="todo", days=3),
            mem("TODO: 修复登录页面的bug", kind="todo", days=3),
            mem("TODO: add retry logic to the download client", kind="todo", days=3, pinned=True),
        ],
    )
    put(
        app.store,
        [
            mem(
                "Done: added retry logic to the upload client with exponential backoff", "progress"
            ),
            mem("Finished adding retry logic to the download client", kind="excerpt"),
            mem("The billing tables migration is not done yet", kind="progress", days=1),
            mem("登录页面的bug修好了", kind="excerpt", days=4),  # earlier than the TODO
        ],
    )
    result = maintenance.cleanup(app.store, app.settings)
    rows = by_id(app.store)
    assert result["todos_closed"] == 1 and result["ids"] == [retry.id]
    assert rows[retry.id].status == "archived"
    assert rows[retry.id].history[-1]["done"]
    assert "exponential backoff" in rows[retry.id].history[-1]["text"]
    for kept in (docs, billing, later_only, pinned):
        assert rows[kept.id].status == "active", kept.text
    assert retry.text in Path(result["archive_file"]).read_text()


# ---- optimize


CORPUS = [
    "We chose PostgreSQL 16 as the main database for the billing service",
    "The frontend is built with React and Vite, served by nginx",
    "Run the integration tests with `make itest`; they need Docker running",
    "The API server listens on port 8080 in development and 443 in production",
    "Secrets live in Vault; never commit .env files to the repository",
    "The nightly backup job writes to the s3 bucket acme-backups",
    "Use ruff for linting and formatting; black is no longer used",
    "The search service caches query embeddings in Redis for one hour",
    "Deploys go through the staging cluster before production",
    "The mobile app talks to the GraphQL gateway, not to REST endpoints",
    "Feature flags are managed in LaunchDarkly and cleaned up every quarter",
    "Logs are shipped to Loki; dashboards are in Grafana under 'platform'",
    "The CI runner caches the pip wheels directory between jobs",
    "Database migrations are written with Alembic and reviewed by two people",
    "The upload client retries with exponential backoff up to five times",
    "Rate limiting is 100 requests per minute per API key",
    "User avatars are resized to 256 pixels by the image worker",
    "The cron scheduler runs in UTC; reports go out at 06:00",
    "Python 3.11 is the minimum supported version",
    "The payment webhook must be idempotent: Stripe retries it",
    "我们决定使用 Redis 作为缓存层",
    "登录页面使用 OAuth2 授权码流程",
    "Error messages shown to users are translated with gettext",
    "The docs site is built with MkDocs Material and deployed on merge",
]
QUERIES = [
    "which database do we use",
    "how are deploys done",
    "redis cache",
    "缓存",
    "linting tool",
    "retry backoff for uploads",
    "where do logs go",
]


def test_optimize_compacts_and_keeps_search_results(make_app: Callable[..., App]) -> None:
    from lancedb.index import FTS

    app = make_app()
    for text in CORPUS:  # one-row writes: a version and a fragment each
        app.store.write([mem(text)], {})
    ids = [m.id for m in app.store.query(None, limit=3)]
    app.store.touch(ids)
    vector_before = [
        [
            (m.id, round(s, 5))
            for m, s in app.store.vector_search(
                app.store.embedder.embed_one(q), match(project=P), 10
            )
        ]
        for q in QUERIES
    ]
    # The full-text index was built on the first row; LanceDB scores rows written since by a
    # flat BM25 with other statistics, so hybrid scores legitimately shift once optimize folds
    # them into the index. Rebuild it here so "before" and "after" see the same index contents.
    app.store.table.create_index(
        "search_text", config=FTS(base_tokenizer="icu", with_position=False), replace=True
    )
    before = app.store.table_stats()
    versions_before = len(app.store.table.list_versions())
    assert before["fragments"] >= 20 and versions_before >= 25
    results_before = [retrieve.search(app.store, q, [P]) for q in QUERIES]

    result = maintenance.optimize(app.store, app.settings)

    after = app.store.table_stats()
    assert after["fragments"] < before["fragments"] and after["fragments"] <= 2
    assert len(app.store.table.list_versions()) < versions_before
    assert len(app.store.table.list_versions()) <= 2
    assert after["rows"] == before["rows"] == len(CORPUS)
    assert result["before"] == before and result["after"] == after
    assert app.store.writes_since_optimize == 0
    for q, old in zip(QUERIES, results_before, strict=True):
        new = retrieve.search(app.store, q, [P])
        assert new == old, q
    vector_after = [
        [
            (m.id, round(s, 5))
            for m, s in app.store.vector_search(
                app.store.embedder.embed_one(q), match(project=P), 10
            )
        ]
        for q in QUERIES
    ]
    assert vector_after == vector_before
    assert {m.id: m.hits for m in app.store.query(None)}[ids[0]] == 1


# ---- all jobs leave pinned memories alone


def test_pinned_memories_untouched_by_every_job(make_app: Callable[..., App]) -> None:
    app = make_app(project_cap=2)
    pinned = put(
        app.store,
        [
            mem(
                "TODO: pinned task about the release checklist", kind="todo", days=500, pinned=True
            ),
            mem("Pinned fact with almost no importance", days=900, importance=0.01, pinned=True),
            mem("Pinned fact with almost no importance at all", days=900, pinned=True),
        ],
    )
    put(
        app.store,
        [
            mem("Done: finished the release checklist task", kind="progress"),
            *[mem(f"Regular fact {i} about the build", days=400, importance=0.1) for i in range(4)],
        ],
    )
    before = by_id(app.store)
    for name in jobs.JOB_NAMES:
        maintenance.JOBS[name](app.store, app.settings)
    after = by_id(app.store)
    for p in pinned:
        assert after[p.id].to_dict() == before[p.id].to_dict()
    regular_active = [m for m in after.values() if not m.pinned and m.status == "active"]
    assert regular_active == []  # the cap (2) is taken by pinned memories; the rest archived


# ---- the scheduler


def test_scheduler_fires_and_records_in_state(make_app: Callable[..., App], state: State) -> None:
    app = make_app(decay_interval_minutes=0.005)  # 0.3 s
    put(app.store, [mem("TODO: an aging task", kind="todo", days=30)])
    scheduler = Scheduler(app, state)
    scheduler.start()
    try:
        wait_for(lambda: (state.get("jobs.decay") or {}).get("last_status") == "ok")
        status = {j["name"]: j for j in scheduler.jobs_status()}
        assert status["decay"]["last_result"] == {"scanned": 1, "updated": 1}
        assert status["decay"]["trigger"] == "schedule"
        assert status["decay"]["next_run"] and status["dedupe"]["next_run"]
        assert status["dedupe"]["last_run"] is None
        first = state.get("jobs.decay")["last_run"]
        wait_for(lambda: state.get("jobs.decay")["last_run"] != first)
    finally:
        assert scheduler.shutdown(wait=True, timeout=10)
    assert not scheduler.started


def test_failing_job_is_recorded_and_others_keep_running(
    make_app: Callable[..., App], state: State
) -> None:
    from apscheduler.triggers.interval import IntervalTrigger

    app = make_app()
    put(app.store, [mem("Something to decay", days=10)])
    calls = {"n": 0}

    def broken(store: MemoryStore, settings: Settings) -> dict[str, Any]:
        calls["n"] += 1
        raise RuntimeError("disk on fire")

    fast = {name: IntervalTrigger(seconds=0.3) for name in ("dedupe", "decay")}
    scheduler = Scheduler(app, state, functions={"dedupe": broken}, triggers=fast)
    scheduler.start()
    try:
        wait_for(lambda: calls["n"] >= 2)
        wait_for(lambda: (state.get("jobs.decay") or {}).get("last_status") == "ok")
        decay_run = state.get("jobs.decay")["last_run"]
        wait_for(lambda: state.get("jobs.decay")["last_run"] != decay_run)
        status = {j["name"]: j for j in scheduler.jobs_status()}
        assert status["dedupe"]["last_status"] == "error: RuntimeError: disk on fire"
        assert status["dedupe"]["last_ok"] is None
        assert status["decay"]["last_status"] == "ok"
        assert scheduler.started and scheduler._scheduler.running
        # A manual run of the failing job reports the error instead of raising.
        record = scheduler.run("dedupe")
        assert record["last_status"].startswith("error:") and record["trigger"] == "manual"
    finally:
        scheduler.shutdown(wait=True, timeout=10)
    with pytest.raises(UserError):
        scheduler.run("nope")


def test_note_writes_brings_optimize_forward(make_app: Callable[..., App], state: State) -> None:
    app = make_app(optimize_every_writes=5)
    scheduler = Scheduler(app, state)
    scheduler.start()
    try:
        for i in range(3):
            app.store.write([mem(f"Write number {i}")], {})
            scheduler.note_writes(1)
        time.sleep(0.3)
        assert state.get("jobs.optimize") is None  # 3 < 5: not yet
        for i in range(3, 6):
            app.store.write([mem(f"Write number {i}")], {})
            scheduler.note_writes(1)
        wait_for(lambda: (state.get("jobs.optimize") or {}).get("last_status") == "ok")
        assert app.store.writes_since_optimize == 0
        optimized = state.get("jobs.optimize")["last_result"]
        assert optimized["before"]["fragments"] >= 5
        assert optimized["after"]["fragments"] < optimized["before"]["fragments"]
        # The interval restarts from the forced run: next one about 10 minutes later.
        nxt = {j["name"]: j for j in scheduler.jobs_status()}["optimize"]["next_run"]
        delay = datetime.fromisoformat(nxt.replace("Z", "+00:00")) - datetime.now(UTC)
        assert timedelta(minutes=9) < delay <= timedelta(minutes=10)
    finally:
        scheduler.shutdown(wait=True, timeout=10)


def test_written_rows_trigger_optimize_without_note_writes(
    make_app: Callable[..., App], state: State
) -> None:
    app = make_app(optimize_every_writes=4)
    scheduler = Scheduler(app, state, writes_check=0.2)
    scheduler.start()
    try:
        for i in range(4):
            app.store.write([mem(f"Row {i} written by the pipeline")], {})
        wait_for(lambda: (state.get("jobs.optimize") or {}).get("last_status") == "ok")
        assert app.store.writes_since_optimize == 0
    finally:
        scheduler.shutdown(wait=True, timeout=10)


def test_overdue_job_catches_up_after_restart(make_app: Callable[..., App], state: State) -> None:
    app = make_app()
    state.set("jobs.dedupe", {"last_run": ago(3), "last_status": "ok"})
    state.set("jobs.cleanup", {"last_run": ago(0.1), "last_status": "ok"})
    state.set("jobs.decay", {"last_run": ago(20 / 1440), "last_status": "ok"})
    scheduler = Scheduler(app, state, catch_up_delay=0.2)
    scheduler.start()
    try:
        wait_for(lambda: state.get("jobs.dedupe").get("trigger") == "schedule")
        status = {j["name"]: j for j in scheduler.jobs_status()}
        # cleanup ran 2.4 h ago: its next run is the nightly one, not a catch-up.
        assert status["cleanup"]["trigger"] is None
        # decay ran 20 min ago: the hourly rhythm continues, about 40 min from now.
        nxt = datetime.fromisoformat(status["decay"]["next_run"].replace("Z", "+00:00"))
        assert timedelta(minutes=38) < nxt - datetime.now(UTC) < timedelta(minutes=41)
    finally:
        scheduler.shutdown(wait=True, timeout=10)


# ---- the CLI (no daemon: in-process under the writer lock)


def test_cli_jobs_run_and_list_without_daemon(tmp_path: Path) -> None:
    app = App(load_settings()).open(writer=True)
    put(app.store, [mem("The cache lives in /var/cache/app", days=5)])
    app.close()
    runner = CliRunner()
    ran = runner.invoke(main, ["jobs", "run", "decay", "--json"])
    assert ran.exit_code == 0, ran.output
    record = json.loads(ran.output)
    assert record["last_status"] == "ok" and record["last_result"]["scanned"] == 1
    listed = runner.invoke(main, ["jobs", "--json"])
    assert listed.exit_code == 0, listed.output
    rows = {j["name"]: j for j in json.loads(listed.output)}
    assert set(rows) == set(jobs.JOB_NAMES)
    assert rows["decay"]["last_status"] == "ok" and rows["decay"]["next_run"] is None
    assert rows["optimize"]["last_run"] is None
    text = runner.invoke(main, ["jobs"])
    assert "daemon is not running" in text.output and "decay" in text.output
    bad = runner.invoke(main, ["jobs", "run", "nope"])
    assert bad.exit_code == 2


def test_cli_jobs_through_a_running_daemon(
    short_socket: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("MEMD_SOCKET", short_socket)
    log = (tmp_path / "daemon.log").open("wb")
    daemon = subprocess.Popen(
        [sys.executable, "-c", "from memd.cli import main; main()", "serve"],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    runner = CliRunner()
    try:
        wait_for(lambda: runner.invoke(main, ["status"]).exit_code == 0, timeout=30)
        listed = runner.invoke(main, ["jobs", "--json"])
        assert listed.exit_code == 0, listed.output
        rows = {j["name"]: j for j in json.loads(listed.output)}
        assert all(rows[name]["next_run"] for name in jobs.JOB_NAMES)  # scheduled in the daemon
        ran = runner.invoke(main, ["jobs", "run", "optimize", "--json"])
        assert ran.exit_code == 0, ran.output
        record = json.loads(ran.output)
        assert record["last_status"] == "ok" and record["trigger"] == "manual"
        listed = runner.invoke(main, ["jobs"])
        assert "optimize" in listed.output and " ok" in listed.output
    finally:
        daemon.terminate()
        assert daemon.wait(timeout=20) == 0
        log.close()


@pytest.mark.parametrize(
    ("todo", "later", "done"),
    [
        ("TODO: add retry logic to the upload client", "Retry logic in upload client: done", True),
        ("TODO: 修复登录页面的bug", "登录页面的bug修好了", True),
        ("TODO: 修复登录页面的bug", "登录页面的bug还没修好", False),
        (
            "TODO: add retry logic to the upload client",
            "Upload client retry is not done yet",
            False,
        ),
        ("TODO: add retry logic to the upload client", "Fixed the docs build on CI", False),
        (
            "TODO: migrate billing to postgres",
            "Billing migration to postgres: still pending",
            False,
        ),
    ],
)
def test_states_done_is_conservative(todo: str, later: str, done: bool) -> None:
    from memd.store.todos import states_done

    assert states_done(mem(todo, kind="todo"), mem(later, kind="progress")) is done
