"""`memd status` of a running daemon: its report assembled from the parts that know each figure.

Each part is best effort: a part that fails is logged and reported empty, and never fails the
whole status (a health check must answer when something is unhealthy).
"""

from __future__ import annotations

import logging
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memd import __version__

if TYPE_CHECKING:
    from memd.daemon.jobs import Scheduler
    from memd.daemon.pipeline import Pipeline
    from memd.daemon.server import Server
    from memd.ingest.tailer import Tailer
    from memd.recall.inject import Injector
    from memd.settings import Settings
    from memd.state import State

log = logging.getLogger(__name__)


def report(server: Server) -> dict[str, Any]:
    """`memd status --json`: the contract's fields (DESIGN.md) and the daemon's own counters."""
    workers = server.workers
    return {
        "running": True,
        "version": __version__,
        "pid": os.getpid(),
        "python": sys.version.split()[0],
        "started_at": server.started_at,
        "uptime_seconds": round(time.time() - server.started_at, 1),
        "socket": str(server.path),
        "home": str(server.settings.home),
        "memories": server.app.store.stats(),
        "embedding_model": server.app.store.embedder.model_id,
        "sessions": sessions(workers.state, len(server.sessions.active)),
        "jobs": jobs(workers.scheduler),
        "extractor": extractor(server.settings, workers.pipeline),
        "requests": dict(server.counters, open=len(server.connections)),
        "injections": injections(server.injector),
        "last_errors": list(server.errors),
        "library_pages": dict(server.library_pages),
        **ingest(workers.state, workers.tailer),
        "sync": sync(server.settings),
    }


def jobs(scheduler: Scheduler | None) -> list[dict[str, Any]]:
    """``[{name, next_run, last_run, last_status, ...}]``; empty when no scheduler runs."""
    if scheduler is None:
        return []
    try:
        return scheduler.jobs_status()
    except Exception as exc:
        log.warning("jobs status failed: %s", exc)
        return []


def sessions(state: State | None, active_hooks: int) -> dict[str, Any]:
    """Segments by status (``pending``, ``extracted``, ...) and the sessions hooks saw lately."""
    counts: dict[str, Any] = {"pending": 0, "extracted": 0}
    if state is not None:
        try:
            counts.update(state.counts())
        except Exception as exc:
            log.warning("state counts failed: %s", exc)
    counts["active_hooks"] = active_hooks
    return counts


def extractor(settings: Settings, pipeline: Pipeline | None) -> dict[str, Any]:
    """The extractor's own counters (``Extractor.stats()``) plus the pipeline's."""
    out: dict[str, Any] = {
        "backend": settings.extractor,
        "calls": 0,
        "tokens": 0,
        "failures": 0,
        "fallbacks": 0,
        "budget_exhausted": False,
    }
    if pipeline is None:
        return out
    try:
        got = dict(pipeline.extractor.stats())
        out.update(got)
        out["tokens"] = int(got.get("tokens_in") or 0) + int(got.get("tokens_out") or 0)
        done = pipeline.stats
        out["segments"] = done.get("segments", 0)
        out["memories"] = done.get("memories", 0)
        out["forgotten"] = done.get("forgotten", 0)  # archived for a request in conversation
        out["failures"] = max(out["failures"], done.get("failures", 0))
        out["fallbacks"] = max(out["fallbacks"], done.get("fallbacks", 0))
        out["last_error"] = done.get("last_error") or out.get("last_error", "")
    except Exception as exc:
        log.warning("extractor status failed: %s", exc)
    return out


def ingest(state: State | None, tailer: Tailer | None) -> dict[str, Any]:
    """Watched transcript files, bytes read from them, and how late extraction runs."""
    out: dict[str, Any] = {"watched_files": None, "bytes_ingested": None}
    if state is not None:
        try:
            files = state.offsets()
            out["watched_files"] = len(files)
            out["bytes_ingested"] = sum(int(f.offset) for f in files.values())
        except Exception as exc:
            log.warning("tailer offsets failed: %s", exc)
    out["tailer_running"] = tailer is not None and tailer.started
    out["extraction_lag_seconds"] = extraction_lag(state)
    out["backfill"] = history(state)
    return out


def history(state: State | None) -> dict[str, Any] | None:
    """The first start's backfill of existing transcripts (None when there was none)."""
    if state is None:
        return None
    try:
        from memd.ingest.tailer import HISTORY_KEY

        job = state.get(HISTORY_KEY)
    except Exception as exc:
        log.warning("backfill progress failed: %s", exc)
        return None
    if not isinstance(job, dict):
        return None
    return {k: v for k, v in job.items() if k != "paths"}


def extraction_lag(state: State | None) -> float | None:
    """Seconds since the oldest pending segment closed (None when nothing waits)."""
    if state is None:
        return None
    oldest = state.oldest_pending_closed_at()
    return round(time.time() - oldest, 1) if oldest else None


def injections(injector: Injector) -> dict[str, Any]:
    """What the hooks injected, and the batching behind them."""
    return {
        "hooks_with_context": injector.injections,
        "memories_injected": injector.memories_injected,
        "queued_touches": injector.queued_touches,
        "embedding_batches": injector.queries.batches,
        "embedded_queries": injector.queries.queries,
        "vector_cache_builds": injector.vectors.builds,
    }


def sync(settings: Settings) -> dict[str, Any]:
    """What syncs where; never touches the network."""
    try:
        from memd.sync.engine import engine_for

        if not settings.sync_uri and not (Path(settings.home) / "sync").is_dir():
            return {"configured": False}
        return engine_for(settings).status()
    except Exception as exc:
        return {"error": str(exc)}
