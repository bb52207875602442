"""kill -9 during ingestion, many times: nothing lost, nothing doubled.

The memories after repeated crashes and a final complete run must equal those of an
uninterrupted run over the same transcripts.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

MEMD = str(Path(sys.executable).parent / "memd")

TOPICS = [
    ("We decided to use PostgreSQL for the orders service because we need transactions.", "Noted."),
    (
        "I prefer small pull requests, never more than 400 lines.",
        "Understood, I will keep PRs small.",
    ),
    ("TODO: we still need to add retries to the webhook sender.", "I'll leave a TODO in the code."),
    ("The bug was caused by a race in the cache warmer; fixed by taking the lock first.", "Good."),
    ("我们决定采用 Redis 作为会话存储，因为它支持过期。", "好的，已经记录。"),
    ("Let's switch the linter from flake8 to ruff.", "Switched: ruff now runs in CI."),
    ("Please always run the tests with pytest -q before committing.", "Will do."),
]


def write_corpus(root: Path, sessions: int, turns: int, seed: int = 3) -> None:
    rng = random.Random(seed)
    for s in range(sessions):
        project = root / "repos" / f"svc{s % 4}"
        (project / ".git").mkdir(parents=True, exist_ok=True)
        folder = root / "projects" / str(project).replace("/", "-")
        folder.mkdir(parents=True, exist_ok=True)
        sid = str(uuid.UUID(int=rng.getrandbits(128)))
        lines, parent = [], None
        for t in range(turns):
            user, answer = rng.choice(TOPICS)
            for role, text in (
                ("user", f"{user} (step {t} of session {s})"),
                ("assistant", answer),
            ):
                uid = str(uuid.UUID(int=rng.getrandbits(128)))
                message: dict[str, object] = {"role": role, "content": text}
                if role == "assistant":
                    message = {
                        "id": f"msg_{uid[:8]}",
                        "role": "assistant",
                        "content": [{"type": "text", "text": text}],
                    }
                lines.append(
                    {
                        "type": role,
                        "uuid": uid,
                        "parentUuid": parent,
                        "sessionId": sid,
                        "timestamp": f"2026-05-{1 + s % 27:02d}T10:{t % 60:02d}:00.000Z",
                        "cwd": str(project),
                        "version": "2.1.0",
                        "entrypoint": "cli",
                        "isSidechain": False,
                        "message": message,
                    }
                )
                parent = uid
        (folder / f"{sid}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))


def snapshot(env: dict[str, str]) -> list[tuple]:
    run = subprocess.run(
        [MEMD, "list", "--all-projects", "--all", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    return sorted(
        (
            m["id"],
            m["text"],
            m["kind"],
            m["project"],
            m["status"],
            m["superseded_by"],
            m["hits"],
            tuple(sorted(s["uuid"] for s in m["sources"])),
        )
        for m in json.loads(run.stdout)
    )


def ingest(env: dict[str, str], corpus: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [MEMD, "ingest", str(corpus), "--json"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.slow
def test_kill_9_during_ingest_loses_and_doubles_nothing(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    write_corpus(corpus, sessions=10, turns=8)
    base = {k: v for k, v in os.environ.items() if k != "MEMD_HOME"}

    reference_env = {**base, "MEMD_HOME": str(tmp_path / "reference")}
    ref = ingest(reference_env, corpus / "projects")
    out, err = ref.communicate(timeout=300)
    assert ref.returncode == 0, err
    assert json.loads(out)["memories_added"] > 0
    expected = snapshot(reference_env)

    crash_env = {**base, "MEMD_HOME": str(tmp_path / "crashed")}
    rng = random.Random(int(os.environ.get("MEMD_CRASH_SEED", "20261129")))
    kills = 0
    for _ in range(8):
        proc = ingest(crash_env, corpus / "projects")
        time.sleep(rng.uniform(0.5, 4.0))
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            kills += 1
        proc.communicate(timeout=60)
    assert kills >= 4, "most runs should have been killed mid-way"
    final = ingest(crash_env, corpus / "projects")
    out, err = final.communicate(timeout=300)
    assert final.returncode == 0, err
    assert snapshot(crash_env) == expected

    again = ingest(crash_env, corpus / "projects")
    out, err = again.communicate(timeout=300)
    report = json.loads(out)
    assert report["turns"] == 0 and report["memories_added"] == 0
    assert snapshot(crash_env) == expected
