"""`python -m pipelines <command>`: the command-line entry (pipelines.console, then
pipelines.cli)."""

from pipelines.console import entry

entry()
