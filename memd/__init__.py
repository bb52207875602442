"""memd: long-term memory for Claude Code, as a local daemon.

Keep this module free of imports: ``memd-hook`` imports the package on every
Claude Code hook, and everything imported here is paid for on that path.
"""

__version__ = "0.14.0"
