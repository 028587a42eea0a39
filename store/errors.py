"""The error bad user input raises, from the ground floor up (re-exported by pipelines.cli)."""

from __future__ import annotations


class UsageError(Exception):
    """Bad input from the user: printed as one line, exit code 2, nothing written."""
