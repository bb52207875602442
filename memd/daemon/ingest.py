"""`memd ingest PATH...`: backfill transcripts as finished sessions, then extract them.

The same function runs in the daemon (which hands it its live session tracker and pipeline)
and in the CLI when no daemon runs (under the writer lock). Running it twice adds nothing:
turns are deduped by uuid, and memory ids are deterministic.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from memd.errors import UserError
from memd.ingest.backfill import BackfillReport, backfill

if TYPE_CHECKING:
    from memd.daemon.pipeline import Pipeline
    from memd.ingest.session import SessionTracker

Progress = Callable[[dict[str, Any]], None]


def run_ingest(
    pipeline: Pipeline,
    paths: Sequence[str],
    progress: Progress | None = None,
    tracker: SessionTracker | None = None,
) -> dict[str, Any]:
    """Read ``paths``, close every session found, extract all pending segments."""
    import os

    missing = [p for p in paths if not os.path.exists(os.path.expanduser(p))]
    if missing:
        raise UserError(f"no such file or directory: {missing[0]}")
    started = time.monotonic()

    def on_read(report: BackfillReport) -> None:
        if progress is not None:
            progress({"phase": "read", **report.to_dict(), "eta_seconds": report.eta_seconds})

    report = backfill(paths, pipeline.state, pipeline.settings, on_read, tracker)
    before = dict(pipeline.stats)
    total = len(report.segment_keys)
    extracted = 0
    # Failed segments wait out their backoff, so this ends even when some keep failing.
    while pipeline.state.pending_segments(limit=1):
        extracted += pipeline.process_pending(limit=8)
        if progress is not None:
            progress({"phase": "extract", "segments_done": extracted, "segments_total": total})
    out = report.to_dict()
    out.update(
        {
            "segments_extracted": extracted,
            "memories_added": pipeline.stats["memories"] - before["memories"],
            "extraction_failures": pipeline.stats["failures"] - before["failures"],
            "pending": pipeline.state.counts().get("pending", 0),
            "seconds": round(time.monotonic() - started, 3),
        }
    )
    return out
