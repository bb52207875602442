"""The claude-cli extractor against fake `claude` executables placed first on PATH."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from memd.errors import BudgetExceeded, ExtractionError
from memd.extract import get_extractor
from memd.extract.base import LEDGER_KEY, MemoryState
from memd.extract.claude_cli import ClaudeCliExtractor
from memd.extract.prompt import MEMD_EXTRACTION_PROMPT_MARKER
from memd.extract.reply import CANDIDATE_SCHEMA
from memd.models import Segment, ToolCall, Turn
from memd.settings import Settings

SECRET = "ghp_" + "Zr8kQ2vN7mXp4TtY1wLc9FbH3dJ6sA0eUiOo"

# Every fake starts with this: it fails loudly (exit 97) when any guard is missing.
GUARDS = r"""
import json, os, sys, time
args = sys.argv[1:]
problems = []

def value(flag):
    if flag not in args:
        problems.append("missing " + flag)
        return None
    i = args.index(flag)
    if i + 1 >= len(args):
        problems.append("no value after " + flag)
        return None
    return args[i + 1]

if "-p" not in args and "--print" not in args:
    problems.append("missing -p")
if "--bare" in args:
    problems.append("--bare must never be passed")
if value("--output-format") != "json":
    problems.append("--output-format must be json")
try:
    schema = json.loads(value("--json-schema") or "")
    if "memories" not in schema.get("properties", {}):
        problems.append("--json-schema lacks memories")
except ValueError:
    problems.append("--json-schema is not JSON")
if value("--model") != EXPECTED_MODEL:
    problems.append("wrong --model")
if value("--max-turns") != "1":
    problems.append("--max-turns must be 1")
if value("--tools") != "":
    problems.append('--tools must be ""')
try:
    if json.loads(value("--settings") or "{}").get("disableAllHooks") is not True:
        problems.append("hooks not disabled")
except ValueError:
    problems.append("--settings is not JSON")
if "--no-session-persistence" not in args:
    problems.append("missing --no-session-persistence")
if os.environ.get("MEMD_DISABLE") != "1":
    problems.append("MEMD_DISABLE=1 missing from the environment")
prompt = sys.stdin.read()
if not prompt.startswith(MARKER):
    problems.append("prompt does not start with the marker")
if problems:
    print("GUARD VIOLATION: " + "; ".join(problems), file=sys.stderr)
    sys.exit(97)
with open(RECORD, "a") as f:
    f.write(json.dumps({"argv": args, "prompt": prompt, "cwd": os.getcwd(), "pid": os.getpid(),
                        "pgid": os.getpgid(0), "sid": os.getsid(0), "start": time.time()}) + "\n")
import re
ids = re.findall(r"^\[(t\d+)\] ", prompt, re.M)
memories = [
    {"kind": "decision", "text": "Use pnpm instead of npm", "topic": "packages",
     "keywords": ["pnpm"], "importance": 0.8, "sources": [ids[0]],
     "subject": "package manager", "value": "pnpm"},
    {"kind": "todo", "text": "Add a CI job for the e2e tests", "sources": [ids[-1]]},
]
usage = {"input_tokens": 300, "output_tokens": 60, "cache_read_input_tokens": 40}
"""

MODES = {
    "ok": r"""
time.sleep(SLEEP)
print(json.dumps({"type": "result", "subtype": "success", "is_error": False, "result": "",
                  "structured_output": {"memories": memories}, "usage": usage,
                  "total_cost_usd": 0.0012}))
""",
    "result_text": r"""
print(json.dumps({"type": "result", "is_error": False, "usage": usage,
                  "result": "Here:\n```json\n" + json.dumps({"memories": memories}) + "\n```"}))
""",
    "malformed": r"""
print("Error: something went sideways {not json")
""",
    "is_error": r"""
print(json.dumps({"type": "result", "subtype": "error_during_execution", "is_error": True,
                  "result": "Credit balance is too low", "usage": {"input_tokens": 5}}))
""",
    "crash": r"""
print("fatal: login expired", file=sys.stderr)
sys.exit(3)
""",
    "slow": r"""
import subprocess
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
with open(PIDFILE, "w") as f:
    f.write(str(child.pid))
time.sleep(60)
""",
}


def write_fake(bin_dir: Path, mode: str, tmp: Path, model: str = "haiku", sleep: float = 0) -> Path:
    bin_dir.mkdir(parents=True, exist_ok=True)
    path = bin_dir / "claude"
    header = (
        f"#!{sys.executable}\n"
        f"EXPECTED_MODEL = {model!r}\nMARKER = {MEMD_EXTRACTION_PROMPT_MARKER!r}\n"
        f"RECORD = {str(tmp / 'record.jsonl')!r}\nPIDFILE = {str(tmp / 'grandchild.pid')!r}\n"
        f"SLEEP = {sleep!r}\n"
    )
    path.write_text(header + GUARDS + MODES[mode])
    path.chmod(0o755)
    return path


@pytest.fixture
def fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    bin_dir = tmp_path / "bin"

    def install(mode: str, **kw: Any) -> Path:
        path = write_fake(bin_dir, mode, tmp_path, **kw)
        monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
        return path

    return install


def records(tmp_path: Path) -> list[dict[str, Any]]:
    path = tmp_path / "record.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


def segment() -> Segment:
    return Segment(
        session_id="s2",
        project="/work/web",
        turns=[
            Turn(
                uuid="aaaaaaaa-0000-4000-8000-000000000001",
                session_id="s2",
                role="user",
                text=f"Let's use pnpm instead of npm. Token for the registry: {SECRET}",
            ),
            Turn(
                uuid="aaaaaaaa-0000-4000-8000-000000000002",
                session_id="s2",
                role="assistant",
                text="Switched the lockfile to pnpm; the e2e tests still need a CI job.",
                tools=[ToolCall("Bash", "pnpm install")],
            ),
        ],
    )


def settings(**kw: Any) -> Settings:
    values: dict[str, Any] = {"extractor": "claude-cli", "llm_timeout_seconds": 10}
    values.update(kw)
    return Settings(**values)


def pid_alive(pid: int) -> bool:
    """Alive and not a zombie (a container's pid 1 may never reap orphans)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def test_get_extractor_returns_the_cli_backend() -> None:
    assert isinstance(get_extractor(settings()), ClaudeCliExtractor)


def test_the_fake_fails_loudly_when_a_guard_is_missing(fake: Any, tmp_path: Path) -> None:
    path = fake("ok")
    cmd = ClaudeCliExtractor(settings()).command()
    prompt = MEMD_EXTRACTION_PROMPT_MARKER + "\n[t1] user: hi"
    env = {**os.environ, "MEMD_DISABLE": "1"}
    ok = subprocess.run(
        [str(path), *cmd[1:]], input=prompt, text=True, env=env, capture_output=True
    )
    assert ok.returncode == 0, ok.stderr
    for broken_cmd, broken_env, what in (
        ([c for c in cmd[1:] if c != "--no-session-persistence"], env, "--no-session-persistence"),
        ([*cmd[1:], "--bare"], env, "--bare"),
        (cmd[1:], {k: v for k, v in env.items() if k != "MEMD_DISABLE"}, "MEMD_DISABLE"),
        ([c.replace("true", "false") for c in cmd[1:]], env, "hooks not disabled"),
    ):
        bad = subprocess.run(
            [str(path), *broken_cmd], input=prompt, text=True, env=broken_env, capture_output=True
        )
        assert bad.returncode == 97 and what in bad.stderr


def test_extracts_through_a_guarded_child(fake: Any, tmp_path: Path) -> None:
    fake("ok")
    state = MemoryState()
    ext = ClaudeCliExtractor(settings(), state=state)
    seg = segment()
    cands = ext.extract(seg)
    (rec,) = records(tmp_path)
    assert rec["argv"] == ext.command()[1:]
    assert json.loads(rec["argv"][rec["argv"].index("--json-schema") + 1]) == CANDIDATE_SCHEMA
    assert rec["prompt"].startswith(MEMD_EXTRACTION_PROMPT_MARKER)
    assert SECRET not in rec["prompt"] and "[REDACTED:github_token]" in rec["prompt"]
    assert rec["pgid"] == rec["pid"] == rec["sid"] != os.getpgid(0)  # its own session and group
    assert Path(rec["cwd"]) == Path(os.environ["MEMD_HOME"]) / "claude-cli"

    typed = [c for c in cands if c.kind != "excerpt"]
    assert [(c.kind, c.text) for c in typed] == [
        ("decision", "Use pnpm instead of npm"),
        ("todo", "Add a CI job for the e2e tests"),
    ]
    assert typed[0].source_uuids == [seg.turns[0].uuid] and typed[0].importance == 0.8
    assert (typed[0].subject, typed[0].value) == ("package manager", "pnpm")
    assert typed[1].source_uuids == [seg.turns[1].uuid] and typed[1].subject == ""
    excerpts = [c for c in cands if c.kind == "excerpt"]
    # the two turns form one excerpt window citing both
    assert [c.source_uuids for c in excerpts] == [[t.uuid for t in seg.turns]]
    assert all(SECRET not in c.text for c in cands)
    stats = ext.stats()
    assert (stats["calls"], stats["tokens_in"], stats["tokens_out"]) == (1, 340, 60)
    assert state.get(LEDGER_KEY)["by_backend"] == {"claude-cli": 400}
    assert stats["running"] == 0


def test_result_text_is_parsed_leniently(fake: Any) -> None:
    fake("result_text")
    cands = ClaudeCliExtractor(settings()).extract(segment())
    assert [c.kind for c in cands if c.kind != "excerpt"] == ["decision", "todo"]


@pytest.mark.parametrize(
    ("mode", "message"),
    [
        ("malformed", "not JSON"),
        ("is_error", "Credit balance is too low"),
        ("crash", "exit 3: fatal: login expired"),
    ],
)
def test_failures_raise_extraction_error(fake: Any, mode: str, message: str) -> None:
    fake(mode)
    ext = ClaudeCliExtractor(settings())
    with pytest.raises(ExtractionError, match=message):
        ext.extract(segment())
    assert ext.stats()["failures"] == 1


def test_missing_executable_is_an_extraction_error(tmp_path: Path) -> None:
    ext = ClaudeCliExtractor(settings(claude_cli_path=str(tmp_path / "nope" / "claude")))
    with pytest.raises(ExtractionError, match="cannot run"):
        ext.extract(segment())


def test_timeout_kills_the_whole_process_group(fake: Any, tmp_path: Path) -> None:
    fake("slow")
    ext = ClaudeCliExtractor(settings(llm_timeout_seconds=1.0))
    start = time.monotonic()
    with pytest.raises(ExtractionError, match="killed its process group"):
        ext.extract(segment())
    assert time.monotonic() - start < 8
    (rec,) = records(tmp_path)
    grandchild = int((tmp_path / "grandchild.pid").read_text())
    deadline = time.monotonic() + 3
    while (pid_alive(grandchild) or pid_alive(rec["pid"])) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not pid_alive(grandchild), "the grandchild survived: an orphan"
    assert not pid_alive(rec["pid"])
    assert ext.stats()["timeouts"] == 1 and ext.stats()["running"] == 0


def test_concurrency_limit(fake: Any, tmp_path: Path) -> None:
    fake("ok", sleep=0.3)
    ext = ClaudeCliExtractor(settings(claude_cli_concurrency=1))
    errors: list[BaseException] = []

    def work() -> None:
        try:
            ext.extract(segment())
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not errors
    starts = sorted(r["start"] for r in records(tmp_path))
    assert len(starts) == 3
    assert all(b - a >= 0.28 for a, b in itertools.pairwise(starts)), starts


def test_budget_refuses_before_spawning(fake: Any, tmp_path: Path) -> None:
    fake("ok")
    state = MemoryState()
    ext = ClaudeCliExtractor(settings(llm_daily_token_budget=1300), state=state)
    ext.extract(segment())  # spends 400 tokens; the next prompt (~1000) would pass 1300
    with pytest.raises(BudgetExceeded):
        ext.extract(segment())
    assert len(records(tmp_path)) == 1
    assert ext.stats()["budget_exhausted"] is True and ext.stats()["fallbacks"] == 1
