"""What memd can do, as one object: the daemon's handlers and the CLI's local mode both call it.

Every public method takes JSON-able arguments (``ingest`` also an in-process ``progress``
callback) and returns a JSON-able dict, so the same call works in-process and over the socket
(``{"cmd": "search", ...}`` runs ``App.search``; :data:`memd.daemon.commands.APP_COMMANDS` maps the
socket names to the methods).
"""

from __future__ import annotations

from memd.daemon.core import Workers
from memd.daemon.reads import Reads
from memd.daemon.work import Work
from memd.daemon.writes import Writes
from memd.project import project_of

__all__ = ["App", "Workers", "project_of"]


class App(Reads, Writes, Work):
    """memd's commands over one store: reads, writes and the workers' commands (see the mixins);
    the store, the lock and the caches are :class:`memd.daemon.core.AppCore`'s."""
