"""Driver pre-flight checks: remote code without trust, prompts that fill the context."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pytest
from PIL import Image

from pipelines.engines.models.model_schema import ModelConfig
from pipelines.engines.models.tiny_model import IMAGE_SIZE, PATCH_SIZE, build_tiny_model
from pipelines.engines.prompts.preflight import (
    PreflightError,
    check_context,
    check_model,
    check_remote_code,
)
from pipelines.engines.prompts.requests import build_messages

SYSTEM = "You are a helpful assistant that answers geometry questions with JSON only."
QUESTION = "Points A=(2,1), B=(-3,4), C=(0,-7). Are A, B and C collinear? Answer yes or no."


def _cfg(path: Path, engine: str = "hf", **extra: object) -> ModelConfig:
    return ModelConfig(name=path.name, repo=str(path), engine=engine, local=True, **extra)


def _png() -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (48, 40), (200, 30, 30)).save(buf, format="PNG")
    return buf.getvalue()


@pytest.fixture(scope="module")
def short_llm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model("llm", tmp_path_factory.mktemp("short"), max_positions=32)


def _with_auto_map(src: Path, dest: Path, model_type: str) -> Path:
    shutil.copytree(src, dest)
    config = json.loads((dest / "config.json").read_text())
    config["model_type"] = model_type
    config["auto_map"] = {"AutoModelForCausalLM": "modeling_custom.CustomForCausalLM"}
    (dest / "config.json").write_text(json.dumps(config))
    return dest


def test_custom_code_without_trust_names_the_model_and_the_fix(
    tiny_llm_dir: Path, tmp_path: Path
) -> None:
    custom = _with_auto_map(tiny_llm_dir, tmp_path / "custom-lm", "geosee_custom")
    with pytest.raises(PreflightError) as err:
        check_model(_cfg(custom), [build_messages(SYSTEM, QUESTION, None, True)])
    message = str(err.value)
    assert "custom-lm" in message and "--trust-remote-code" in message  # a folder: the flag
    assert len(message.splitlines()) == 1
    in_yaml = ModelConfig(name="custom", repo=str(custom), engine="hf")  # a sweep config
    with pytest.raises(PreflightError, match="`trust_remote_code: true` in its model config"):
        check_remote_code(in_yaml)
    check_remote_code(_cfg(custom, trust_remote_code=True))  # allowed: no error


def test_auto_map_on_a_native_model_type_needs_no_remote_code(
    tiny_llm_dir: Path, tmp_path: Path
) -> None:
    # Many hub checkpoints keep auto_map for types transformers now has: they load natively.
    native = _with_auto_map(tiny_llm_dir, tmp_path / "native-lm", "llama")
    check_remote_code(_cfg(native))


def test_hub_repo_not_in_the_cache_is_not_checked_offline() -> None:
    cfg = ModelConfig(name="x", repo="org/not-cached-model", engine="vllm")
    check_remote_code(cfg)  # no network call, no error: the engine will say more


def test_prompt_that_fills_the_context_is_refused(short_llm: Path) -> None:
    with pytest.raises(PreflightError, match=r"context is 32 \(max_position_embeddings"):
        check_model(_cfg(short_llm), [build_messages(SYSTEM, QUESTION, None, True)])


def test_context_report_counts_the_engines_tokens(tiny_llm_dir: Path) -> None:
    short = build_messages("Be brief.", "A?", None, True)
    long = build_messages(SYSTEM, QUESTION, None, True)
    report = check_context(_cfg(tiny_llm_dir), [short, long])
    assert report.context_length == 8192
    assert report.prompts_checked == 2
    alone = check_context(_cfg(tiny_llm_dir), [short]).longest_prompt_tokens
    assert report.longest_prompt_tokens is not None and alone is not None
    assert report.longest_prompt_tokens > alone
    record = report.record("hf", max_tokens=2048)
    assert record["max_tokens_clamped_to_context"] is True
    assert record["effective_max_tokens_for_longest_prompt"] == 2048


def test_vllm_context_is_the_configs_max_model_len(tiny_llm_dir: Path) -> None:
    long = build_messages(SYSTEM, QUESTION * 12, None, True)  # well over 256 tokens
    with pytest.raises(PreflightError, match="raise max_model_len"):
        check_context(_cfg(tiny_llm_dir, engine="vllm", max_model_len=256), [long])
    report = check_context(_cfg(tiny_llm_dir, engine="vllm", max_model_len=8192), [long])
    assert report.context_source.startswith("max_model_len")


def test_image_prompts_count_the_processors_image_tokens(tiny_vlm_dir: Path) -> None:
    text = check_context(_cfg(tiny_vlm_dir), [build_messages(SYSTEM, QUESTION, None)])
    image = check_context(_cfg(tiny_vlm_dir), [build_messages(SYSTEM, QUESTION, _png())])
    assert text.longest_prompt_tokens is not None and image.longest_prompt_tokens is not None
    # The image part becomes <image>, expanded to one token per patch: (32 / 8)^2 = 16.
    expected = (IMAGE_SIZE // PATCH_SIZE) ** 2
    assert image.longest_prompt_tokens - text.longest_prompt_tokens == expected


# The refusal Gemma-2's and Mistral-7B-Instruct-v0.1's templates make of a system turn, in
# the form a template raises it (transformers' `raise_exception` -> jinja2 TemplateError).
NO_SYSTEM_TEMPLATE = (
    "{%- if messages[0]['role'] == 'system' -%}"
    "{{ raise_exception('System role not supported') }}{%- endif -%}"
    "{%- for message in messages -%}<|{{ message['role'] }}|>{{ message['content'] }}"
    "{%- endfor -%}{%- if add_generation_prompt -%}<|assistant|>{%- endif -%}"
)


def with_template(src: Path, dest: Path, template: str) -> Path:
    """A copy of a tiny checkpoint whose chat template is `template`."""
    shutil.copytree(src, dest)
    (dest / "chat_template.jinja").write_text(template)
    return dest


def test_template_that_refuses_the_system_role_is_named(tiny_llm_dir: Path, tmp_path: Path) -> None:
    model = with_template(tiny_llm_dir, tmp_path / "no-system", NO_SYSTEM_TEMPLATE)
    with pytest.raises(PreflightError) as err:
        check_model(_cfg(model), [build_messages(SYSTEM, QUESTION, None, True)])
    line = str(err.value)
    assert "\n" not in line
    assert "cannot render a system message" in line and "System role not supported" in line
    # The same template renders the user turn alone: only the system role is refused.
    assert check_context(_cfg(model), [[{"role": "user", "content": QUESTION}]]).prompts_checked


def test_a_checkpoint_without_a_chat_template_is_refused_in_one_line(
    tiny_llm_dir: Path, tmp_path: Path
) -> None:
    """transformers raises a ValueError per row for a tokenizer or processor without a
    template, which the counting would take for an unreadable row: refused before it."""
    model = tmp_path / "no-template"
    shutil.copytree(tiny_llm_dir, model)
    (model / "chat_template.jinja").unlink()
    config_path = model / "tokenizer_config.json"
    config = json.loads(config_path.read_text())
    config.pop("chat_template", None)
    config_path.write_text(json.dumps(config))
    with pytest.raises(PreflightError) as err:
        check_model(_cfg(model), [build_messages(SYSTEM, QUESTION, None, True)])
    line = str(err.value)
    assert "\n" not in line and "its tokenizer has no chat template" in line
    # The untouched checkpoint passes the same check.
    assert check_model(_cfg(tiny_llm_dir), [build_messages(SYSTEM, QUESTION, None, True)])


def test_template_that_refuses_everything_is_not_blamed_on_the_system_role(
    tiny_llm_dir: Path, tmp_path: Path
) -> None:
    refuses = "{{ raise_exception('Only tools are supported') }}"
    model = with_template(tiny_llm_dir, tmp_path / "refuses", refuses)
    with pytest.raises(PreflightError, match="cannot render this run's messages"):
        check_model(_cfg(model), [build_messages(SYSTEM, QUESTION, None, True)])


def test_a_local_config_whose_model_is_not_here_is_refused(tmp_path: Path) -> None:
    """Issue 39: a local config's bare name went on to the engine, which failed only after
    Ray had started and the run had written its settings."""
    with pytest.raises(PreflightError, match="is not a checkpoint folder on this machine"):
        check_model(_cfg(tmp_path / "never-built"), [build_messages(SYSTEM, QUESTION, None, True)])
