"""GeoBuild with `--engine vllm` on vLLM's CPU build: two rounds, one engine load."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import pipelines.geobuild.engines as geobuild_engines
from pipelines.cli import main
from pipelines.geobuild.rows import read_round
from store.records import model_dir
from tests.conftest import SHARED

# An engine load takes 60-90 s on an idle 2-core machine and several minutes on a busy one.
pytestmark = pytest.mark.timeout(1800)


def test_two_rounds_share_one_engine(
    vllm_ray: Any, tiny_llm_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stages: list[Any] = []
    real = geobuild_engines.model_stage

    def recorded(engine: str) -> Any:
        stages.append(real(engine))
        return stages[-1]

    monkeypatch.setattr(geobuild_engines, "model_stage", recorded)
    args = ["geobuild", "--dataset", str(SHARED / "geobuildbench"), "--engine", "vllm"]
    args += ["--model", str(tiny_llm_dir), "--first", "2", "--max-rounds", "2"]
    assert main([*args, "--max-tokens", "64", "--out", str(tmp_path)]) == 0

    (stage,) = stages
    assert stage.rounds_served == 2  # both rounds went through the resident engine ...
    assert stage.hosts_started == 1  # ... which was loaded once
    assert stage.hosts == []  # and ended with the run
    root = model_dir(tmp_path, "geobuild", tiny_llm_dir.name)
    first, second = read_round(root, 1), read_round(root, 2)
    assert first.height == 2
    # A random model solves nothing: every problem comes back for round 2.
    assert second.height == first.filter(~first["success"]).height == 2
    for rows in (first, second):
        assert rows["generated_text"].null_count() == 0
