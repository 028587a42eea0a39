"""Time NoReGeo diagram rendering: ms per image (render + PNG encode) and mean PNG size.

    .venv/bin/python bench/render.py [--draws 300] [--draw-seed 0]

Runs on one core. The target is at most 3 ms per 448 px image.
"""

from __future__ import annotations

import argparse
import random
import string
import time

from geometry.figure import Draw, Figure
from geometry.item import IMAGE_SETUPS
from geometry.render import REFERENCE_LINES, render_png
from geometry.thresholds import GRID_MAX, GRID_MIN


def random_draw(rng: random.Random) -> Draw:
    """A busy figure: 3-8 distinct integer points, a few segments, lines, polygons, circles."""
    count = rng.randint(3, 8)
    coordinates = rng.sample(
        [(x, y) for x in range(GRID_MIN, GRID_MAX + 1) for y in range(GRID_MIN, GRID_MAX + 1)],
        count,
    )
    labels = list(string.ascii_uppercase[:count])
    points = dict(zip(labels, coordinates, strict=True))

    def pair() -> tuple[str, str]:
        a, b = rng.sample(labels, 2)
        return a, b

    figure = Figure(
        segments=tuple(pair() for _ in range(rng.randint(0, 3))),
        lines=tuple(pair() for _ in range(rng.randint(0, 2))),
        polygons=tuple(
            tuple(rng.sample(labels, rng.randint(3, count))) for _ in range(rng.randint(0, 2))
        ),
        circles=tuple((rng.choice(labels), rng.uniform(1, 15)) for _ in range(rng.randint(0, 2))),
        axes=tuple(rng.sample(sorted(REFERENCE_LINES), rng.randint(0, 1))),
    )
    return Draw(points=points, answer="yes", figure=figure)


def main() -> None:
    """Print ms and bytes per PNG for each image size and setup over the same random draws."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=300, help="random draws per size and setup")
    parser.add_argument("--draw-seed", type=int, default=0, help="seed of the random draws")
    args = parser.parse_args()
    rng = random.Random(args.draw_seed)
    draws = [random_draw(rng) for _ in range(args.draws)]
    for size in (448, 224):
        for setup in IMAGE_SETUPS:
            render_png(draws[0], setup, size)  # warm the per-size background and font caches
            start = time.perf_counter()
            total_bytes = sum(len(render_png(draw, setup, size)) for draw in draws)
            elapsed = time.perf_counter() - start
            print(
                f"size={size:4d} setup={setup:6s} "
                f"{1000 * elapsed / len(draws):6.3f} ms/image  "
                f"{total_bytes / len(draws):8.0f} bytes/image"
            )


if __name__ == "__main__":
    main()
