"""docs/dsl.md documents every command and every overload of the table."""

from __future__ import annotations

from geometry.dsl.commands import COMMANDS
from geometry.dsl.errors import ERROR_CATEGORIES
from tests.conftest import REPO

DOC = (REPO / "docs" / "dsl.md").read_text(encoding="utf-8")


def test_every_command_has_a_section() -> None:
    missing = [name for name in COMMANDS if f"### {name}\n" not in DOC]
    assert not missing


def test_every_overload_signature_is_listed() -> None:
    missing = [
        overload.signature(name)
        for name, command in COMMANDS.items()
        for overload in command.overloads
        if f"`{overload.signature(name)}`" not in DOC
    ]
    assert not missing


def test_no_documented_command_is_missing_from_the_table() -> None:
    documented = {
        line.removeprefix("### ").strip() for line in DOC.splitlines() if line.startswith("### ")
    }
    assert documented == set(COMMANDS)


def test_every_error_category_is_documented() -> None:
    assert all(f"`{category}`" in DOC for category in ERROR_CATEGORIES)
