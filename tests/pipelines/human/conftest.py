"""Fixtures shared by the human-evaluation tests: the commands registered, the pages exported
once for the folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipelines import cli
from tests.pipelines.human.human_support import (
    EXPORT_OPTIONS,
    _export,
)


@pytest.fixture(autouse=True)
def _commands(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(cli.COMMANDS, "human-export", ("pipelines.human.export_command", "export"))
    monkeypatch.setitem(cli.COMMANDS, "human-import", ("pipelines.human.import_command", "import"))


@pytest.fixture(scope="package")
def exported(small_items: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("export") / "pages"
    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(cli.COMMANDS, "human-export", ("pipelines.human.export_command", "export"))
        assert _export(small_items, out, *EXPORT_OPTIONS) == 0
    return out
