"""Pull the DSL program out of a model reply: fenced code blocks, or the DSL-looking lines.

Replies are untrusted text: nothing here evaluates them. The rules, in order:

1. The last fenced block (```...```, any info string such as ```dsl) whose body has a DSL
   statement (a line with `:` and `->`); models often show a fragment first and the
   complete program last. An unclosed fence at the end counts (the reply was cut off).
2. Without such a block: the lines from the first to the last that look like statements,
   so prose before and after an unfenced program is dropped, while a malformed line inside
   it stays (and is reported at its line, as the model wrote it).
3. Nothing that looks like DSL: the empty string (the loop reports "no program").
"""

from __future__ import annotations

import re

_FENCE = re.compile(r"^\s*(```|~~~)")
_STATEMENT = re.compile(r"^\s*[A-Za-z_][\w ]*:.*->")


def fenced_blocks(text: str) -> list[str]:
    """Bodies of the fenced code blocks of `text`, in order; an unclosed last one included."""
    blocks: list[str] = []
    body: list[str] | None = None
    for line in text.splitlines():
        if _FENCE.match(line):
            if body is None:
                body = []
            else:
                blocks.append("\n".join(body))
                body = None
        elif body is not None:
            body.append(line)
    if body:
        blocks.append("\n".join(body))
    return blocks


def _has_statement(text: str) -> bool:
    return any(_STATEMENT.match(line) for line in text.splitlines())


def extract_program(text: str | None) -> str:
    """The program of a reply (see module docstring); '' when there is none."""
    if not text:
        return ""
    for block in reversed(fenced_blocks(text)):
        if _has_statement(block):
            return block.strip("\n")
    lines = text.splitlines()
    hits = [i for i, line in enumerate(lines) if _STATEMENT.match(line)]
    if not hits:
        return ""
    return "\n".join(lines[hits[0] : hits[-1] + 1])
