"""The `memd` CLI end to end, as a user runs it (no daemon: in-process under the writer lock)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

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
    assert out["read"] == 3 and out["inserted"] == 3
    assert [e.split(":")[1] for e in out["errors"]] == ["2", "4", "5"]
    again = json.loads(memd("import", str(path), "--json", cwd=repo).stdout)
    assert again.get("inserted", 0) == 0  # importing twice adds nothing
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
