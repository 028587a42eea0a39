"""configs/models: 45+ sweep models validated by the schema; a broken file names path and field."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipelines.model_config import ModelConfigError, load_config, load_configs, resolve_model
from tests.conftest import REPO

CONFIGS = REPO / "configs" / "models"
# Every model the NoReGeo paper names, by the repo it is published under.
PAPER_REPOS = {
    "Qwen/Qwen2.5-3B-Instruct",
    "Qwen/Qwen2.5-7B-Instruct",
    "Qwen/Qwen2.5-Math-7B-Instruct",
    "Qwen/Qwen3-4B",
    "Qwen/Qwen3-8B",
    "meta-llama/Llama-3.1-8B-Instruct",
    "meta-llama/Llama-3.1-70B-Instruct",
    "Qwen/Qwen2-VL-7B-Instruct",
    "Qwen/Qwen2.5-VL-7B-Instruct",
    "OpenGVLab/InternVL2_5-1B",
    "OpenGVLab/InternVL2_5-8B",
    "OpenGVLab/InternVL3-8B",
    "openbmb/MiniCPM-o-2_6",
    "microsoft/Phi-3.5-vision-instruct",
    "gpt-4.1",
    "gpt-4.1-mini",
    "gpt-4.1-nano",
}


@pytest.fixture(scope="module")
def configs():
    return load_configs(CONFIGS)


def test_at_least_45_sweep_models_besides_local_entries(configs) -> None:
    sweep = [c for c in configs if not c.local]
    assert len(sweep) >= 45
    assert all(c.params_b for c in sweep if c.engine in ("vllm", "hf")), "GPU models need size"


def test_every_paper_model_is_there(configs) -> None:
    repos = {c.repo for c in configs if c.paper}
    assert repos >= PAPER_REPOS
    names = {c.name for c in configs if c.paper}
    for family in ("mistral-small", "llava-mini", "g-llava", "ursa", "math-llava", "multimath"):
        assert any(n.startswith(family) for n in names), family


def test_api_models_use_openai_with_their_key_env(configs) -> None:
    for c in configs:
        if c.engine == "http":
            assert c.api_base == "https://api.openai.com/v1"
            assert c.api_key_env == "OPENAI_API_KEY"


def test_vlms_run_three_setups_llms_only_text(configs) -> None:
    for c in configs:
        if c.local:
            continue
        expected = ["text", "dotted", "full"] if c.modality == "image-text" else ["text"]
        assert c.setups == expected, c.name


def test_tensor_parallel_fits_weights_on_a100_80gb(configs) -> None:
    for c in configs:
        if c.params_b and c.engine == "vllm":
            weights_gb = 2 * c.params_b  # bf16
            assert weights_gb / c.tensor_parallel_size < 0.8 * 80, c.name


def test_local_entries_are_cpu_runnable(configs) -> None:
    local = {c.name: c for c in configs if c.local}
    assert {"oracle", "random", "constant", "tiny-llm", "tiny-vlm"} <= set(local)
    assert local["tiny-vlm"].build_tiny == "vlm" and local["tiny-vlm"].repo_env


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("name: x\nrepo: r\ntensor_parallel_size: 0\n", "tensor_parallel_size"),
        ("name: x\nrepo: r\nengine: tpu\n", "engine"),
        ("name: x\nrepo: r\nmodality: text\nsetups: [text, full]\n", "setups"),
        ("name: x\nrepo: r\nengine: http\n", "api_base"),
        ("name: x\nrepo: r\ncolour: blue\n", "colour"),
        ("repo: r\n", "name"),
    ],
)
def test_broken_file_fails_with_path_and_field(tmp_path: Path, text: str, field: str) -> None:
    path = tmp_path / "x.yaml"
    path.write_text(text)
    with pytest.raises(ModelConfigError) as err:
        load_config(path)
    assert str(path) in str(err.value)
    assert field in str(err.value)


def test_folder_rejects_a_name_that_is_not_the_file_stem(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text("name: b\nrepo: r\n")
    with pytest.raises(ModelConfigError, match="a.yaml"):
        load_configs(tmp_path)


def test_resolve_model_finds_local_entries_by_name() -> None:
    cfg = resolve_model("hf", "tiny-llm")
    assert cfg.local and cfg.engine == "hf"
