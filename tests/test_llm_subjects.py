"""The LLM backends fill a memory's subject and value (#31): a real daemon extracts with the
anthropic backend from a fake Messages API on 127.0.0.1 (recorded answers, matched by the
transcript text they answer), reading a developer's sessions newest first.

- The same subject with another value: the later statement replaces the earlier, by the
  transcripts' time, though their words share no change cue ("kicks off at 02:30 UTC").
- Subjects without a word in common are different things: all kept.
- A ``supersedes`` hint names the older memory it replaces; the same pair without the hint
  (the control) keeps both.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from daemon_process import DaemonProcess, served
from test_current_truth import MARK, ingest_history, prompt_block, stale_as_current

from memd.extract.reply import TOOL_NAME, parse_candidates
from memd.models import Memory, Source
from memd.store import subjects

FAKE_API = Path(__file__).parent / "e2e" / "fake_anthropic.py"


def said(kind: str, text: str, source: str, **fields: str) -> dict[str, Any]:
    return {"kind": kind, "text": text, "sources": [source], "importance": 0.7, **fields}


# Each rule answers the extraction of the session whose transcript holds ``when``.
RULES: list[tuple[str, list[dict[str, Any]]]] = [
    (
        "the nightly batch kicks off at 01:00 UTC",
        [
            said(
                "fact",
                "The nightly batch starts at 01:00 UTC",
                "t1",
                subject="start time of the nightly batch",
                value="01:00 UTC",
            )
        ],
    ),
    (
        "Heads-up from ops",
        [
            said(
                "fact",
                "The nightly ingest batch kicks off at 02:30 UTC",
                "t1",
                subject="start time of the nightly ingest batch",
                value="02:30 UTC",
            )
        ],
    ),
    (
        "供应商关系由张伟负责",
        [said("fact", "供应商关系由张伟负责", "t1", subject="供应商关系的负责人", value="张伟")],
    ),
    (
        "以后供应商那边找李娜",
        [
            said(
                "fact",
                "张伟调岗了，以后供应商那边找李娜",
                "t1",
                subject="供应商关系的负责人",
                value="李娜",
            )
        ],
    ),
    (
        "set up the Python tooling",
        [
            said("fact", "The project uses ruff", "t1", subject="linter", value="ruff"),
            said("fact", "The project uses uv", "t1", subject="package manager", value="uv"),
            said("fact", "The project uses pyright", "t1", subject="type checker", value="pyright"),
        ],
    ),
    (
        "Where do release notes go?",
        [said("decision", "Release notes are written in CHANGES.rst", "t2")],
    ),
    (
        "Put release notes in the GitHub release description from now on",
        [
            said(
                "decision",
                "Release notes go in the GitHub release description",
                "t1",
                supersedes="Release notes are written in CHANGES.rst",
            )
        ],
    ),
    (
        "Where should the release notes live?",
        [said("decision", "Release notes are written in CHANGES.rst", "t2")],
    ),
    (
        "Write the release notes in the GitHub release description",
        [said("decision", "Release notes go in the GitHub release description", "t1")],
    ),
]


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DaemonProcess]:
    root = tmp_path_factory.mktemp("llm-subjects")
    script = root / "script.json"
    script.write_text(
        json.dumps(
            [
                {"when": when, "reply": {"tool_use": {"name": TOOL_NAME, "input": {"memories": m}}}}
                for when, m in RULES
            ],
            ensure_ascii=False,
        )
    )
    port_file = root / "port"
    args = ["--log", str(root / "api.log"), "--script", str(script), "--port-file", str(port_file)]
    api = subprocess.Popen([sys.executable, str(FAKE_API), *args], stdout=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 20
        while not port_file.exists():
            assert time.monotonic() < deadline and api.poll() is None, "the fake API did not start"
            time.sleep(0.05)
        env = {
            "MEMD_EXTRACTOR": "anthropic",
            "MEMD_ANTHROPIC_BASE_URL": f"http://127.0.0.1:{port_file.read_text()}",
            "MEMD_ANTHROPIC_API_KEY": "test-key-for-loopback",
        }
        with served(root, **env) as proc:
            proc.api_log = root / "api.log"  # type: ignore[attr-defined]
            yield proc
    finally:
        api.terminate()
        api.wait(10)


def memories(daemon: DaemonProcess, cwd: str) -> list[dict[str, Any]]:
    listed = daemon.request({"cmd": "list", "project": cwd, "include_all": True, "limit": 500})
    return [m for m in listed.get("memories") or [] if m["kind"] != "excerpt"]


def test_the_same_subject_with_another_value_replaces_it(daemon: DaemonProcess) -> None:
    cwd = ingest_history(
        daemon,
        "llm schedule",
        [
            ("2026-03-02", [("user", "FYI the nightly batch kicks off at 01:00 UTC."), ("assistant", "Noted.")]),
            ("2026-04-13", [("user", "Heads-up from ops: the nightly ingest batch kicks off at 02:30 UTC."), ("assistant", "Thanks.")]),
        ],
    )  # fmt: skip
    requests = [json.loads(line) for line in daemon.api_log.read_text().splitlines()]  # type: ignore[attr-defined]
    assert any("kicks off at 02:30 UTC" in json.dumps(r["body"]) for r in requests)
    status = {m["text"]: m["status"] for m in memories(daemon, cwd)}
    assert status == {
        "The nightly batch starts at 01:00 UTC": "superseded",
        "The nightly ingest batch kicks off at 02:30 UTC": "active",
    }
    (new,) = [m for m in memories(daemon, cwd) if m["status"] == "active"]
    assert (new["subject"], new["value"]) == ("start time of the nightly ingest batch", "02:30 UTC")
    shown = daemon.memd("show", new["id"])
    assert shown.returncode == 0, shown.stderr
    assert "subject: start time of the nightly ingest batch = 02:30 UTC" in shown.stdout
    assert "start time of the nightly batch was “01:00 UTC”" in shown.stdout, shown.stdout
    block = prompt_block(daemon, cwd, "What time does the nightly batch start?")
    assert "02:30 UTC" in block, block
    assert not stale_as_current(block, ["01:00"], ["02:30"]), block


def test_the_same_subject_in_chinese(daemon: DaemonProcess) -> None:
    cwd = ingest_history(
        daemon,
        "llm owner zh",
        [
            ("2026-05-06", [("user", "供应商关系由张伟负责，有问题找他。"), ("assistant", "好的。")]),
            ("2026-06-18", [("user", "张伟调岗了，以后供应商那边找李娜。"), ("assistant", "明白。")]),
        ],
    )  # fmt: skip
    status = {m["text"]: m["status"] for m in memories(daemon, cwd)}
    assert status == {
        "供应商关系由张伟负责": "superseded",
        "张伟调岗了，以后供应商那边找李娜": "active",
    }
    block = prompt_block(daemon, cwd, "供应商关系现在由谁负责？")
    assert "李娜" in block, block
    assert not stale_as_current(block, ["张伟"], ["李娜"]), block


def test_subjects_without_a_common_word_are_all_kept(daemon: DaemonProcess) -> None:
    cwd = ingest_history(
        daemon,
        "llm tools",
        [("2026-02-01", [("user", "Please set up the Python tooling for this repo."), ("assistant", "Done: ruff, uv and pyright.")])],
    )  # fmt: skip
    found = memories(daemon, cwd)
    assert sorted(m["value"] for m in found) == ["pyright", "ruff", "uv"]
    assert {m["status"] for m in found} == {"active"}
    block = prompt_block(daemon, cwd, "Which type checker does this project use?")
    assert "pyright" in block and not MARK.search(block), block


def test_a_supersedes_hint_names_the_memory_it_replaces(daemon: DaemonProcess) -> None:
    hinted = ingest_history(
        daemon,
        "llm release notes",
        [
            ("2026-01-05", [("user", "Where do release notes go?"), ("assistant", "Release notes are written in CHANGES.rst.")]),
            ("2026-02-09", [("user", "Put release notes in the GitHub release description from now on."), ("assistant", "OK.")]),
        ],
    )  # fmt: skip
    control = ingest_history(
        daemon,
        "llm release notes control",
        [
            ("2026-01-05", [("user", "Where should the release notes live?"), ("assistant", "Release notes are written in CHANGES.rst.")]),
            ("2026-02-09", [("user", "Write the release notes in the GitHub release description."), ("assistant", "OK.")]),
        ],
    )  # fmt: skip
    old, new = (
        "Release notes are written in CHANGES.rst",
        "Release notes go in the GitHub release description",
    )
    assert {m["text"]: m["status"] for m in memories(daemon, hinted)} == {
        old: "superseded",
        new: "active",
    }
    # Without the hint the store's own reading keeps both: the hint decided.
    assert {m["text"]: m["status"] for m in memories(daemon, control)} == {
        old: "active",
        new: "active",
    }


def memory(text: str, subject: str, value: str, day: str = "2026-03-01") -> Memory:
    return Memory(
        text=text,
        project="/p",
        subject=subject,
        value=value,
        sources=[Source("s", text[:8], f"{day}T10:00:00Z")],
    )


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ("start time of the nightly batch", "start time of the nightly ingest batch", True),
        ("nightly batch start time", "start time of the nightly batch", True),
        ("Python version", "Python version of the ingest box", False),
        ("供应商关系的负责人", "供应商关系负责人", True),
        ("linter", "package manager", False),
        ("", "linter", False),
    ],
)
def test_same_subject(a: str, b: str, same: bool) -> None:
    assert subjects.same_subject(a, b) is same


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ("02:30", "02:30 UTC", True),
        ("3.10", "3.10.4", True),
        ("3.1", "3.10", False),
        ("eu-west-1", "eu-central-1", False),
        ("Tomás", "Inês", False),
        ("张伟", "李娜", False),
    ],
)
def test_same_value(a: str, b: str, same: bool) -> None:
    assert subjects.same_value(a, b) is same


def test_declared_subjects_decide_only_when_both_are_named() -> None:
    old = memory("The batch starts at 01:00", "batch start time", "01:00")
    assert subjects.declared(memory("The batch starts at 02:30", "batch start time", "02:30"), old)
    assert (
        subjects.declared(memory("Batch at 01:00 UTC", "batch start time", "01:00 UTC"), old)
        is False
    )
    assert subjects.declared(memory("We use uv", "package manager", "uv"), old) is False
    assert subjects.declared(memory("The batch starts at 02:30", "", ""), old) is None
    assert (
        subjects.declared(memory("Batch window ends 04:00", "batch end time", "04:00"), old) is None
    )


def test_an_llm_value_the_text_does_not_state_is_dropped() -> None:
    ids = {"t1": "u1"}
    raw = {
        "memories": [
            {"text": "The box runs Python 3.11", "sources": ["t1"], "subject": "Python version", "value": 3.11},
            {"text": "The box runs Python 3.11", "sources": ["t1"], "subject": "Python version", "value": "3.12"},
            {"text": "The box runs Python 3.11", "sources": ["t1"], "value": "3.11"},
        ]
    }  # fmt: skip
    got = [(c.subject, c.value) for c in parse_candidates(raw, ids)]
    assert got == [("Python version", "3.11"), ("", ""), ("", "")]
