"""configs/models: 45+ sweep models validated by the schema; a broken file names path and field."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipelines.cli import main
from pipelines.engines.models.config_yaml import load_config, load_configs
from pipelines.engines.models.model_fields import REASONING_PARSERS
from pipelines.engines.models.model_resolution import resolve_model
from pipelines.engines.models.model_schema import ModelConfigError
from pipelines.noregeo.generate import MANIFEST
from tests.conftest import REPO, SHARED

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
        ("name: x\nrepo: r\nreasoning_parser: qwen9\nthinking_max_tokens: 9\n", "reasoning_parser"),
        ("name: x\nrepo: r\nreasoning_parser: qwen3\n", "thinking_max_tokens"),
        ("name: x\nrepo: r\nchat_template_content_format: html\n", "chat_template_content"),
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


def test_reasoning_models_think_before_the_grammar(configs) -> None:
    thinkers = [c for c in configs if c.reasoning_parser]
    assert {c.name for c in thinkers} == {
        "qwen3-4b-thinking",
        "qwen3-8b-thinking",
        "qwen3-14b",
        "qwen3-32b",
        "deepseek-r1-distill-qwen-7b",
        "deepseek-r1-distill-qwen-32b",
    }
    for c in thinkers:
        assert c.reasoning_parser in REASONING_PARSERS and c.thinking_max_tokens > 0, c.name
        # The reasoning, the answer budget and a prompt fit the context.
        assert c.thinking_max_tokens + 2048 < c.max_model_len, c.name
        assert not c.paper, c.name
    assert all(c.enable_thinking for c in thinkers if c.name.startswith("qwen3-"))


def test_paper_models_answer_one_shot_and_their_thinking_setups_stay_apart(configs) -> None:
    """The paper's protocol: no chain of thought, the grammar from the first token."""
    by_name = {c.name: c for c in configs}
    for c in configs:
        if c.paper:
            assert not c.reasoning_parser and not c.thinking_max_tokens, c.name
            assert c.enable_thinking is not True and c.sampling is None, c.name
            assert c.expected_output_tokens == 16, c.name
    for name in ("qwen3-4b", "qwen3-8b"):
        paper, thinking = by_name[name], by_name[f"{name}-thinking"]
        assert paper.paper and paper.enable_thinking is False  # Qwen3's template switch
        assert not thinking.paper and thinking.thinks and thinking.repo == paper.repo


def test_a_thinking_config_marked_paper_is_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "thinker.yaml"
    path.write_text(
        (CONFIGS / "qwen3-8b-thinking.yaml").read_text().replace("paper: false", "paper: true")
    )
    items = tmp_path / "items"
    items.mkdir()
    (items / MANIFEST).write_text('{"tasks": ["C-BCT-CT"], "setups": ["text"]}')
    (items / "part-C-BCT-CT.parquet").write_bytes(b"")  # never read: the config fails first
    out = tmp_path / "results"
    args = ["evaluate", "--items", str(items), "--engine", "vllm", "--model", str(path)]
    assert main([*args, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "paper" in err and "-thinking" in err, err
    assert not out.exists()
    for switch in ("enable_thinking: true\n", "reasoning_parser: qwen3\nthinking_max_tokens: 9\n"):
        path.write_text(f"name: thinker\nrepo: r\npaper: true\n{switch}")
        with pytest.raises(ModelConfigError, match="paper"):
            load_config(path)


def test_blocked_models_say_why(configs) -> None:
    blocked = {c.name: c.blocked for c in configs if c.blocked}
    assert "vision LoRA" in (blocked.get("phi-4-multimodal-instruct") or "")
    # Each reason says what is missing and what would unblock it (docs/engines.md).
    for name in ("ursa-8b", "llava-mini-llama-3.1-8b", "phi-4-multimodal-instruct"):
        assert "Unblock" in (blocked.get(name) or ""), name
    pixtral = next(c for c in configs if c.name == "pixtral-12b")
    # The HF-format repo: Ray's chat-template/tokenize stages need HF tokenizer files.
    assert pixtral.repo == "mistral-community/pixtral-12b" and not pixtral.blocked
    assert "tokenizer_mode" not in pixtral.engine_kwargs


def _bad_parser_config(tmp_path: Path) -> Path:
    path = tmp_path / "thinker.yaml"
    path.write_text("name: thinker\nrepo: r\nreasoning_parser: qwen9\nthinking_max_tokens: 64\n")
    return path


def test_unknown_reasoning_parser_stops_evaluate_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    items = tmp_path / "items"
    items.mkdir()
    (items / MANIFEST).write_text('{"tasks": ["C-BCT-CT"], "setups": ["text"]}')
    (items / "part-C-BCT-CT.parquet").write_bytes(b"")  # never read: the config fails first
    out = tmp_path / "results"
    args = ["evaluate", "--items", str(items), "--engine", "vllm"]
    assert main([*args, "--model", str(_bad_parser_config(tmp_path)), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "reasoning_parser" in err and "qwen9" in err
    assert not out.exists()


def test_unknown_reasoning_parser_stops_geobuild_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "results"
    args = ["geobuild", "--dataset", str(SHARED / "geobuildbench"), "--engine", "vllm"]
    assert main([*args, "--model", str(_bad_parser_config(tmp_path)), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "qwen9" in err
    assert not out.exists()


def test_vllm_takes_a_local_checkpoint_with_its_context(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text('{"max_position_embeddings": 8192}')
    cfg = resolve_model("vllm", str(tmp_path))
    assert cfg.engine == "vllm" and cfg.local and cfg.repo == str(tmp_path.resolve())
    assert cfg.max_model_len == 8192 and cfg.setups == ["text"]
    with pytest.raises(ModelConfigError, match="not a local checkpoint directory"):
        resolve_model("vllm", str(tmp_path / "missing"))


def test_every_engine_list_is_the_engine_tables() -> None:
    from typing import get_args

    from pipelines.engines.models.engine_kinds import ENGINE_KINDS, ENGINES, Engine
    from pipelines.engines.stages.engine_stages import STAGES

    assert get_args(Engine) == ENGINES == tuple(ENGINE_KINDS)
    assert set(STAGES) == set(ENGINES)  # every engine has its Ray stage, and no other


def test_api_models_send_the_snapshot_they_record() -> None:
    """gpt-4.1 configs record a dated snapshot as their revision; the http engine sends that
    snapshot, never the alias that moves (issue 28); an unpinned one sends the repo."""
    from pipelines.engines.models.model_revisions import api_model

    api = [c for c in load_configs(REPO / "configs" / "models") if c.engine == "http"]
    assert {c.name for c in api} >= {"gpt-4.1", "gpt-4.1-mini", "gpt-4.1-nano"}
    for cfg in api:
        assert api_model(cfg) == cfg.revision != cfg.repo, cfg.name
        assert cfg.revision.startswith(cfg.repo + "-20"), cfg.name
    unpinned = api[0].model_copy(update={"revision": "main"})
    assert api_model(unpinned) == unpinned.repo


# The original-layout LLaVA-1.5 models (haotian-liu/LLaVA's LlavaLlamaForCausalLM), converted
# to llava-hf before a run (pipelines/engines/models/llava_convert.py), with the conversation
# each was trained or evaluated with (docs/engines.md, "Original-layout LLaVA models").
ORIGINAL_LLAVA = {
    "g-llava-7b": "vicuna_v1",
    "g-llava-13b": "vicuna_v1",
    "math-llava-13b": "vicuna_v1",
    "multimath-7b-llava-v1.5": "dpsk",
}


def test_original_layout_llava_models_run_through_the_conversion(configs) -> None:
    by_name = {c.name: c for c in configs}
    for name, conversation in ORIGINAL_LLAVA.items():
        cfg = by_name[name]
        assert not cfg.blocked and cfg.layout == "llava-original", name
        assert cfg.conversation == conversation and cfg.engine == "vllm", name
        assert cfg.vision_tower == "openai/clip-vit-large-patch14-336", name
    # No other config claims the original layout.
    assert {c.name for c in configs if c.layout == "llava-original"} == set(ORIGINAL_LLAVA)


def test_conversion_fields_need_the_original_layout(tmp_path: Path) -> None:
    path = tmp_path / "m.yaml"
    path.write_text("name: m\nrepo: org/m\nconversation: vicuna_v1\n")
    with pytest.raises(ModelConfigError, match="llava-original"):
        load_config(path)
    path.write_text("name: m\nrepo: org/m\nlayout: llava-original\nconversation: vicuna_v9\n")
    with pytest.raises(ModelConfigError, match="conversation"):
        load_config(path)
