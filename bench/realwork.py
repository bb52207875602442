"""memd on real Claude Code work: what it stores from real sessions and what the hooks inject.

The labelled set (``tests/labelled/realwork/`` for tuning, ``tests/labelled/realwork_heldout/``
held out) lists, per real session of ``tests/real_sessions/``, what a senior engineer continuing
the work needs (typed items with key terms), probes (a prompt of the next session and the key
terms its context must carry) and unrelated prompts. This harness ingests the sessions of one
split into a private daemon (``memd serve`` on a temporary home, ``memd ingest`` through its
socket) and reports:

- **probe recall**: the share of a probe's key terms found in what the prompt hook injects
  (``context``, at the prompt budget), and in that plus the session-start brief;
- **unrelated prompts left empty**: the share whose prompt block is empty;
- **narration share**: excerpts whose every line is the agent narrating its next step;
- **excerpts per source turn**: how many excerpts cite each transcript turn (max and mean);
- **typed memories against the labels**: an item is recalled when one typed (non-excerpt)
  memory of its session carries all its key terms; the share of typed memories that match a
  label is a lower bound of their precision (precision proper is read by a person);
- **misattributed user turns**: excerpt lines labelled ``user:`` whose source is not a line the
  user typed (a subagent's prompt, a tool result);
- **after maintenance**: each job run once (decay, dedupe, cleanup, optimize), then the share of
  durable memories still active and the probe recall again.

A key term is a list of spellings; it is found when one of them occurs in the text, compared in
lower case with backticks, asterisks and runs of white space folded.

Usage: ``.venv/bin/python bench/realwork.py [--split tuning|heldout] [--details FILE] [--record]``;
``MEMD_BENCH_CHECKOUT=/path/to/other/checkout`` runs that checkout's daemon instead (the figures
before a change).
Details (every probe's block and the terms it missed) are written only with ``--details``: for
the held-out split, read them only after the last change they could influence.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT, append_section, markdown_table, stop_daemon, wait_for_daemon

MEMD = ROOT / ".venv" / "bin" / "memd"
SESSIONS = ROOT / "tests" / "real_sessions"
SPLITS = {
    "tuning": ROOT / "tests" / "labelled" / "realwork",
    "heldout": ROOT / "tests" / "labelled" / "realwork_heldout",
}
TYPED = ("decision", "preference", "fact", "todo", "bugfix", "progress", "summary")
DURABLE = ("decision", "preference", "fact", "bugfix")
JOBS = ("decay", "dedupe", "cleanup", "optimize")
_FOLD = re.compile(r"[`*]+")
_SPACE = re.compile(r"\s+")


# ---------------------------------------------------------------- labels and transcripts


def load_labels(split: str) -> list[dict[str, Any]]:
    folder = SPLITS[split]
    return [json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))]


def transcript_file(label: dict[str, Any]) -> Path:
    """``realwork/x.jsonl`` -> ``tests/real_sessions/realwork/x.jsonl.gz``."""
    return SESSIONS / (label["transcript"] + ".gz")


def read_lines(path: Path) -> list[dict[str, Any]]:
    out = []
    with gzip.open(path, "rt", encoding="utf-8", errors="replace") as fh:
        for raw in fh:
            try:
                obj = json.loads(raw)
            except ValueError:
                continue
            if isinstance(obj, dict):
                out.append(obj)
    return out


def main_cwd(lines: Iterable[dict[str, Any]]) -> str:
    """The cwd of the session's main thread (a subagent-only file: its own)."""
    side = ""
    for obj in lines:
        cwd = obj.get("cwd")
        if isinstance(cwd, str) and cwd:
            if not obj.get("isSidechain"):
                return cwd
            side = side or cwd
    return side


def fold(text: str) -> str:
    return _SPACE.sub(" ", _FOLD.sub("", text.lower()))


def found(term: Sequence[str] | str, text: str) -> bool:
    """Whether one spelling of ``term`` occurs in ``text`` (folded as the module says)."""
    spellings = [term] if isinstance(term, str) else list(term)
    folded = fold(text)
    return any(fold(s) in folded for s in spellings if s.strip())


# ---------------------------------------------------------------- the daemon


class Daemon:
    """``memd serve`` on a private home (no watched transcripts, no decay meanwhile)."""

    def __init__(self, work: Path) -> None:
        self.home = work / "home"
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("MEMD_")}
        self.env.update(
            MEMD_HOME=str(self.home),
            MEMD_TRANSCRIPTS_DIR=str(work / "watched"),
            MEMD_CONFIG=str(work / "memd.toml"),
            MEMD_DECAY_INTERVAL_MINUTES="525600",
        )
        (work / "watched").mkdir(parents=True, exist_ok=True)
        self.socket = str(self.home / "memd.sock")
        self.log_path = work / "daemon.log"
        self.log = self.log_path.open("ab")
        command = [str(MEMD), "serve"]
        other = os.environ.get("MEMD_BENCH_CHECKOUT")
        if other:  # another checkout's memd (e.g. main before a change), with this venv's deps
            self.env["PYTHONPATH"] = other
            command = [sys.executable, "-c", "from memd.cli import main; main()", "serve"]
        self.proc = subprocess.Popen(
            command, env=self.env, stdout=self.log, stderr=self.log, cwd=work
        )
        wait_for_daemon(self.socket, self.proc, self.log_path, timeout=120)

    def request(self, payload: dict[str, Any], timeout: float = 600) -> dict[str, Any]:
        from memd import protocol

        reply = protocol.request(self.socket, payload, timeout=timeout)
        if not reply.get("ok"):
            raise RuntimeError(f"daemon refused {payload.get('cmd')}: {reply.get('error')}")
        return reply

    def stop(self) -> None:
        stop_daemon(self.proc, timeout=60)
        self.log.close()


def stage(labels: list[dict[str, Any]], work: Path) -> tuple[Path, dict[str, dict[str, Any]]]:
    """Decompress the split's transcripts into one folder per project (as Claude Code lays
    them out); per label: its session ids, cwd and the raw lines by uuid."""
    root = work / "transcripts"
    info: dict[str, dict[str, Any]] = {}
    for label in labels:
        src = transcript_file(label)
        lines = read_lines(src)
        cwd = main_cwd(lines)
        folder = root / re.sub(r"[^A-Za-z0-9]", "-", cwd or label["transcript"])
        folder.mkdir(parents=True, exist_ok=True)
        with (
            gzip.open(src, "rb") as fh,
            (folder / Path(label["transcript"]).name).open("wb") as out,
        ):
            shutil.copyfileobj(fh, out)
        info[label["transcript"]] = {
            "cwd": cwd,
            "sessions": {o.get("sessionId") for o in lines if o.get("sessionId")},
            "lines": {o["uuid"]: o for o in lines if isinstance(o.get("uuid"), str)},
        }
    return root, info


# ---------------------------------------------------------------- what memd stored


def memories(daemon: Daemon) -> list[dict[str, Any]]:
    reply = daemon.request(
        {"cmd": "list", "all_projects": True, "include_all": True, "limit": 100000}
    )
    return list(reply.get("memories") or reply.get("results") or [])


def session_of(memory: dict[str, Any]) -> set[str]:
    return {s.get("session_id") for s in memory.get("sources") or [] if s.get("session_id")}


def user_typed(line: dict[str, Any] | None) -> bool:
    """Whether a transcript line is text the user typed (main thread, not a tool result; a
    message typed while the agent worked is a ``queued_command`` attachment)."""
    if not line or line.get("isSidechain") or line.get("isMeta"):
        return False
    queued = line.get("attachment") if line.get("type") == "attachment" else None
    if isinstance(queued, dict):
        return queued.get("type") == "queued_command" and queued.get("commandMode") == "prompt"
    if line.get("type") != "user":
        return False
    content = (line.get("message") or {}).get("content")
    if isinstance(content, str):
        return bool(content.strip())
    return any(isinstance(b, dict) and b.get("type") == "text" for b in content or [])


def narration_only(text: str) -> bool:
    from memd.extract.episodes import is_narration, split_sentences

    body = re.sub(r"^\[\d{4}-\d{2}-\d{2}\]\s*", "", text)
    lines = [ln for ln in body.split("\n") if ln.strip()]
    if not lines or any(not ln.startswith("assistant: ") for ln in lines):
        return False
    said = [s for ln in lines for s in split_sentences(ln[len("assistant: ") :])]
    return all(is_narration(s) for s in said)


def store_figures(mems: list[dict[str, Any]], info: dict[str, dict[str, Any]]) -> dict[str, Any]:
    active = [m for m in mems if m.get("status") == "active"]
    excerpts = [m for m in active if m["kind"] == "excerpt"]
    cites: Counter[tuple[str, str]] = Counter()
    for m in excerpts:
        for s in {(s.get("session_id"), s.get("uuid")) for s in m.get("sources") or []}:
            cites[s] += 1
    lines = {u: o for i in info.values() for u, o in i["lines"].items()}
    wrong_user = 0
    for m in excerpts:
        body = re.sub(r"^\[\d{4}-\d{2}-\d{2}\]\s*", "", m["text"])
        rows = [ln for ln in body.split("\n") if ln.strip()]
        sources = m.get("sources") or []
        if len(rows) != len(sources):
            continue
        for row, src in zip(rows, sources, strict=True):
            if row.startswith("user: ") and not user_typed(lines.get(src.get("uuid"))):
                wrong_user += 1
    asked_wrong = sum(
        1
        for m in active
        if m["kind"] == "summary"
        and m["text"].startswith("Asked")
        and not any(user_typed(lines.get(s.get("uuid"))) for s in m.get("sources") or [])
    )
    return {
        "memories": len(active),
        "by_kind": dict(Counter(m["kind"] for m in active)),
        "excerpts": len(excerpts),
        "narration_only": sum(narration_only(m["text"]) for m in excerpts),
        "excerpt_share": len(excerpts) / len(active) if active else 0.0,
        "turns_cited": len(cites),
        "excerpts_per_turn_max": max(cites.values(), default=0),
        "excerpts_per_turn_mean": (sum(cites.values()) / len(cites)) if cites else 0.0,
        "misattributed_user_lines": wrong_user,
        "asked_without_user_words": asked_wrong,
    }


def typed_figures(
    labels: list[dict[str, Any]], mems: list[dict[str, Any]], info: dict[str, dict[str, Any]]
) -> dict[str, Any]:
    """Label items recalled by a typed memory of their session; typed memories matching one."""
    typed = [m for m in mems if m.get("status") == "active" and m["kind"] in TYPED]
    items = hits = matched = total = 0
    per_session = []
    missed: list[dict[str, Any]] = []
    for label in labels:
        sessions = info[label["transcript"]]["sessions"]
        mine = [m for m in typed if session_of(m) & sessions]
        got = 0
        for item in label.get("items") or []:
            ok = any(all(found(t, m["text"]) for t in item["key_terms"]) for m in mine)
            got += ok
            if not ok:
                missed.append({"session": label["transcript"], **item})
        useful = sum(
            any(all(found(t, m["text"]) for t in i["key_terms"]) for i in label.get("items") or [])
            for m in mine
        )
        items += len(label.get("items") or [])
        hits += got
        matched += useful
        total += len(mine)
        per_session.append(
            {
                "transcript": label["transcript"],
                "items": len(label.get("items") or []),
                "recalled": got,
                "typed": len(mine),
                "matching": useful,
            }
        )
    return {
        "items": items,
        "recall": hits / items if items else 0.0,
        "typed": total,
        "matching_share": matched / total if total else 0.0,
        "per_session": per_session,
        "missed": missed,
    }


# ---------------------------------------------------------------- what the hooks inject


def probe_figures(
    daemon: Daemon, labels: list[dict[str, Any]], info: dict[str, dict[str, Any]]
) -> dict[str, Any]:
    rows = []
    empty = unrelated = 0
    injected: list[dict[str, str]] = []
    briefs: dict[str, str] = {}
    for label in labels:
        cwd = info[label["transcript"]]["cwd"]
        if cwd not in briefs:
            reply = daemon.request({"cmd": "context", "cwd": cwd, "event": "session-start"})
            briefs[cwd] = reply.get("context") or ""
        for probe in label.get("probes") or []:
            reply = daemon.request({"cmd": "context", "cwd": cwd, "prompt": probe["prompt"]})
            block = reply.get("context") or ""
            terms = probe["key_terms"]
            in_block = [found(t, block) for t in terms]
            in_both = [found(t, block + "\n" + briefs[cwd]) for t in terms]
            rows.append(
                {
                    "transcript": label["transcript"],
                    "prompt": probe["prompt"],
                    "terms": terms,
                    "block_recall": sum(in_block) / len(terms),
                    "both_recall": sum(in_both) / len(terms),
                    "missed": [t for t, ok in zip(terms, in_both, strict=True) if not ok],
                    "block": block,
                }
            )
        for prompt in label.get("unrelated") or []:
            unrelated += 1
            reply = daemon.request({"cmd": "context", "cwd": cwd, "prompt": prompt})
            empty += not (reply.get("context") or "")
            if reply.get("context"):
                injected.append({"prompt": prompt, "block": reply["context"]})
    mean = lambda xs: sum(xs) / len(xs) if xs else 0.0  # noqa: E731
    return {
        "probes": len(rows),
        "block_recall": mean([r["block_recall"] for r in rows]),
        "both_recall": mean([r["both_recall"] for r in rows]),
        "unrelated": unrelated,
        "unrelated_injected": injected,
        "unrelated_empty": empty / unrelated if unrelated else 0.0,
        "rows": rows,
        "briefs": briefs,
    }


# ---------------------------------------------------------------- a run


def run(split: str, keep: Path | None = None) -> dict[str, Any]:
    labels = load_labels(split)
    if not labels:
        raise SystemExit(f"no labels in {SPLITS[split]}")
    work = Path(tempfile.mkdtemp(prefix="memd-realwork-", dir=keep))
    root, info = stage(labels, work)
    daemon = Daemon(work)
    try:
        started = time.monotonic()
        ingest = daemon.request({"cmd": "ingest", "paths": [str(root)]}, timeout=3600)
        ingest_seconds = time.monotonic() - started
        mems = memories(daemon)
        out: dict[str, Any] = {
            "split": split,
            "sessions": len(labels),
            "ingest": {k: ingest.get(k) for k in ("files", "bytes", "turns", "segments")},
            "ingest_seconds": round(ingest_seconds, 1),
            "store": store_figures(mems, info),
            "typed": typed_figures(labels, mems, info),
            "probes": probe_figures(daemon, labels, info),
        }
        durable_before = {m["id"] for m in mems if m["status"] == "active" and m["kind"] in DURABLE}
        jobs = {name: daemon.request({"cmd": "jobs_run", "name": name}) for name in JOBS}
        after = memories(daemon)
        still = {m["id"] for m in after if m["status"] == "active" and m["kind"] in DURABLE}
        probes_after = probe_figures(daemon, labels, info)
        out["maintenance"] = {
            "durable_before": len(durable_before),
            "durable_active_share": len(durable_before & still) / len(durable_before)
            if durable_before
            else 1.0,
            "active_before": sum(m["status"] == "active" for m in mems),
            "active_after": sum(m["status"] == "active" for m in after),
            "both_recall_after": probes_after["both_recall"],
            "block_recall_after": probes_after["block_recall"],
            "jobs": {k: {kk: v for kk, v in j.items() if kk != "ok"} for k, j in jobs.items()},
        }
        out["memories"] = mems
        return out
    finally:
        daemon.stop()
        if keep is None:
            shutil.rmtree(work, ignore_errors=True)


def summary_table(result: dict[str, Any]) -> str:
    store, typed, probes, maint = (
        result["store"],
        result["typed"],
        result["probes"],
        result["maintenance"],
    )
    rows = [
        (
            "sessions / probes / unrelated prompts",
            f"{result['sessions']} / {probes['probes']} / {probes['unrelated']}",
        ),
        ("probe key-term recall, prompt block", f"{probes['block_recall']:.3f}"),
        ("probe key-term recall, prompt block + brief", f"{probes['both_recall']:.3f}"),
        ("unrelated prompts left empty", f"{probes['unrelated_empty']:.3f}"),
        (
            "active memories (excerpts)",
            f"{store['memories']} ({store['excerpts']}, {store['excerpt_share']:.0%})",
        ),
        (
            "narration-only excerpts",
            f"{store['narration_only']} ({store['narration_only'] / max(1, store['memories']):.1%} of memories)",
        ),
        (
            "excerpts per cited turn, max / mean",
            f"{store['excerpts_per_turn_max']} / {store['excerpts_per_turn_mean']:.2f}",
        ),
        (
            "excerpt lines `user:` not typed by the user; 'Asked' without user words",
            f"{store['misattributed_user_lines']}; {store['asked_without_user_words']}",
        ),
        ("typed memories per session", f"{typed['typed'] / max(1, result['sessions']):.1f}"),
        (
            "label items recalled by a typed memory",
            f"{typed['recall']:.3f} ({typed['items']} items)",
        ),
        (
            "typed memories matching a label (precision lower bound)",
            f"{typed['matching_share']:.3f}",
        ),
        (
            "durable memories active after every job",
            f"{maint['durable_active_share']:.3f} of {maint['durable_before']}",
        ),
        ("probe recall (block + brief) after every job", f"{maint['both_recall_after']:.3f}"),
        ("ingest (daemon, wall)", f"{result['ingest_seconds']} s"),
    ]
    return markdown_table(("measure", result["split"]), rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--split", choices=sorted(SPLITS), default="tuning")
    ap.add_argument("--details", type=Path, help="write every probe's block and misses here")
    ap.add_argument("--keep", type=Path, help="keep the work folder under this directory")
    ap.add_argument(
        "--record", action="store_true", help="append the table to bench/results/log.md"
    )
    args = ap.parse_args()
    result = run(args.split, args.keep)
    table = summary_table(result)
    print(table)
    print(json.dumps(result["store"]["by_kind"]))
    if args.details:
        details = {
            "typed": result["typed"],
            "probes": result["probes"],
            "maintenance": result["maintenance"],
            "memories": result["memories"],
        }
        args.details.write_text(json.dumps(details, indent=1, ensure_ascii=False, default=list))
    if args.record:
        append_section(f"Real Claude Code work ({args.split} split; bench/realwork.py)", table)


if __name__ == "__main__":
    main()
