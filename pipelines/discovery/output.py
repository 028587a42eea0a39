"""Rows printed as an aligned table for people, or as JSON or CSV for programs (`--format`).

The code lives in pipelines.terminal_output, which the summarize commands share; this name
stays for the discovery commands that import it.
"""

from __future__ import annotations

from pipelines.terminal_output import FORMATS, MAX_CELL, add_format_argument, print_rows

__all__ = ["FORMATS", "MAX_CELL", "add_format_argument", "print_rows"]
