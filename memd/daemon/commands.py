"""The socket commands that ``App`` answers, in one table: each name, the ``App`` method it runs,
the daemon's thread pool it runs in, and whether it may change the memories.

The daemon dispatches these names to ``App`` (:mod:`memd.daemon.server`), and the CLI's local mode calls
the same methods (:func:`memd.client.run`), so a command means one thing in both. The socket
names are the protocol and never change; a method may be renamed (``list`` runs
``App.list_memories``). Standard library only: the CLI imports it before anything heavy.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

Pool = Literal["read", "write", "extract"]
"""``read``: the read pool; ``write``: the single writer thread; ``extract``: the extraction
thread (long work that must not hold up ``memd add``)."""


class AppCommand(NamedTuple):
    method: str
    pool: Pool = "read"
    changes: bool = False
    """The memories may have changed: the daemon drops its recall cache afterwards."""
    store: bool = True
    """It uses the store: a one-shot CLI opens it first (``jobs`` only reads memd's state)."""


APP_COMMANDS: dict[str, AppCommand] = {
    # reads
    "search": AppCommand("search"),
    "list": AppCommand("list_memories"),
    "show": AppCommand("show"),
    "stats": AppCommand("stats"),
    "find": AppCommand("find"),
    "sessions": AppCommand("sessions"),
    "projects": AppCommand("projects"),
    "export": AppCommand("export"),
    "jobs": AppCommand("jobs", store=False),
    "sync_enable": AppCommand("sync_enable"),
    "sync_disable": AppCommand("sync_disable"),
    "sync_status": AppCommand("sync_status"),
    # A sync round waits on the network (bounded by sync_timeout_seconds), so not in the writer
    # thread; its local writes take the store's write lock.
    "sync_now": AppCommand("sync_now", changes=True),
    # writes
    "add": AppCommand("add", "write", changes=True),
    "edit": AppCommand("edit", "write", changes=True),
    "archive": AppCommand("archive", "write", changes=True),
    "forget": AppCommand("forget", "write", changes=True),
    "pin": AppCommand("pin", "write", changes=True),
    "restore": AppCommand("restore", "write", changes=True),
    "import_memories": AppCommand("import_memories", "write", changes=True),
    "reindex": AppCommand("reindex", "write", changes=True),
    "jobs_run": AppCommand("jobs_run", "write", changes=True),
    # long work
    "ingest": AppCommand("ingest", "extract", changes=True),
}
