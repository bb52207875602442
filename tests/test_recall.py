"""The one recall path, through a real daemon: what the hooks inject and what search explains.

Each test is a case from issue #12, run the way Claude Code runs it (``memd-hook`` on stdin, or
the daemon's ``context`` preview) against a real ``memd serve`` with the real model.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from typing import Any

import pytest
from daemon_process import DaemonProcess, served


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DaemonProcess]:
    with served(tmp_path_factory.mktemp("recall")) as proc:
        yield proc


def project(daemon: DaemonProcess, name: str) -> str:
    path = daemon.root / name  # type: ignore[attr-defined]
    (path / ".git").mkdir(parents=True, exist_ok=True)
    return str(path)


def add(daemon: DaemonProcess, proj: str, text: str, *flags: str) -> str:
    out = daemon.memd("add", text, "--project", proj, "--json", *flags)
    assert out.returncode == 0, out.stderr
    return str(json.loads(out.stdout)["memory"]["id"])


def prompt(daemon: DaemonProcess, proj: str, text: str, session: str) -> str:
    payload = {
        "session_id": session,
        "cwd": proj,
        "prompt": text,
        "hook_event_name": "UserPromptSubmit",
        "transcript_path": "/nowhere.jsonl",
    }
    out = daemon.hook("user-prompt-submit", payload)
    assert out.returncode == 0 and out.stderr == ""
    if not out.stdout:
        return ""
    # Claude Code's JSON form: plain stdout from this event never reaches the model.
    return str(json.loads(out.stdout)["hookSpecificOutput"]["additionalContext"])


def preview(daemon: DaemonProcess, proj: str, text: str, **kw: Any) -> dict[str, Any]:
    reply = daemon.request({"cmd": "context", "cwd": proj, "prompt": text, **kw})
    assert reply["ok"], reply
    return reply


def test_a_lexical_match_is_injected_with_its_correction(daemon: DaemonProcess) -> None:
    """The correction scores low on the vector alone; the full-text signal brings it in."""
    p = project(daemon, "billing")
    add(
        daemon, p, "Deploy to production with 'make deploy' from the main branch.", "--kind", "fact"
    )
    add(
        daemon,
        p,
        "Never deploy with make deploy; production deploys go through the GitHub Actions "
        "release workflow only.",
        "--kind",
        "decision",
    )
    add(daemon, p, "The billing service stores invoices in PostgreSQL 16.", "--kind", "fact")
    for other in (  # a project holds more than the memories a prompt is about
        "Background jobs run on Celery with a Redis broker.",
        "The API returns errors as RFC 7807 problem+json documents.",
        "Frontend components are tested with Vitest and Testing Library.",
        "Log lines are structured JSON with a request id.",
        "Feature flags are created in LaunchDarkly with an owner.",
        "Time zones: store UTC in the database and convert at the edge.",
    ):
        add(daemon, p, other, "--kind", "fact")
    text = prompt(daemon, p, "How do I deploy the billing service to production?", "lex-1")
    assert "GitHub Actions release workflow" in text
    reply = preview(daemon, p, "How do I deploy the billing service to production?")
    chosen = {c["text"]: c for c in reply["chosen"]}
    correction = next(c for t, c in chosen.items() if t.startswith("Never deploy"))
    b = correction["score_breakdown"]
    assert b["relevance"] >= b["threshold"]
    assert b["lexical"] > b["semantic"]  # it got in on its words
    # The two disagree, without a trigger phrase, and not surely enough to supersede: both are
    # shown, the newer first, and marked.
    old = next(c for t, c in chosen.items() if t.startswith("Deploy to production"))
    assert correction["note"] == "newer" and old["note"] == "older: may be outdated"
    context = reply["context"]
    assert context.index("Never deploy") < context.index("Deploy to production")
    assert "[older: may be outdated]" in context


def test_a_contradiction_without_trigger_words_supersedes_the_older(
    daemon: DaemonProcess,
) -> None:
    p = project(daemon, "contra")
    old = add(daemon, p, "We use PostgreSQL 16 for the billing database.", "--kind", "decision")
    new = add(daemon, p, "The billing database is MySQL 8 now.", "--kind", "decision")
    shown = json.loads(daemon.memd("show", old, "--json").stdout)
    assert shown["status"] == "superseded" and shown["superseded_by"] == new
    text = prompt(daemon, p, "Which database does the billing service use?", "contra-1")
    assert "MySQL 8" in text and "PostgreSQL 16" not in text


def test_near_identical_memories_end_as_one(daemon: DaemonProcess) -> None:
    p = project(daemon, "dupes")
    ids = {
        add(daemon, p, text, "--kind", "fact")
        for text in (
            "We use PostgreSQL 16 as the primary database.",
            "We use PostgreSQL 16 as our primary database",
            "The primary database is PostgreSQL 16.",
        )
    }
    assert len(ids) == 1
    listed = json.loads(daemon.memd("list", "--project", p, "--json").stdout)
    texts = [m["text"] for m in listed if m["project"] == p]
    assert texts == ["We use PostgreSQL 16 as the primary database."]
    assert len(listed[0]["history"]) == 2


def test_search_explain_and_the_hook_tell_the_same_story(daemon: DaemonProcess) -> None:
    p = project(daemon, "story")
    add(daemon, p, "Feature flags are stored in LaunchDarkly, one project per environment.")
    question = "Where are feature flags stored?"
    found = daemon.request({"cmd": "search", "query": question, "cwd": p})["results"]
    chosen = preview(daemon, p, question)["chosen"]
    assert found and chosen
    by_id = {r["id"]: r["score_breakdown"] for r in found}
    for c in chosen:
        assert c["id"] in by_id
        for key in ("cosine", "semantic", "lexical", "relevance", "threshold"):
            assert c["score_breakdown"][key] == by_id[c["id"]][key], key
    # The CLI's --explain line carries the same relevance numbers.
    out = daemon.memd("search", question, "--project", p, "--explain")
    assert out.returncode == 0, out.stderr
    relevance = by_id[chosen[0]["id"]]["relevance"]
    assert f"relevance {relevance:.2f}" in out.stdout


def test_unrelated_prompts_inject_nothing_whatever_the_store_holds(
    daemon: DaemonProcess,
) -> None:
    p = project(daemon, "busy")
    for text in (
        "Background jobs run on Celery with a Redis broker.",
        "The API returns errors as RFC 7807 problem+json documents.",
        "We chose FastAPI over Flask for the public API.",
        "TODO: add rate limiting to the login endpoint.",
        "The user prefers short answers without emojis.",
    ):
        add(daemon, p, text)
    for n, unrelated in enumerate(
        (
            "Write a haiku about autumn leaves.",
            "What's the capital of Australia?",
            "thanks, that's all for today",
            "Explain how photosynthesis works in simple terms.",
        )
    ):
        assert prompt(daemon, p, unrelated, f"abstain-{n}") == "", unrelated
        reply = preview(daemon, p, unrelated)
        assert reply["context"] == "" and reply["reason"], reply


def test_an_english_only_model_abstains_on_unrelated_chinese_prompts(
    daemon: DaemonProcess,
) -> None:
    """The default model (MiniLM) cannot read Chinese: two unrelated Chinese sentences score a
    cosine as high as related English ones. Its cosines are ignored for Chinese pairs, so an
    unrelated Chinese prompt injects nothing, and a related one is found by its words."""
    p = project(daemon, "zh-shop")
    rules = (
        "接口报错时统一用 ElMessage 弹窗提示用户",
        "订单列表页的分页大小固定为二十条",
        "支付回调必须先验签再更新订单状态",
        "前端代码格式化用 Prettier，缩进两个空格",
    )
    ids = [add(daemon, p, text) for text in rules]
    for n, unrelated in enumerate(
        ("今天晚饭吃什么好？", "帮我写一首关于秋天的诗", "周末天气怎么样")
    ):
        reply = preview(daemon, p, unrelated)
        assert reply["context"] == "", (unrelated, reply["chosen"])
        assert prompt(daemon, p, unrelated, f"zh-abstain-{n}") == ""
    reply = preview(daemon, p, "支付回调的时候要先做什么？")
    assert [c["id"] for c in reply["chosen"]][:1] == [ids[2]], reply["chosen"]


def test_pinned_memories_that_do_not_fit_are_counted(daemon: DaemonProcess) -> None:
    p = project(daemon, "pins")
    texts = [
        "Never force-push to main; open a pull request and wait for the review of two people.",
        "Database migrations are written by hand with Alembic, never autogenerated blindly.",
        "Every public endpoint needs an OpenAPI example and a contract test before it merges.",
        "Use pnpm for the frontend packages; npm and yarn lockfiles are rejected by CI checks.",
        "Secrets live in Vault under kv/apps; environment files must never be committed at all.",
        "Log lines are structured JSON with a request id, written to stdout for the collector.",
        "Feature flags are created in LaunchDarkly with an owner and an expiry date on them.",
        "Frontend components are tested with Vitest and Testing Library, never with Enzyme.",
        "Docker images are built from distroless bases and scanned with Trivy before pushing.",
        "Time zones: store UTC in the database and convert only at the edge for display now.",
    ]
    why = (
        " This was agreed after an incident review; it applies to every service and every"
        " environment, and reviewers check it as well as an automated step in the pipeline."
    )
    texts = [t + why for t in texts]  # ten of these do not fit in a 2,500-character brief
    for text in texts:
        add(daemon, p, text, "--kind", "preference", "--pin")
    payload = {
        "session_id": "pins-1",
        "cwd": p,
        "source": "startup",
        "hook_event_name": "SessionStart",
        "transcript_path": "/nowhere.jsonl",
    }
    text = daemon.hook("session-start", payload).stdout
    assert len(text) <= 2500
    shown = sum(1 for t in texts if t in text)
    assert 0 < shown < 10
    m = re.search(r"\(\+(\d+) more pinned memor(?:y|ies) not shown here", text)
    assert m is not None, text
    assert int(m.group(1)) == 10 - shown


def test_no_two_items_in_a_block_cover_the_same_turn(daemon: DaemonProcess) -> None:
    """Overlapping excerpt windows (turns 1-3 and 2-4) and a decision from turn 2: each turn
    is shown once."""
    p = project(daemon, "windows")
    turns = [
        "user: The nightly export job keeps timing out on the reports database.",
        "assistant: The export job runs one huge query; the reports database kills it at 30 s.",
        "user: Then we split the export job into batches of 10,000 rows per query.",
        "assistant: Done: the export job now pages through the reports table in batches.",
    ]
    session = "sess-windows"

    def source(n: int) -> dict[str, str]:
        return {"session_id": session, "uuid": f"turn-{n}", "timestamp": "2026-11-20T10:00:00Z"}

    lines = []
    for first in (0, 1):
        window = turns[first : first + 3]
        lines.append(
            {
                "text": "[2026-11-20] " + "\n".join(window),
                "kind": "excerpt",
                "project": p,
                "sources": [source(first + i) for i in range(3)],
            }
        )
    lines.append(
        {
            "text": "We split the nightly export job into batches of 10,000 rows per query.",
            "kind": "decision",
            "project": p,
            "sources": [source(2)],
        }
    )
    path = daemon.root / "windows.jsonl"  # type: ignore[attr-defined]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    out = daemon.memd("import", str(path))
    assert out.returncode == 0, out.stderr
    reply = preview(daemon, p, "Why did the nightly export job time out, and how was it fixed?")
    assert reply["chosen"], reply
    seen: list[str] = []
    for c in reply["chosen"]:
        seen.extend(c["turns"])
    assert len(seen) == len(set(seen)), reply["chosen"]
    assert "timing out" in reply["context"] or "kills it at 30 s" in reply["context"]
    for c in reply["chosen"]:  # an excerpt cites only the turns it still shows
        if c["kind"] == "excerpt":
            said = [t.split(": ", 1)[1] for t in turns]  # the block names Claude "claude"
            shown_turns = {f"turn-{n}" for n, t in enumerate(said) if t[:40] in c["shown"]}
            assert set(c["turns"]) == shown_turns, c


def test_the_hook_fills_its_block_with_whole_turns(daemon: DaemonProcess) -> None:
    """The turn that answers the prompt is shown whole (a few sentences, not just the one
    that shares its words), and the room left goes to its neighbours, each turn once."""
    p = project(daemon, "turns")
    session = "sess-turns"
    turns = [
        "user: The integration tests hang forever on the CI runner since yesterday.",
        "assistant: The hang comes from the Postgres container: it waits for a volume that "
        "the runner never mounts. I pinned the service to the tmpfs volume instead and set a "
        "health check with a 30 second timeout. The suite finishes in four minutes now, and a "
        "stuck container fails the job instead of blocking the queue for hours.",
        "user: Great, then also add that health check to the staging compose file.",
    ]
    assert 280 < len(turns[1]) <= 500
    record = {
        "text": "[2026-11-21] " + "\n".join(turns),
        "kind": "excerpt",
        "project": p,
        "sources": [
            {"session_id": session, "uuid": f"ci-{n}", "timestamp": "2026-11-21T09:00:00Z"}
            for n in range(3)
        ],
    }
    path = daemon.root / "turns.jsonl"  # type: ignore[attr-defined]
    path.write_text(json.dumps(record) + "\n")
    out = daemon.memd("import", str(path))
    assert out.returncode == 0, out.stderr
    reply = preview(daemon, p, "Why did the integration tests hang on the CI runner?")
    excerpts = [c for c in reply["chosen"] if c["kind"] == "excerpt"]
    assert len(excerpts) == 1, reply
    shown = excerpts[0]["shown"]
    assert turns[1].split(": ", 1)[1] in shown  # the whole turn, every sentence
    assert turns[0] in shown and turns[2] in shown  # the neighbours fit in the budget
    assert "/ claude: The hang comes from" in shown  # who said what, Claude's turn as "claude"
    assert (
        excerpts[0]["day"] == "2026-11-21"
        and "2026-11-21:\n- user: The integration" in (reply["context"])
    )  # the day once, on its own line above the excerpts of that day
    assert excerpts[0]["turns"] == ["ci-0", "ci-1", "ci-2"]
    assert len(reply["context"]) <= 1500


def test_the_hook_never_blocks_when_the_project_is_empty(daemon: DaemonProcess) -> None:
    p = project(daemon, "empty")
    assert prompt(daemon, p, "How do we deploy?", "empty-1") == ""
    assert preview(daemon, p, "How do we deploy?")["reason"] == "no candidates in this project"
    assert os.path.isdir(p)


def test_a_prompt_is_embedded_once_per_hook(daemon: DaemonProcess) -> None:
    """The daemon starts the prompt's embedding as it reads the hook request, and the recall
    joins it: one model call per prompt, not two."""
    proj = project(daemon, "embed-once")
    add(daemon, proj, "The release checklist lives in docs/release.md.")

    def embedded() -> int:
        reply = daemon.request({"cmd": "status"})
        assert reply["ok"], reply
        return int(reply["injections"]["embedded_queries"])

    before = embedded()
    assert "release.md" in prompt(daemon, proj, "Where is the release checklist kept?", "e1")
    assert embedded() - before == 1
    prompt(daemon, proj, "What does the release checklist say about tags?", "e1")
    assert embedded() - before == 2


def test_two_lint_fixes_both_stand_and_stay_out_of_the_brief(daemon: DaemonProcess) -> None:
    """Two lint failures fixed by suppressing their rules (:mod:`memd.extract.lintfixes`) read
    alike but both happened: neither is marked older. The brief's latest fixes are fixes of
    behaviour, not rules suppressed."""
    p = project(daemon, "lintfix")
    add(daemon, p, "The retry loop spun forever because the backoff sleep was never awaited; "
        "fixed by awaiting asyncio.sleep in retry.py.", "--kind", "bugfix")  # fmt: skip
    lint = ("--kind", "bugfix", "--topic", "lint exceptions")
    add(daemon, p, "Lint gosec failed: `cmd/cli/hooks.go:249:3: G104: Errors unhandled (gosec)`. "
        "Fixed with `//nolint:errcheck,gosec // best effort` in `cmd/cli/hooks.go`.", *lint)  # fmt: skip
    add(daemon, p, "Lint tparallel failed: `cmd/cli/hooks_test.go:442:6: TestInstall should call "
        "t.Parallel on the top level as well as its subtests (tparallel)`. Fixed with "
        "`//nolint:tparallel // Parent uses t.Chdir()` in `cmd/cli/hooks_test.go`.", *lint)  # fmt: skip
    reply = preview(
        daemon, p, "Why do the hooks files have nolint comments for gosec and tparallel?"
    )
    lints = [c for c in reply["chosen"] if c["text"].startswith("Lint ")]
    assert len(lints) == 2 and all(not c["note"] for c in lints), lints
    payload = {"session_id": "lint-brief", "cwd": p, "hook_event_name": "SessionStart",
               "source": "startup", "transcript_path": "/nowhere.jsonl"}  # fmt: skip
    brief = daemon.hook("session-start", payload).stdout
    assert "retry loop" in brief and "Lint " not in brief, brief
