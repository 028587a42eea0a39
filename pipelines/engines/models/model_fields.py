"""What a model config's fields may hold: the names of modalities, setups, weights and
content formats, the vLLM reasoning parsers, and the upper bound of every number (a config
file is data from anywhere: store/yaml_file.py bounds its size and nesting, these bound
its values)."""

from __future__ import annotations

from typing import Literal

Modality = Literal["text", "image-text"]
SetupName = Literal["text", "dotted", "full"]
TinyKind = Literal["llm", "vlm"]
# Where a model's weights come from: pretrained (`real`), a random initialisation (`random`:
# the tiny test models, whose answers are noise by design), or no weights at all (`none`:
# the answer baselines). The report marks the random-weight rows.
Weights = Literal["real", "random", "none"]
# Checkpoint layouts: transformers' own, or haotian-liu/LLaVA's original (converted before a run).
Layout = Literal["hf", "llava-original"]
# vLLM's two chat-template content formats (ChatTemplateContentFormat), as Ray 2.60's
# prepare-multimodal stage takes them.
ContentFormat = Literal["string", "openai"]

# vLLM reasoning parsers a config may name, each with the text that ends the reasoning in
# the detokenized output (what is cut off before scoring). Names present in vLLM 0.29 (the
# release both the GPU and the CPU test profile run); tests/vllm checks them against vLLM's
# own registry.
REASONING_END: dict[str, str] = {
    "deepseek_r1": "</think>",
    "deepseek_v3": "</think>",
    "ernie45": "</think>",
    "glm45": "</think>",
    "mistral": "[/THINK]",
    "qwen3": "</think>",
    "seed_oss": "</seed:think>",
    "step3": "</think>",
}
REASONING_PARSERS = tuple(REASONING_END)


# A grammar-constrained JSON answer: {"answer": ...} or {"x": .., "y": ..}.
OUTPUT_TOKENS_PER_ROW = 16
# Upper bounds of a config's numbers (issue 38: `max_model_len: 1e26` loaded and hf
# started), each far above any real model: contexts and budgets in tokens, GPUs per engine,
# images per prompt, parameters in billions, a sampling temperature.
MAX_TOKENS = 2**24
MAX_GPUS = 1024
MAX_IMAGES = 1024
MAX_PARAMS_B = 100_000.0
MAX_TEMPERATURE = 100.0
# A name becomes a folder name (model=<slug>): letters, digits, `._+-` and at most one `/`
# between two parts (a hub id's ORG/NAME), never `.` or `..` as a part, nor a leading `-`.
MAX_NAME_CHARS = 128
NAME_PATTERN = r"[A-Za-z0-9_][A-Za-z0-9._+-]*(/[A-Za-z0-9_][A-Za-z0-9._+-]*)?"
