"""`memd ingest PATH... [--json]`: backfill transcripts, with a progress bar."""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

import click

from memd.cli import client_from, handle_errors


class ProgressBar:
    """One self-rewriting line on stderr: files, MB, sessions, ETA (only on a terminal)."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.last = 0.0

    def __call__(self, p: dict[str, Any]) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self.last < 0.1 and p.get("files") != p.get("files_total"):
            return
        self.last = now
        if p["phase"] == "read":
            frac = p["bytes"] / p["bytes_total"] if p["bytes_total"] else 1.0
            bar = "#" * int(frac * 24)
            eta = p.get("eta_seconds")
            line = (
                f"reading [{bar:<24}] files {p['files']}/{p['files_total']}  "
                f"{p['bytes'] / 1e6:.1f}/{p['bytes_total'] / 1e6:.1f} MB  "
                f"sessions {p['sessions']}  ETA {f'{eta:.0f}s' if eta is not None else '?'}"
            )
        else:
            line = f"extracting segments {p['segments_done']}/{p['segments_total']}"
        sys.stderr.write("\r\x1b[2K" + line)
        sys.stderr.flush()

    def done(self) -> None:
        if self.enabled:
            sys.stderr.write("\n")


@click.command(name="ingest")
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True))
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.pass_context
@handle_errors
def ingest_run(ctx: click.Context, paths: tuple[str, ...], as_json: bool) -> None:
    """Read transcripts now, as finished sessions (works with and without a daemon)."""
    bar = ProgressBar(enabled=sys.stderr.isatty() and not as_json)
    if bar.enabled:  # a running daemon does the work without a progress bar
        sys.stderr.write("reading transcripts (through the daemon when it runs)...\n")
    # Through the daemon when it runs (a backfill can take long: wait as long as it works).
    reply = client_from(ctx, timeout=None, progress=bar).ingest(
        paths=[os.path.abspath(p) for p in paths],
    )
    bar.done()
    if as_json:
        shown = {k: v for k, v in reply.items() if k != "ok"}
        click.echo(json.dumps(shown, ensure_ascii=False, indent=2))
        return
    click.echo(
        f"read {reply['files']} files ({reply['bytes'] / 1e6:.1f} MB), {reply['sessions']} sessions, "
        f"{reply['turns']} new turns ({reply['duplicates']} duplicates, {reply['bad_lines']} bad lines); "
        f"extracted {reply['segments_extracted']} segments into {reply['memories_added']} new memories "
        f"in {reply['seconds']:.1f}s"
    )
    if reply.get("extraction_failures"):
        click.echo(f"{reply['extraction_failures']} segments failed and stay pending for a retry")


def register(group: click.Group) -> None:
    group.add_command(ingest_run)
