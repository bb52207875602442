"""Grounded memories: every typed memory extracted from a real transcript says only what its
source turns say (issue #12, point 4).

Every fixture transcript (the shared real-world ones and tests/transcripts) goes through memd's
real parser and segmenter (``backfill``) and the pipeline's redaction; the heuristic extractor
then runs on each segment. For every non-excerpt memory, its content words must all occur in the
text of the turns it cites (text and tool inputs, redacted as the pipeline redacts them).
"""

from __future__ import annotations

import re
import shutil
from dataclasses import replace
from pathlib import Path

from labelled import load_labelled

from memd.extract.excerpts import WINDOW_CHARS
from memd.extract.heuristic import HeuristicExtractor
from memd.extract.redact import redact_turn
from memd.extract.rules import clean_text
from memd.extract.vocabulary import FAMILY_TEXT, check_of
from memd.ingest.backfill import backfill
from memd.models import Candidate, Segment, Turn
from memd.settings import Settings
from memd.state import State

OWN = Path(__file__).parent / "transcripts"

_LATIN = re.compile(r"[a-z]{3,}")
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]+")
FRAME = frozenset({"project", "uses", "files", "touched", "more", "asked", "said"})
"""The words of the extractor's own templates, each justified by what it frames:
"Project uses <name as written>" (a tool the turn ran or a stack statement naming it),
"Files touched: <paths the turn edited> (+N more)", and the summary's "Asked: / Said: <the
user's own sentences>; Files: <paths>". No stop list: every other word, "the" included, must be
in the cited turns. Command facts ("Tests run with `cmd`") are checked separately: the frame
must be the vocabulary's family of the quoted command."""


def content_words(text: str) -> set[str]:
    low = text.lower()
    return {w for w in _LATIN.findall(low) if w not in FRAME}


def cjk_runs(text: str) -> list[str]:
    return _CJK.findall(text)


def source_text(turns: list[Turn]) -> str:
    """What the cited turns hold: their text, and their tool calls' inputs and results."""
    parts = []
    for t in turns:
        parts.append(t.text)
        for tool in t.tools:
            parts.append(tool.summary)
            parts.extend(flat(tool.args))
            parts.append(tool.result)
    return "\n".join(parts)


def flat(value: object) -> list[str]:
    """Every string inside a tool call's input (a todo list's items, a plan, a command)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in flat(v)]
    if isinstance(value, list):
        return [s for v in value for s in flat(v)]
    return []


TEMPLATES = re.compile(
    r"^(?:Plan approved: |Committed |Completed: |TODO: |Files changed for |Last worked on: "
    r"|The git pre-commit hook runs checks that can refuse a commit: |Commands run for "
    r"|Still failing at the end of the session: |Versions in |Ports in )"
    r"| Chosen: |(?:^|\. )Ended with: | \(fixed in |\(\+\d+ more\)"
)
"""The frames of the records' and findings' memories ("Plan approved: <the plan's title>",
"Committed "<message>"", "<question> Chosen: <answer>", "Files changed for <request>: <paths
edited>", ...): the words of a frame are memd's, everything it frames must be said."""


def strip_command_frame(text: str) -> tuple[str, str | None]:
    """``"Tests run with `pytest -q`"`` -> ("`pytest -q`", None) when the family is right,
    else (text, reason)."""
    for family, frame in FAMILY_TEXT.items():
        prefix = f"{frame} with `"
        if text.startswith(prefix) and text.endswith("`"):
            command = text[len(prefix) : -1]
            if check_of(command) != family:
                return text, f"{command!r} is not a {family} command"
            return command, None
    return text, None


def ungrounded(cand: Candidate, by_uuid: dict[str, Turn]) -> list[str]:
    """The words of ``cand`` that none of its cited turns say (empty when grounded)."""
    cited = [by_uuid[u] for u in cand.source_uuids if u in by_uuid]
    assert cited, f"{cand.kind} cites no turn of its segment: {cand.text!r}"
    said = source_text(cited)
    said_words = set(_LATIN.findall(said.lower()))
    text, problem = strip_command_frame(TEMPLATES.sub(" ", cand.text))
    missing = [problem] if problem else []
    missing += sorted(w for w in content_words(text) if w not in said_words)
    missing += [run for run in cjk_runs(text) if run not in said]
    return missing


def unmarked(text: str) -> str:
    """Text without Markdown emphasis and check marks, whitespace collapsed."""
    return " ".join(re.sub(r"\*\*|__|[✅✔✓❌⚠️🎉🚀]\ufe0f?", "", text).split())


def own_runs(piece: str, said: str) -> list[str] | None:
    """``piece`` cut greedily into the longest runs of words that ``said`` holds as they are;
    None when a word of it is not there or the runs are single words (a bag of words)."""
    words = piece.split()
    runs: list[str] = []
    i = 0
    while i < len(words):
        j = i + 1
        if " ".join(words[i:j]) not in said:
            return None
        while j < len(words) and " ".join(words[i : j + 1]) in said:
            j += 1
        runs.append(" ".join(words[i:j]))
        i = j
    singles = sum(1 for r in runs if " " not in r)
    return runs if singles <= max(1, len(runs) // 3) else None


def lay_out(shared: Path, root: Path) -> None:
    fixtures = root / "projects" / "-fixtures"
    fixtures.mkdir(parents=True)
    for path in (shared / "fixtures" / "transcripts").glob("*.jsonl"):
        shutil.copyfile(path, fixtures / path.name)
    own = root / "projects" / "-own"
    for path in OWN.rglob("*.jsonl"):
        target = own / path.relative_to(OWN)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(path.read_bytes().replace(b"@ROOT@", str(root).encode()))


def fixture_segments(shared: Path, tmp_path: Path) -> list[Segment]:
    lay_out(shared, tmp_path)
    settings = Settings(home=tmp_path / "memd", transcripts_dir=tmp_path / "projects")
    state = State(tmp_path / "state.db")
    backfill([tmp_path / "projects"], state, settings)
    segments = state.pending_segments(limit=10_000)
    # As the pipeline does: the extractor sees redacted turns.
    return [replace(s, turns=[redact_turn(t) for t in s.turns]) for s in segments]


def test_every_memory_from_every_fixture_is_grounded(fixture_root: Path, tmp_path: Path) -> None:
    segments = fixture_segments(fixture_root, tmp_path)
    assert len(segments) >= 20
    # The hand-labelled sessions too (not transcripts: turns built from JSON), redacted likewise.
    segments += [
        replace(c.segment, turns=[redact_turn(t) for t in c.segment.turns]) for c in load_labelled()
    ]
    checked = 0
    failures = []
    kinds: set[str] = set()
    for segment in segments:
        by_uuid = {u: t for t in segment.turns for u in [t.uuid, *t.uuids]}
        for cand in HeuristicExtractor().extract(segment):
            if cand.kind == "excerpt":
                continue
            checked += 1
            kinds.add(cand.kind)
            missing = ungrounded(cand, by_uuid)
            if missing:
                failures.append(f"{cand.kind}: {cand.text[:160]!r} -> not said: {missing}")
    # The fixtures give every kind of memory the heuristic makes, so the check has teeth.
    assert not failures, "\n".join(failures)
    kinds_needed = {"fact", "summary", "todo", "decision", "preference", "bugfix"}
    assert checked >= 150 and kinds_needed <= kinds, (checked, kinds)
    assert not failures, "\n".join(failures)


def test_the_check_catches_an_invented_purpose() -> None:
    """The check itself: a role the turn never states is caught; the words it says pass."""
    said = Turn(
        uuid="u1",
        session_id="s",
        role="user",
        text="We use Redis as the job broker.",
    )
    by_uuid = {"u1": said}
    invented = Candidate(kind="fact", text="Project uses Redis for caching", source_uuids=["u1"])
    assert ungrounded(invented, by_uuid) == ["caching", "for"]
    grounded = Candidate(kind="fact", text="Project uses Redis", source_uuids=["u1"])
    assert ungrounded(grounded, by_uuid) == []
    wrong_family = Candidate(kind="fact", text="Linting runs with `pytest -q`", source_uuids=["u1"])
    assert ungrounded(wrong_family, by_uuid)
    zh = Turn(uuid="u2", session_id="s", role="user", text="缓存统一用 Redis。")
    by_uuid["u2"] = zh
    assert ungrounded(Candidate(kind="fact", text="队列用 Redis", source_uuids=["u2"]), by_uuid)


def test_no_invented_role_for_a_tool_said_in_passing() -> None:
    """The issue's case: Redis chosen as the job broker never becomes "Redis for caching"."""
    turns = [
        Turn(
            uuid="u1",
            session_id="s",
            role="user",
            text="We decided to use Redis as the job broker for the worker queue.",
        ),
        Turn(
            uuid="u2",
            session_id="s",
            role="assistant",
            text="The worker now uses Redis via rq.",
            tools=[],
        ),
        Turn(
            uuid="u3",
            session_id="s",
            role="user",
            text="We use Postgres instead of MySQL for the billing data.",
        ),
    ]
    cands = HeuristicExtractor().extract(Segment(session_id="s", project="/p", turns=turns))
    by_uuid = {t.uuid: t for t in turns}
    texts = [c.text for c in cands if c.kind != "excerpt"]
    assert not any("caching" in t for t in texts), texts
    assert not any("MySQL" in t and t.startswith("Project uses") for t in texts), texts
    for cand in cands:
        if cand.kind != "excerpt":
            assert ungrounded(cand, by_uuid) == [], cand.text


def test_every_excerpt_from_every_fixture_is_one_line_per_cited_turn(
    fixture_root: Path, tmp_path: Path
) -> None:
    """The excerpt contract the injector relies on, on real transcripts: line i is the turn
    source_uuids[i] (``role: text``, whitespace collapsed, cut only with "…"), the first line
    may start with the date, and the window stays within WINDOW_CHARS."""
    checked = 0
    for segment in fixture_segments(fixture_root, tmp_path):
        by_uuid = {t.uuid: t for t in segment.turns}
        for cand in HeuristicExtractor().extract(segment):
            if cand.kind != "excerpt":
                continue
            checked += 1
            lines = cand.text.split("\n")
            assert len(lines) == len(cand.source_uuids), cand.text[:200]
            lines[0] = re.sub(r"^\[\d{4}-\d{2}-\d{2}\] ", "", lines[0])
            assert len("".join(lines)) <= WINDOW_CHARS + 20 * len(lines)
            for line, uuid in zip(lines, cand.source_uuids, strict=True):
                turn = by_uuid[uuid]
                role, _, body = line.partition(": ")
                # a subagent's prompt is the agent's: "agent:", never "user:"
                assert role == ("agent" if turn.is_sidechain and turn.role == "user" else turn.role)
                said = unmarked(clean_text(turn.text))
                # Each piece is the turn's own words (narration sentences and markup dropped):
                # runs of several words, each as the turn says it.
                for piece in body.split("…"):
                    runs = own_runs(unmarked(piece), said)
                    assert runs is not None, (piece[:120], said[:200])
    assert checked >= 30  # one per episode that said something (no sliding windows)
