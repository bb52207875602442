"""Setup: hooks in Claude Code's settings, the user service, doctor and upgrade."""
