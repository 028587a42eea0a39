"""Every engine through the real `evaluate` pipeline: hf (tiny LM and VLM), http, vllm."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from pipelines.cli import main
from pipelines.engines import EngineOptions, vllm_processor_config
from pipelines.model_config import ModelConfig
from pipelines.summarize import load_results
from tests.actors.loopback_server import LoopbackServer
from tests.conftest import REPO

KEY = "sk-test-5f1e0c9d-never-written-anywhere"


def _run(items: Path, out: Path, engine: str, model: str, *extra: str) -> pl.DataFrame:
    args = ["evaluate", "--items", str(items), "--engine", engine, "--model", model]
    assert main([*args, "--limit", "1", "--max-tokens", "48", "--out", str(out), *extra]) == 0
    return load_results(out)


def test_tiny_lm_through_hf_gives_only_schema_valid_answers(
    small_items: Path, tiny_llm_dir: Path, tmp_path: Path
) -> None:
    df = _run(small_items, tmp_path, "hf", str(tiny_llm_dir), "--batch-size", "8")
    assert df.height == 25  # text setup only: the tiny LM is text-only
    assert set(df["setup"]) == {"text"}
    assert df.filter(~pl.col("valid"))["generated_text"].to_list() == []
    assert set(df["answer_type"]) == {"choice", "number", "point"}
    assert (df["num_generated_tokens"] > 0).all()


def test_tiny_vlm_through_hf_reads_images(
    small_items: Path, tiny_vlm_dir: Path, tmp_path: Path
) -> None:
    df = _run(small_items, tmp_path, "hf", str(tiny_vlm_dir), "--setups", "dotted,full")
    assert df.height == 50
    assert df["engine_error"].null_count() == df.height
    assert df["valid"].all()


def _truth_answer(request: dict) -> str:
    """Answer yes to everything with the right shape: the server reads the schema."""
    schema = request["response_format"]["json_schema"]["schema"]
    props = schema["properties"]
    if "x" in props:
        return '{"x": 0, "y": 0}'
    if "enum" in props["answer"]:
        return json.dumps({"answer": props["answer"]["enum"][0]})
    return '{"answer": 1}'


def _files_holding(folder: Path, secret: bytes) -> list[str]:
    """Every regular file under `folder` (recursively) whose bytes contain `secret`."""
    hits = []
    for path in folder.rglob("*"):
        try:
            if path.is_file() and not path.is_symlink() and secret in path.read_bytes():
                hits.append(str(path.relative_to(folder)))
        except OSError:  # a file Ray removed or rotated while we listed the folder
            continue
    return hits


def _worker_env(ray: Any, name: str) -> str | None:
    @ray.remote(num_cpus=0)
    def read() -> str | None:
        import os

        return os.environ.get(name)

    return ray.get(read.remote())  # type: ignore[no-any-return]


def test_http_engine_never_writes_the_key(
    ray_local: Any,
    small_items: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Set after Ray started, as on a cluster whose nodes never saw the driver's shell:
    # the workers do not inherit it, so the key must travel, and not through anything Ray
    # writes down (runtime envs are logged in plain text; task specs hold arguments).
    monkeypatch.setenv("GEOSEE_TEST_KEY", KEY)
    assert _worker_env(ray_local, "GEOSEE_TEST_KEY") is None
    with LoopbackServer(answer=_truth_answer) as server:
        cfg = tmp_path / "api-model.yaml"
        cfg.write_text(
            "name: api-model\nrepo: gpt-test\nengine: http\nmodality: image-text\n"
            f"setups: [text, dotted, full]\napi_base: {server.base_url}\n"
            "api_key_env: GEOSEE_TEST_KEY\n"
        )
        out = tmp_path / "results"
        df = _run(small_items, out, "http", str(cfg))
        assert all(r.headers.get("authorization") == f"Bearer {KEY}" for r in server.requests)
    assert df.height == 75 and df["valid"].all()
    captured = capsys.readouterr()
    assert KEY not in captured.out + captured.err
    assert _files_holding(out, KEY.encode()) == []
    session = Path(ray_local._private.worker._global_node.get_session_dir_path())
    assert (session / "logs").is_dir()  # the folder Ray writes its logs to is the one read
    assert _files_holding(session, KEY.encode()) == []


VLLM_CFG = ModelConfig(
    name="qwen-vl",
    repo="Qwen/Qwen2.5-VL-7B-Instruct",
    engine="vllm",
    modality="image-text",
    setups=["text", "dotted", "full"],
    tensor_parallel_size=2,
)


def test_vllm_processor_builds_on_cpu_with_xgrammar_and_a_fixed_pool() -> None:
    from ray.data.llm import build_processor

    config = vllm_processor_config(
        VLLM_CFG, EngineOptions(pool_size=3, batch_size=32), has_images=True
    )
    assert config.concurrency == (3, 3)
    assert config.engine_kwargs["tensor_parallel_size"] == 2
    assert config.engine_kwargs["structured_outputs_config"] == {"backend": "xgrammar"}
    assert config.engine_kwargs["limit_mm_per_prompt"] == {"image": 1}
    assert build_processor(config) is not None


def test_vllm_without_gpus_refuses_at_start(small_items: Path, tmp_path: Path) -> None:
    cfg = tmp_path / "vl.yaml"
    cfg.write_text(VLLM_CFG.model_dump_json())  # JSON is YAML
    out = tmp_path / "results"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pipelines",
            "evaluate",
            "--items",
            str(small_items),
            "--engine",
            "vllm",
            "--model",
            str(cfg),
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=300,
    )
    assert result.returncode == 2
    assert "needs 2 GPU(s)" in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert not out.exists()
