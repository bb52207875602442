"""The daemon's key index (memd.store.keyindex) stays exact: list pages and counts after every write.

Each check compares what the daemon answers from memory (``list`` pages in every order, the
counts of ``status``, the project list) with the table itself, read afresh by another process
and sorted here in Python.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from daemon_process import DaemonProcess, daemon_env, remove_socket_dir, short_socket_path
from ui_data import SHOP, build_home, fill, known

from memd.daemon.app import App
from memd.errors import StoreError
from memd.models import USER_SCOPE, Memory
from memd.settings import load_settings
from memd.store.filters import match

ORDER_KEYS = {
    "kind": lambda m: (not m.pinned, m.kind, when(m.created_at), m.id),
    "recent": lambda m: (-when(m.updated_at).timestamp(), m.id),
    "hits": lambda m: (-m.hits, -when(m.updated_at).timestamp(), m.id),
}
FILTERS: list[dict[str, Any]] = [
    {"all_projects": True, "include_all": True},  # every memory
    {"all_projects": True},  # active only
    {"all_projects": True, "status": "superseded"},
    {"project": SHOP, "kind": "decision"},  # the project plus the user-wide scope
    {"all_projects": True, "include_all": True, "pinned": True},
    {"project": SHOP, "pinned": False, "status": "archived"},
]


def when(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp)


def table_memories(env: dict[str, str]) -> list[Memory]:
    """Every memory as the table holds it now (a fresh reader: sees the daemon's last write)."""
    app = App(load_settings(home=env["MEMD_HOME"], socket=env["MEMD_SOCKET"]))
    app.open(writer=False)
    try:
        return app.store.query(None)
    finally:
        app.close()


def expected(memories: list[Memory], filters: dict[str, Any], order: str) -> list[str]:
    projects = None if filters.get("all_projects") else {filters["project"], USER_SCOPE}
    status = filters.get("status") or (None if filters.get("include_all") else "active")
    kept = [
        m
        for m in memories
        if (projects is None or m.project in projects)
        and (filters.get("kind") is None or m.kind == filters["kind"])
        and (status is None or m.status == status)
        and (filters.get("pinned") is None or m.pinned == filters["pinned"])
    ]
    return [m.id for m in sorted(kept, key=ORDER_KEYS[order])]


def listed(proc: DaemonProcess, filters: dict[str, Any], order: str) -> list[str]:
    """Every page of the daemon's ``list``, 400 at a time, checking the total on each."""
    ids: list[str] = []
    offset = 0
    while True:
        reply = proc.request(
            {"cmd": "list", **filters, "order": order, "offset": offset, "limit": 400}
        )
        assert reply["ok"], reply
        ids += [m["id"] for m in reply["memories"]]
        offset += 400
        if offset >= reply["total"]:
            assert len(ids) == reply["total"]
            return ids


def check(proc: DaemonProcess, env: dict[str, str]) -> list[Memory]:
    memories = table_memories(env)
    for filters in FILTERS:
        for order in ORDER_KEYS:
            assert listed(proc, filters, order) == expected(memories, filters, order), (
                filters,
                order,
            )
    counts = proc.request({"cmd": "status"})["memories"]
    assert counts["total"] == len(memories)
    assert counts["by_project"] == dict(Counter(m.project for m in memories))
    assert counts["by_kind"] == dict(Counter(m.kind for m in memories))
    assert counts["by_status"] == dict(Counter(m.status for m in memories))
    assert counts["active"] == sum(m.status == "active" for m in memories)
    projects = proc.request({"cmd": "projects"})["projects"]
    assert set(projects) == {m.project for m in memories}
    return memories


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    root = tmp_path_factory.mktemp("keys")
    sock = short_socket_path()
    env, ids = build_home(root, sock, 1200)
    proc = DaemonProcess(env, root / "serve.log").start()
    try:
        yield {"proc": proc, "env": env, "ids": ids}
    finally:
        code = proc.stop()
        remove_socket_dir(sock)
        assert code == 0, proc.log()


def test_pages_counts_and_projects_match_the_table_after_every_write(daemon: dict[str, Any]):
    proc, env, ids = daemon["proc"], daemon["env"], daemon["ids"]
    first = check(proc, env)
    assert len(first) == 1203

    def ok(payload: dict[str, Any]) -> dict[str, Any]:
        reply = proc.request(payload)
        assert reply["ok"], reply
        return reply

    added = ok(
        {
            "cmd": "add",
            "text": "The new reports service stores its exports in MinIO",
            "project": "/demo/reports",  # a project the index has not seen
            "kind": "decision",
        }
    )["memory"]["id"]
    check(proc, env)
    ok({"cmd": "pin", "id": ids["locks"], "pinned": True})
    check(proc, env)
    ok({"cmd": "edit", "id": ids["locks"], "kind": "fact", "importance": 0.9})
    ok({"cmd": "edit", "id": added, "text": "The reports service stores its exports in S3"})
    check(proc, env)
    ok({"cmd": "archive", "id": ids["xss"]})
    ok({"cmd": "pin", "id": ids["locks"], "pinned": False})
    check(proc, env)
    ok({"cmd": "restore", "id": ids["xss"]})
    ok({"cmd": "forget", "id": added, "purge": True})
    ok({"cmd": "forget", "id": ids["excerpt"], "purge": True})
    last = check(proc, env)
    assert len(last) == 1202
    assert "/demo/reports" not in ok({"cmd": "projects"})["projects"]  # no memory left there


@pytest.fixture
def small(tmp_path: Path) -> Iterator[App]:
    env = daemon_env(tmp_path / "small", str(tmp_path / "no.sock"))
    settings = load_settings(home=env["MEMD_HOME"], socket=env["MEMD_SOCKET"])
    app = App(settings, resident=True).open(writer=True)  # the daemon's: a key index
    fill(app, 300)
    known(app)
    try:
        yield app
    finally:
        app.close()


def in_process(app: App, order: str, **filters: Any) -> list[str]:
    return [m["id"] for m in app.list_memories(**filters, order=order, limit=1000)["memories"]]


def test_hit_counts_optimize_and_a_failed_write_keep_it_exact(small: App):
    keys = small.store.keys
    assert keys is not None
    every = {"all_projects": True, "include_all": True}
    assert in_process(small, "hits", **every) == expected(small.store.query(None), every, "hits")
    builds = keys.builds
    quiet = [
        m["id"] for m in small.list_memories(**every, order="hits", offset=250, limit=3)["memories"]
    ]
    small.store.touch(quiet)
    small.store.touch(quiet[:1])  # the least used of these three: two hits more
    assert in_process(small, "hits", **every) == expected(small.store.query(None), every, "hits")
    small.store.optimize()
    assert keys.builds == builds  # deltas and the optimize kept it exact: never re-read
    assert small.store.stats() == keys.counts()

    good = small.store.query(None, limit=1)[0]
    with pytest.raises(StoreError):  # a vector of the wrong size: the write fails whole
        small.store.write(
            [Memory(text="a broken vector", project=SHOP, id="0" * 16)], {"0" * 16: [0.0]}
        )
    memories = small.store.query(None)
    assert in_process(small, "recent", **every) == expected(memories, every, "recent")
    assert keys.builds == builds + 1  # left behind by the failure, so read again
    assert small.store.stats()["total"] == len(memories)
    assert good.id in in_process(small, "kind", **every)


def test_orders_stay_exact_through_many_small_changes(small: App):
    """Patched orders (no re-sort) equal a fresh sort after each of 40 random changes."""
    import random

    rng = random.Random(3)
    keys = small.store.keys
    assert keys is not None
    every = {"all_projects": True, "include_all": True}
    vector = small.store.embedder.embed(["an imported memory"])[0]
    for odd in ("Imported-1", "abc"):  # ids of another shape than memd's 16 hex digits
        small.store.write([Memory(text=f"imported as {odd}", project=SHOP, id=odd)], {odd: vector})
    for order in ORDER_KEYS:
        assert in_process(small, order, **every) == expected(small.store.query(None), every, order)
    keys.synced = None  # read again from the table: odd ids too
    for order in ORDER_KEYS:
        assert in_process(small, order, **every) == expected(small.store.query(None), every, order)
    builds = keys.builds
    for step in range(40):
        memories = small.store.query(None)
        victim = rng.choice([m for m in memories if len(m.id) == 16])  # `get` takes these
        action = step % 5
        if action == 0:
            small.pin(victim.id, not victim.pinned)
        elif action == 1:
            small.edit(victim.id, importance=round(rng.uniform(0.1, 0.9), 2))
        elif action == 2:
            small.store.touch([m.id for m in rng.sample(memories, 5)])
        elif action == 3 and victim.status != "archived":
            small.archive(victim.id)
        elif victim.status != "active":
            small.restore(victim.id)
        memories = small.store.query(None)
        for filters in FILTERS:
            for order in ORDER_KEYS:
                got = in_process(small, order, **filters)
                assert got == expected(memories, filters, order), (step, filters, order)
    assert keys.builds == builds  # every change came as a delta


def test_document_frequencies_are_kept_until_a_text_changes(small: App):
    store = small.store
    assert store.keys is not None
    where = match(status=["active"])
    terms = ["deploy", "zebra"]
    first = store.document_frequencies(where, terms)
    mid = store.query(match(status="active"), limit=1)[0].id
    small.pin(mid)  # not a text: the counts are reused
    memo = store.keys.memo()
    assert memo is not None and memo.get((where, "zebra")) == first[1]["zebra"]
    assert store.document_frequencies(where, terms) == first
    small.edit(mid, text="The zebra crossing service deploys on Fridays")
    second = store.document_frequencies(where, terms)
    keys, store.keys = store.keys, None
    try:
        truth = store.document_frequencies(where, terms)  # straight from the table
    finally:
        store.keys = keys
    assert second == truth
    assert second[1]["zebra"] == first[1]["zebra"] + 1
