"""The GPU-feed ceiling: how many rows per second the CPU side of the vllm path sustains.

The whole `evaluate --engine vllm` pipeline runs as on the cluster (item reading, requests,
Ray's chat-template, tokenize and prepare-multimodal stages at the sizes
pipelines/engines/stages/vllm_config.py gives them, scoring, shard writing), with only vLLM's
engine replaced by an instant stand-in that keeps its interface (actors/instant_vllm.py:
it takes the tokenized prompt and multimodal data and returns the item's answer at once).
So the rate measured is the ceiling the CPU side puts on a GPU.

Per setup it runs a small and a large item set, interleaved, `--repeats` times, and takes
the marginal rate of the medians, (large - small rows) / (large - small seconds), which
leaves out the fixed start of each pipeline (actors starting, tokenizers loading). Text rows
go so fast that 300 more of them were lost in the start's spread (the large set's median
came out no longer than the small one's), so the text setup's large set is larger
(`--text-large`); a difference still within the small set's spread (max - min of its runs)
gives a lower bound, extra rows / (difference + spread), marked ">=". Rows per
CPU core divide by the CPUs Ray was given. Text rows use the real model's tokenizer and
template (SmolLM2, `make real-model`); image rows a tiny Llava-style model's processor (CLIP
image processing, one `<image>` per image).

Beside it, the rate one A100 would consume for a 7B model, from a roofline: a forward
pass costs 2 x parameters FLOPs per token (Kaplan et al. 2020, "Scaling Laws for Neural
Language Models", sec. 2.1), an A100 delivers 312 TFLOPS dense BF16 (NVIDIA A100 datasheet),
of which vLLM's prefill reaches an assumed 50% (MFU); a row's answer is a few grammar-bound
tokens, whose decoding at full batch costs a small fraction of its prefill. The prompt
tokens per row are the measured ones (text) or the measured text plus a 448 px image at
Qwen2-VL's rule, (448 / 28)^2 = 256 tokens (image setups). The p4de.24xlarge gives 96
vCPUs to 8 A100s: 12 per GPU (AWS's instance type table). Goal: ceiling per GPU >= 3x.

Run in .venv-vllm (Ray's prepare-multimodal stage imports vLLM):
    .venv-vllm/bin/python bench/feed.py [--small 4] [--large 16] [--repeats 3] [--stages both]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from functools import partial
from pathlib import Path
from typing import Any

# This folder heads sys.path when run as a script, where `vllm` would be bench/vllm.py.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).parent.resolve()]

A100_BF16_FLOPS = 312e12  # NVIDIA A100 datasheet, dense BF16
ASSUMED_MFU = 0.5
PARAMS_7B = 7e9
IMAGE_TOKENS_448 = (448 // 28) ** 2  # Qwen2-VL: 28 px per merged token
P4DE_VCPUS_PER_GPU = 96 / 8
GOAL = 3.0
REAL_MODEL = Path(__file__).resolve().parents[1] / "models" / "smollm2-135m-instruct"


def a100_rows_per_s(prompt_tokens: float) -> float:
    """Rows per second one A100 prefills for a 7B model (module docstring)."""
    return A100_BF16_FLOPS * ASSUMED_MFU / (2 * PARAMS_7B * prompt_tokens)


def one_run(
    files: list[Path], cfg: Any, setup: str, out: Path, separate: bool
) -> tuple[float, int, float]:
    """Seconds, rows written and mean prompt tokens of one evaluate over `files`."""
    import polars as pl

    from geometry.tasks.registry import all_tasks
    from pipelines.engines.stages.instant_stage import instant_vllm_stage
    from pipelines.noregeo.evaluate_pipeline import evaluate
    from pipelines.noregeo.run_settings import EvaluateSettings

    run = EvaluateSettings(tasks=list(all_tasks()), setups=[setup], shard_rows=256)
    stage = partial(instant_vllm_stage, separate=separate)
    start = time.perf_counter()
    rows = evaluate(files, cfg, run, out, engine_stage=stage)
    took = time.perf_counter() - start
    shards = pl.read_parquet(out / "noregeo" / "**" / "*.parquet")
    tokens = shards.select(pl.col("num_input_tokens").mean()).item()
    return took, rows, float(tokens or 0.0)


def print_rate(
    label: str,
    extra_rows: int,
    medians: tuple[float, float],
    spread: float,
    tokens: float,
    cpus: int,
) -> None:
    """One line: the marginal rate of the extra rows, per core, per GPU, against an A100."""
    small_s, large_s = medians
    extra_s = large_s - small_s
    # Within the start's spread the difference bounds the rate from below only.
    bound = extra_s <= spread
    seconds = max(extra_s, 0.0) + spread if bound else extra_s
    if seconds <= 0:  # one repeat, and the large set no slower: no bound at all
        print(f"{label:7} not measured: the large set was no slower; give it more rows or "
              f"repeats ({small_s:.1f} s, {large_s:.1f} s)")  # fmt: skip
        return
    rate = extra_rows / seconds
    per_core = rate / cpus
    per_gpu = per_core * P4DE_VCPUS_PER_GPU
    # Measured prompt tokens (an image row's placeholder counted once: vLLM expands it).
    prompt = tokens + (IMAGE_TOKENS_448 if not label.startswith("text") else 0)
    need = a100_rows_per_s(prompt)
    at_least = ">=" if bound else "  "
    print(f"{label:7} {at_least}{rate:5.0f} {per_core:6.1f} {per_gpu:7.1f} {prompt:6.0f} "
          f"{need:6.1f} {at_least}{per_gpu / need:.1f}x")  # fmt: skip


def main() -> None:
    """Measure each setup's marginal rate and print it beside one A100's consumption."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--small", type=int, default=4, help="items per task, small set")
    parser.add_argument("--large", type=int, default=16, help="items per task, large set")
    parser.add_argument("--text-large", type=int, default=64, help="large set, text setup")
    parser.add_argument("--setups", default="text,dotted,full", help="comma-separated")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--cpus", type=int, default=2, help="CPUs Ray is given")
    parser.add_argument(
        "--stages",
        choices=["chained", "separate", "both"],
        default="chained",
        help="the chat-template and tokenize stages in one actor (as evaluate runs them), "
        "in two (as Ray's processor builds them), or both, interleaved",
    )
    args = parser.parse_args()
    variants = ["chained", "separate"] if args.stages == "both" else [args.stages]

    import ray
    import torch

    from geometry.item import SETUPS
    from geometry.tasks.registry import all_tasks
    from pipelines.engines.models.model_resolution import resolve_model
    from pipelines.engines.models.tiny_model import build_tiny_model
    from pipelines.noregeo.generate import generate

    torch.set_num_threads(1)
    ray.init(num_cpus=args.cpus, num_gpus=1, include_dashboard=False, log_to_driver=False)
    ray.data.DataContext.get_current().enable_progress_bars = False
    work = Path(tempfile.mkdtemp(prefix="geosee-feed-"))
    tasks = list(all_tasks())
    setups: list[str] = [s for s in SETUPS if s in args.setups.split(",")]
    sizes = {s: (args.small, args.text_large if s == "text" else args.large) for s in setups}
    items = {}
    for size in sorted({size for pair in sizes.values() for size in pair}):
        items[size] = work / f"items-{size}"
        generate(items[size], tasks, per_task=size, seed=0, setups=setups, image_size=448)
    text_model = resolve_model("vllm", str(REAL_MODEL))
    image_model = resolve_model("vllm", str(build_tiny_model("vlm", work / "tiny-vlm", seed=0)))
    print(f"CPUs given to Ray: {args.cpus}; {len(tasks)} tasks; items per task in the small "
          f"and large sets: {sizes}; {args.repeats} interleaved repeats")  # fmt: skip
    print(f"{'setup':7} {'rows/s':>7} {'/core':>6} {'x12':>7} {'tokens':>6} {'A100':>6} ratio")
    for setup in setups:
        cfg = text_model if setup == "text" else image_model
        small, large = sizes[setup]
        times: dict[tuple[str, int], list[float]] = {
            (v, size): [] for v in variants for size in (small, large)
        }
        rows: dict[int, int] = {}
        tokens = 0.0
        for repeat in range(args.repeats):
            for variant in variants:
                for size in (small, large):
                    files = sorted(items[size].glob("part-*.parquet"))
                    out = work / f"out-{setup}-{variant}-{size}-{repeat}"
                    separate = variant == "separate"
                    took, rows[size], tokens = one_run(files, cfg, setup, out, separate)
                    times[variant, size].append(took)
        for variant in variants:
            label = setup if len(variants) == 1 else f"{setup}/{variant}"
            small_s, large_s = (statistics.median(times[variant, n]) for n in (small, large))
            spread = max(times[variant, small]) - min(times[variant, small])
            extra = rows[large] - rows[small]
            print_rate(label, extra, (small_s, large_s), spread, tokens, args.cpus)
            print(
                f"{'':7} medians {small_s:.1f} s ({rows[small]} rows), {large_s:.1f} s "
                f"({rows[large]} rows); spread of the small set's runs {spread:.1f} s"
            )
    print(
        f"x12: the rate per core times the p4de's {P4DE_VCPUS_PER_GPU:g} vCPUs per A100; "
        f"A100: rows/s a 7B model's prefill consumes at {ASSUMED_MFU:.0%} of 312 TFLOPS "
        f"(2 x params FLOPs per token); ratio: x12 / A100 (goal >= {GOAL:g}x)"
    )
    ray.shutdown()


if __name__ == "__main__":
    main()
