"""Two real daemons (separate MEMD_HOMEs, the same repository checked out at different paths)
syncing through one bucket on a real S3 API on loopback (moto's server mode), driven by the
`memd` CLI and the real hook client, including an outage of the server and a kill -9."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from daemon_process import MEMD, DaemonProcess, daemon_env, remove_socket_dir, short_socket_path
from s3_server import AWS_VARS, S3Server

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed"),
]

BUCKET = "memd-sync"


class Machine:
    def __init__(self, root: Path, s3: S3Server, remote: str) -> None:
        self.root = root
        self.repo = root / "code" / "widgets"
        self.repo.mkdir(parents=True)
        subprocess.run(["git", "init", "-q", str(self.repo)], check=True)
        subprocess.run(["git", "-C", str(self.repo), "remote", "add", "origin", remote], check=True)
        self.sock = short_socket_path()
        env = daemon_env(
            root,
            self.sock,
            MEMD_SYNC_URI=f"s3://{BUCKET}/memd",
            MEMD_SYNC_INTERVAL_MINUTES="600",  # only `memd sync now` runs rounds here
            MEMD_SYNC_TIMEOUT_SECONDS="30",
            **s3.env(),
        )
        for name in AWS_VARS:
            env.pop(name, None)
        self.daemon = DaemonProcess(env, root / "serve.log")

    def start(self) -> Machine:
        self.daemon.start()
        return self

    def memd(self, *args: str) -> subprocess.CompletedProcess[str]:
        return self.daemon.memd(*args, cwd=str(self.repo))

    def sync(self) -> dict[str, Any]:
        done = self.memd("sync", "now", "--json")
        assert done.returncode == 0, done.stderr + self.daemon.log()
        return dict(json.loads(done.stdout))

    def ask(self, cmd: str, **args: Any) -> dict[str, Any]:
        reply = self.daemon.request({"cmd": cmd, **args}, timeout=120)
        assert reply.get("ok"), reply
        return reply

    def memories(self) -> dict[str, str]:
        """id -> text of every memory of the project here (any status)."""
        reply = self.ask("list", project=str(self.repo), include_all=True, limit=100_000)
        return {m["id"]: m["text"] for m in reply["memories"]}

    def prompt_hook(self, prompt: str) -> str:
        payload = {
            "session_id": f"s-{time.monotonic_ns()}",
            "transcript_path": "/nonexistent/t.jsonl",
            "cwd": str(self.repo),
            "hook_event_name": "UserPromptSubmit",
            "prompt": prompt,
        }
        done = self.daemon.hook("user-prompt-submit", payload)
        assert done.returncode == 0
        return done.stdout

    def import_many(self, prefix: str, n: int) -> None:
        lines = [
            json.dumps({"text": f"{prefix} {i}: service-{i} reads queue q{i}-{prefix}"})
            for i in range(n)
        ]
        path = self.root / f"{prefix}.jsonl"
        path.write_text("\n".join(lines) + "\n")
        done = self.memd("import", str(path))
        assert done.returncode == 0, done.stderr

    def wait_log(self, text: str, count: int, timeout: float = 60.0) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.daemon.log_path.read_text(errors="replace").count(text) >= count:
                return True
            time.sleep(0.01)
        return False

    def stop(self) -> None:
        if self.daemon.proc is not None and self.daemon.proc.poll() is None:
            self.daemon.stop()
        remove_socket_dir(self.sock)


@pytest.fixture(scope="module")
def s3() -> Iterator[S3Server]:
    server = S3Server().start()
    server.create_bucket(BUCKET)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def machines(
    s3: S3Server, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Machine, Machine]]:
    root = tmp_path_factory.mktemp("sync2")
    a = Machine(root / "laptop", s3, "https://github.com/acme/widgets.git")
    b = Machine(root / "desktop", s3, "git@github.com:acme/widgets")
    try:
        a.start()
        b.start()
        for m in (a, b):
            done = m.memd("sync", "enable", "--project", str(m.repo), "--scope", "team")
            assert done.returncode == 0, done.stderr
            assert "git:github.com/acme/widgets" in done.stdout
        yield a, b
    finally:
        a.stop()
        b.stop()


def test_a_memory_added_on_a_reaches_bs_hook_and_a_forget_on_b_reaches_a(
    machines: tuple[Machine, Machine],
) -> None:
    a, b = machines
    text = "We deploy the widgets service with blue-green releases on Fridays"
    added = a.memd("add", "--kind", "decision", text, "--json")
    assert added.returncode == 0, added.stderr
    mid = json.loads(added.stdout)["memory"]["id"]
    prompt = "how do we deploy the widgets service? blue-green releases on Fridays?"
    assert text not in b.prompt_hook(prompt)
    assert a.sync()["pushed"] == 1
    assert b.sync()["applied"] == 1
    assert text in b.prompt_hook(prompt)  # the real hook client, on B's checkout path
    context = b.ask("context", cwd=str(b.repo), prompt=prompt)["context"]
    assert text in context

    status = json.loads(b.memd("status", "--json").stdout)["sync"]
    assert status["last_round"]["ok"] is True
    assert status["projects"][0]["path"] == str(b.repo)
    assert status["projects"][0]["area"] == "team"
    assert f"s3://{BUCKET}/memd/team" in b.memd("status").stdout

    forgot = b.memd("forget", mid)  # archives: the status reaches A, whose hook drops it
    assert forgot.returncode == 0, forgot.stderr
    b.sync()
    assert a.sync()["applied"] == 1
    assert mid in a.memories() and text not in a.prompt_hook(prompt)
    purged = b.memd("forget", "--purge", "--yes", mid)  # deletes: a tombstone
    assert purged.returncode == 0, purged.stderr
    b.sync()
    assert a.sync()["deleted"] == 1
    assert mid not in a.memories()


def test_concurrent_edits_end_the_same_on_both(machines: tuple[Machine, Machine]) -> None:
    a, b = machines
    added = a.ask("add", text="The billing API listens on port 8080", cwd=str(a.repo))
    mid = added["memory"]["id"]
    a.sync()
    b.sync()
    a.ask("edit", id=mid, text="The billing API listens on port 9090")
    b.ask("edit", id=mid, text="The billing API listens on port 7070")
    for m in (a, b, a, b):
        m.sync()
    assert a.memories() == b.memories()
    assert a.memories()[mid] in {
        "The billing API listens on port 9090",
        "The billing API listens on port 7070",
    }


def test_the_server_stopped_mid_sync_then_the_next_sync_completes(
    machines: tuple[Machine, Machine], s3: S3Server
) -> None:
    a, b = machines
    a.import_many("outage", 300)
    pushes = a.daemon.log_path.read_text(errors="replace").count("sync: pushing")
    running = subprocess.Popen(
        [MEMD, "sync", "now"],
        env=a.daemon.env,
        cwd=str(a.repo),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        a.wait_log("sync: pushing", pushes + 1, timeout=60)
        s3.stop()  # mid-round: while the push goes out (or just after it committed)
        running.communicate(timeout=90)  # failed, or finished just before the stop
        # While the bucket is down, `memd sync now` fails fast, says why, and local work goes on.
        started = time.monotonic()
        down = b.memd("sync", "now")
        assert down.returncode != 0
        assert "unreachable" in down.stderr, down.stderr
        assert time.monotonic() - started < 60
        b.ask("add", text="Written on B while the bucket was down", cwd=str(b.repo))
    finally:
        if running.poll() is None:
            running.kill()
        s3.start()  # same port, same data
    a.sync()
    b.sync()
    a.sync()
    on_a, on_b = a.memories(), b.memories()
    assert on_a == on_b
    assert sum(1 for t in on_b.values() if t.startswith("outage ")) == 300
    assert "Written on B while the bucket was down" in on_a.values()


def test_kill_9_during_a_push_then_the_next_sync_completes(
    machines: tuple[Machine, Machine],
) -> None:
    a, b = machines
    a.import_many("killed", 300)
    pushes = a.daemon.log_path.read_text(errors="replace").count("sync: pushing")
    running = subprocess.Popen(
        [MEMD, "sync", "now"],
        env=a.daemon.env,
        cwd=str(a.repo),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert a.wait_log("sync: pushing", pushes + 1, timeout=60), a.daemon.log()
        assert a.daemon.proc is not None
        a.daemon.proc.send_signal(signal.SIGKILL)
        a.daemon.proc.wait(30)
        a.daemon.log_file.close()
        assert running.wait(60) != 0  # the client saw its daemon die
    finally:
        if running.poll() is None:
            running.kill()
    a.daemon.start()
    a.sync()
    b.sync()
    a.sync()
    on_a, on_b = a.memories(), b.memories()
    assert on_a == on_b
    killed = [t for t in on_b.values() if t.startswith("killed ")]
    assert len(killed) == len(set(killed)) == 300


def test_a_hanging_bucket_never_slows_the_hooks(tmp_path: Path) -> None:
    """While a round waits on a bucket that never answers, hooks and writes answer at once,
    and `memd sync now` gives up within sync_timeout_seconds, exit 1, saying why."""
    from s3_server import HangingServer

    hanging = HangingServer()
    s3 = S3Server()
    s3.port = hanging.port
    machine = Machine(tmp_path / "m", s3, "https://github.com/acme/widgets.git")
    machine.daemon.env["MEMD_SYNC_TIMEOUT_SECONDS"] = "8"
    try:
        machine.start()
        assert machine.memd("sync", "enable", "--project", str(machine.repo)).returncode == 0
        text = "The payments service retries webhooks three times"
        machine.ask("add", text=text, cwd=str(machine.repo))
        started = time.monotonic()
        running = subprocess.Popen(
            [MEMD, "sync", "now"],
            env=machine.daemon.env,
            cwd=str(machine.repo),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        time.sleep(1.0)
        assert running.poll() is None  # the round is waiting on the bucket
        hook_started = time.monotonic()
        out = machine.prompt_hook("how many times does the payments service retry webhooks?")
        assert text in out
        assert time.monotonic() - hook_started < 2.0
        machine.ask("add", text="Refunds are processed daily", cwd=str(machine.repo))
        _, err = running.communicate(timeout=60)
        took = time.monotonic() - started
        assert running.returncode == 1
        assert "did not finish within 8 s" in err and "unreachable" in err
        assert took < 20
        status = json.loads(machine.memd("status", "--json").stdout)["sync"]
        assert status["last_round"]["ok"] is False
        assert "unreachable" in status["hint"]
        assert "FAILED" in machine.memd("sync", "status").stdout
        stop_started = time.monotonic()
        assert machine.daemon.stop() == 0, machine.daemon.log()  # a stuck round does not block it
        assert time.monotonic() - stop_started < 30
    finally:
        machine.stop()
        hanging.close()


def second_checkout(m: Machine, remote: str) -> Path:
    repo = m.root / "code" / "gadgets"
    repo.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(["git", "-C", str(repo), "remote", "add", "origin", remote], check=True)
    return repo


def project_texts(m: Machine, repo: Path) -> list[str]:
    reply = m.ask("list", project=str(repo), include_all=True, limit=100_000)
    return sorted(x["text"] for x in reply["memories"])


def test_sync_disable_stops_one_project_and_the_others_keep_syncing(
    machines: tuple[Machine, Machine], s3: S3Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    import lancedb

    a, b = machines
    ga = second_checkout(a, "https://github.com/acme/gadgets.git")
    gb = second_checkout(b, "git@github.com:acme/gadgets.git")
    for m, repo in ((a, ga), (b, gb)):
        done = m.memd("sync", "enable", "--project", str(repo), "--scope", "team")
        assert done.returncode == 0, done.stderr
    shared = a.ask("add", text="Gadgets are packaged as wheels", cwd=str(ga))["memory"]["id"]
    a.sync()
    b.sync()
    assert project_texts(b, gb) == ["Gadgets are packaged as wheels"]  # it did sync before

    off = a.memd("sync", "disable", "--project", str(ga))
    assert off.returncode == 0, off.stderr
    assert f"no longer syncing {ga}" in off.stdout
    status = json.loads(a.memd("sync", "status", "--json").stdout)
    assert [p["path"] for p in status["projects"]] == [str(a.repo)]
    for shown in (a.memd("sync", "status").stdout, a.memd("status").stdout):
        assert f"{a.repo} -> s3://{BUCKET}/memd/team" in shown
        assert f"{ga} -> " not in shown
    again = a.memd("sync", "disable", "--project", str(ga))
    assert again.returncode != 0 and "is not synced" in again.stderr

    # Nothing more goes up for the disabled project, in either direction; widgets still syncs.
    a.ask("add", text="Gadgets ship on the first Monday of the month", cwd=str(ga))
    a.ask("edit", id=shared, text="Gadgets are packaged as wheels and sdists")
    a.ask("add", text="Widgets are deployed by Argo CD", cwd=str(a.repo))
    assert a.sync()["pushed"] == 1
    b.ask("add", text="Gadgets are signed with Sigstore", cwd=str(gb))
    got = b.sync()
    assert got["applied"] == 1 and got["pushed"] == 1
    assert "Widgets are deployed by Argo CD" in b.memories().values()
    assert project_texts(b, gb) == [
        "Gadgets are packaged as wheels",
        "Gadgets are signed with Sigstore",
    ]
    a.sync()
    assert project_texts(a, ga) == [
        "Gadgets are packaged as wheels and sdists",
        "Gadgets ship on the first Monday of the month",
    ]
    for name, value in s3.env().items():
        monkeypatch.setenv(name, value)
    table = lancedb.connect(f"s3://{BUCKET}/memd/team").open_table(f"dev-{status['device_id']}")
    rows = table.to_arrow().to_pylist()
    gadgets = [r["text"] for r in rows if r["project"] == "git:github.com/acme/gadgets"]
    assert gadgets == ["Gadgets are packaged as wheels"]  # only what went up before `disable`
    assert "Widgets are deployed by Argo CD" in [r["text"] for r in rows]


def test_a_supersession_travels_with_its_history(machines: tuple[Machine, Machine]) -> None:
    a, b = machines
    old_text = "We use PostgreSQL 16 for the billing database."
    new_text = "The billing database is MySQL 8 now."
    old = a.ask("add", text=old_text, kind="decision", cwd=str(a.repo))
    assert old["result"]["superseded"] == []
    x = old["memory"]["id"]
    a.sync()
    b.sync()
    assert b.ask("show", id=x)["memory"]["status"] == "active"

    new = a.ask("add", text=new_text, kind="decision", cwd=str(a.repo))
    y = new["memory"]["id"]
    assert new["result"]["superseded"] == [x]  # superseded on A, by A's own merge
    assert a.sync()["pushed"] == 2  # the superseded version of X and Y
    assert b.sync()["applied"] == 2

    on_a = json.loads(a.memd("show", x, "--json").stdout)
    on_b = json.loads(b.memd("show", x, "--json").stdout)
    assert on_b["status"] == "superseded"
    assert on_b["superseded_by"] == y
    assert on_b["superseded_by_text"] == new_text
    assert on_b["history"] == on_a["history"]
    assert any(h.get("superseded_by") == y and h.get("text") == new_text for h in on_b["history"])
    shown_y = json.loads(b.memd("show", y, "--json").stdout)
    assert shown_y["status"] == "active"
    assert [s["id"] for s in shown_y["supersedes"]] == [x]
    context = b.prompt_hook("Which database does the billing service use?")
    assert "MySQL 8" in context and "PostgreSQL 16" not in context
