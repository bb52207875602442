"""memd's durable state: one SQLite file at ``$MEMD_HOME/state.db``, what must survive a crash
or a restart, read and written by every stage from the tailer to the daemon.

- :mod:`memd.state.db`: the file, its schema version, transactions, a JSON key/value table;
- :mod:`memd.state.reading`: transcript offsets, line uuids seen, sessions;
- :mod:`memd.state.segments`: the extraction queue and the turns waiting in it.

The tailer commits a read's turns and the file's new offset in one transaction
(:meth:`State.transaction`).
"""

from __future__ import annotations

from memd.state.db import STATE_VERSION, Database, check_version
from memd.state.reading import FileOffset, Reading, SessionRecord
from memd.state.segments import (
    MAX_ATTEMPTS,
    SEGMENT_STATUSES,
    Segments,
    turn_from_json,
    turn_to_json,
)


class State(Segments, Reading, Database):
    """The state database, every table of it. Every method is thread-safe."""


__all__ = [
    "MAX_ATTEMPTS",
    "SEGMENT_STATUSES",
    "STATE_VERSION",
    "FileOffset",
    "SessionRecord",
    "State",
    "check_version",
    "turn_from_json",
    "turn_to_json",
]
