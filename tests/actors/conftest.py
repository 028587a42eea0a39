"""Session fixtures: the tiny random LM and image-text model, built once per test run."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from pipelines.tiny_model import build_tiny_model


@pytest.fixture(scope="session")
def tiny_llm_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny Llama-style causal LM with a BPE tokenizer and chat template (seed 0)."""
    torch.set_num_threads(1)
    return build_tiny_model("llm", tmp_path_factory.mktemp("tiny_llm"), seed=0)


@pytest.fixture(scope="session")
def tiny_vlm_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny Llava-style image-text model (32 px images, 16 image tokens; seed 0)."""
    torch.set_num_threads(1)
    return build_tiny_model("vlm", tmp_path_factory.mktemp("tiny_vlm"), seed=0)
