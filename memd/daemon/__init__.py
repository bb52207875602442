"""The daemon: its socket server, lifecycle, app commands and scheduled jobs."""
