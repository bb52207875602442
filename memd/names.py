"""The names the CLI offers as choices (kinds, jobs, the user-wide scope), with no imports
beyond the kind registry (plain data).

``memd.models`` re-exports them; they live here so that a command answered by the daemon does
not pay for the models' own imports (hashlib's OpenSSL, dataclasses, datetime) at start.
"""

from memd.kinds import NAMES as KINDS

__all__ = [
    "COMMANDS_TOPIC",
    "JOB_NAMES",
    "KINDS",
    "LINT_TOPIC",
    "STATUSES",
    "STOPPED_TOPIC",
    "USER_SCOPE",
]

STATUSES = ("active", "superseded", "archived")
JOB_NAMES = ("decay", "dedupe", "cleanup", "optimize")
"""The maintenance jobs (memd.daemon.jobs); here so the CLI can name them without importing the store."""
USER_SCOPE = "user:global"
"""The user-wide project: preferences that apply everywhere."""
STOPPED_TOPIC = "where the work stopped"
"""The topic of a segment's progress memory that says where its work stopped (the brief's
"Last session" shows the newest)."""
COMMANDS_TOPIC = "commands"
"""The topic of the facts that say how the project's checks run ("Tests run with `pytest -q`"):
the session brief shows the newest of each."""
LINT_TOPIC = "lint exceptions"
"""The topic of a lint failure fixed by suppressing its rule (:mod:`memd.extract.lintfixes`):
recalled when asked about, but not among the brief's latest bug fixes."""
