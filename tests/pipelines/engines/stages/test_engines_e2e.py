"""Every engine through the real `evaluate` pipeline: hf (tiny LM and VLM), http, vllm."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

from pipelines.cli import main
from pipelines.engines.models.model_schema import ModelConfig
from pipelines.engines.stages.chained_stage import unchained
from pipelines.engines.stages.options import EngineOptions
from pipelines.engines.stages.vllm_path import build_vllm_processor, vllm_processor_config
from pipelines.engines.stages.vllm_rows import (
    KEPT_PARAMS,
    KEPT_PROMPT,
    keep_asked,
    normalise_engine_errors,
    vllm_postprocess,
)
from pipelines.noregeo.summarize import load_results
from tests.actors.loopback_server import LoopbackServer
from tests.conftest import REPO

KEY = "sk-test-5f1e0c9d-never-written-anywhere"


def _run(items: Path, out: Path, engine: str, model: str, *extra: str) -> pl.DataFrame:
    args = ["evaluate", "--items", str(items), "--engine", engine, "--model", model]
    assert main([*args, "--per-task", "1", "--max-tokens", "48", "--out", str(out), *extra]) == 0
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


@pytest.fixture
def hub(monkeypatch: pytest.MonkeyPatch, tiny_llm_dir: Path, tmp_path: Path) -> list[Any]:
    """The hub's tokenizer files, offline: `snapshot_download` answers with a copy of the
    tiny model's tokenizer per (repo, revision) asked, and records what was asked."""
    import shutil

    import huggingface_hub
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "cache"))
    asked: list[Any] = []

    def snapshot(repo: str, revision: str | None, allow_patterns: list[str]) -> str:
        asked.append((repo, revision))
        assert not any(p.endswith(".safetensors") for p in allow_patterns)  # no weights
        folder = tmp_path / "snapshots" / str(revision)
        if not folder.is_dir():
            shutil.copytree(tiny_llm_dir, folder, ignore=shutil.ignore_patterns("*.safetensors"))
        return str(folder)

    monkeypatch.setattr(huggingface_hub, "snapshot_download", snapshot)
    return asked


VLLM_CFG = ModelConfig(
    name="qwen-vl",
    repo="Qwen/Qwen2.5-VL-7B-Instruct",
    engine="vllm",
    modality="image-text",
    setups=["text", "dotted", "full"],
    tensor_parallel_size=2,
)


def test_vllm_processor_builds_on_cpu_with_xgrammar_and_a_fixed_pool(hub: list[Any]) -> None:
    from ray.data.llm import build_processor

    config = vllm_processor_config(
        VLLM_CFG, EngineOptions(pool_size=3, batch_size=32), has_images=True
    )
    assert config.concurrency == (3, 3)
    assert config.engine_kwargs["tensor_parallel_size"] == 2
    assert config.engine_kwargs["structured_outputs_config"] == {"backend": "xgrammar"}
    assert config.engine_kwargs["limit_mm_per_prompt"] == {"image": 1}
    assert build_processor(config) is not None


PINNED = VLLM_CFG.model_copy(
    update={"revision": "0123abcd", "trust_remote_code": True, "tensor_parallel_size": 1}
)


def test_vllm_revision_and_remote_code_reach_every_stage_that_loads_the_model(
    hub: list[Any], tmp_path: Path
) -> None:
    """Ray 2.60 gives the CPU stages only a model source and trust_remote_code, and the
    prepare-multimodal stage only its model_config_kwargs: each must still see the pin."""
    processor = build_vllm_processor(PINNED, EngineOptions())
    # Ray's own stages, also where one actor runs two of them (chained_stage.py).
    stages = {
        type(stage).__name__: stage.fn_constructor_kwargs
        for stage in unchained(list(processor.stages.values()))
    }
    assert set(hub) == {(PINNED.repo, "0123abcd")}
    assert "DetokenizeStage" not in stages  # vLLM's own text: no second decode
    pinned = str(tmp_path / "snapshots" / "0123abcd")
    assert stages["ChatTemplateStage"]["model"] == pinned
    # The tokenize stage's copy of the pinned files adds no BOS (test_plain_tokenizer.py).
    plain = Path(stages["TokenizeStage"]["model"])
    assert plain.parent == tmp_path / "cache" / "geosee-plain-tokenizers"
    assert (plain / "chat_template.jinja").read_text() == Path(
        pinned, "chat_template.jinja"
    ).read_text()
    for name in ("ChatTemplateStage", "TokenizeStage"):
        assert stages[name]["trust_remote_code"] is True, name
    mm = stages["PrepareMultimodalStage"]["model_config_kwargs"]
    assert mm["model"] == PINNED.repo
    assert (mm["revision"], mm["tokenizer_revision"], mm["trust_remote_code"]) == (
        "0123abcd",
        "0123abcd",
        True,
    )
    engine = stages["vLLMEngineStage"]["engine_kwargs"]
    assert (engine["revision"], engine["trust_remote_code"]) == ("0123abcd", True)


@pytest.mark.parametrize(("given", "expected"), [(None, "openai"), ("string", "string")])
def test_vllm_content_format_reaches_the_multimodal_stage(
    hub: list[Any], given: str | None, expected: str
) -> None:
    """Ray 2.60's prepare-multimodal stage renders content as "string" unless told, which
    empties the prompt of llava-style templates (tests/vllm/test_chat_templates.py); the
    chat-template stage takes no format and renders what that stage hands it."""
    cfg = VLLM_CFG.model_copy(update={"chat_template_content_format": given})
    stages = build_vllm_processor(cfg, EngineOptions()).stages
    kwargs = stages["PrepareMultimodalStage"].fn_constructor_kwargs
    assert kwargs["chat_template_content_format"] == expected


@pytest.mark.parametrize("as_string", [False, True])
def test_vllm_system_prompt_format_reaches_the_multimodal_stage(
    hub: list[Any], as_string: bool
) -> None:
    """ModelConfig.system_prompt_as_string is Ray's own apply_sys_msg_formatting (the
    system message as one string, for templates that print it as one)."""
    cfg = VLLM_CFG.model_copy(update={"system_prompt_as_string": as_string})
    stages = build_vllm_processor(cfg, EngineOptions()).stages
    assert stages["PrepareMultimodalStage"].fn_constructor_kwargs["apply_sys_msg_formatting"] is (
        as_string
    )


def test_vllm_unpinned_revision_loads_the_repo_itself(hub: list[Any]) -> None:
    config = vllm_processor_config(VLLM_CFG, EngineOptions(), has_images=True)
    assert config.engine_kwargs["revision"] is None  # "main": no pin
    assert config.chat_template_stage["enabled"] and "model_source" not in (
        config.chat_template_stage
    )
    # Only the tokenize stage's tokenizer is fetched (to check what it adds), not pinned.
    assert hub == [(VLLM_CFG.repo, None)]


QWEN3 = ModelConfig(
    name="qwen3",
    repo="Qwen/Qwen3-8B",
    reasoning_parser="qwen3",
    enable_thinking=True,
    thinking_max_tokens=4096,
)


def test_vllm_reasoning_model_thinks_before_its_grammar(
    hub: list[Any], tiny_thinking_dir: Path
) -> None:
    config = vllm_processor_config(QWEN3, EngineOptions(), has_images=False)
    structured = config.engine_kwargs["structured_outputs_config"]
    assert structured == {"backend": "xgrammar", "reasoning_parser": "qwen3"}
    # And vLLM's ReasoningConfig, which enforces the thinking budget.
    assert config.engine_kwargs["reasoning_config"] == {"reasoning_parser": "qwen3"}
    assert config.chat_template_stage["chat_template_kwargs"] == {"enable_thinking": True}
    thinker = QWEN3.model_copy(update={"repo": str(tiny_thinking_dir)})  # a tokenizer offline
    processor = build_vllm_processor(thinker, EngineOptions())
    asked = {"max_tokens": 48, "temperature": 0.6, "thinking_token_budget": 4096}
    data = processor.preprocess({"sampling_params": asked, "messages": []})["__data"]
    assert data["sampling_params"] == {**asked, "max_tokens": 48 + 4096}
    assert data[KEPT_PARAMS] == asked  # as asked, for results
    # Plain models: no parser, no template kwargs, no budget.
    plain = vllm_processor_config(VLLM_CFG, EngineOptions(), has_images=False)
    assert "reasoning_parser" not in plain.engine_kwargs["structured_outputs_config"]
    assert "chat_template_kwargs" not in plain.chat_template_stage


@pytest.mark.parametrize("name", ["qwen3-4b", "qwen3-8b"])
def test_paper_qwen3_answers_one_shot_with_its_grammar_from_the_first_token(
    hub: list[Any], tiny_llm_dir: Path, name: str
) -> None:
    """The paper's protocol: thinking off by Qwen3's template switch, no reasoning parser (so
    the grammar is not deferred past a reasoning block), no thinking budget on the request."""
    from pipelines.engines.models.config_yaml import load_config
    from pipelines.engines.prompts.requests import SamplingConfig, sampling_params

    cfg = load_config(REPO / "configs" / "models" / f"{name}.yaml")
    config = vllm_processor_config(cfg, EngineOptions(), has_images=False)
    assert config.engine_kwargs["structured_outputs_config"] == {"backend": "xgrammar"}
    assert "reasoning_config" not in config.engine_kwargs
    assert config.chat_template_stage["chat_template_kwargs"] == {"enable_thinking": False}
    asked = SamplingConfig(max_tokens=48).for_model(cfg)
    params = sampling_params(asked, "choice", ["yes", "no"])
    assert "thinking_token_budget" not in params and params["temperature"] == 0.0
    assert "yes" in params["structured_outputs"]["grammar"]
    processor = build_vllm_processor(
        cfg.model_copy(update={"repo": str(tiny_llm_dir)}), EngineOptions()
    )
    data = processor.preprocess({"sampling_params": params, "messages": []})["__data"]
    assert data["sampling_params"]["max_tokens"] == 48  # the answer alone, no budget added


def test_vllm_reasoning_is_cut_off_before_scoring() -> None:
    cut = vllm_postprocess("</think>")
    row = {"generated_text": '<think>a </think> b</think>\n{"answer": "yes"}'}
    assert cut(row)["generated_text"] == '{"answer": "yes"}'
    assert cut({"generated_text": None})["generated_text"] is None
    assert vllm_postprocess(None)(row)["generated_text"] == row["generated_text"]
    budget = {"max_tokens": 5, "thinking_token_budget": 10}
    assert keep_asked()({"sampling_params": budget}) == {
        "sampling_params": {**budget, "max_tokens": 15},
        KEPT_PARAMS: budget,
    }
    assert keep_asked()({"sampling_params": {"max_tokens": 5}})["sampling_params"] == {
        "max_tokens": 5
    }
    # Ray's engine pops the params off the row; they come back from the kept copy.
    done = {"generated_text": "x", KEPT_PARAMS: {"max_tokens": 5}}
    assert vllm_postprocess(None)(done)["sampling_params"] == {"max_tokens": 5}
    failed = {"generated_text": np.array([None], dtype=object)}
    failed[KEPT_PARAMS] = np.array([{"max_tokens": 5}], dtype=object)
    failed["__inference_error__"] = np.array(["boom"], dtype=object)
    fixed = normalise_engine_errors(failed)
    assert list(fixed["sampling_params"]) == [{"max_tokens": 5}] and KEPT_PARAMS not in fixed
    assert list(fixed["engine_error"]) == ["boom"]


def test_vllm_rows_keep_the_items_question_not_the_rendered_template() -> None:
    """Ray's chat-template stage writes the whole template into `prompt`; the item's own
    question comes back after the engine, for answered and failed rows alike."""
    kept = keep_asked()({"sampling_params": {"max_tokens": 5}, "prompt": "Is AB | CD?"})
    assert kept[KEPT_PROMPT] == "Is AB | CD?"
    rendered = "<|begin|><|system|>sys<|end|><|user|>Is AB | CD?<|end|><|assistant|>"
    answered = {**kept, "prompt": rendered, "generated_text": '{"answer": "yes"}'}
    assert vllm_postprocess(None)(answered)["prompt"] == "Is AB | CD?"
    batch = {
        "prompt": np.array([rendered, "Q2"], dtype=object),
        KEPT_PROMPT: np.array([None, "Q2"], dtype=object),  # row 0 went through postprocess
        "__inference_error__": np.array([None, "boom"], dtype=object),
    }
    batch["prompt"][0] = "Q1"
    batch["prompt"][1] = rendered
    fixed = normalise_engine_errors(batch)
    assert list(fixed["prompt"]) == ["Q1", "Q2"] and KEPT_PROMPT not in fixed
    assert "geosee_prompt" not in keep_asked()({"sampling_params": {"max_tokens": 5}})


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
