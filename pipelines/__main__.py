"""`python -m pipelines <command>`: the command-line entry (pipelines.cli)."""

from pipelines.cli import entry

entry()
