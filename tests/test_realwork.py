"""Real Claude Code work (#30): what memd stores from real sessions, and that it keeps it.

The sessions are the real transcripts of ``tests/real_sessions`` (gzip copies, MIT, sources in
their folders), read through memd's real parser, segmenter and pipeline redaction.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import subprocess
import sys
import time
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from daemon_process import served

from memd.daemon.app import App
from memd.extract.episodes import is_narration, split_sentences
from memd.extract.heuristic import HeuristicExtractor
from memd.extract.redact import redact_turn
from memd.ingest.backfill import backfill
from memd.models import Candidate, Segment, Turn
from memd.project import repo_relative, resolve_project
from memd.settings import Settings, load_settings
from memd.state import State
from memd.store import maintenance

REAL = Path(__file__).parent / "real_sessions"
DURABLE = ("decision", "preference", "fact", "bugfix")


def unpack(dest: Path, folders: tuple[str, ...] = ("realwork", "transcripts")) -> Path:
    """The real sessions as Claude Code lays them out: one folder per project (by the cwd of
    each file's first line), under ``dest``."""
    for folder in folders:
        for gz in sorted((REAL / folder).glob("*.jsonl.gz")):
            with gzip.open(gz, "rb") as fh:
                data = fh.read()
            cwd = next(
                (
                    obj["cwd"]
                    for raw in data.split(b"\n")[:200]
                    if raw.strip()
                    and isinstance(obj := json.loads(raw), dict)
                    and isinstance(obj.get("cwd"), str)
                ),
                "unknown",
            )
            target = dest / re.sub(r"[^A-Za-z0-9]", "-", cwd) / gz.name.removesuffix(".gz")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
    return dest


@pytest.fixture(scope="module")
def real_candidates(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[Segment, Candidate]]:
    """Every real session segmented as the daemon does, redacted as the pipeline does, and
    read by the heuristic extractor: (segment, candidate) pairs."""
    root = tmp_path_factory.mktemp("real")
    unpack(root / "projects")
    settings = Settings(home=root / "memd", transcripts_dir=root / "projects")
    state = State(root / "state.db")
    try:
        backfill([root / "projects"], state, settings)
        segments = state.pending_segments(limit=100_000)
    finally:
        state.close()
    out = []
    for segment in segments:
        clean = replace(segment, turns=[redact_turn(t) for t in segment.turns])
        out += [(clean, c) for c in HeuristicExtractor().extract(clean)]
    return out


def test_no_narration_no_turn_twice_and_the_user_is_the_user(
    real_candidates: list[tuple[Segment, Candidate]],
) -> None:
    """#30's done-when on what is stored: narration-only excerpts are at most 5 % of the
    memories, every source turn is in at most one excerpt, and no excerpt line says ``user:``
    for text the user did not type (a subagent's prompt, an IDE notice)."""
    excerpts = [(s, c) for s, c in real_candidates if c.kind == "excerpt"]
    assert len(real_candidates) > 300 and len(excerpts) > 100
    narration = 0
    for _, c in excerpts:
        body = re.sub(r"^\[\d{4}-\d{2}-\d{2}\] ", "", c.text)
        lines = body.split("\n")
        if all(ln.startswith("assistant: ") for ln in lines) and all(
            is_narration(s) for ln in lines for s in split_sentences(ln[11:])
        ):
            narration += 1
    assert narration <= 0.05 * len(real_candidates), narration
    cited: dict[str, int] = {}
    for _, c in excerpts:
        for uuid in c.source_uuids:
            cited[uuid] = cited.get(uuid, 0) + 1
    assert max(cited.values()) == 1
    for segment, c in excerpts:
        turns = {t.uuid: t for t in segment.turns}
        body = re.sub(r"^\[\d{4}-\d{2}-\d{2}\] ", "", c.text)
        for line, uuid in zip(body.split("\n"), c.source_uuids, strict=True):
            turn = turns[uuid]
            if line.startswith("user: "):
                assert turn.role == "user" and not turn.is_sidechain, line[:100]
                assert not line.startswith(("user: <ide_", "user: Tool loaded")), line[:100]
    asked = [c for _, c in real_candidates if c.kind == "summary" and c.text.startswith("Asked")]
    for segment, c in real_candidates:
        if c in asked:
            turns = {t.uuid: t for t in segment.turns}
            assert any(
                turns[u].role == "user" and not turns[u].is_sidechain for u in c.source_uuids
            )


def test_real_sessions_give_typed_knowledge_from_the_work(
    real_candidates: list[tuple[Segment, Candidate]],
) -> None:
    """Tool records and what the agent found: todos, approved plans, answered questions aside
    (they are rare), every real session set gives bug fixes, commits, commands that worked,
    files changed per request, and where the work stopped."""
    typed = [c for _, c in real_candidates if c.kind not in ("excerpt", "summary")]
    texts = [c.text for c in typed]
    assert sum(c.kind == "bugfix" for c in typed) >= 5
    assert sum(t.startswith("Committed ") for t in texts) >= 10
    assert sum(t.startswith("Files changed for ") for t in texts) >= 10
    assert any(t.startswith("Plan approved: ") for t in texts)
    assert any(t.startswith(("Tests run with", "Linting runs with")) for t in texts)
    assert any(t.startswith(("Last worked on:", "Ended with:")) for t in texts)
    # The Elixir session's real bug, its cause as the agent finally stated it (not the earlier
    # "false positive" diagnosis), and the pre-commit checks it ran into.
    bugs = [c.text for c in typed if c.kind == "bugfix"]
    assert any("current_span_ctx" in b and "{:ok" in b for b in bugs), bugs
    assert not any("false positive" in b.lower() for b in bugs), bugs
    assert any("DIALYZER" in t and "CREDO" in t for t in texts)


def test_a_subagents_report_gives_a_finding_per_named_section(
    real_candidates: list[tuple[Segment, Candidate]],
) -> None:
    """The Elixir session's subagent reported six packages under their own headings; the
    sixth one's version sat in the middle of the report, which was cut away (the report was
    kept to 1,500 characters, then four sentences), and the headings were dropped."""
    facts = [c.text for _, c in real_candidates if c.kind == "fact"]
    ash = [t for t in facts if t.startswith("Check OTEL hex package versions: opentelemetry_ash")]
    assert len(ash) == 1 and "0.1.3" in ash[0], ash
    assert any("opentelemetry_phoenix" in t and "2.0.1" in t for t in facts)
    assert not any(t.startswith("Check OTEL hex package versions: Example") for t in facts)


def test_a_fix_told_as_a_list_keeps_its_items(
    real_candidates: list[tuple[Segment, Candidate]],
) -> None:
    """The CI session's reply said "Fixed all 17 type errors in `converter.py` by:" and then
    listed how; the bug fix stopped at "by:" (four sentences were picked, the items not among
    them). The items follow their colon, as clauses the block can cut between."""
    bugs = [c.text for _, c in real_candidates if c.kind == "bugfix" and "17 type errors" in c.text]
    assert len(bugs) == 1, bugs
    assert (
        "by: Adding proper type annotations for `project_dirs: List[Path]`; Using `cast()`"
        in (bugs[0])
    )
    assert not bugs[0].rstrip().endswith(("by:", ";")), bugs


def test_first_start_backfills_the_transcripts_already_there(tmp_path: Path) -> None:
    """A first start with history on disk: the daemon reads it as finished sessions in the
    background, `memd status` shows the progress and then what it learned."""
    projects = tmp_path / "home" / ".claude" / "projects"
    unpack(projects, ("transcripts",))
    old = time.time() - 30 * 86400
    for path in projects.rglob("*.jsonl"):
        os.utime(path, (old, old))
    with served(tmp_path) as daemon:
        deadline = time.monotonic() + 180
        while True:
            status = daemon.request({"cmd": "status"})
            job = status.get("backfill") or {}
            if job.get("state") == "done" or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert job.get("state") == "done", (job, daemon.log())
        assert job["files_total"] >= 5 and job["memories_added"] > 20
        assert status["memories"]["total"] >= job["memories_added"]
        human = daemon.memd("status")
        assert human.returncode == 0
        assert f"backfilled {job['files_total']} transcript file(s)" in human.stdout


def test_every_maintenance_job_keeps_a_backfill(tmp_path: Path) -> None:
    """The history read by `memd ingest` dates from months ago; memd learned it today. Every
    job run at once (and the cleanup again 100 days later) keeps each durable memory."""
    projects = unpack(tmp_path / "projects", ("transcripts",))
    app = App(load_settings()).open(writer=True)
    try:
        app.ingest([str(projects)])
        before = app.store.query(None)
        durable = {m.id for m in before if m.kind in DURABLE and m.status == "active"}
        assert len(durable) >= 20
        for job in maintenance.JOBS.values():
            job(app.store, app.settings)
        later = maintenance.cleanup(
            app.store, app.settings, now=datetime.now(UTC) + timedelta(days=100)
        )
        after = {m.id: m for m in app.store.query(None)}
        kept = [i for i in durable if after[i].status == "active"]
        assert len(kept) >= 0.99 * len(durable), later
        excerpts = [m for m in before if m.kind == "excerpt"]
        assert excerpts  # the first run archived none: they were learned today
    finally:
        app.close()


def test_a_relative_cwd_is_the_same_project_at_ingest_and_at_recall(tmp_path: Path) -> None:
    """Defect: a transcript whose cwd is relative (``-experiments/worktrees``, a sanitized real
    session) was filed under that name at ingest, while the hook resolved the same cwd against
    the daemon's own directory: every prompt of the project found "no candidates"."""
    projects = unpack(tmp_path / "projects", ("transcripts",))
    ef = next(projects.rglob("daaain-claude-code-log__ef958aa1-*.jsonl"))
    with served(tmp_path) as daemon:
        reply = daemon.request({"cmd": "ingest", "paths": [str(ef)]}, timeout=300)
        assert reply.get("ok") and reply["memories_added"] > 5, reply
        asked = daemon.request(
            {
                "cmd": "context",
                "cwd": "-experiments/worktrees",
                "prompt": "Which branch has the planning-feature research doc?",
            }
        )
        assert "alice/research-plan-mode" in asked["context"], asked["reason"]


def test_a_worktree_belongs_to_its_repository(tmp_path: Path) -> None:
    """A linked git worktree, and Claude Code's agent worktrees under .claude/worktrees, are
    the repository's project; paths inside them are stored relative to the repository."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-c", "user.email=t@example.invalid", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q", str(repo)], check=True)
    (repo / "a.txt").write_text("a")
    subprocess.run([*git, "-C", str(repo), "add", "a.txt"], check=True)
    subprocess.run([*git, "-C", str(repo), "commit", "-qm", "a"], check=True)
    wt = repo / ".claude" / "worktrees" / "agent-1"
    subprocess.run([*git, "-C", str(repo), "worktree", "add", "-q", str(wt)], check=True)
    other = tmp_path / "elsewhere"
    subprocess.run([*git, "-C", str(repo), "worktree", "add", "-q", str(other)], check=True)
    root = os.path.realpath(repo)
    assert resolve_project(str(wt)) == root
    assert resolve_project(str(wt / "src")) == root
    assert resolve_project(str(other)) == root
    # A transcript from another machine: the path does not exist here.
    gone = "/nowhere/proj/.claude/worktrees/agent-ab12/src"
    assert resolve_project(gone) == "/nowhere/proj"
    assert repo_relative(
        "/nowhere/proj/.claude/worktrees/agent-ab12/src/x.py", "/nowhere/proj"
    ) == ("src/x.py")


def test_the_realwork_bench_reads_its_labels() -> None:
    """bench/realwork.py's key-term rule: any spelling, folded case, backticks and spaces."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
    import realwork

    assert realwork.found(["current_span_ctx"], "`current_span_ctx()` returns")
    assert realwork.found(["shadow branch", "shadow-branch"], "the Shadow  Branch")
    assert not realwork.found(["dialyzer"], "credo only")


def test_a_command_the_user_ran_is_a_bash_call_with_its_output() -> None:
    """Claude Code's shell mode (!cmd): the user's command and its output are a Bash call of
    the work, read by the records (a failing test run is a check left failing), never text the
    user said."""
    from memd.ingest.transcript import parse_lines

    def line(n: int, kind: str, content: object, **kw: object) -> str:
        message = {"role": kind, "content": content}
        if kind == "assistant":
            message["id"] = f"msg-{n}"
        return json.dumps(
            {"type": kind, "uuid": f"u{n}", "sessionId": "s", "cwd": "/p", "message": message, **kw}
        )

    turns = parse_lines(
        [
            line(1, "user", "Make the display name use the least nested path."),
            line(
                2, "assistant", [{"type": "text", "text": "Done: it now takes the least nested."}]
            ),
            line(3, "user", "<bash-input>uv run pytest test/test_names.py</bash-input>"),
            line(
                4,
                "user",
                "<bash-stdout>== 5 failed, 6 passed in 0.37s ==</bash-stdout><bash-stderr></bash-stderr>",
            ),
        ]
    )
    assert [t.role for t in turns] == ["user", "assistant"]
    (call,) = turns[1].tools
    assert call.name == "Bash" and call.args["command"] == "uv run pytest test/test_names.py"
    assert call.status == "error" and "5 failed" in call.result
    segment = Segment("s", "/p", turns)
    texts = [c.text for c in HeuristicExtractor().extract(segment)]
    assert (
        "Still failing at the end of the session: `uv run pytest test/test_names.py` (5 failed, 6 passed in 0.37s)"
        in texts
    )
    assert not any("bash-input" in t for t in texts)


def test_a_build_left_failing_says_its_error(
    real_candidates: list[tuple[Segment, Candidate]],
) -> None:
    """The Next.js session ended with `npm run build` failing; the todo said only "(failed)",
    so "the production build fails, have we seen this?" found nothing of the error."""
    todos = [c.text for _, c in real_candidates if c.kind == "todo"]
    assert (
        "Still failing at the end of the session: `npm run build` "
        "(TypeError: generate is not a function)" in todos
    ), todos
    from memd.extract.records import error_line

    assert error_line("src/a.ts(3,1): error TS2304: Cannot find name 'x'.").startswith("src/a.ts")
    assert error_line("error[E0308]: mismatched types") == "error[E0308]: mismatched types"
    assert error_line("3 errors found\nno error here") == ""


def test_a_compaction_summary_gives_its_fixes_and_key_concepts() -> None:
    """Claude Code's own summary of a compacted session: the errors it says were fixed, and
    the key concepts that name code; never its pending tasks or current work."""
    from memd.extract.compaction import summary_candidates
    from memd.models import Turn

    text = (
        "This session is being continued from a previous conversation.\n"
        "Summary:\n1. Key Technical Concepts:\n"
        "   - SPOTTER_OTEL_ENABLED environment variable for opt-out\n"
        "   - Graceful degradation everywhere\n"
        "2. Errors and fixes:\n"
        "   - BadMapError with processor config format - fixed by using `traces_exporter: :stdout`\n"
        "   - Dialyzer false positive - tried @spec, none worked\n"
        "3. Pending Tasks:\n   - spotter-4te.4: enable opentelemetry_ash\n"
    )
    turn = Turn(uuid="c1", session_id="s", role="user", text=text, is_compact_summary=True)
    cands = summary_candidates(turn)
    assert [(c.kind, c.text) for c in cands] == [
        (
            "bugfix",
            "BadMapError with processor config format - fixed by using `traces_exporter: :stdout`",
        ),
        ("fact", "SPOTTER_OTEL_ENABLED environment variable for opt-out"),
    ]
    assert all(c.source_uuids == ["c1"] for c in cands)


def test_a_message_queued_while_the_agent_worked_is_the_users() -> None:
    """Claude Code 2.1.1xx writes what the user typed during the agent's work as an
    ``attachment`` (queued_command): it is the user's message; a queued task notification is
    a subagent's report, never the user's words."""
    from memd.ingest.transcript import parse_line

    base = {"type": "attachment", "uuid": "q1", "sessionId": "s", "cwd": "/p"}
    typed = {"type": "queued_command", "prompt": "also check it works with GitHub?",
             "commandMode": "prompt"}  # fmt: skip
    turn = parse_line(json.dumps({**base, "attachment": typed}))
    assert turn is not None and turn.role == "user"
    assert turn.text == "also check it works with GitHub?" and turn.uuid == "q1"
    note = {
        "type": "queued_command",
        "commandMode": "task-notification",
        "prompt": '<task-notification><summary>Agent "Find" came to rest</summary>'
        "<result>The limit is 25000 commands.</result></task-notification>",
    }
    report = parse_line(json.dumps({**base, "uuid": "q2", "attachment": note}))
    assert report is not None and report.text == "" and report.tools[0].name == "TaskNotification"
    assert report.tools[0].args["description"] == "Find"
    other = {**base, "uuid": "q3", "attachment": {"type": "hook_success", "content": "x"}}
    assert parse_line(json.dumps(other)) is None


def test_a_background_reviewers_report_is_named_and_no_finding() -> None:
    """A notification names its agent after other tags (``<task-id>``, ``<status>``): the name
    is the report's description, so a reviewer's suggestions are left out (git-sync, real)."""
    from memd.extract.records import report_candidates
    from memd.ingest.toolcalls import agent_report

    text = (
        "<task-notification>\n<task-id>adb41db9</task-id>\n<status>completed</status>\n"
        '<summary>Agent "Efficiency review" came to rest</summary>\n'
        "<result>## Efficiency Findings\nPushPack allocates a nil slice on every small push."
        "</result></task-notification>"
    )
    call = agent_report(text)
    assert call is not None and call.args["description"] == "Efficiency review"
    turn = Turn(uuid="t1", session_id="s1", role="user", text="")
    assert report_candidates(turn, call.args["description"], call.result) == []


def test_a_reviewer_subagents_own_transcript_files_no_finding() -> None:
    """A subagent's transcript whose prompt asks it to review a change: its closing sections
    are suggestions (the parent says which it applied), a researcher's are findings."""
    from memd.models import ToolCall

    def facts(prompt: str) -> list[str]:
        read = ToolCall(
            "Read", "file_path: /p/push.go", "t1", {"file_path": "/p/push.go"}, "x", "ok"
        )
        turns = [
            Turn("u1", "s", "user", prompt, cwd="/p", is_sidechain=True),
            Turn("a1", "s", "assistant", "Reading the diff.", cwd="/p", is_sidechain=True, tools=[read]),
            Turn("a2", "s", "assistant", "## Efficiency Findings\n\nPushPack allocates a nil "
                 "slice on every small push in `internal/gitproto/push.go`.\n\n## Verdict\n\n"
                 "The batching in `chunkRefUpdates` is well structured overall.", cwd="/p",
                 is_sidechain=True),
        ]  # fmt: skip
        cands = HeuristicExtractor().extract(Segment("s", "/p", turns, reason="ingest"))
        return [c.text for c in cands if c.kind == "fact" and "PushPack" in c.text]

    assert facts("Review a code change in the git-sync repo for EFFICIENCY issues only.") == []
    assert facts("Find where the push path batches ref updates in the git-sync repo.")


def test_the_words_inside_code_names_count_for_relevance() -> None:
    from memd.text.searchterms import term_set, terms

    have = term_set("BadMapError - fixed by using `traces_exporter: :stdout`; SPOTTER_OTEL_ENABLED")
    assert {"bad", "map", "error", "trace", "exporter", "otel"} <= have
    assert set(terms("a map error at boot")) & have == {"map", "error"}


def test_the_names_an_edit_added_are_code_names_not_words() -> None:
    """A "Files changed for" line lists what each edit defined ("rawHooks", "pull_request"),
    never the words of its comments or messages ("a hook type we don't handle")."""
    from memd.ingest.toolcalls import added_names

    new = (
        "// Create settings with a hook type we don't handle\n"
        "rawHooks := map[string]json.RawMessage{}\n"
        't.Errorf("Notification hook type was not preserved")\n'
        "pull_request:\n"
    )
    added = added_names("Edit", {"old_string": "", "new_string": new})
    assert "rawHooks" in added and "pull_request" in added
    assert not {"we", "was"} & set(added), added


def test_a_reviewers_report_is_no_finding_a_researchers_is() -> None:
    """A subagent asked to review a change reports suggestions ("PushPack: unnecessary nil
    slice allocation"), not what holds; a subagent asked to look something up reports facts."""
    from memd.extract.records import report_candidates
    from memd.models import Turn

    turn = Turn(uuid="t1", session_id="s1", role="user", text="", timestamp="2026-06-18T10:00:00Z")
    report = (
        "The push path allocates a second slice on every call in internal/gitproto/push.go. "
        "chunkRefUpdates wraps a single batch in a new slice even for small pushes."
    )
    assert report_candidates(turn, "Efficiency review", report) == []
    (found,) = report_candidates(turn, "Find where pushes are batched", report)
    assert found.text.startswith("Find where pushes are batched: The push path allocates")
    assert report_candidates(turn, "Audit version wiring end to end", report)  # what it found
    named = "Look at /Users/dain/workspace/coderabbit-review-helper/extract.py"  # a path's word
    assert report_candidates(turn, named, report)
    noun = "Examine extract.py: how inline comments and review body content are processed"
    assert report_candidates(turn, noun, report)
