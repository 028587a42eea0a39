"""Generation benchmark: the default NoReGeo benchmark through the Ray pipeline and a loop.

Prints, side by side in one run: items/s and images/s of the Ray Data pipeline (`generate`)
and of a plain in-process loop over the same generator and renderer, their wall-time ratio,
the per-image render + encode time on one core, and the mean PNG size.

Targets: the default benchmark (2,500 items x 3 setups = 7,500 rows, 5,000 images) in under
30 s wall on the 2-core machine; render + encode at most 3 ms per 448 px image on one core.

Usage: python bench/generate.py [--per-task 100] [--image-size 448]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import pyarrow.parquet as pq

from geometry.item import SETUPS
from geometry.items import build_items, task_draws
from geometry.render import render_png
from geometry.tasks.registry import all_tasks
from pipelines.engines.session.ray_session import ensure_ray
from pipelines.noregeo.generate import generate, item_table
from store.atomic import write_parquet_atomic


def plain_loop(out: Path, per_task: int, size: int) -> tuple[int, int]:
    """The items the pipeline generates, built and written in one process without Ray:
    (rows, images)."""
    rows = images = 0
    for task in all_tasks():
        items = build_items(task, per_task, 0, list(SETUPS), size, render_png)
        write_parquet_atomic(out / f"part-{task}.parquet", item_table(items))
        rows += len(items)
        images += sum(i.image is not None for i in items)
    return rows, images


def render_only(per_task: int, size: int) -> tuple[float, int]:
    """Seconds per image of render + encode alone, one core (draws built beforehand)."""
    draws = [d for t in all_tasks() for d, _, _ in task_draws(t, per_task, 1)]
    started = time.perf_counter()
    total = 0
    for draw in draws:
        for setup in ("dotted", "full"):
            total += len(render_png(draw, setup, size))
    elapsed = time.perf_counter() - started
    return elapsed / (2 * len(draws)), total // (2 * len(draws))


def main() -> None:
    """Time `generate` on Ray against the plain loop, and render + encode alone; print all three."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--per-task", type=int, default=100)
    parser.add_argument("--image-size", type=int, default=448)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-generate-"))
    tasks = list(all_tasks())

    started = time.perf_counter()
    ensure_ray()
    ray_start = time.perf_counter() - started
    started = time.perf_counter()
    manifest = generate(tmp / "ray", tasks, args.per_task, 0, list(SETUPS), args.image_size)
    ray_s = time.perf_counter() - started
    images = sum(
        pq.read_table(f, columns=["image"]).column(0).drop_null().__len__()
        for f in (tmp / "ray").glob("part-*.parquet")
    )
    rows = manifest["rows"]

    started = time.perf_counter()
    loop_rows, loop_images = plain_loop(tmp / "loop", args.per_task, args.image_size)
    loop_s = time.perf_counter() - started
    assert (loop_rows, loop_images) == (rows, images)

    per_image_s, mean_bytes = render_only(min(args.per_task, 20), args.image_size)
    print(f"default benchmark: {rows} rows, {images} images, {args.image_size} px")
    print(
        f"ray pipeline: {ray_s:.1f}s wall (+{ray_start:.1f}s Ray start) = "
        f"{rows / 3 / ray_s:.0f} items/s, {images / ray_s:.0f} images/s (target < 30 s)"
    )
    print(
        f"plain loop:   {loop_s:.1f}s wall = {rows / 3 / loop_s:.0f} items/s, "
        f"{images / loop_s:.0f} images/s"
    )
    print(f"ray / loop wall ratio: {ray_s / loop_s:.2f}")
    print(
        f"render + encode: {per_image_s * 1000:.2f} ms per image on one core (target <= 3 ms); "
        f"mean PNG {mean_bytes} bytes"
    )


if __name__ == "__main__":
    main()
