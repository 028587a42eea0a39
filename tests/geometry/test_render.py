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
    GRID_HALF_COLOUR,
    OBJECT_COLOUR,
    POINT_COLOUR,
    REFERENCE_COLOUR,
    TEXT_COLOUR,
    render_png,
    rotation_arc_radius,
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


@pytest.mark.parametrize("size", SIZES)
def test_grid_step_half_draws_half_unit_lines_and_one_does_not(size: int) -> None:
    draw = Draw(points={}, answer="yes", figure=Figure())
    half = np.asarray(Image.open(io.BytesIO(render_png(draw, "dotted", size, 0.5))).convert("RGB"))
    unit = np.asarray(Image.open(io.BytesIO(render_png(draw, "dotted", size, 1))).convert("RGB"))
    # The vertical line x = 7.5, away from the axes and the 5-unit lines.
    assert colour_near(half, 7.5, 2.25, size, GRID_HALF_COLOUR)
    assert not mask(unit, GRID_HALF_COLOUR).any()
    assert render_png(draw, "dotted", size) == render_png(draw, "dotted", size, 0.5)  # default
    with pytest.raises(ValueError, match="grid_step"):
        render_png(draw, "dotted", size, 0.25)


SEMICIRCLE = {"A": (-6, -2), "B": (6, -2), "C": (-3, 2)}  # C below the arc: not on it


@pytest.mark.parametrize("size", SIZES)
def test_semicircle_is_drawn_on_the_side_of_c_only(size: int) -> None:
    figure = Figure(polygons=(("A", "B", "C"),), semicircles=(("A", "B", "C"),))
    draw = Draw(points=SEMICIRCLE, answer="no", figure=figure)
    full = pixels(draw, "full", size)
    # Circle with diameter AB: centre (0, -2), radius 6. C's side is above AB.
    for angle in (30, 90, 150):
        x, y = 6 * math.cos(math.radians(angle)), -2 + 6 * math.sin(math.radians(angle))
        assert colour_near(full, x, y, size, OBJECT_COLOUR), angle
        assert not colour_near(full, x, -4 - y, size, OBJECT_COLOUR), angle  # the other half
    assert not colour_near(pixels(draw, "dotted", size), 0, 4, size, OBJECT_COLOUR)
    flipped = Draw(points={**SEMICIRCLE, "C": (-3, -6)}, answer="no", figure=figure)
    assert colour_near(pixels(flipped, "full", size), 0, -8, size, OBJECT_COLOUR)
    assert not colour_near(pixels(flipped, "full", size), 0, 4, size, OBJECT_COLOUR)


@pytest.mark.parametrize("size", SIZES)
def test_rotation_marks_the_origin_and_the_turn_but_not_the_image(size: int) -> None:
    p, degrees = (8, 6), 90  # |OP| = 10: the arc has radius 4; P's image is (-6, 8)
    draw = Draw(points={"P": p}, answer=(-6, 8), figure=Figure(rotations=(("P", degrees),)))
    full, dotted = pixels(draw, "full", size), pixels(draw, "dotted", size)
    assert not np.array_equal(full, dotted)  # the full image was once the dotted one
    assert colour_near(full, 4, 3, size, OBJECT_COLOUR)  # segment OP, halfway
    r = rotation_arc_radius(p)
    start = math.atan2(p[1], p[0])
    middle = start + math.radians(degrees) / 2
    assert colour_near(full, r * math.cos(middle), r * math.sin(middle), size, REFERENCE_COLOUR)
    before = start - math.radians(20)  # clockwise of OP: not part of the turn
    assert not colour_near(full, r * math.cos(before), r * math.sin(before), size,
                           REFERENCE_COLOUR)  # fmt: skip
    image = mask(full, OBJECT_COLOUR) | mask(full, REFERENCE_COLOUR)
    column, row = (round(v) for v in to_pixel(-6, 8, size))
    assert not image[row - 2 : row + 3, column - 2 : column + 3].any()  # nothing at the answer
    assert not mask(dotted, OBJECT_COLOUR).any() and not mask(dotted, REFERENCE_COLOUR).any()
    # The origin's ring is no labelled point: POINT_COLOUR stays with P alone.
    ox, oy = (round(v) for v in to_pixel(0, 0, size))
    assert not mask(full, POINT_COLOUR)[oy - 2 : oy + 3, ox - 2 : ox + 3].any()


def test_rotation_arc_never_ends_on_the_image_of_a_lattice_point() -> None:
    for x in range(GRID_MIN, GRID_MAX + 1):
        for y in range(GRID_MIN, GRID_MAX + 1):
            if (x, y) != (0, 0):  # the arc's end is |OP| - r from P's image: at least half a unit
                assert math.hypot(x, y) - rotation_arc_radius((x, y)) >= 0.5, (x, y)
