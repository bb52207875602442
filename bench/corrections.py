"""Current truth after a correction: is the current value in the block, and is a stale value
ever presented as current?

The corrected-facts set (``tests/labelled/corrections.jsonl`` for tuning,
``tests/labelled/corrections_heldout.jsonl`` held out, then read once its first figure was
taken; ``corrections_heldout2.jsonl`` written later, blind, read in session 18;
``corrections_heldout3.jsonl`` written blind in session 18, read there after its blind run;
``corrections_heldout4.jsonl`` written blind in session 19, read in session 20;
``corrections_heldout5.jsonl`` written blind in session 20, read in session 21;
``corrections_heldout6.jsonl`` written blind in session 21, read there after its blind run;
``corrections_heldout7.jsonl`` written blind in session 21, run once at its end, read in 22;
``corrections_heldout8.jsonl`` written blind in session 22, its baseline taken before any change;
``corrections_heldout9.jsonl`` written blind in session 23, its baseline taken on the session's
first commit; ``corrections_heldout10.jsonl`` written blind in session 24, after its changes, its
baseline taken on the session's first commit; ``corrections_heldout11.jsonl`` written blind
in session 25, its baseline taken on the session's first commit; ``corrections_heldout12.jsonl``
written blind at the end of session 25, its baseline taken on session 26's first commit, read
there; ``corrections_heldout13.jsonl`` written blind at the start of session 26, run once before
its last two changes, then read; ``corrections_heldout14.jsonl`` written blind at the start of
session 27, run once near its end, then read; ``corrections_heldout15.jsonl`` written blind at
the start of session 28, its baseline taken on the session's first commit, run once near its
end, then read; ``corrections_heldout16.jsonl`` written blind in session 28 after the
fifteenth was read, its baseline taken on the session's first commit (``8d3c90b``), run once
at the session's end, then read; ``corrections_heldout17.jsonl`` written blind at the start of
session 29, its baseline taken on the session's first commit (``7a554c2``), run once blind
(``34d7598``), then read; ``corrections_heldout18.jsonl`` written blind at the start of session
30, its baseline taken on the session's first commit (``32c13cd``), run once blind (``a460893``),
then read; ``corrections_heldout19.jsonl`` written blind in session 30, its baseline taken on ``32c13cd``,
run once blind (``4a954d1``), then read; ``corrections_heldout20.jsonl`` written blind late in
session 30, its totals taken at ``32c13cd`` and at the session's end, kept unread, run once
blind in session 31; ``corrections_heldout21.jsonl`` written blind at the start of session 31,
its totals taken on the session's first commit (``2477a11``), run once blind (``5ffe40a``), then
read in session 32; ``corrections_heldout22.jsonl`` written blind at the start of session 32,
its totals taken on the session's first commit (``b465d25``), run once blind (``2915d5c``), then
read; ``corrections_heldout23.jsonl`` written blind at the start of session 33, its totals taken
on the session's first commit (``6cae275``), run once blind (``57eed5e``), then read;
``corrections_heldout24.jsonl`` written blind in session 33, its totals taken on ``6cae275``,
run once blind at the session's end (``abc11cc``), read in session 34;
``corrections_heldout25.jsonl`` written blind at the start of session 34 and
``corrections_heldout26.jsonl`` written blind in it, their totals taken on the session's first
commit (``c6251e0``), each run once blind (``8f48399``), then read;
``corrections_heldout27.jsonl`` written blind at the start of session 35, its totals taken on
the session's first commit (``f49edc3``), run once blind at the session's end;
``corrections_heldout28.jsonl`` written blind at the start of session 36, its totals taken on
the session's first commit (``a155574``), run once blind at the session's end, read in
session 37; ``corrections_heldout29.jsonl`` written blind in session 37, its totals taken on the
session's first commit (``9b3473a``), run once blind (``ebcb99b``), then read;
``corrections_heldout30.jsonl`` written blind later in session 37, its totals taken on
``9b3473a``, run once blind at the session's end, read in session 38;
``corrections_heldout31.jsonl`` written blind at the start of session 38, its totals taken on
the session's first commit (``3c74184``), run once blind at the session's end, read in session
39; ``corrections_heldout32.jsonl`` written blind at the start of session 39, its totals taken
on the session's first commit (``8db64d7``), run once blind at the session's end;
all by people who had not read the supersession code) holds cases of two types:

- ``change``: a value stated in one session and changed in a later one (a schedule, a version
  and its rollback, an owner, a store, a channel, a city...), then a question about it;
- ``keep-both``: several values that are all true at once (three tools, two ports), which must
  not supersede each other.

Each case is one project. Its sessions are written as Claude Code transcripts at their dates
and ingested into a private daemon **newest first** (so "later" can only come from the
transcript's time, not from the order of reading), then the prompt hook's block (``context``,
at the prompt budget) is read for the case's question. Reported:

- **current value in the block**: every group of spellings in ``current`` occurs in it;
- **stale presented as current**: a line of the block carries a stale spelling, no current
  spelling and no mark (``superseded``, ``until``, ``may be outdated``, ``no longer``, ``was``);
  a line such as "moved from 01:00 to 02:30" names both and is not counted;
- **a value kept marked** (keep-both cases): a line naming one of the values that all hold
  carries an ``[until …]`` or a ``[may be outdated …]`` mark.

Usage: ``.venv/bin/python bench/corrections.py [--split tuning|heldout] [--details FILE]``;
``MEMD_BENCH_CHECKOUT=/path`` runs another checkout's daemon (figures before a change). Read the
held-out split's details only after the last change they could influence.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import tempfile
import uuid
from collections.abc import Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT, append_section, markdown_table
from realwork import Daemon, found

SPLITS = {
    "tuning": ROOT / "tests" / "labelled" / "corrections.jsonl",
    "heldout": ROOT / "tests" / "labelled" / "corrections_heldout.jsonl",
    "heldout2": ROOT / "tests" / "labelled" / "corrections_heldout2.jsonl",
    "heldout3": ROOT / "tests" / "labelled" / "corrections_heldout3.jsonl",
    "heldout4": ROOT / "tests" / "labelled" / "corrections_heldout4.jsonl",
    "heldout5": ROOT / "tests" / "labelled" / "corrections_heldout5.jsonl",
    "heldout6": ROOT / "tests" / "labelled" / "corrections_heldout6.jsonl",
    "heldout7": ROOT / "tests" / "labelled" / "corrections_heldout7.jsonl",
    "heldout8": ROOT / "tests" / "labelled" / "corrections_heldout8.jsonl",
    "heldout9": ROOT / "tests" / "labelled" / "corrections_heldout9.jsonl",
    "heldout10": ROOT / "tests" / "labelled" / "corrections_heldout10.jsonl",
    "heldout11": ROOT / "tests" / "labelled" / "corrections_heldout11.jsonl",
    "heldout12": ROOT / "tests" / "labelled" / "corrections_heldout12.jsonl",
    "heldout13": ROOT / "tests" / "labelled" / "corrections_heldout13.jsonl",
    "heldout14": ROOT / "tests" / "labelled" / "corrections_heldout14.jsonl",
    "heldout15": ROOT / "tests" / "labelled" / "corrections_heldout15.jsonl",
    "heldout16": ROOT / "tests" / "labelled" / "corrections_heldout16.jsonl",
    "heldout17": ROOT / "tests" / "labelled" / "corrections_heldout17.jsonl",
    "heldout18": ROOT / "tests" / "labelled" / "corrections_heldout18.jsonl",
    "heldout19": ROOT / "tests" / "labelled" / "corrections_heldout19.jsonl",
    "heldout20": ROOT / "tests" / "labelled" / "corrections_heldout20.jsonl",
    "heldout21": ROOT / "tests" / "labelled" / "corrections_heldout21.jsonl",
    "heldout22": ROOT / "tests" / "labelled" / "corrections_heldout22.jsonl",
    "heldout23": ROOT / "tests" / "labelled" / "corrections_heldout23.jsonl",
    "heldout24": ROOT / "tests" / "labelled" / "corrections_heldout24.jsonl",
    "heldout25": ROOT / "tests" / "labelled" / "corrections_heldout25.jsonl",
    "heldout26": ROOT / "tests" / "labelled" / "corrections_heldout26.jsonl",
    "heldout27": ROOT / "tests" / "labelled" / "corrections_heldout27.jsonl",
    "heldout28": ROOT / "tests" / "labelled" / "corrections_heldout28.jsonl",
    "heldout29": ROOT / "tests" / "labelled" / "corrections_heldout29.jsonl",
    "heldout30": ROOT / "tests" / "labelled" / "corrections_heldout30.jsonl",
    "heldout31": ROOT / "tests" / "labelled" / "corrections_heldout31.jsonl",
    "heldout32": ROOT / "tests" / "labelled" / "corrections_heldout32.jsonl",
}
TURN_SECONDS = 90
MARKS = re.compile(
    r"superseded|\buntil\b|may be outdated|no longer|\bwas\b|\bold value\b|\bolder\b|"
    r"已被取代|之前|原来|曾经|过时"
)


def load(split: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in SPLITS[split].read_text().splitlines() if line.strip()]


def transcript(case: dict[str, Any], number: int, session: dict[str, Any], cwd: str) -> str:
    """One session as Claude Code JSONL lines, its turns from 10:00 on its date."""
    sid = str(uuid.uuid5(uuid.NAMESPACE_URL, f"memd-corrections/{case['id']}/{number}"))
    start = datetime.fromisoformat(session["date"] + "T10:00:00+00:00")
    lines, parent = [], None
    for i, turn in enumerate(session["turns"]):
        line_id = str(uuid.uuid5(uuid.NAMESPACE_URL, f"{sid}/{i}"))
        at = (start + timedelta(seconds=TURN_SECONDS * i)).isoformat(timespec="milliseconds")
        envelope: dict[str, Any] = {
            "parentUuid": parent,
            "isSidechain": False,
            "userType": "external",
            "cwd": cwd,
            "sessionId": sid,
            "version": "2.0.14",
            "gitBranch": "main",
            "uuid": line_id,
            "timestamp": at.replace("+00:00", "Z"),
        }
        if turn["role"] == "user":
            envelope["type"] = "user"
            envelope["message"] = {"role": "user", "content": turn["text"]}
        else:
            envelope["type"] = "assistant"
            envelope["message"] = {
                "id": "msg_" + line_id.replace("-", "")[:24],
                "type": "message",
                "role": "assistant",
                "model": "claude-sonnet-4-5",
                "content": [{"type": "text", "text": turn["text"]}],
                "stop_reason": "end_turn",
                "usage": {"input_tokens": 0, "output_tokens": 0},
            }
        lines.append(json.dumps(envelope, ensure_ascii=False))
        parent = line_id
    return "\n".join(lines) + "\n"


def stale_as_current(block: str, case: dict[str, Any]) -> list[str]:
    """Block lines that present a stale value as current (see the module's docstring)."""
    current: list[str] = [s for group in case["current"] for s in group]
    bad = []
    for line in block.splitlines():
        if not any(found(group, line) for group in case["stale"]):
            continue
        if any(found(s, line) for s in current) or MARKS.search(line.lower()):
            continue
        bad.append(line)
    return bad


def wrongly_marked(block: str, case: dict[str, Any]) -> list[str]:
    """For a keep-both case, block lines that mark one of its values as replaced (every value
    holds, so no line naming one may carry an ``[until …]`` or ``[may be outdated …]`` mark)."""
    if case["type"] != "keep-both":
        return []
    values = [s for group in case["current"] for s in group]
    return [
        line
        for line in block.splitlines()
        if ("[until " in line or "[may be outdated" in line) and found(values, line)
    ]


def judge(block: str, case: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": case["id"],
        "lang": case["lang"],
        "type": case["type"],
        "question": case["question"],
        "current_in_block": all(found(group, block) for group in case["current"]),
        "stale_lines": stale_as_current(block, case),
        "wrongly_marked": wrongly_marked(block, case),
        "block": block,
    }


def run(split: str, keep: Path | None = None) -> list[dict[str, Any]]:
    cases = load(split)
    work = Path(tempfile.mkdtemp(prefix="memd-corrections-", dir=keep))
    daemon = Daemon(work)
    try:
        cwds = {}
        for case in cases:
            project = work / "projects" / case["id"]
            (project / ".git").mkdir(parents=True)
            cwd = str(project.resolve())
            cwds[case["id"]] = cwd
            folder = work / "transcripts" / re.sub(r"[/.]", "-", cwd)
            folder.mkdir(parents=True)
            order = sorted(enumerate(case["sessions"]), key=lambda p: p[1]["date"], reverse=True)
            for number, session in order:  # newest first
                path = folder / f"s{number}.jsonl"
                path.write_text(transcript(case, number, session, cwd))
                daemon.request({"cmd": "ingest", "paths": [str(path)]}, timeout=600)
        rows = []
        for case in cases:
            reply = daemon.request(
                {"cmd": "context", "cwd": cwds[case["id"]], "prompt": case["question"]}
            )
            rows.append(judge(reply.get("context") or "", case))
        return rows
    finally:
        daemon.stop()
        if keep is None:
            shutil.rmtree(work, ignore_errors=True)


def table(rows: Sequence[dict[str, Any]], split: str) -> str:
    def share(sel: Sequence[dict[str, Any]]) -> str:
        if not sel:
            return "-"
        ok = sum(r["current_in_block"] for r in sel)
        return f"{ok / len(sel):.3f} ({ok}/{len(sel)})"

    groups = [
        ("all", rows),
        ("changes", [r for r in rows if r["type"] == "change"]),
        ("keep-both", [r for r in rows if r["type"] == "keep-both"]),
        ("English", [r for r in rows if r["lang"] == "en"]),
        ("Chinese", [r for r in rows if r["lang"] == "zh"]),
    ]
    out = [
        (
            name,
            share(sel),
            sum(bool(r["stale_lines"]) for r in sel),
            sum(bool(r.get("wrongly_marked")) for r in sel),
        )
        for name, sel in groups
    ]
    heads = ("current value in the block", "stale presented as current", "a value kept marked")
    return markdown_table((f"cases ({split})", *heads), out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--split", choices=sorted(SPLITS), default="tuning")
    ap.add_argument("--details", type=Path, help="write every case's block and verdict here")
    ap.add_argument("--keep", type=Path, help="keep the work folder under this directory")
    ap.add_argument(
        "--record", action="store_true", help="append the table to bench/results/log.md"
    )
    args = ap.parse_args()
    rows = run(args.split, args.keep)
    text = table(rows, args.split)
    print(text)
    for r in rows:
        if not r["current_in_block"] or r["stale_lines"] or r["wrongly_marked"]:
            print(
                f"- {r['id']}: current={'yes' if r['current_in_block'] else 'NO'} "
                f"stale_lines={len(r['stale_lines'])} wrongly_marked={len(r['wrongly_marked'])}"
            )
    if args.details:
        args.details.write_text(json.dumps(rows, indent=1, ensure_ascii=False))
    if args.record:
        append_section(f"Corrected facts ({args.split} split; bench/corrections.py)", text)


if __name__ == "__main__":
    main()
