"""Sync across machines through an S3 bucket."""
