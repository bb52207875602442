"""What was said in a memory's source turns, read back from the transcripts on disk (redacted
as memd redacts everything it stores), for the viewer's memory page.

A memory keeps only where it came from (session, line uuid, time). The session's transcript is
found among the files the tailer has read (memd's state) or under the transcripts directory,
parsed as the ingest path parses it (assistant lines folded into one turn), and the turns that
hold the source lines are returned. A transcript that is gone is said to be gone.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path
from typing import Any

from memd.extract.redact import redact
from memd.ingest.transcript import parse_lines

SESSION_ID = re.compile(r"[\w.-]{1,128}")
TURN_CHARS = 2000
"""A turn longer than this is cut (the excerpt or the transcript has the rest)."""
MAX_TURNS = 12


def transcript_files(session_id: str, read_paths: Iterable[str], root: Path) -> list[Path]:
    """The transcript files of ``session_id``: its own file and its subagents' files."""
    if not SESSION_ID.fullmatch(session_id):
        return []
    found = [Path(p) for p in read_paths if Path(p).stem == session_id or f"/{session_id}/" in p]
    if not found and root.is_dir():
        found = [*root.glob(f"*/{session_id}.jsonl"), *root.glob(f"*/{session_id}/**/*.jsonl")]
    return sorted({p for p in found if p.is_file()})


@lru_cache(maxsize=16)
def turns_by_uuid(path: str, mtime_ns: int, size: int) -> dict[str, dict[str, str]]:
    """Every turn of one transcript file by each line uuid folded into it (cached per version
    of the file)."""
    with open(path, "rb") as fh:
        turns = parse_lines(fh, session_hint=Path(path).stem)
    out: dict[str, dict[str, str]] = {}
    for turn in turns:
        said = {"uuid": turn.uuid, "role": turn.role, "text": turn.text, "at": turn.timestamp}
        for uuid in {turn.uuid, *turn.uuids}:
            out[uuid] = said
    return out


def source_turns(
    sources: list[dict[str, Any]], read_paths: list[str], root: Path, patterns: list[str]
) -> dict[str, Any]:
    """``{"turns": [...], "missing": [...]}``: the text of each source turn found (in the order
    of the sources, each turn once), and the sessions whose transcript is not on disk."""
    turns: list[dict[str, str]] = []
    missing: list[str] = []
    seen: set[str] = set()
    by_session: dict[str, dict[str, dict[str, str]]] = {}
    for source in sources:
        session, uuid = str(source.get("session_id") or ""), str(source.get("uuid") or "")
        if not session or not uuid:
            continue
        if session not in by_session:
            index: dict[str, dict[str, str]] = {}
            for path in transcript_files(session, read_paths, root):
                try:
                    stat = path.stat()
                    index.update(turns_by_uuid(str(path), stat.st_mtime_ns, stat.st_size))
                except OSError:
                    continue
            by_session[session] = index
            if not index:
                missing.append(session)
        turn = by_session[session].get(uuid)
        if turn is None or turn["uuid"] in seen or len(turns) >= MAX_TURNS:
            continue
        seen.add(turn["uuid"])
        text = redact(turn["text"], patterns).strip()
        cut = len(text) > TURN_CHARS
        turns.append(
            {**turn, "session_id": session, "text": text[:TURN_CHARS] + ("…" if cut else "")}
        )
    return {"turns": turns, "missing": missing}
