"""The `memd` CLI end to end, as a user runs it: in-process under the writer lock, and through a
real daemon where the daemon matters (paths resolved in the user's directory, not the daemon's)."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from daemon_process import DaemonProcess, daemon_env, remove_socket_dir, short_socket_path

MEMD = str(Path(sys.executable).parent / "memd")


def memd(
    *args: str, cwd: Path | None = None, check: bool = True
) -> subprocess.CompletedProcess[str]:
    run = subprocess.run(
        [MEMD, *args], capture_output=True, text=True, cwd=cwd, env=os.environ, timeout=120
    )
    if check and run.returncode != 0:
        raise AssertionError(f"memd {' '.join(args)} failed ({run.returncode}): {run.stderr}")
    return run


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "work" / "shop"
    (root / ".git").mkdir(parents=True)
    return root


def test_add_search_show_forget(repo: Path) -> None:
    added = json.loads(
        memd(
            "add",
            "We chose Django over Flask because of the admin",
            "--kind",
            "decision",
            "--json",
            cwd=repo,
        ).stdout
    )
    mid = added["memory"]["id"]
    assert added["memory"]["project"] == str(repo)
    results = json.loads(memd("search", "why Django and not Flask", "--json", cwd=repo).stdout)
    assert results[0]["id"] == mid
    explained = memd("search", "Django", "--explain", cwd=repo).stdout
    assert "why: total" in explained
    assert "We chose Django" in memd("show", mid[:8], cwd=repo).stdout
    assert mid[:10] in memd("list", cwd=repo).stdout
    memd("pin", mid, cwd=repo)
    assert json.loads(memd("list", "--json", cwd=repo).stdout)[0]["pinned"] is True
    memd("forget", mid, cwd=repo)
    assert json.loads(memd("search", "Django", "--json", cwd=repo).stdout) == []


def test_user_errors_exit_1_with_one_line(repo: Path) -> None:
    for args in (["show", "abcdef12"], ["forget", "zzz"], ["add", "  "]):
        run = memd(*args, cwd=repo, check=False)
        assert run.returncode == 1, args
        assert run.stderr.startswith("memd: ") and run.stderr.count("\n") == 1
    run = memd("add", "x", "--kind", "gossip", cwd=repo, check=False)
    assert run.returncode == 2  # click's usage error


def test_broken_config_is_reported(repo: Path) -> None:
    cfg = Path(os.environ["MEMD_CONFIG"])
    cfg.parent.mkdir(parents=True, exist_ok=True)
    cfg.write_text("search_limit = 'many'\n")
    run = memd("search", "x", cwd=repo, check=False)
    assert run.returncode == 1
    assert str(cfg) in run.stderr and "search_limit" in run.stderr


def test_config_shows_sources(repo: Path) -> None:
    out = json.loads(memd("--home", str(repo / "h"), "config", "--json").stdout)
    rows = {r["name"]: r for r in out}
    assert rows["home"]["source"] == "cli"
    assert rows["transcripts_dir"]["source"] == "env MEMD_TRANSCRIPTS_DIR"
    assert rows["extractor"] == {**rows["extractor"], "value": "heuristic", "source": "default"}


def test_import_jsonl_reports_bad_lines(repo: Path, tmp_path: Path) -> None:
    path = tmp_path / "in.jsonl"
    path.write_text(
        "\n".join(
            [
                json.dumps({"text": "Staging runs on fly.io"}),
                "{not json",
                json.dumps({"text": "Prefer tabs in Makefiles", "kind": "preference"}),
                json.dumps({"kind": "fact"}),
                json.dumps({"text": "Bad kind", "kind": "gossip"}),
                json.dumps({"text": "我们统一使用 UTC 时间", "kind": "preference", "pinned": True}),
            ]
        )
        + "\n"
    )
    out = json.loads(memd("import", str(path), "--json", cwd=repo).stdout)
    assert (out["read"], out["added"], out["skipped"]) == (6, 3, 3)
    assert [e.split(":")[0] for e in out["errors"]] == ["line 2", "line 4", "line 5"]
    again = json.loads(memd("import", str(path), "--json", cwd=repo).stdout)
    assert again["added"] == 0 and again["unchanged"] == 3  # importing twice adds nothing
    listed = json.loads(memd("list", "--json", cwd=repo).stdout)
    assert len(listed) == 3


def test_export_edit_import_round_trip(repo: Path, tmp_path: Path) -> None:
    memd("add", "Use ruff for linting", "--kind", "decision", cwd=repo)
    memd("add", "TODO: add integration tests for billing", "--kind", "todo", cwd=repo)
    memd("add", "数据库迁移用 alembic", "--kind", "fact", cwd=repo)
    out = tmp_path / "export"
    memd("export", str(out))
    index = json.loads((out / "index.json").read_text())
    md_file = out / index["projects"][str(repo)]["file"]
    text = md_file.read_text()
    assert "### Key decisions" in text and "### TODO" in text and "数据库迁移用 alembic" in text
    # Edit one line, pin another, add a new one.
    text = text.replace("Use ruff for linting", "Use ruff for linting and import sorting")
    text = text.replace("- 数据库迁移用 alembic", "- [pinned] 数据库迁移用 alembic")
    text = text.replace("### TODO\n\n", "### TODO\n\n- Write the release notes for 2.0\n")
    md_file.write_text(text)
    report = json.loads(memd("import", str(out), "--json", cwd=repo).stdout)
    assert report["updated"] == 2 and report["added"] == 1
    listed = {m["text"]: m for m in json.loads(memd("list", "--json", cwd=repo).stdout)}
    assert "Use ruff for linting" not in listed
    edited = listed["Use ruff for linting and import sorting"]
    assert edited["history"][-1]["edited_from"] == "Use ruff for linting"
    assert listed["数据库迁移用 alembic"]["pinned"] is True
    assert listed["Write the release notes for 2.0"]["kind"] == "todo"
    assert len(listed) == 4  # updated in place, not duplicated
    # Importing the same export again changes nothing.
    again = json.loads(memd("import", str(out), "--json", cwd=repo).stdout)
    assert (again["updated"], again["added"], again["unchanged"]) == (0, 0, 4)
    assert len(json.loads(memd("list", "--json", cwd=repo).stdout)) == 4


def test_import_export_into_fresh_home(repo: Path, tmp_path: Path) -> None:
    memd("add", "The queue is RabbitMQ", cwd=repo)
    out = tmp_path / "export"
    memd("export", str(out))
    fresh = tmp_path / "fresh-home"
    report = json.loads(memd("--home", str(fresh), "import", str(out), "--json", cwd=repo).stdout)
    assert report["restored_from_index"] == 1
    listed = json.loads(memd("--home", str(fresh), "list", "--json", cwd=repo).stdout)
    assert [m["text"] for m in listed] == ["The queue is RabbitMQ"]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[DaemonProcess, Path]]:
    """A real daemon whose working directory is another git repository ("A")."""
    root = tmp_path_factory.mktemp("served")
    daemon_dir = root / "A"
    (daemon_dir / ".git").mkdir(parents=True)
    sock = short_socket_path()
    proc = DaemonProcess(daemon_env(root / "d", sock), root / "serve.log", cwd=str(daemon_dir))
    try:
        yield proc.start(), root
    finally:
        proc.stop()
        remove_socket_dir(sock)


def test_relative_project_paths_are_resolved_where_the_user_is(
    served: tuple[DaemonProcess, Path],
) -> None:
    """Defect: `--project .` and `--project src` were resolved in the daemon's working directory."""
    proc, root = served
    shop = root / "B" / "shop"
    (shop / ".git").mkdir(parents=True)
    (shop / "sub").mkdir()
    (shop / "src").mkdir()
    added = proc.memd(
        "add",
        "Deploys go through the blue-green script",
        "--project",
        ".",
        "--json",
        cwd=str(shop / "sub"),
    )
    assert added.returncode == 0, added.stderr
    assert json.loads(added.stdout)["memory"]["project"] == os.path.realpath(shop)
    for args, cwd in (
        (["--project", "src"], shop),
        (["--project", "shop/src"], shop.parent),
        (["--project", "../sub"], shop / "src"),
        ([], shop / "sub"),
    ):
        listed = proc.memd("list", *args, "--json", cwd=str(cwd))
        assert listed.returncode == 0, listed.stderr
        texts = [m["text"] for m in json.loads(listed.stdout)]
        assert texts == ["Deploys go through the blue-green script"], (args, cwd)
        found = proc.memd("search", "deploy script", *args, "--json", cwd=str(cwd))
        assert [r["text"] for r in json.loads(found.stdout)] == texts, (args, cwd)
    # From the daemon's own repository, nothing of the shop's shows.
    elsewhere = proc.memd("list", "--project", ".", "--json", cwd=str(root / "A"))
    assert json.loads(elsewhere.stdout) == []


def colliding_texts(project: str) -> tuple[str, str, str]:
    """Two unrelated texts whose memory ids share their first 4 characters, and that prefix."""
    from memd.models import memory_id

    words = [
        "zebra",
        "quantum",
        "violin",
        "tax",
        "glacier",
        "python",
        "saffron",
        "ledger",
        "harbor",
        "comet",
        "tulip",
        "kernel",
        "basalt",
        "opera",
        "walrus",
        "invoice",
        "meadow",
        "turbine",
        "falcon",
        "pepper",
        "archive",
        "nebula",
        "canyon",
        "sonnet",
        "bicycle",
        "mortgage",
        "lantern",
        "orchid",
        "piston",
        "tundra",
        "velvet",
        "dynamo",
    ]
    seen: dict[str, tuple[str, set[str]]] = {}
    # Every ordered pick of 4 of the 20 words (116,280 texts): among so many, two unrelated
    # ones share a 4-character prefix whatever the project path (the earlier formula made ~400
    # texts, and some temporary paths gave no pair).
    for picked in itertools.permutations(words, 4):
        text = " ".join(picked).capitalize() + "."
        prefix = memory_id(project, "fact", text, [])[:4]
        if prefix in seen and not seen[prefix][1] & set(picked):
            return seen[prefix][0], text, prefix
        seen.setdefault(prefix, (text, set(picked)))
    raise AssertionError("no colliding prefix found")


def test_show_explains_short_and_ambiguous_prefixes(served: tuple[DaemonProcess, Path]) -> None:
    proc, root = served
    repo = root / "prefixes"
    (repo / ".git").mkdir(parents=True)
    first, second, prefix = colliding_texts(os.path.realpath(repo))
    ids = []
    for text in (first, second):
        added = proc.memd("add", text, "--json", cwd=str(repo))
        assert added.returncode == 0, added.stderr
        ids.append(json.loads(added.stdout)["memory"]["id"])
    assert ids[0] != ids[1] and ids[0][:4] == ids[1][:4] == prefix
    short = proc.memd("show", prefix[:1], cwd=str(repo))
    assert short.returncode == 1
    assert "too short: give at least 4 characters" in short.stderr
    ambiguous = proc.memd("show", prefix, cwd=str(repo))
    assert ambiguous.returncode == 1
    assert "matches several memories" in ambiguous.stderr
    assert ids[0][:12] in ambiguous.stderr and ids[1][:12] in ambiguous.stderr
    assert first[:20] in ambiguous.stderr and second[:20] in ambiguous.stderr
    assert proc.memd("show", ids[0][:8], cwd=str(repo)).returncode == 0


def test_show_and_list_read_like_prose(served: tuple[DaemonProcess, Path]) -> None:
    proc, root = served
    repo = root / "prose"
    (repo / ".git").mkdir(parents=True)
    added = json.loads(proc.memd("add", "The cache is Redis 7", "--json", cwd=str(repo)).stdout)
    shown = proc.memd("show", added["memory"]["id"], cwd=str(repo)).stdout
    assert "  importance: 0.7\n" in shown
    listed = proc.memd("list", cwd=str(repo)).stdout
    where = f" in {os.path.realpath(repo)} (and user-wide)"
    assert listed.rstrip().endswith("\n1 memory" + where)
    proc.memd("add", "The queue is RabbitMQ 3", cwd=str(repo))
    assert proc.memd("list", cwd=str(repo)).stdout.rstrip().endswith("\n2 memories" + where)


def test_status_without_the_daemon_shows_the_store_read_only(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`memd status` with the daemon down: the store's counts, exit 1, how to start it."""
    from memd.settings import load_settings
    from memd.store.lock import WriterLock

    lines = repo / "two.jsonl"
    lines.write_text(
        json.dumps({"text": "We deploy with blue-green", "kind": "decision"})
        + "\n"
        + json.dumps({"text": "The user prefers tabs", "kind": "preference"})
        + "\n"
    )
    memd("import", str(lines), cwd=repo)  # one process, one model load
    # Another process holds the writer lock, and the configured model could not even load:
    # status must neither take the lock nor load the model.
    lock = WriterLock(load_settings().home).acquire("test")
    monkeypatch.setenv("MEMD_EMBEDDING_MODEL", "no-such/model-anywhere")
    try:
        run = memd("status", cwd=repo, check=False)
        assert run.returncode == 1, run.stderr
        assert "memd is not running" in run.stdout
        assert "store:      2 memories, 2 active" in run.stdout
        assert "decision" in run.stdout and str(os.path.realpath(repo)) in run.stdout
        assert "start it with `memd install --service`" in run.stdout
        as_json = memd("status", "--json", cwd=repo, check=False)
        assert as_json.returncode == 1
        report = json.loads(as_json.stdout)
        assert report["running"] is False
        assert report["memories"]["total"] == 2
        assert report["memories"]["by_kind"] == {"decision": 1, "preference": 1}
    finally:
        lock.release()


HEAVY = {"pydantic", "pydantic_settings", "lancedb", "pyarrow", "numpy", "fastembed", "logging"}
HEAVY_MEMD = {"memd.settings", "memd.daemon.app", "memd.store.table", "memd.models"}


def modules_after(args: list[str], env: dict[str, str], cwd: Path) -> set[str]:
    """The modules a `memd ARGS` process had loaded when it exited (and its exit code)."""
    code = (
        "import atexit, sys\n"
        "atexit.register(lambda: print('MODULES', sorted(sys.modules), file=sys.stderr))\n"
        "sys.argv[0] = 'memd'\n"
        "from memd.cli import main\n"
        "main()\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", code, *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    line = next(x for x in run.stderr.splitlines() if x.startswith("MODULES "))
    return set(eval(line.removeprefix("MODULES ")))  # a printed list of str


def test_daemon_backed_commands_import_nothing_heavy(served: tuple[DaemonProcess, Path]) -> None:
    """`memd search` through the daemon: the socket found without pydantic, no store, no model."""
    proc, root = served
    repo = root / "light"
    (repo / ".git").mkdir(parents=True)
    assert proc.memd("add", "The CI runs on Buildkite agents", cwd=str(repo)).returncode == 0
    for args in (["search", "which CI system"], ["list", "--json"], ["--help"], ["status"]):
        loaded = modules_after(args, proc.env, repo)
        heavy = {m for m in loaded if m.split(".")[0] in HEAVY} | (loaded & HEAVY_MEMD)
        assert not heavy, (args, sorted(heavy))


def test_ingest_without_a_daemon_runs_here_and_twice_adds_nothing(tmp_path: Path) -> None:
    source = Path(__file__).parent / "transcripts" / "compaction.jsonl"
    copy = tmp_path / "inbox" / source.name
    copy.parent.mkdir()
    copy.write_bytes(source.read_bytes())
    first = json.loads(memd("ingest", str(copy), "--json").stdout)
    assert first["via"] == "local"
    assert first["files"] == 1 and first["sessions"] >= 1 and first["turns"] >= 1
    again = memd("ingest", str(copy)).stdout
    assert again.startswith("read 1 files") and " 0 new turns" in again
    assert "into 0 new memories" in again
    missing = memd("ingest", str(tmp_path / "nowhere"), check=False)
    assert missing.returncode == 2  # click's own check of the path
