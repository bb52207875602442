"""App.list_memories pages and filters, App.edit / archive / sessions / stats, and `memd stats` (no daemon)."""

from __future__ import annotations

import json
import subprocess
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from daemon_process import MEMD, daemon_env
from ui_data import SHOP, fill, known

from memd.daemon.app import App
from memd.errors import UserError
from memd.settings import load_settings

N = 600


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    root = tmp_path_factory.mktemp("curate")
    env = daemon_env(root, str(root / "no.sock"))
    app = App(load_settings(home=env["MEMD_HOME"], socket=env["MEMD_SOCKET"])).open(writer=True)
    memories = fill(app, N)
    ids = known(app)
    try:
        yield {"app": app, "ids": ids, "env": env, "memories": memories}
    finally:
        app.close()


def test_pages_cover_every_matching_memory_once(store: dict[str, Any]):
    app = store["app"]
    seen: list[str] = []
    offset = 0
    while True:
        page = app.list_memories(
            all_projects=True, include_all=True, offset=offset, limit=70, order="recent"
        )
        seen += [m["id"] for m in page["memories"]]
        offset += 70
        if offset >= page["total"]:
            break
    assert page["total"] == N + 3
    assert len(seen) == len(set(seen)) == N + 3
    stamps = [
        m["updated_at"] for m in app.list_memories(all_projects=True, order="recent")["memories"]
    ]
    assert stamps == sorted(stamps, reverse=True)


def test_list_filters_by_status_and_pin(store: dict[str, Any]):
    app = store["app"]
    expected = Counter(m.status for m in store["memories"])
    for status in ("superseded", "archived"):
        got = app.list_memories(all_projects=True, status=status, limit=5000)
        assert got["total"] == expected[status]
        assert {m["status"] for m in got["memories"]} == {status}
    pinned = app.list_memories(all_projects=True, include_all=True, pinned=True, limit=5000)
    assert pinned["total"] == sum(m.pinned for m in store["memories"]) > 0
    with pytest.raises(UserError, match="unknown status"):
        app.list_memories(all_projects=True, status="deleted")


def test_default_list_is_unchanged_active_pinned_first(store: dict[str, Any]):
    got = store["app"].list_memories(project=SHOP, limit=5000)["memories"]
    assert {m["status"] for m in got} == {"active"}
    keys = [(not m["pinned"], m["kind"], m["created_at"]) for m in got]
    assert keys == sorted(keys)
    assert {m["project"] for m in got} <= {SHOP, "user:global"}


def test_edit_reembeds_and_keeps_the_old_text(store: dict[str, Any]):
    app = store["app"]
    mid = store["ids"]["xss"]
    old = app.show(mid)["memory"]["text"]
    edited = app.edit(mid, text="Releases of the shop go out as canary deploys", importance=0.4)
    memory = edited["memory"]
    assert memory["id"] == mid and memory["text"].startswith("Releases of the shop")
    assert memory["history"][-1]["was"] == {"text": old, "importance": 0.8}
    found = app.search("canary deploys of the shop", project=SHOP)["results"]
    assert found[0]["id"] == mid and found[0]["score_breakdown"]["semantic"] > 0.5
    same = app.edit(mid, text=memory["text"])  # no change: no history entry
    assert len(same["memory"]["history"]) == len(memory["history"])


@pytest.mark.parametrize(
    "change",
    [{"text": "  "}, {"importance": 1.5}, {"importance": -0.1}, {"kind": "opinion"}],
)
def test_bad_edits_change_nothing(store: dict[str, Any], change: dict[str, Any]):
    app = store["app"]
    mid = store["ids"]["locks"]
    before = app.show(mid)["memory"]
    with pytest.raises(UserError):
        app.edit(mid, **change)
    assert app.show(mid)["memory"] == before


def test_edit_redacts_secrets(store: dict[str, Any]):
    app = store["app"]
    mid = store["ids"]["locks"]
    text = app.edit(mid, text="Deploy key is AKIAIOSFODNN7EXAMPLE for the queue")["memory"]["text"]
    assert "AKIAIOSFODNN7EXAMPLE" not in text and "REDACTED" in text


def test_archive_leaves_a_readable_trace_and_restore_undoes_it(store: dict[str, Any]):
    app = store["app"]
    mid = store["ids"]["excerpt"]
    memory = app.archive(mid, reason="forgotten in memd ui")["memory"]
    assert memory["status"] == "archived"
    assert memory["history"][-1]["archived"] == "forgotten in memd ui"
    trace = "".join(
        p.read_text() for p in (Path(store["env"]["MEMD_HOME"]) / "archive").glob("*.md")
    )
    assert mid in trace and "forgotten in memd ui" in trace
    with pytest.raises(UserError, match="already archived"):
        app.archive(mid)
    assert app.restore(mid)["memory"]["status"] == "active"


def test_show_finds_the_excerpt_of_the_same_lines(store: dict[str, Any]):
    shown = store["app"].show(store["ids"]["locks"], excerpts=True)["memory"]
    assert [e["id"] for e in shown["excerpts"]] == [store["ids"]["excerpt"]]
    assert "excerpts" not in store["app"].show(store["ids"]["locks"])["memory"]


def test_stats_match_the_data(store: dict[str, Any]):
    stats = store["app"].stats()
    full = stats["stats"]
    memories = store["memories"]
    assert full["total"] == N + 3 == stats["memories"]["total"]
    kinds = Counter(m.kind for m in memories) + Counter({"decision": 2, "excerpt": 1})
    assert full["by_kind"] == dict(sorted(kinds.items()))
    first_week = full["growth"]["weeks"][0]  # the series keeps the newest WEEKS weeks
    shown = sum(m.created_at[:10] >= first_week for m in memories) + 3
    assert sum(sum(v) for v in full["growth"]["series"].values()) == shown
    assert full["hits"]["total"] == sum(m.hits for m in memories)
    assert sum(b["count"] for b in full["hits"]["buckets"]) == N + 3
    hits = [m["hits"] for m in full["most_used"]]
    assert hits == sorted(hits, reverse=True) and hits[0] == max(m.hits for m in memories)
    assert all(m["hits"] == 0 for m in full["least_used"])
    assert sum(sum(v) for v in full["archived_per_week"]["series"].values()) == full[
        "by_status"
    ].get("archived", 0)
    shop = next(p for p in full["projects"] if p["project"] == SHOP)
    assert shop["total"] == sum(m.project == SHOP for m in memories) + 3
    assert full["store_bytes"] > 0 and full["journal_bytes"] > 0


def test_sessions_timeline(store: dict[str, Any]):
    memories = store["memories"]
    sessions = {m.sources[0].session_id for m in memories}
    got = store["app"].sessions(limit=1000)
    assert got["total"] == len(sessions) + 1  # + the known memories' session
    lasts = [s["last"] for s in got["sessions"]]
    assert lasts == sorted(lasts, reverse=True)
    one = next(s for s in got["sessions"] if s["session_id"] == "sess-7-00003")
    mine = [m for m in memories if m.sources[0].session_id == "sess-7-00003"]
    assert one["memories"] == len(mine)
    assert one["first"] == min(m.created_at for m in mine)
    assert {m["id"] for m in one["learned"]} <= {m.id for m in mine}
    shop = store["app"].sessions(project=SHOP, limit=5, offset=1)
    assert len(shop["sessions"]) == 5 and {s["project"] for s in shop["sessions"]} == {SHOP}


def test_memd_stats_reads_the_store_without_a_daemon(store: dict[str, Any]):
    env = store["env"]
    out = subprocess.run(
        [MEMD, "stats", "--json"], env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["total"] == N + 3
    text = subprocess.run([MEMD, "stats"], env=env, capture_output=True, text=True, timeout=120)
    assert text.returncode == 0, text.stderr
    assert f"{N + 3} memories" in text.stdout and "by kind:" in text.stdout
    assert "most used:" in text.stdout


def test_cached_listings_and_stats_follow_every_write(store: dict[str, Any]):
    app = store["app"]
    before = app.list_memories(all_projects=True, order="recent", limit=5)["memories"]
    stats_before = app.stats()["stats"]
    oldest = app.list_memories(all_projects=True, order="recent", limit=1, offset=N - 100)[
        "memories"
    ][0]
    app.edit(oldest["id"], importance=0.55)  # bumps updated_at: now the most recent
    after = app.list_memories(all_projects=True, order="recent", limit=5)["memories"]
    assert after[0]["id"] == oldest["id"] and after[1]["id"] == before[0]["id"]
    app.archive(oldest["id"])
    stats_after = app.stats()["stats"]
    assert stats_after["by_status"]["archived"] == stats_before["by_status"].get("archived", 0) + 1
    assert oldest["id"] not in [
        m["id"] for m in app.list_memories(all_projects=True, order="recent", limit=5)["memories"]
    ]
    app.restore(oldest["id"])


def test_ui_figures_answer_at_once_then_catch_up(store: dict[str, Any]):
    import time

    app = store["app"]
    before = app.stats()["stats"]  # exact, and cached for this version of the store
    mid = store["ids"]["xss"]
    app.archive(mid)
    stale = app.stats(fresh=False)["stats"]
    assert stale["computed_at"] == before["computed_at"]  # the last figures, no waiting
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        now = app.stats(fresh=False)["stats"]
        if now["computed_at"] != before["computed_at"]:
            break
        time.sleep(0.05)
    archived = before["by_status"].get("archived", 0) + 1
    assert now["by_status"]["archived"] == archived  # recomputed in the background
    assert app.stats()["stats"]["by_status"]["archived"] == archived
    app.restore(mid)
