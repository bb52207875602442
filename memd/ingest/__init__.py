"""The ingest stage: Claude Code transcripts read, tailed and grouped into sessions."""
