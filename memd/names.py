"""The names the CLI offers as choices (kinds, jobs, the user-wide scope), with no imports.

``memd.models`` re-exports them; they live here so that a command answered by the daemon does
not pay for the models' own imports (hashlib's OpenSSL, dataclasses, datetime) at start.
"""

KINDS = ("decision", "preference", "fact", "todo", "progress", "bugfix", "summary", "excerpt")
STATUSES = ("active", "superseded", "archived")
JOB_NAMES = ("decay", "dedupe", "cleanup", "optimize")
"""The maintenance jobs (memd.daemon.jobs); here so the CLI can name them without importing the store."""
USER_SCOPE = "user:global"
"""The user-wide project: preferences that apply everywhere."""
STOPPED_TOPIC = "where the work stopped"
"""The topic of a segment's progress memory that says where its work stopped (the brief's
"Last session" shows the newest)."""
