"""`python -m pipelines tiny-model`: a tiny random LM or image-text model, built offline.

Tests and local dry runs need a model that loads through the same Auto classes as real
checkpoints but needs no hub access. `--kind llm` writes a Llama-style causal LM; `--kind vlm`
writes a Llava-style image-text model (CLIP-style vision tower + tiny Llama + `<image>`
token + a 32 px image processor); `--kind thinking` the text LM as a reasoning model
(`<think>` and `</think>` tokens, a template that opens the reasoning, as DeepSeek-R1's
does). All carry a byte-level BPE tokenizer trained here on a
small built-in corpus (every byte is in its alphabet, so every grammar string can be
tokenized) and their family's chat template: string content for the text LM, string or
list-of-parts content for the image-text model. Weights are
random and seeded: the same seed gives the same files.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from pipelines.command_line.args import output_dir, seed_int
from pipelines.engines.models.config_from_checkpoint import PROVENANCE_FILE
from store.errors import UsageError

KINDS = ("llm", "vlm", "thinking")
# Longer than the default --max-tokens (2,048) plus the longest GeoBuild prompt, so the
# README's offline runs fit their context.
MAX_POSITIONS = 8192
VOCAB_SIZE = 512
IMAGE_SIZE = 32
PATCH_SIZE = 8

BOS, EOS, PAD, IMAGE = "<|begin|>", "<|end|>", "<|pad|>", "<image>"

# Roles are written as plain text so the templates stay readable; the end-of-turn marker is
# the EOS token so a chat model would learn to stop there.
#
# Each tiny model keeps its family's contract, so tests see what real models would do:
# the text LM's template prints `content` as it comes, as Llama-3.x and Qwen2.5 templates do
# (a list of parts would render as its repr), and the image-text model's template walks a
# list of parts and puts its image placeholder where an image part stands, as Llava and
# Qwen2-VL processors do.
TEXT_CHAT_TEMPLATE = (
    "{{ bos_token }}"
    "{%- for message in messages -%}"
    "<|{{ message['role'] }}|>{{ message['content'] }}{{ eos_token }}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}<|assistant|>{%- endif -%}"
)
# DeepSeek-R1's template ends its generation prompt with "<think>\n": the reply starts inside
# the reasoning, which vLLM's deepseek_r1 parser (and thinking budget) then see in the prompt.
THINK_START, THINK_END = "<think>", "</think>"
THINKING_CHAT_TEMPLATE = TEXT_CHAT_TEMPLATE.replace(
    "<|assistant|>{%- endif -%}", "<|assistant|>" + THINK_START + "{{ '\\n' }}{%- endif -%}"
)
VLM_CHAT_TEMPLATE = (
    "{{ bos_token }}"
    "{%- for message in messages -%}"
    "<|{{ message['role'] }}|>"
    "{%- if message['content'] is string -%}{{ message['content'] }}"
    "{%- else -%}{%- for part in message['content'] -%}"
    "{%- if part['type'] == 'text' -%}{{ part['text'] }}"
    "{%- elif part['type'] in ('image', 'image_url') -%}" + IMAGE + "{%- endif -%}"
    "{%- endfor -%}{%- endif -%}"
    "{{ eos_token }}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}<|assistant|>{%- endif -%}"
)

# Enough text that BPE learns merges for the JSON answers, coordinates and prompt words;
# the byte alphabet covers everything else.
_CORPUS = [
    '{"answer": "yes"}',
    '{"answer": "no"}',
    '{"answer": "equal"}',
    '{"answer": "median"}',
    '{"answer": "altitude"}',
    '{"answer": "bisector"}',
    '{"answer": "acute"}',
    '{"answer": "right"}',
    '{"answer": "obtuse"}',
    '{"answer": "ABCD"}',
    '{"answer": "EFGH"}',
    '{"answer": "ABC"}',
    '{"answer": "DEF"}',
    '{"answer": -12.5}',
    '{"answer": 3.1416}',
    '{"x": 1.5, "y": -2}',
    '{"x": -20, "y": 20}',
    "You are a helpful assistant that answers geometry questions with JSON only.",
    "Points A=(2,1), B=(-3,4), C=(0,-7). Are A, B and C collinear? Answer yes or no.",
    "Find the midpoint of AB. Give the answer as a point with coordinates x and y.",
    "What is the area of triangle ABC? What is the perimeter of parallelogram ABCD?",
    "Reflect P across the line y=x. Rotate P about the origin by 90 degrees.",
    "Is angle ABC a right angle? Are lines AB and CD parallel or perpendicular?",
    "The image shows a Cartesian grid with labelled points and tick numbers.",
    "abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ 0123456789",
    "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~ \n\t",
]


def byte_bpe(special_tokens: list[str]) -> Any:
    """A byte-level BPE `tokenizers.Tokenizer` trained on the built-in corpus; the special
    tokens get the first ids, in the order given."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        special_tokens=special_tokens,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    # Repeats give the frequent answer strings stable merges.
    bpe.train_from_iterator(_CORPUS * 8, trainer=trainer)
    return bpe


def _train_tokenizer(chat_template: str, max_positions: int = MAX_POSITIONS) -> Any:
    """A byte-level BPE tokenizer wrapped as a transformers fast tokenizer."""
    from tokenizers import processors
    from transformers import PreTrainedTokenizerFast

    bpe = byte_bpe([PAD, BOS, EOS, IMAGE])
    # Every text gets BOS, as Llama-3's tokenizer.json does while its template writes BOS
    # too: what is not encoded with add_special_tokens=False then shows a second BOS.
    bpe.post_processor = processors.TemplateProcessing(
        single=f"{BOS} $A", pair=f"{BOS} $A {BOS} $B", special_tokens=[(BOS, bpe.token_to_id(BOS))]
    )
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe,
        bos_token=BOS,
        eos_token=EOS,
        pad_token=PAD,
        extra_special_tokens={"image_token": IMAGE},
        padding_side="left",
        model_max_length=max_positions,
    )
    tokenizer.chat_template = chat_template
    return tokenizer


def _llama_config(tokenizer: Any, max_positions: int = MAX_POSITIONS) -> Any:
    from transformers import LlamaConfig

    return LlamaConfig(
        vocab_size=len(tokenizer),
        # head_dim 64: vLLM's CPU attention kernels refuse smaller heads (16 was refused).
        hidden_size=128,
        intermediate_size=256,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=max_positions,
        tie_word_embeddings=True,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )


def _build_llm(out: Path, max_positions: int) -> None:
    from transformers import LlamaForCausalLM

    tokenizer = _train_tokenizer(TEXT_CHAT_TEMPLATE, max_positions)
    model = LlamaForCausalLM(_llama_config(tokenizer, max_positions))
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)


def _build_thinking(out: Path, max_positions: int) -> None:
    from transformers import LlamaForCausalLM

    tokenizer = _train_tokenizer(THINKING_CHAT_TEMPLATE, max_positions)
    # Added, not special, as Qwen3's and R1's are: decoding with skip_special_tokens keeps them.
    tokenizer.add_tokens([THINK_START, THINK_END])
    model = LlamaForCausalLM(_llama_config(tokenizer, max_positions))
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)


def _build_vlm(out: Path, max_positions: int) -> None:
    from transformers import (
        CLIPImageProcessor,
        CLIPVisionConfig,
        LlavaConfig,
        LlavaForConditionalGeneration,
        LlavaProcessor,
    )

    tokenizer = _train_tokenizer(VLM_CHAT_TEMPLATE, max_positions)
    vision = CLIPVisionConfig(
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=1,
        image_size=IMAGE_SIZE,
        patch_size=PATCH_SIZE,
        projection_dim=32,
    )
    num_image_tokens = (IMAGE_SIZE // PATCH_SIZE) ** 2  # "default" strategy drops the CLS token
    config = LlavaConfig(
        vision_config=vision,
        text_config=_llama_config(tokenizer, max_positions),
        image_token_index=tokenizer.convert_tokens_to_ids(IMAGE),
        image_seq_length=num_image_tokens,
        vision_feature_layer=-1,
        tie_word_embeddings=True,
    )
    model = LlavaForConditionalGeneration(config)
    image_processor = CLIPImageProcessor(
        size={"shortest_edge": IMAGE_SIZE},
        crop_size={"height": IMAGE_SIZE, "width": IMAGE_SIZE},
    )
    processor = LlavaProcessor(
        image_processor=image_processor,
        tokenizer=tokenizer,
        patch_size=PATCH_SIZE,
        vision_feature_select_strategy="default",
        num_additional_image_tokens=1,
        chat_template=VLM_CHAT_TEMPLATE,
    )
    model.save_pretrained(out)
    processor.save_pretrained(out)


def build_tiny_model(
    kind: str, out: Path, seed: int = 0, max_positions: int = MAX_POSITIONS
) -> Path:
    """Write a tiny random model of `kind` (KINDS) to `out`; return `out`.

    The directory loads offline with `AutoTokenizer` + `AutoModelForCausalLM` (llm) or
    `AutoProcessor` + `AutoModelForImageTextToText` (vlm); thinking as llm. Same seed,
    same weights.
    `max_positions` is the context length; tests of context handling make it short.
    """
    if kind not in KINDS:
        raise ValueError(f"unknown tiny model kind {kind!r}; valid: {', '.join(KINDS)}")
    if max_positions < 1:
        raise ValueError(f"max_positions must be at least 1, got {max_positions}")
    import torch

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    # Seed a forked RNG so building a model does not disturb the caller's random state.
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        if kind == "llm":
            _build_llm(out, max_positions)
        elif kind == "thinking":
            _build_thinking(out, max_positions)
        else:
            _build_vlm(out, max_positions)
    # What the report and model configs read to mark this model's answers as noise.
    record = {"builder": "geosee tiny-model", "kind": kind, "seed": seed, "weights": "random"}
    (out / PROVENANCE_FILE).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    return out


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of `python -m pipelines tiny-model`."""
    parser.add_argument("--kind", required=True, help=f"one of {', '.join(KINDS)}")
    parser.add_argument("--out", required=True, type=output_dir, help="directory to write")
    parser.add_argument(
        "--weights-seed", type=seed_int, default=0, help="weight initialisation seed"
    )


def run(args: argparse.Namespace) -> int:
    """Build the model and print where it went and how long it took."""
    if args.kind not in KINDS:
        raise UsageError(f"--kind {args.kind!r} is not one of {', '.join(KINDS)}")
    if args.out.exists() and any(args.out.iterdir()):
        raise UsageError(f"--out {args.out} exists and is not empty; choose an empty directory")
    start = time.perf_counter()
    build_tiny_model(args.kind, args.out, seed=args.weights_seed)
    print(f"wrote tiny {args.kind} to {args.out} in {time.perf_counter() - start:.1f} s")
    return 0
