"""NoReGeo diagram renderer: decodes, points findable by colour, objects only in `full`."""

from __future__ import annotations

import io
import math

import numpy as np
import pytest
from PIL import Image

from geometry import render
from geometry.figure import Draw, Figure
from geometry.item import IMAGE_SETUPS
from geometry.render import (
    OBJECT_COLOUR,
    POINT_COLOUR,
    REFERENCE_COLOUR,
    TEXT_COLOUR,
    render_png,
    to_pixel,
)
from geometry.thresholds import GRID_MAX, GRID_MIN

SIZES = (224, 448)

# Points chosen so that midpoints and test pixels fall between grid lines.
POINTS = {"A": (-9, 2), "B": (4, 9), "C": (-3, -2), "D": (1, 0), "O": (2, -13), "E": (-15, 14)}
FIGURE = Figure(
    segments=(("A", "B"),),
    lines=(("C", "D"),),
    polygons=(("A", "B", "D"),),
    circles=(("O", 5.5),),
    axes=("y=x",),
)
DRAW = Draw(points=POINTS, answer="yes", figure=FIGURE)


def pixels(draw: Draw, setup: str, size: int) -> np.ndarray:
    """Decoded RGB array, shape (rows, columns, 3)."""
    return np.asarray(Image.open(io.BytesIO(render_png(draw, setup, size))).convert("RGB"))


def colour_near(image: np.ndarray, x: float, y: float, size: int, colour: tuple[int, ...]) -> bool:
    """Whether `colour` occurs within one pixel of grid point (x, y)."""
    column, row = (round(v) for v in to_pixel(x, y, size))
    window = image[row - 1 : row + 2, column - 1 : column + 2]
    return bool((window == colour).all(axis=-1).any())


def mask(image: np.ndarray, colour: tuple[int, ...]) -> np.ndarray:
    return (image == colour).all(axis=-1)


def pixels_per_unit(size: int) -> float:
    return to_pixel(1, 0, size)[0] - to_pixel(0, 0, size)[0]


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("setup", IMAGE_SETUPS)
def test_png_decodes_at_requested_size(setup: str, size: int) -> None:
    image = Image.open(io.BytesIO(render_png(DRAW, setup, size)))
    assert image.format == "PNG"
    assert image.size == (size, size)
    assert image.convert("RGB").size == (size, size)


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("setup", IMAGE_SETUPS)
def test_every_point_centre_has_point_colour(setup: str, size: int) -> None:
    image = pixels(DRAW, setup, size)
    for label, (x, y) in POINTS.items():
        column, row = (round(v) for v in to_pixel(x, y, size))
        # The whole 3x3 block: the dot stays visible at 224 px.
        block = image[row - 1 : row + 2, column - 1 : column + 2]
        assert (block == POINT_COLOUR).all(), label


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("setup", IMAGE_SETUPS)
def test_point_colour_is_used_by_dots_only(setup: str, size: int) -> None:
    rows, columns = np.nonzero(mask(pixels(DRAW, setup, size), POINT_COLOUR))
    centres = np.array([to_pixel(x, y, size) for x, y in POINTS.values()])
    distance = np.hypot(columns[:, None] - centres[:, 0], rows[:, None] - centres[:, 1]).min(axis=1)
    assert len(rows) > 0
    assert distance.max() <= 0.5 * pixels_per_unit(size)


@pytest.mark.parametrize("size", SIZES)
def test_segment_drawn_in_full_only(size: int) -> None:
    (ax, ay), (bx, by) = POINTS["A"], POINTS["B"]
    midpoint = ((ax + bx) / 2, (ay + by) / 2)
    assert colour_near(pixels(DRAW, "full", size), *midpoint, size, OBJECT_COLOUR)
    assert not colour_near(pixels(DRAW, "dotted", size), *midpoint, size, OBJECT_COLOUR)


@pytest.mark.parametrize("size", SIZES)
def test_dotted_has_no_object_or_reference_colour(size: int) -> None:
    image = pixels(DRAW, "dotted", size)
    assert not mask(image, OBJECT_COLOUR).any()
    assert not mask(image, REFERENCE_COLOUR).any()


@pytest.mark.parametrize("size", SIZES)
def test_circle_passes_through_its_radius(size: int) -> None:
    (cx, cy), radius = POINTS["O"], FIGURE.circles[0][1]
    full = pixels(DRAW, "full", size)
    for angle in (0, 90, 180, 270, 45):
        x = cx + radius * math.cos(math.radians(angle))
        y = cy + radius * math.sin(math.radians(angle))
        assert colour_near(full, x, y, size, OBJECT_COLOUR), angle
    # An outline, not a disc: halfway to the rim is not drawn.
    assert not colour_near(full, cx + radius / 2, cy + 0.5, size, OBJECT_COLOUR)
    assert not colour_near(pixels(DRAW, "dotted", size), cx + radius, cy, size, OBJECT_COLOUR)


@pytest.mark.parametrize("size", SIZES)
def test_polygon_is_an_outline(size: int) -> None:
    corners = [POINTS[label] for label in FIGURE.polygons[0]]
    full = pixels(DRAW, "full", size)
    for (ax, ay), (bx, by) in zip(corners, corners[1:] + corners[:1], strict=True):
        assert colour_near(full, (ax + bx) / 2, (ay + by) / 2, size, OBJECT_COLOUR)
    centroid_x = sum(x for x, _ in corners) / 3
    centroid_y = sum(y for _, y in corners) / 3
    assert not colour_near(full, centroid_x, centroid_y, size, OBJECT_COLOUR)


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize(
    ("c", "d"),
    [((-3, -2), (1, 0)), ((5, -1), (5, 4)), ((-6, 7), (3, 7)), ((1, 1), (2, -3))],
)
def test_lines_reach_the_frame(size: int, c: tuple[int, int], d: tuple[int, int]) -> None:
    draw = Draw(points={"C": c, "D": d}, answer="yes", figure=Figure(lines=(("C", "D"),)))
    full = pixels(draw, "full", size)
    (cx, cy), (dx, dy) = c, d
    # Recompute where the line leaves the grid box, then look just inside each exit.
    if dx == cx:
        exits: list[tuple[float, float]] = [(cx, -19.6), (cx, 19.6)]
    else:
        slope = (dy - cy) / (dx - cx)
        candidates = [(x, cy + slope * (x - cx)) for x in (-19.6, 19.6)]
        if slope:
            candidates += [(cx + (y - cy) / slope, y) for y in (-19.6, 19.6)]
        exits = [(x, y) for x, y in candidates if -19.7 <= x <= 19.7 and -19.7 <= y <= 19.7]
    assert len(exits) >= 2
    for x, y in exits:
        assert colour_near(full, x, y, size, OBJECT_COLOUR), (x, y)


@pytest.mark.parametrize("size", SIZES)
def test_objects_stay_inside_the_grid_box(size: int) -> None:
    points = {"O": (15, 15), "A": (-20, 19), "B": (20, -19)}
    figure = Figure(lines=(("A", "B"),), circles=(("O", 12.0),), axes=("y=-x", "x"))
    image = pixels(Draw(points=points, answer="yes", figure=figure), "full", size)
    (left, top), (right, bottom) = (
        to_pixel(GRID_MIN, GRID_MAX, size),
        to_pixel(GRID_MAX, GRID_MIN, size),
    )
    drawn = mask(image, OBJECT_COLOUR) | mask(image, REFERENCE_COLOUR)
    rows, columns = np.nonzero(drawn)
    assert len(rows) > 0
    assert columns.min() >= left and columns.max() <= right
    assert rows.min() >= top and rows.max() <= bottom


@pytest.mark.parametrize("size", SIZES)
def test_reference_axis_is_drawn_distinctly(size: int) -> None:
    full = pixels(DRAW, "full", size)
    along = [t / 4 for t in range(-78, 79)]  # y = x from -19.5 to 19.5 in quarter units
    hits = sum(colour_near(full, t, t, size, REFERENCE_COLOUR) for t in along)
    assert hits > 0.4 * len(along)  # dashed: gaps allowed, but most of the diagonal is drawn
    assert not colour_near(full, 10.5, -10.5, size, REFERENCE_COLOUR)  # y = -x is not asked for


@pytest.mark.parametrize("size", SIZES)
def test_label_is_drawn_beside_its_point(size: int) -> None:
    empty = pixels(Draw(points={}, answer="yes", figure=Figure()), "dotted", size)
    x, y = 7, 11
    labelled = pixels(Draw(points={"Q": (x, y)}, answer="yes", figure=Figure()), "dotted", size)
    new_text = mask(labelled, TEXT_COLOUR) & ~mask(empty, TEXT_COLOUR)
    rows, columns = np.nonzero(new_text)
    column, row = to_pixel(x, y, size)
    assert len(rows) > 0
    assert np.hypot(columns - column, rows - row).max() <= 4 * pixels_per_unit(size)


@pytest.mark.parametrize("size", SIZES)
def test_same_draw_gives_same_bytes(size: int) -> None:
    first = render_png(DRAW, "dotted", size)
    render_png(DRAW, "full", size)  # a full render must not leak into the cached background
    render._background.cache_clear()
    assert render_png(DRAW, "dotted", size) == first


@pytest.mark.parametrize("setup", ["text", "Full", ""])
def test_unknown_setup_names_the_valid_ones(setup: str) -> None:
    with pytest.raises(ValueError, match="dotted.*full"):
        render_png(DRAW, setup)


def test_unknown_reference_axis_raises() -> None:
    draw = Draw(points={"P": (1, 2)}, answer="yes", figure=Figure(axes=("x=y",)))
    with pytest.raises(ValueError, match="x=y"):
        render_png(draw, "full")


def test_point_off_the_grid_raises() -> None:
    draw = Draw(points={"P": (21, 0)}, answer="yes", figure=Figure())
    with pytest.raises(ValueError, match="P=\\(21, 0\\)"):
        render_png(draw, "dotted")


@pytest.mark.parametrize("size", [*SIZES, 100, 512])
def test_to_pixel_maps_the_grid_inside_the_image_with_margins(size: int) -> None:
    left, top = to_pixel(GRID_MIN, GRID_MAX, size)
    right, bottom = to_pixel(GRID_MAX, GRID_MIN, size)
    assert 0 < left < right < size and 0 < top < bottom < size
    assert min(left, top, size - 1 - right, size - 1 - bottom) >= 0.04 * size
    assert right - left == pytest.approx(bottom - top)  # square units
    assert to_pixel(0, 1, size)[1] < to_pixel(0, 0, size)[1]  # y points up
    assert render.grid_coordinates(*to_pixel(3.5, -7.25, size), size) == pytest.approx((3.5, -7.25))


def test_too_small_size_raises() -> None:
    with pytest.raises(ValueError, match="size=32"):
        render_png(DRAW, "dotted", 32)


@pytest.mark.parametrize("radius", [0, -2.5])
def test_circle_without_positive_radius_raises(radius: float) -> None:
    draw = Draw(points={"O": (0, 0)}, answer="yes", figure=Figure(circles=(("O", radius),)))
    with pytest.raises(ValueError, match="radius"):
        render_png(draw, "full")
