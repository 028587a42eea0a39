"""Fixtures shared by the actors tests: the http engine's API key in its variable."""

from __future__ import annotations

import pytest

from tests.actors.http_support import (
    KEY,
    KEY_ENV,
)


@pytest.fixture
def api_key(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv(KEY_ENV, KEY)
    return KEY
