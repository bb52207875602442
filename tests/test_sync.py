"""Sync across machines (memd.sync.engine): project identity, settings, and two devices in one process
against a real S3 API on loopback (moto's server mode)."""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from s3_server import AWS_VARS, HangingServer, S3Server

from memd.daemon.app import App
from memd.errors import ConfigError, UserError
from memd.project import normalise_remote, portable_project
from memd.settings import describe_settings, load_settings
from memd.sync.engine import SyncError, engine_for, explain_error

REMOTE_HTTPS = "https://deploy:s3cr3tT0ken@GitHub.com/acme/widgets.git"
REMOTE_SSH = "git@github.com:acme/widgets"


# ---- project identity


@pytest.mark.parametrize(
    "url",
    [
        "https://github.com/acme/widgets",
        "https://github.com/acme/widgets.git",
        "https://GITHUB.com/acme/widgets/",
        "https://user:pa55word@github.com/acme/widgets.git",
        "http://github.com:443/acme/widgets",
        "git@github.com:acme/widgets.git",
        "github.com:acme/widgets",
        "ssh://git@github.com/acme/widgets.git",
        "ssh://git@github.com:22/acme/widgets",
        "git://github.com/acme/widgets.git",
    ],
)
def test_every_spelling_of_one_remote_is_one_identity(url: str) -> None:
    assert normalise_remote(url) == "github.com/acme/widgets"


def test_different_repositories_and_ports_stay_different() -> None:
    assert normalise_remote("git@github.com:acme/gadgets.git") == "github.com/acme/gadgets"
    assert normalise_remote("ssh://git@gitlab.example:2222/a/b.git") == "gitlab.example:2222/a/b"
    assert normalise_remote("/srv/git/widgets.git") is None
    assert normalise_remote("file:///srv/git/widgets.git") is None
    assert normalise_remote("") is None


def git_checkout(path: Path, remote: str | None) -> Path:
    path.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    if remote:
        subprocess.run(["git", "-C", str(path), "remote", "add", "origin", remote], check=True)
    return path


needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


@needs_git
def test_two_checkouts_of_one_repository_share_an_identity_without_credentials(
    tmp_path: Path,
) -> None:
    a = git_checkout(tmp_path / "laptop" / "widgets", REMOTE_HTTPS)
    b = git_checkout(tmp_path / "desk" / "src" / "w", REMOTE_SSH)
    assert portable_project(str(a)) == portable_project(str(b)) == "git:github.com/acme/widgets"
    assert "s3cr3t" not in portable_project(str(a))
    # A linked worktree reads the main repository's remote.
    subprocess.run(
        [
            "git",
            "-C",
            str(a),
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "x",
        ],
        check=True,
    )
    wt = tmp_path / "wt"
    subprocess.run(["git", "-C", str(a), "worktree", "add", "-q", str(wt)], check=True)
    assert portable_project(str(wt)) == "git:github.com/acme/widgets"
    # No remote: the path, which only matches the same path elsewhere.
    c = git_checkout(tmp_path / "local-only", None)
    assert portable_project(str(c)) == f"path:{c}"


# ---- settings


def test_sync_settings_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMD_SYNC_URI", "s3://team-bucket/memd/")
    monkeypatch.setenv("MEMD_SYNC_USER", "ada")
    settings = load_settings()
    assert settings.sync_uri == "s3://team-bucket/memd"
    assert settings.sync_user == "ada"
    assert load_settings(sync_uri="  ").sync_uri is None
    monkeypatch.setenv("MEMD_SYNC_USER", "../../etc")
    with pytest.raises(ConfigError, match="sync_user"):
        load_settings()


def test_storage_credentials_are_never_printed() -> None:
    settings = load_settings(
        sync_storage_options={"aws_secret_access_key": "hunter2", "region": "eu-west-1"}
    )
    rows = {r["name"]: r["value"] for r in describe_settings(settings)}
    assert rows["sync_storage_options"] == {"aws_secret_access_key": "[set]", "region": "eu-west-1"}


def test_device_id_is_generated_once(tmp_path: Path) -> None:
    from memd.sync.state import device_id

    first = device_id(tmp_path / "h")
    assert len(first) == 16
    assert device_id(tmp_path / "h") == first
    assert device_id(tmp_path / "other") != first


def test_device_id_survives_an_interrupted_first_write_and_concurrent_starts(
    tmp_path: Path,
) -> None:
    """A process stopped between creating the file and writing it (older memd) left an empty
    file, and the id stayed empty for good; processes starting together must agree."""
    import subprocess
    import sys

    from memd.sync.state import device_id

    home = tmp_path / "h"
    home.mkdir()
    (home / "device_id").write_text("")
    made = device_id(home)
    assert len(made) == 16
    assert device_id(home) == made == (home / "device_id").read_text().strip()
    fresh = tmp_path / "fresh"
    code = "import sys; from pathlib import Path; from memd.sync.state import device_id; "
    code += "print(device_id(Path(sys.argv[1])))"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code, str(fresh)], stdout=subprocess.PIPE, text=True
        )
        for _ in range(8)
    ]
    ids = {p.communicate(timeout=60)[0].strip() for p in procs}
    assert len(ids) == 1 and len(ids.pop()) == 16


# ---- two devices in this process, on a real S3 API


@pytest.fixture(scope="module")
def s3() -> Iterator[S3Server]:
    server = S3Server().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def aws_env(s3: S3Server, monkeypatch: pytest.MonkeyPatch) -> S3Server:
    for name in AWS_VARS:
        monkeypatch.delenv(name, raising=False)
    for name, value in s3.env().items():
        monkeypatch.setenv(name, value)
    return s3


class Device:
    def __init__(self, root: Path, uri: str, remote: str | None, **extra: Any) -> None:
        self.repo = git_checkout(root / "src" / "widgets", remote) if shutil.which("git") else None
        self.settings = load_settings(home=str(root / "memd"), sync_uri=uri, **extra)
        self.app = App(self.settings).open(writer=True)

    @property
    def project(self) -> str:
        return str(self.repo)

    def texts(self, include_all: bool = False) -> list[str]:
        found = self.app.list_memories(project=self.project, include_all=include_all)["memories"]
        return sorted(m["text"] for m in found)

    def sync(self) -> dict[str, Any]:
        return self.app.sync_now()["round"]

    def close(self) -> None:
        self.app.close()


@pytest.fixture
def devices(tmp_path: Path, aws_env: S3Server) -> Iterator[tuple[Device, Device, str]]:
    bucket = f"b{time.monotonic_ns()}"
    aws_env.create_bucket(bucket)
    uri = f"s3://{bucket}/memd"
    a = Device(tmp_path / "a", uri, REMOTE_HTTPS)
    b = Device(tmp_path / "b", uri, REMOTE_SSH)
    try:
        yield a, b, uri
    finally:
        a.close()
        b.close()


@needs_git
def test_add_forget_and_concurrent_edits_converge(devices: tuple[Device, Device, str]) -> None:
    a, b, _ = devices
    for d in (a, b):
        d.app.sync_enable(d.project, scope="me")
    added = a.app.add("Releases ship blue-green on Fridays", project=a.project, kind="decision")
    mid = added["memory"]["id"]
    a.sync()
    got = b.sync()
    assert got["applied"] == 1
    assert b.texts() == ["Releases ship blue-green on Fridays"]
    shared = b.app.show(mid)["memory"]
    assert shared["project"] == b.project  # keyed by the portable id, stored under B's path
    assert shared["kind"] == "decision"

    # A second round changes nothing on either side (idempotent, no echo).
    for d in (a, b):
        again = d.sync()
        assert (again["pushed"], again["applied"], again["deleted"]) == (0, 0, 0)

    # Pins travel with their memory.
    b.app.pin(mid)
    b.sync()
    a.sync()
    assert a.app.show(mid)["memory"]["pinned"] is True

    # A forget on B archives it on A too, and a restore brings it back on both.
    b.app.forget(mid)
    b.sync()
    a.sync()
    assert a.app.show(mid)["memory"]["status"] == "archived"
    b.app.restore(mid)
    b.sync()
    a.sync()
    assert a.app.show(mid)["memory"]["status"] == "active"

    # A purge on B removes it on A (a tombstone), and a stale round cannot bring it back.
    b.app.forget(mid, purge=True)
    b.sync()
    assert a.sync()["deleted"] == 1
    assert a.texts(include_all=True) == []
    a.sync()
    b.sync()
    assert a.texts() == b.texts() == []

    # Concurrent edits of one memory: both end with the same version.
    m2 = a.app.add("The API listens on port 8080", project=a.project)["memory"]["id"]
    a.sync()
    b.sync()
    a.app.edit(m2, text="The API listens on port 9090")
    b.app.edit(m2, text="The API listens on port 7070")
    for d in (a, b, a, b):
        d.sync()
    assert a.app.show(m2)["memory"]["text"] == b.app.show(m2)["memory"]["text"]
    assert a.texts() == b.texts()


@needs_git
def test_a_late_device_catches_up_from_the_bucket_alone(
    devices: tuple[Device, Device, str], tmp_path: Path
) -> None:
    a, b, uri = devices
    a.app.sync_enable(a.project, scope="team")
    b.app.sync_enable(b.project, scope="team")
    facts = [
        "The widgets service is written in Go",
        "Invoices are generated by a nightly cron job",
        "Our CI runs on self-hosted runners in Frankfurt",
    ]
    ids = [a.app.add(f, project=a.project)["memory"]["id"] for f in facts]
    a.sync()
    b.app.add("The staging database is rebuilt nightly", project=b.project)
    b.sync()
    a.app.forget(ids[0], purge=True)
    a.sync()
    a.close()  # A is gone: C learns everything from the shared tables
    c = Device(tmp_path / "c", uri, "ssh://git@github.com:22/acme/widgets.git")
    try:
        c.app.sync_enable(c.project, scope="team")
        c.sync()
        b.sync()
        assert c.texts() == b.texts()
        assert c.texts() == sorted([*facts[1:], "The staging database is rebuilt nightly"])
    finally:
        c.close()
        a.app = App(a.settings).open(writer=True)  # for the fixture's close


@needs_git
def test_scopes_are_separate_areas_and_team_keeps_excerpts_local(
    devices: tuple[Device, Device, str],
) -> None:
    a, b, _ = devices
    a.app.sync_enable(a.project, scope="team")
    b.app.sync_enable(b.project, scope="me")  # B syncs the same repository, but only for itself
    a.app.add("Excerpt: user said the cache is flaky", project=a.project, kind="excerpt")
    a.app.add("The cache is Redis 7", project=a.project)
    assert a.sync()["pushed"] == 1  # the excerpt stays here in team scope
    b.sync()
    assert b.texts() == []  # team rows are not in B's `me` area
    b.app.sync_enable(b.project, scope="team")
    b.sync()
    assert b.texts() == ["The cache is Redis 7"]
    a.app.sync_enable(a.project, scope="team", excerpts=True)
    assert a.sync()["pushed"] == 1
    b.sync()
    assert b.texts() == ["Excerpt: user said the cache is flaky", "The cache is Redis 7"]


@needs_git
def test_redaction_runs_again_before_upload(
    tmp_path: Path, aws_env: S3Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    import lancedb

    bucket = f"r{time.monotonic_ns()}"
    aws_env.create_bucket(bucket)
    uri = f"s3://{bucket}/memd"
    a = Device(tmp_path / "a", uri, REMOTE_HTTPS)
    try:
        a.app.add("Project codename BLUEBIRD ships in March", project=a.project)
        a.close()
        # A pattern added later (or a secret the old rules missed) never reaches the bucket.
        a2 = Device.__new__(Device)
        a2.repo = a.repo
        a2.settings = load_settings(
            home=str(a.settings.home), sync_uri=uri, redact_patterns=["BLUEBIRD"]
        )
        a2.app = App(a2.settings).open(writer=True)
        a2.app.sync_enable(a2.project, scope="me")
        assert a2.sync()["pushed"] == 1
        assert a2.texts() == ["Project codename BLUEBIRD ships in March"]  # local stays as is
        db = lancedb.connect(f"{uri}/users/{a2.settings.sync_user}")
        (name,) = db.list_tables().tables
        rows = db.open_table(name).to_arrow().to_pylist()
        assert [r["text"] for r in rows] == ["Project codename [REDACTED:custom] ships in March"]
        assert a2.sync()["pushed"] == 0  # the redacted version is what counts as pushed
        a2.app.close()
    finally:
        pass


@needs_git
def test_what_another_device_sends_is_redacted_again_before_it_is_stored(
    tmp_path: Path, aws_env: S3Server
) -> None:
    """A device with older rules (here: no custom pattern) pushes what this one would redact:
    this device stores, embeds and lists only the redacted text, and does not push it back."""
    bucket = f"p{time.monotonic_ns()}"
    aws_env.create_bucket(bucket)
    uri = f"s3://{bucket}/memd"
    a = Device(tmp_path / "a", uri, REMOTE_HTTPS)
    b = Device(tmp_path / "b", uri, REMOTE_SSH, redact_patterns=["BLUEBIRD"])
    try:
        for d in (a, b):
            d.app.sync_enable(d.project, scope="me")
        a.app.add("Project codename BLUEBIRD ships in March", project=a.project)
        assert a.sync()["pushed"] == 1
        assert b.sync()["applied"] == 1
        assert b.texts() == ["Project codename [REDACTED:custom] ships in March"]
        found = b.app.find("codename ships in March", project=b.project)["results"]
        assert "BLUEBIRD" not in json.dumps(found)
        home = Path(b.settings.home)
        assert not any(b"BLUEBIRD" in f.read_bytes() for f in home.rglob("*") if f.is_file())
        assert b.sync()["pushed"] == 0  # what it received is not sent back as an edit
    finally:
        a.close()
        b.close()


@needs_git
def test_a_push_whose_bookkeeping_was_lost_is_not_doubled(
    devices: tuple[Device, Device, str],
) -> None:
    """A crash after the upload but before the local state was written (kill -9 there)."""
    a, b, _ = devices
    for d in (a, b):
        d.app.sync_enable(d.project, scope="me")
    a.sync()
    state = a.settings.home / "sync" / "state.sqlite"
    engine = engine_for(a.settings)
    before = state.read_bytes()
    a.app.add("Deploys need the VPN", project=a.project)
    assert a.sync()["pushed"] == 1
    engine.state.close()
    state.write_bytes(before)  # as if the process died right after the upload
    engine.state.__init__(state)  # type: ignore[misc]
    again = a.sync()
    assert again["pushed"] == 0  # recognised from its own table, not sent twice
    b.sync()
    assert b.texts() == ["Deploys need the VPN"]


def test_a_hanging_bucket_fails_within_the_bound(
    tmp_path: Path, aws_env: S3Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    hanging = HangingServer()
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{hanging.port}")
    settings = load_settings(
        home=str(tmp_path / "memd"), sync_uri="s3://stuck/memd", sync_timeout_seconds=4
    )
    app = App(settings).open(writer=True)
    try:
        project = tmp_path / "p"
        project.mkdir()
        app.sync_enable(str(project))
        started = time.monotonic()
        with pytest.raises(SyncError, match="did not finish within 4 s"):
            app.sync_now()
        assert time.monotonic() - started < 8
        status = app.sync_status()["sync"]
        assert status["last_round"]["ok"] is False
        assert "unreachable" in status["hint"]
        assert status["failures"] == 1 and status["next_attempt"]
        # The scheduled job backs off; local work goes on meanwhile.
        assert "backing off" in engine_for(settings).run(app.store, trigger="schedule")["skipped"]
        app.add("Local work continues while the bucket hangs", project=str(project))
    finally:
        app.close()
        hanging.close()


def test_a_missing_bucket_says_how_to_fix_it(tmp_path: Path, aws_env: S3Server) -> None:
    settings = load_settings(home=str(tmp_path / "memd"), sync_uri="s3://no-such-bucket/memd")
    app = App(settings).open(writer=True)
    try:
        project = tmp_path / "p"
        project.mkdir()
        app.sync_enable(str(project))
        app.add("something to push", project=str(project))
        with pytest.raises(SyncError, match="bucket does not exist"):
            app.sync_now()
    finally:
        app.close()


def test_enable_checks_its_input(tmp_path: Path) -> None:
    app = App(load_settings(home=str(tmp_path / "memd"))).open(writer=True)
    try:
        with pytest.raises(UserError, match="scope"):
            app.sync_enable(str(tmp_path), scope="world")
        with pytest.raises(UserError, match="not synced"):
            app.sync_disable(str(tmp_path))
        with pytest.raises(SyncError, match="not configured"):
            app.sync_now()
    finally:
        app.close()


def test_doctor_checks_the_bucket(tmp_path: Path, aws_env: S3Server) -> None:
    from memd.setup.doctor import Doctor

    off = Doctor(load_settings(home=str(tmp_path / "memd"))).check_sync()
    assert off.level == "ok" and "off" in off.detail
    missing = Doctor(load_settings(sync_uri="s3://no-such-bucket/memd")).check_sync()
    assert missing.level == "fail"
    assert "bucket does not exist" in missing.fix
    aws_env.create_bucket("doctor-ok")
    fine = Doctor(load_settings(sync_uri="s3://doctor-ok/memd")).check_sync()
    assert fine.level == "warn" and "no project is synced" in fine.detail
    assert "memd sync enable" in fine.fix


def test_doctor_says_when_nothing_answers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import socket as socket_module

    from memd.setup.doctor import Doctor

    with socket_module.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{port}")
    monkeypatch.setenv("AWS_ALLOW_HTTP", "true")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "x")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "y")
    check = Doctor(load_settings(sync_uri="s3://any/memd")).check_sync()
    assert check.level == "fail"
    assert "unreachable" in check.fix and "AWS_ENDPOINT_URL" in check.fix


MANIFEST_PUT = rb"PUT [^ ]*_versions/[^ ]*\.manifest"


@needs_git
@pytest.mark.parametrize("mode", ["before", "after"])
@pytest.mark.parametrize("table", ["new", "existing"])
def test_an_upload_broken_at_its_commit_loses_and_doubles_nothing(
    tmp_path: Path, aws_env: S3Server, monkeypatch: pytest.MonkeyPatch, mode: str, table: str
) -> None:
    """The commit of a push (the manifest PUT) cut before the server sees it (a partial upload:
    data files without a manifest), or after (committed, but the client never hears so)."""
    from s3_server import FaultProxy

    proxy = FaultProxy(aws_env.port)
    monkeypatch.setenv("AWS_ENDPOINT_URL", proxy.endpoint)
    bucket = f"f{time.monotonic_ns()}"
    aws_env.create_bucket(bucket)
    uri = f"s3://{bucket}/memd"
    a = Device(tmp_path / "a", uri, REMOTE_HTTPS, sync_timeout_seconds=30)
    b = Device(tmp_path / "b", uri, REMOTE_SSH)
    try:
        for d in (a, b):
            d.app.sync_enable(d.project, scope="me")
        facts = ["Logs go to Loki", "Alerts page the on-call through Opsgenie"]
        if table == "existing":  # the cut hits an append, not the table's creation
            facts.append("Traces are sampled at 5 percent")
            a.app.add(facts[-1], project=a.project)
        a.sync()
        for fact in facts[:2]:
            a.app.add(fact, project=a.project)
        proxy.arm(MANIFEST_PUT, mode)
        if mode == "before":
            with pytest.raises(SyncError):
                a.sync()
            proxy.disarm()
            assert a.sync()["pushed"] == 2
        else:
            with contextlib.suppress(SyncError):  # failed, or retried into a second commit
                a.sync()
            assert a.sync()["pushed"] == 0  # read back from its own table: not sent again
        assert proxy.cuts >= 1
        b.sync()
        assert b.texts() == sorted(facts)
        b.app.add("Dashboards live in Grafana", project=b.project)
        b.sync()
        a.sync()
        assert a.texts() == b.texts() == sorted([*facts, "Dashboards live in Grafana"])
    finally:
        a.close()
        b.close()
        proxy.close()


@needs_git
def test_compaction_drops_only_superseded_rows_and_readers_lose_nothing(
    devices: tuple[Device, Device, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import lancedb

    import memd.sync.engine

    monkeypatch.setattr(memd.sync.engine, "COMPACT_PUSHES", 1)  # compact after every push
    a, b, uri = devices
    for d in (a, b):
        d.app.sync_enable(d.project, scope="me")
    mid = a.app.add("The build takes 3 minutes", project=a.project)["memory"]["id"]
    gone = a.app.add("The old staging host is stage-1", project=a.project)["memory"]["id"]
    a.sync()
    b.sync()  # B has read version 1 of both
    a.app.forget(gone, purge=True)  # a purge is a tombstone (a forget archives)
    compacted = 0
    for minutes in (4, 5, 6, 7):
        a.app.edit(mid, text=f"The build takes {minutes} minutes")
        compacted += a.sync().get("compacted", 0)
    assert compacted >= 3  # versions 3, 4 and 5 were superseded by later ones
    db = lancedb.connect(f"{uri}/users/{a.settings.sync_user}")
    rows = db.open_table(f"dev-{engine_for(a.settings).device}").to_arrow().to_pylist()
    latest = {r["id"]: r for r in rows}
    assert len(rows) == len(latest) == 2  # one row per memory: the newest
    assert latest[gone]["deleted"] is True  # tombstones stay
    assert latest[mid]["text"] == "The build takes 7 minutes"
    b.sync()  # B's cursor pointed into the rows that were dropped
    assert b.texts() == ["The build takes 7 minutes"]
    assert a.texts() == b.texts()


@needs_git
def test_an_edit_after_receiving_wins_even_from_a_clock_running_behind(
    devices: tuple[Device, Device, str],
) -> None:
    """Clock skew: A's clock runs an hour ahead. B receives A's memory, then edits it; B's
    clock says that edit is older, yet it must win (it was made from A's version)."""
    from datetime import UTC, datetime, timedelta

    a, b, _ = devices
    for d in (a, b):
        d.app.sync_enable(d.project, scope="me")
    mid = a.app.add("The cron job runs at 02:00", project=a.project)["memory"]["id"]
    ahead = (datetime.now(UTC) + timedelta(hours=1)).isoformat(timespec="milliseconds")
    a.app.store.update_fields({mid: {"updated_at": ahead.replace("+00:00", "Z")}})
    a.sync()
    b.sync()
    b.app.edit(mid, text="The cron job runs at 03:00")  # stamped with B's (earlier) clock
    b.sync()
    a.sync()
    assert a.app.show(mid)["memory"]["text"] == "The cron job runs at 03:00"
    assert b.app.show(mid)["memory"]["text"] == "The cron job runs at 03:00"


@pytest.fixture
def s3_with_auth(tmp_path: Path) -> Iterator[S3Server]:
    """A moto server (a subprocess) that checks credentials after its first request."""
    import os
    import socket as socket_module
    import sys

    from s3_server import wait_listening

    with socket_module.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "INITIAL_NO_AUTH_ACTION_COUNT": "1"}
    log = open(tmp_path / "moto.log", "wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        env=env,
        stdout=log,
        stderr=log,
    )
    try:
        wait_listening(port, timeout=30)
        server = S3Server()
        server.port = port
        server.create_bucket("locked")  # the one request allowed without credentials
        yield server
    finally:
        proc.terminate()
        proc.wait(10)
        log.close()


def test_wrong_credentials_are_named_by_sync_now_and_doctor(
    tmp_path: Path, s3_with_auth: S3Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memd.setup.doctor import Doctor

    for name in AWS_VARS:
        monkeypatch.delenv(name, raising=False)
    for name, value in s3_with_auth.env().items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAWRONGWRONGWRONG1")  # unknown to the server
    settings = load_settings(home=str(tmp_path / "memd"), sync_uri="s3://locked/memd")
    check = Doctor(settings).check_sync()
    assert check.level == "fail"
    assert "refused the credentials" in check.fix and "AWS_ACCESS_KEY_ID" in check.fix
    app = App(settings).open(writer=True)
    try:
        project = tmp_path / "p"
        project.mkdir()
        app.sync_enable(str(project))
        app.add("a memory that cannot leave", project=str(project))
        with pytest.raises(SyncError, match="refused the credentials"):
            app.sync_now()
        assert "refused the credentials" in app.sync_status()["sync"]["hint"]
    finally:
        app.close()


@needs_git
def test_status_history_and_user_wide_preferences_travel(
    devices: tuple[Device, Device, str],
) -> None:
    a, b, _ = devices
    for d in (a, b):
        d.app.sync_enable(d.project, scope="me")
        d.app.sync_enable("user:global", scope="me")
    with pytest.raises(UserError, match="only in `me` scope"):
        a.app.sync_enable("user:global", scope="team")
    mid = a.app.add("Nightly backups go to Glacier", project=a.project)["memory"]["id"]
    a.app.add("Answer in British English", project="user:global", kind="preference")
    a.sync()
    b.sync()
    a.app.edit(mid, text="Nightly backups go to S3 Glacier Deep Archive")
    a.app.archive(mid, reason="moved to the runbook")
    a.sync()
    b.sync()
    shared = b.app.show(mid)["memory"]
    assert shared["status"] == "archived"
    assert shared["text"] == "Nightly backups go to S3 Glacier Deep Archive"
    assert [h.get("text") for h in shared["history"]] == [
        h.get("text") for h in a.app.show(mid)["memory"]["history"]
    ]
    assert len(shared["history"]) >= 1
    prefs = b.app.list_memories(project="user:global")["memories"]
    assert [m["text"] for m in prefs] == ["Answer in British English"]


def test_the_scheduler_runs_sync_only_when_configured(tmp_path: Path) -> None:
    from memd.daemon.jobs import Scheduler
    from memd.state import State

    state = State.open_default(tmp_path / "state")
    try:
        plain = Scheduler(object(), state, load_settings(home=str(tmp_path / "h")))
        assert "sync" not in plain.functions and "sync" not in plain.triggers()
        synced = load_settings(
            home=str(tmp_path / "h"), sync_uri="s3://b/p", sync_interval_minutes=7
        )
        scheduler = Scheduler(object(), state, synced)
        assert "sync" in scheduler.functions
        assert scheduler.triggers()["sync"].interval.total_seconds() == 7 * 60
    finally:
        state.close()


def test_an_unreachable_server_on_a_port_with_403_in_it_is_unreachable() -> None:
    """Defect (a flaky test): a refused connection to http://127.0.0.1:40313 was explained as
    refused credentials, for the "403" inside the port."""
    down = (
        "Failed to connect to namespace: ListRequest { uri: Some(http://127.0.0.1:40313/memd-sync"
        '?list-type=2), inner: Http(HttpError { kind: Connect, source: ConnectError("tcp connect '
        'error", Connection refused) }) }'
    )
    assert explain_error(down).startswith("the storage is unreachable")
    assert explain_error("HTTP 403 Forbidden").startswith("the storage refused the credentials")
    assert explain_error("AccessDenied: Access Denied").startswith("the storage refused")
