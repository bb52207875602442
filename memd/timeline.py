"""A memory's history as a readable timeline, one line per event, for `memd show`.

Each event the store writes (merged, superseded, edited, archived, closed, restored) is told in
words; an event of a kind this version does not know is shown as its fields, never dropped.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

TEXT_SHOWN = 120


def when(stamp: Any) -> str:
    """``YYYY-MM-DD HH:MM`` of an ISO stamp (UTC), or a blank column."""
    return str(stamp or "").replace("T", " ")[:16].ljust(16)


def quoted(text: Any) -> str:
    words = " ".join(str(text or "").split())
    return f"“{words[:TEXT_SHOWN]}{'…' if len(words) > TEXT_SHOWN else ''}”"


def describe(event: dict[str, Any]) -> str:
    """One history event in words."""
    by = event.get("by")
    if event.get("merged"):
        line = f"merged {str(event['merged'])[:10]}: {quoted(event.get('text'))}"
    elif event.get("merged_into"):
        line = f"merged into {str(event['merged_into'])[:10]}"
    elif event.get("superseded_by"):
        line = f"superseded by {str(event['superseded_by'])[:10]}: {quoted(event.get('text'))}"
    elif event.get("replaced"):
        line = (
            f"replaced {str(event['replaced'])[:10]}: {event.get('subject')} was "
            f"{quoted(event.get('value'))}"
        )
    elif event.get("restored"):
        line = f"restored (was {event['restored']})"
        if event.get("why"):
            line += f": {event['why']}"
    elif by == "cleanup" and event.get("done"):
        line = f"closed as done: {str(event['done'])[:10]} says {quoted(event.get('text'))}"
    elif event.get("archived"):
        line = f"archived: {event['archived']}"
        if isinstance(event.get("score"), int | float):
            line += f" (score {event['score']:.3f})"
    elif by == "edit" and isinstance(event.get("was"), dict):
        before = ", ".join(f"{k} {quoted(v)}" for k, v in sorted(event["was"].items()))
        line = f"edited; before: {before}"
    elif "edited_from" in event:
        line = f"edited in an export; before: {quoted(event['edited_from'])}"
    else:
        line = ", ".join(f"{k}: {v}" for k, v in event.items() if k not in ("at", "by")) or "event"
    if by and by not in ("edit", "hand"):
        line += f" ({by})"
    return line


def lines(memory: Mapping[str, Any]) -> list[str]:
    """The memory's timeline, oldest first: created, each history event."""
    out = [f"{when(memory.get('created_at'))}  created"]
    out += [f"{when(event.get('at'))}  {describe(event)}" for event in memory.get("history") or []]
    return out
