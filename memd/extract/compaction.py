"""What a compaction summary says the work found: the errors it met and how each was fixed,
and the concepts it names (an environment variable, a flag, the checks a hook runs).

When Claude Code compacts a session it writes its own summary of the work so far (a user line
marked ``isCompactSummary``) at the start of the next segment. It is the agent's account, not
the user's words. Only its explicit statements are read: a bullet that says how an error was
fixed, and a key concept that names a piece of code or tooling. Its plans, pending tasks and
"current work" were true for a moment and are left out.
"""

from __future__ import annotations

import re

from memd.extract.codenames import code_names
from memd.extract.rules import IMPORTANCE
from memd.extract.rules import clip_words as clip
from memd.models import Candidate, Turn

_BULLET = re.compile(r"^(\s*)(?:[-*•]|\d+[.)])\s+(.*)$")
_FIXED = re.compile(
    r"\s(?:-|–|—|:)\s*(?:fixed|resolved|solved)\b|\bfixed by\b|\bresolved by\b", re.I
)
_SECTION = re.compile(r"^\s*(?:\d+\.\s*)?\**([A-Z][A-Za-z ]{3,40}?)\**:?\s*$")
_CONCEPTS = re.compile(r"key technical concepts|technical concepts|key concepts", re.I)
_NOT_FIXED = re.compile(
    r"\b(?:not|never|didn'?t|couldn'?t|none)\b[^.]{0,30}\b(?:fix|work|help)", re.I
)
MAX_FIXES = 8
MAX_CONCEPTS = 6


def summary_candidates(turn: Turn) -> list[Candidate]:
    """Bug fixes and key concepts stated in a compaction summary (``turn``)."""
    fixes: list[Candidate] = []
    concepts: list[Candidate] = []
    section = ""
    for raw in turn.text.split("\n"):
        bare = raw.replace("#", "").strip()
        heading = _SECTION.match(bare) if bare.endswith(":") or not _BULLET.match(raw) else None
        if heading:
            section = heading.group(1).lower()
            continue
        m = _BULLET.match(raw)
        if not m:
            continue
        body = m.group(2).replace("**", "").strip()
        if _FIXED.search(body) and not _NOT_FIXED.search(body) and len(fixes) < MAX_FIXES:
            fixes.append(
                Candidate(
                    kind="bugfix",
                    text=clip(body, 360),
                    topic="bug fix",
                    importance=IMPORTANCE["bugfix"],
                    source_uuids=[turn.uuid],
                )
            )
        elif (
            _CONCEPTS.search(section)
            and len(concepts) < MAX_CONCEPTS
            and code_names(body)
            and len(body) >= 20
        ):
            concepts.append(
                Candidate(
                    kind="fact",
                    text=clip(body, 300),
                    topic="key concepts",
                    importance=0.5,
                    source_uuids=[turn.uuid],
                )
            )
    return fixes + concepts
