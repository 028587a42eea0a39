"""Fixtures of the model tests: the tiny original-layout LLaVA checkpoint, built once for the
folder, and a conversion cache of each test's own."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipelines.engines.models import llava_convert
from tests.tiny_llava_original import build_llava_original


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The converted-model cache, in the test's own folder."""
    path = tmp_path / "converted"
    monkeypatch.setenv(llava_convert.CACHE_ENV, str(path))
    return path


@pytest.fixture(scope="package")
def original(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random checkpoint in LLaVA-1.5's original layout (tests/tiny_llava_original.py)."""
    import torch

    torch.set_num_threads(1)
    return build_llava_original(tmp_path_factory.mktemp("llava-original"))
