"""Forget archives, restore undoes it, purge deletes for good (asking first), all through a real
daemon: one memory or many, and bulk restore by project, by session and by cleanup run."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from daemon_process import DaemonProcess, add_project, daemon_env, served, short_socket_path


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DaemonProcess]:
    with served(tmp_path_factory.mktemp("forget")) as proc:
        yield proc


def ok(run: Any) -> str:
    assert run.returncode == 0, (run.stdout, run.stderr)
    return str(run.stdout)


def status(daemon: DaemonProcess, mid: str) -> str:
    return str(json.loads(ok(daemon.memd("show", mid, "--json")))["status"])


def search_ids(daemon: DaemonProcess, query: str, project: str) -> list[str]:
    found = ok(daemon.memd("search", query, "--project", project, "--json"))
    return [r["id"] for r in json.loads(found)]


def test_forget_archives_and_restore_brings_it_back(daemon: DaemonProcess) -> None:
    text = "The invoices are rendered with WeasyPrint"
    project, ids = add_project(daemon, "forget-one", [text])
    mid = ids[text]
    out = ok(daemon.memd("forget", mid[:8]))
    assert f"forgot {mid[:10]}  {text}" in out and f"memd restore {mid[:10]}" in out
    assert status(daemon, mid) == "archived"
    assert mid not in search_ids(daemon, "how are invoices rendered", project)
    listed = ok(daemon.memd("list", "--all", "--project", project))
    assert "(archived)" in listed
    archive = "".join(p.read_text() for p in (Path(daemon.env["MEMD_HOME"]) / "archive").glob("*"))
    assert text in archive and "forgotten by hand" in archive
    again = daemon.memd("forget", mid)
    assert again.returncode == 1 and "already archived" in again.stderr
    out = ok(daemon.memd("restore", mid[:8]))
    assert out.startswith(f"restored {mid[:10]}")
    assert status(daemon, mid) == "active"
    assert search_ids(daemon, "how are invoices rendered", project)[0] == mid
    shown = json.loads(ok(daemon.memd("show", mid, "--json")))
    assert [h.get("archived") or h.get("restored") for h in shown["history"]] == [
        "forgotten by hand",
        "archived",
    ]


def test_bulk_forget_checks_every_id_first(daemon: DaemonProcess) -> None:
    texts = ["Staging runs on fly.io", "The CDN is Fastly", "Logs go to Loki"]
    _, ids = add_project(daemon, "forget-bulk", texts)
    mids = [ids[t] for t in texts]
    bad = daemon.memd("forget", mids[0], "deadbeef", mids[1])
    assert bad.returncode == 1 and "no memory with id 'deadbeef'" in bad.stderr
    assert [status(daemon, m) for m in mids] == ["active"] * 3  # nothing changed
    out = ok(daemon.memd("forget", *[m[:8] for m in mids[:2]]))
    assert out.count("forgot ") == 2
    ok(daemon.memd("forget", mids[0], mids[2]))  # one already archived: said, not an error
    assert [status(daemon, m) for m in mids] == ["archived"] * 3
    out = ok(daemon.memd("restore", *mids))
    assert "restored 3 memories" in out
    assert [status(daemon, m) for m in mids] == ["active"] * 3


def test_purge_asks_first_and_deletes_for_good(daemon: DaemonProcess) -> None:
    text = "The on-call phone number is in 1Password"
    _, ids = add_project(daemon, "forget-purge", [text])
    mid = ids[text]
    no = daemon.run_memd(["forget", "--purge", mid], input="n\n")
    assert no.returncode == 1 and "Delete 1 memory for good?" in no.stderr
    assert text in no.stdout
    assert status(daemon, mid) == "active"
    yes = daemon.run_memd(["forget", "--purge", mid[:8]], input="y\n")
    assert yes.returncode == 0 and f"deleted {mid[:10]}" in yes.stdout, yes.stderr
    gone = daemon.memd("show", mid)
    assert gone.returncode == 1 and "no memory" in gone.stderr
    assert daemon.memd("restore", mid).returncode == 1
    _, more = add_project(daemon, "forget-purge", ["Backups run at 03:00"])
    quiet = daemon.run_memd(["forget", "--purge", "--yes", more["Backups run at 03:00"]])
    assert quiet.returncode == 0 and "for good?" not in quiet.stderr


def test_the_socket_forget_archives_and_purge_deletes(daemon: DaemonProcess) -> None:
    texts = ["Feature flags live in Unleash", "Secrets live in Vault"]
    _, ids = add_project(daemon, "forget-socket", texts)
    first, second = (ids[t] for t in texts)
    reply = daemon.request({"cmd": "forget", "id": first})
    assert reply["ok"] and reply["forgotten"] == first and reply["text"] == texts[0]
    assert reply["purged"] is False and status(daemon, first) == "archived"
    reply = daemon.request({"cmd": "forget", "id": second, "purge": True})
    assert reply["ok"] and reply["purged"] is True
    assert daemon.request({"cmd": "show", "id": second})["ok"] is False
    for bad in ({"ids": "abc"}, {"ids": []}, {"id": first, "ids": [first]}, {}):
        reply = daemon.request({"cmd": "forget", **bad})
        assert reply["ok"] is False and reply["error"], bad


def jsonl(path: Path, rows: list[dict[str, Any]]) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def test_restore_in_bulk_by_cleanup_run_session_and_project(tmp_path: Path) -> None:
    """A cleanup run over the project cap archives memories of two sessions; `memd jobs` names
    the run, and `memd restore --run` undoes exactly that run. --session and --project pick
    the archived memories of a session or a project."""
    sock = short_socket_path()
    env = daemon_env(tmp_path, sock, MEMD_PROJECT_CAP="2")
    daemon = DaemonProcess(env, tmp_path / "serve.log").start()
    try:
        shop = tmp_path / "shop"
        (shop / ".git").mkdir(parents=True)
        rows = [
            {
                "text": f"Shop fact number {i}: the {word} service owns its own schema",
                "importance": 0.9 - i * 0.1,
                "sources": [{"session_id": f"sess-{i % 2}", "uuid": f"u{i}", "timestamp": ""}],
            }
            for i, word in enumerate(["billing", "search", "catalog", "auth", "mailer"])
        ]
        ok(daemon.memd("import", jsonl(tmp_path / "in.jsonl", rows), cwd=str(shop)))
        listed = json.loads(ok(daemon.memd("list", "--json", cwd=str(shop))))
        assert len(listed) == 5
        out = ok(daemon.memd("jobs", "run", "cleanup"))
        assert "archived_cap=3" in out and "undo this run: memd restore --run " in out
        run = out.split("memd restore --run ")[1].split()[0]
        assert f"undo this run: memd restore --run {run}" in ok(daemon.memd("jobs"))
        archived = {
            m["id"]
            for m in json.loads(ok(daemon.memd("list", "--all", "--json", cwd=str(shop))))
            if m["status"] == "archived"
        }
        assert len(archived) == 3
        # Then one more by hand: a later run id or a session does not bring it back.
        kept = next(m["id"] for m in listed if "number 0" in m["text"])  # session sess-0
        assert kept not in archived
        ok(daemon.memd("forget", kept))
        bogus = daemon.memd("restore", "--run", "2001-01-01T00:00:00.000Z")
        assert bogus.returncode == 1 and "no archived memory matches cleanup run" in bogus.stderr
        out = ok(daemon.memd("restore", "--run", run, "--json"))
        assert set(json.loads(out)["restored"]) == archived
        assert status(daemon, kept) == "archived"
        again = daemon.memd("restore", "--run", "last")
        assert again.returncode == 1  # that run's memories are active again
        # By session: only that session's archived memories.
        sess1 = [m["id"] for m in listed if m["sources"][0]["session_id"] == "sess-1"]
        ok(daemon.memd("forget", *sess1))
        out = json.loads(ok(daemon.memd("restore", "--session", "sess-1", "--json")))
        assert set(out["restored"]) == set(sess1)
        assert status(daemon, kept) == "archived"
        # By project: the rest.
        out = json.loads(ok(daemon.memd("restore", "--project", ".", "--json", cwd=str(shop))))
        assert all(status(daemon, m["id"]) == "active" for m in listed)
        assert out["restored"] == [kept]
        for args in ([], [kept, "--project", "."]):
            usage = daemon.memd("restore", *args, cwd=str(shop))
            assert usage.returncode == 2 and "give IDs, or --project" in usage.stderr
    finally:
        daemon.stop()
