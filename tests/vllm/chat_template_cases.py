"""The chat-template cases of test_chat_templates.py: every config's family and template
source, and the renderers the tests compare (vLLM's chat parser as Ray's stages run it, the hf
engine's prompt)."""

from __future__ import annotations

import ast
import importlib.util
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from pipelines.engines.models.config_yaml import CONFIG_DIR, load_configs
from pipelines.engines.models.model_schema import ModelConfig
from tests.conftest import REPO

FIXTURES = REPO / "tests" / "fixtures" / "chat_templates"


@dataclass(frozen=True)
class Family:
    """A chat-template family: its fixture, vLLM's model class, the processor's image token."""

    template: str  # tests/fixtures/chat_templates/<template>.jinja
    vllm_module: str = ""  # vllm/model_executor/models/<module>.py ("" for text models)
    vllm_class: str = ""  # the class whose get_placeholder_str vLLM calls
    # The token the model's processor expands into image features (what must appear once
    # per image in the prompt): the `image_token` of its transformers processor.
    image_token: str = ""


FAMILIES = {
    "llava-1.5": Family("llava-1.5", "llava", "LlavaForConditionalGeneration", "<image>"),
    "llava-onevision": Family(
        "llava-onevision", "llava_onevision", "LlavaOnevisionForConditionalGeneration", "<image>"
    ),
    "idefics3": Family("idefics3", "idefics3", "Idefics3ForConditionalGeneration", "<image>"),
    # SmolVLMForConditionalGeneration inherits Idefics3's get_placeholder_str.
    "smolvlm": Family("smolvlm", "idefics3", "Idefics3ForConditionalGeneration", "<image>"),
    "qwen2-vl": Family("qwen2-vl", "qwen2_vl", "Qwen2VLForConditionalGeneration", "<|image_pad|>"),
    "qwen2.5-vl": Family(
        "qwen2-vl", "qwen2_5_vl", "Qwen2_5_VLForConditionalGeneration", "<|image_pad|>"
    ),
    "mistral-small-3.1": Family(
        "mistral-small-3.1", "mistral3", "Mistral3ForConditionalGeneration", "[IMG]"
    ),
    "gemma-3": Family("gemma-3", "gemma3_mm", "Gemma3ForConditionalGeneration", "<start_of_image>"),
    "deepseek-r1-distill-qwen": Family("deepseek-r1-distill-qwen"),
    "smollm2": Family("smollm2"),
    # Runs on the hf engine (vLLM 0.29 has no Mllama): no vLLM class; MllamaProcessor's token.
    "llama-3.2-vision": Family("llama-3.2-vision", image_token="<|image|>"),
    "qwen2": Family("qwen2"),
    "qwen2.5": Family("qwen2.5"),
    "qwen2.5-math": Family("qwen2.5-math"),
    "qwen3": Family("qwen3"),
    "llama-3.1": Family("llama-3.1"),
    "phi-4": Family("phi-4"),
    "mistral-7b-v0.3": Family("mistral-7b-v0.3"),
    "internvl3": Family("internvl3", "internvl", "InternVLChatModel", "<image>"),
    # InternVL3 8B-38B's hub files carried Qwen2.5's template (the fixture README says which
    # revision); InternVL3-2B's carries InternVL's own.
    "internvl3-qwen2.5": Family("qwen2.5", "internvl", "InternVLChatModel", "<image>"),
    # vLLM writes no placeholder for Molmo (get_placeholder_str gives None): its processor
    # inserts the image tokens after the prompt's leading <|endoftext|> (a PromptInsertion
    # in MolmoMultiModalProcessor), so there is no text token to count.
    "molmo-7b-d": Family("molmo-7b-d", "molmo", "MolmoForCausalLM"),
}

CONFIG_FAMILY = {
    "llava-1.5-7b": "llava-1.5",
    "llava-onevision-qwen2-7b-ov": "llava-onevision",
    "idefics3-8b-llama3": "idefics3",
    "smolvlm-instruct": "smolvlm",
    "qwen2-vl-2b-instruct": "qwen2-vl",
    "qwen2-vl-7b-instruct": "qwen2-vl",
    "qwen2.5-vl-3b-instruct": "qwen2.5-vl",
    "qwen2.5-vl-7b-instruct": "qwen2.5-vl",
    "qwen2.5-vl-32b-instruct": "qwen2.5-vl",
    "qwen2.5-vl-72b-instruct": "qwen2.5-vl",
    "mistral-small-3.1-24b-instruct": "mistral-small-3.1",
    "deepseek-r1-distill-qwen-7b": "deepseek-r1-distill-qwen",
    "deepseek-r1-distill-qwen-32b": "deepseek-r1-distill-qwen",
    "smollm2-135m-instruct": "smollm2",
    "gemma-3-4b-it": "gemma-3",
    "gemma-3-12b-it": "gemma-3",
    "gemma-3-27b-it": "gemma-3",
    "qwen2-7b-instruct": "qwen2",
    "qwen2.5-3b-instruct": "qwen2.5",
    "qwen2.5-7b-instruct": "qwen2.5",
    "qwen2.5-72b-instruct": "qwen2.5",
    "qwen2.5-math-7b-instruct": "qwen2.5-math",
    "qwen3-4b": "qwen3",
    "qwen3-8b": "qwen3",
    "qwen3-4b-thinking": "qwen3",
    "qwen3-8b-thinking": "qwen3",
    "qwen3-14b": "qwen3",
    "qwen3-32b": "qwen3",
    "llama-3.1-8b-instruct": "llama-3.1",
    "llama-3.1-70b-instruct": "llama-3.1",
    "phi-4": "phi-4",
    "llama-3.2-11b-vision-instruct": "llama-3.2-vision",
    "mistral-7b-instruct-v0.3": "mistral-7b-v0.3",
    "internvl3-2b": "internvl3",
    "internvl3-8b": "internvl3-qwen2.5",
    "internvl3-14b": "internvl3-qwen2.5",
    "internvl3-38b": "internvl3-qwen2.5",
    "molmo-7b-d": "molmo-7b-d",
}

# Configs with a chat template whose real text was not found in a public source reachable
# from here (no hub access); the fixture README says where we looked.
NOT_FOUND = {
    **{
        name: "real template not found in a reachable public source"
        for name in (
            "internvl2.5-1b",
            "internvl2.5-8b",
            "mathstral-7b",
            "minicpm-o-2.6",
            "mistral-small-instruct",
        )
    },
    "phi-3.5-vision-instruct": "only Phi-3-vision-128k-instruct's template was found, not "
    "this repo's",
    "pixtral-12b": "only copies of unknown revision were found (one reads text parts' "
    "'content' key, which vLLM's openai parts lack)",
}


def no_template(cfg: ModelConfig) -> str | None:
    """Why a config renders no chat template of a model of ours, or None."""
    if cfg.blocked:
        return f"blocked: {cfg.blocked[:60]}"
    if cfg.engine == "http":
        return "API model: the server renders its own prompt"
    if cfg.engine in ("oracle", "random", "constant"):
        return "baseline: no model"
    if cfg.build_tiny:
        return "tiny model of ours: its template is tests/actors/test_hf_engine.py's subject"
    if cfg.layout == "llava-original":
        # No hub file holds it: the conversion writes LLaVA's conversation as the template
        # (llava_conversations), rendered against conversation.py's rule in
        # tests/pipelines/engines/models/test_llava_original.py and run in test_vlm_vllm.py.
        return "original-layout LLaVA: the conversion writes its conversation as the template"
    return None


CONFIGS = {cfg.name: cfg for cfg in load_configs(CONFIG_DIR)}

RENDERED = sorted(CONFIG_FAMILY)


@dataclass(frozen=True)
class StageSettings:
    """What Ray 2.60's rendering stages get for a config."""

    multimodal: bool  # prepare-multimodal stage enabled
    content_format: str
    system_as_string: bool  # the stage's apply_sys_msg_formatting
    template_kwargs: dict[str, Any]


def stage_settings(cfg: ModelConfig, monkeypatch: pytest.MonkeyPatch) -> StageSettings:
    """The config's processor config, built by our code and resolved by Ray's classes."""
    from ray.llm._internal.batch.stages.configs import (
        ChatTemplateStageConfig,
        PrepareMultimodalStageConfig,
        resolve_stage_config,
    )

    from pipelines.engines.stages import vllm_config
    from pipelines.engines.stages.options import EngineOptions
    from pipelines.engines.stages.vllm_path import vllm_processor_config

    # A pinned revision would snapshot the hub's tokenizer files; none are reachable here.
    monkeypatch.setattr(vllm_config, "tokenizer_source", lambda cfg: None)
    monkeypatch.setattr(vllm_config, "tokenize_stage_source", lambda cfg, source: cfg.repo)
    config = vllm_processor_config(cfg, EngineOptions(), cfg.modality == "image-text")
    mm = resolve_stage_config(config.prepare_multimodal_stage, PrepareMultimodalStageConfig)
    chat = resolve_stage_config(config.chat_template_stage, ChatTemplateStageConfig)
    assert chat.enabled and chat.chat_template is None  # the checkpoint's own template
    return StageSettings(
        multimodal=bool(mm.enabled),
        content_format=str(mm.chat_template_content_format),
        system_as_string=bool(mm.apply_sys_msg_formatting),
        template_kwargs=dict(chat.chat_template_kwargs or {}),
    )


def vllm_placeholder(module: str, cls: str, index: int) -> str | None:
    """`cls.get_placeholder_str("image", index)` as written in vLLM's installed source.

    Not every such module imports here (Llava's, docs/engines.md); its source is read: the
    return value under `if modality.startswith("image")`, a string, an f-string of `i`, or
    None.
    """
    spec = importlib.util.find_spec("vllm.model_executor.models")
    assert spec is not None and spec.submodule_search_locations
    path = Path(list(spec.submodule_search_locations)[0]) / f"{module}.py"
    tree = ast.parse(path.read_text(encoding="utf-8"))
    klass = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls)
    method = next(
        n for n in klass.body if isinstance(n, ast.FunctionDef) and n.name == "get_placeholder_str"
    )
    for node in ast.walk(method):
        if isinstance(node, ast.If) and "startswith" in ast.unparse(node.test):
            if "'image'" not in ast.unparse(node.test):
                continue
            ret = next(n for n in node.body if isinstance(n, ast.Return))
            value = ret.value
            if value is None or (isinstance(value, ast.Constant) and value.value is None):
                return None
            if isinstance(value, ast.Constant):
                return str(value.value)
            if isinstance(value, ast.JoinedStr):  # e.g. f"<|image_{i}|>": filled in, not run
                return "".join(_fstring_part(part, index) for part in value.values)
    raise AssertionError(f"{cls}.get_placeholder_str: no image branch in {path}")


def _fstring_part(part: ast.expr, index: int) -> str:
    """One piece of an f-string whose only field is the item number `i`."""
    if isinstance(part, ast.Constant):
        return str(part.value)
    if (
        isinstance(part, ast.FormattedValue)
        and isinstance(part.value, ast.Name)
        and part.value.id == "i"
    ):
        return str(index)
    raise AssertionError(f"placeholder f-string field not understood: {ast.unparse(part)}")


def vllm_tracker(family: Family) -> Any:
    """vLLM's MultiModalItemTracker with the model class's placeholder (see above)."""
    from vllm.entrypoints.chat_utils import MultiModalItemTracker

    class FamilyTracker(MultiModalItemTracker):
        @cached_property
        def model_cls(self) -> Any:  # type: ignore[override]
            def placeholder(modality: str, index: int) -> str | None:
                assert modality == "image"
                return vllm_placeholder(family.vllm_module, family.vllm_class, index)

            return SimpleNamespace(get_placeholder_str=placeholder)

        def _validate_add(self, modality: str) -> tuple[str, str, bool, int]:
            # The processor's per-prompt limit check; the limit is 1 image (max_images).
            count = len(self._items_by_modality[modality]) + 1
            assert count == 1
            return modality, modality, False, count

    model_config = SimpleNamespace(
        multimodal_config=None,
        allowed_local_media_path="",
        allowed_media_domains=None,
        hf_config=SimpleNamespace(),
        enable_prompt_embeds=False,
    )
    return FamilyTracker(model_config)


def prepared_conversation(
    messages: list[dict[str, Any]], family: Family, settings: StageSettings
) -> list[dict[str, Any]]:
    """The conversation Ray's prepare-multimodal stage hands the chat-template stage."""
    from ray.llm._internal.batch.stages.prepare_multimodal_stage import PrepareMultimodalUDF
    from vllm.entrypoints.chat_utils import _parse_chat_message_content

    system: list[dict[str, Any]] = []
    if settings.system_as_string:  # Ray's own helper; it reads nothing of its instance
        system, messages = PrepareMultimodalUDF._extract_system_messages(None, messages)  # type: ignore[arg-type]
    tracker = vllm_tracker(family)
    parsed = [
        part
        for message in messages
        for part in _parse_chat_message_content(
            message, tracker, settings.content_format, interleave_strings=False
        )
    ]
    return system + parsed


def render(template: str, conversation: list[dict[str, Any]], kwargs: dict[str, Any]) -> str:
    """transformers' rendering, as `apply_chat_template(tokenize=False)` runs it."""
    from transformers.utils.chat_template_utils import render_jinja_template

    rendered, _ = render_jinja_template(
        conversations=[conversation],
        chat_template=template,
        add_generation_prompt=True,
        bos_token="<s>",
        eos_token="</s>",
        **kwargs,
    )
    return str(rendered[0])


def request(cfg: ModelConfig, item: Any) -> list[dict[str, Any]]:
    """The messages `add_requests` builds for the config (pipelines.engines.prompts.requests)."""
    from pipelines.engines.prompts.requests import build_messages

    return build_messages(item.system_prompt, item.prompt, item.image, cfg.modality == "text")


def template_of(family: Family) -> str:
    return (FIXTURES / f"{family.template}.jinja").read_text(encoding="utf-8")


def hf_engine_prompt(cfg: ModelConfig, family: Family, messages: list[dict[str, Any]]) -> str:
    """The prompt the `hf` engine renders (`actors.hf_engine.PromptRenderer.render`), its
    tokenizer's or processor's `apply_chat_template` running the real template."""
    from actors.hf_engine import PromptRenderer

    template = template_of(family)

    class Templater:
        """The checkpoint's processor (image-text) or tokenizer, as far as rendering goes."""

        image_token = family.image_token

        def apply_chat_template(
            self, chat: list[dict[str, Any]], add_generation_prompt: bool, tokenize: bool
        ) -> str:
            assert add_generation_prompt and not tokenize
            return render(template, chat, {})

    templater = Templater()
    processor = templater if cfg.modality == "image-text" else None
    renderer = PromptRenderer(
        cfg.name, templater, processor, None, cfg.content_format, cfg.system_prompt_as_string
    )
    prompt, _images = renderer.render(messages)
    return prompt
