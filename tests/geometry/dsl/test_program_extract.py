"""Program extraction from model replies: fenced, unfenced, prose, cut off, empty."""

from __future__ import annotations

import pytest

from geometry.dsl.program_extract import extract_program, fenced_blocks

PROGRAM = "point : 0 0 -> A\npoint : 3 4 -> B\nsegment : A B -> s"


@pytest.mark.parametrize(
    "reply",
    [
        f"```\n{PROGRAM}\n```",
        f"```dsl\n{PROGRAM}\n```",
        f"Thought: I place A and B first.\n\n```text\n{PROGRAM}\n```\nDone.",
        PROGRAM,
        f"Here is my program:\n{PROGRAM}\nThat draws AB.",
        f"```\n{PROGRAM}",  # cut off before the closing fence
    ],
)
def test_program_is_found(reply: str) -> None:
    assert extract_program(reply) == PROGRAM


def test_last_block_with_statements_wins() -> None:
    reply = f"First try:\n```\npoint : 9 9 -> Z\n```\nFinal:\n```\n{PROGRAM}\n```\n```\nnotes\n```"
    assert extract_program(reply) == PROGRAM


def test_malformed_and_comment_lines_inside_an_unfenced_program_stay() -> None:
    inner = "point : 0 0 -> A\n# then B\npoint 3 4 -> B\nsegment : A B -> s"
    assert extract_program(f"My answer:\n{inner}\nHope it helps.") == inner


@pytest.mark.parametrize("reply", [None, "", "I cannot solve this.", "```\nno dsl here\n```"])
def test_no_program_is_empty(reply: str | None) -> None:
    assert extract_program(reply) == ""


def test_fenced_blocks_in_order() -> None:
    assert fenced_blocks("a\n```\nx\n```\nb\n~~~\ny\n~~~") == ["x", "y"]
