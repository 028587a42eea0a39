"""The GeoBuild scene renderer: size, colours at mapped positions, clipping, determinism."""

from __future__ import annotations

import io

import pytest
from PIL import Image

from geometry.dsl.executor import execute
from geometry.dsl.render import (
    BACKGROUND_COLOUR,
    OBJECT_COLOUR,
    POINT_COLOUR,
    clip_to_frame,
    fit_view,
    render_scene,
)
from geometry.dsl.scene import Line, Point, Scene, Segment


def _decode(png: bytes) -> Image.Image:
    return Image.open(io.BytesIO(png)).convert("RGB")


def _colours(image: Image.Image) -> set[object]:
    return {colour for _, colour in image.getcolors(maxcolors=256) or []}


def _scene(program: str) -> Scene:
    execution = execute(program)
    assert execution.error is None, execution.error
    return execution.scene


def test_png_decodes_at_the_requested_size() -> None:
    scene = _scene("point : 0 0 -> A\npoint : 10 5 -> B\nsegment : A B -> s")
    for size in (64, 200, 512):
        assert _decode(render_scene(scene, size)).size == (size, size)


def test_too_small_a_size_is_refused() -> None:
    with pytest.raises(ValueError, match="size=10"):
        render_scene(Scene(), 10)


def test_every_point_is_drawn_at_its_mapped_pixel() -> None:
    scene = _scene("point : -3 7 -> A\npoint : 40 -2 -> B\npoint : 12 30 -> C")
    image = _decode(render_scene(scene, 300))
    # Independent mapping: the bounding box is 43 x 32 units, centred, 80% of the image wide.
    scale = 300 * 0.8 / 43
    cx, cy = (40 + -3) / 2, (30 + -2) / 2
    for p in scene.points().values():
        col = 150 + (p.x - cx) * scale
        row = 150 - (p.y - cy) * scale
        assert image.getpixel((round(col), round(row))) == POINT_COLOUR


def test_segment_midpoint_is_drawn_and_background_elsewhere() -> None:
    scene = _scene("point : 0 0 -> A\npoint : 100 100 -> B\nsegment : A B -> s")
    image = _decode(render_scene(scene, 256))
    # The midpoint (50, 50) maps to the centre; a 1-px line may fall on either side of it.
    near = {image.getpixel((128 + dx, 128 + dy)) for dx in (-1, 0, 1) for dy in (-1, 0, 1)}
    assert OBJECT_COLOUR in near
    # Off the diagonal, far from labels, nothing is drawn.
    assert image.getpixel((200, 60)) == BACKGROUND_COLOUR


def test_circle_is_drawn_through_its_rightmost_point() -> None:
    scene = _scene("point : 0 0 -> O\ncircle : O 10 -> c")
    image = _decode(render_scene(scene, 200))
    # The whole circle is the view: its rightmost point sits at the right margin (x = 180).
    row = [image.getpixel((x, 100)) for x in range(175, 186)]
    assert OBJECT_COLOUR in row


def test_lines_are_clipped_to_the_frame() -> None:
    scene = Scene({"A": Point(0, 0), "B": Point(1, 0), "l": Line(Point(0, 0), Point(1, 0))})
    image = _decode(render_scene(scene, 128))
    view = fit_view(scene, 128)
    row = round(view.pixel(0, 0)[1])
    # A horizontal line through A and B spans the whole width, beyond both points.
    assert image.getpixel((0, row)) == OBJECT_COLOUR
    assert image.getpixel((127, row)) == OBJECT_COLOUR


@pytest.mark.parametrize(
    ("start", "direction", "ray", "expected"),
    [
        ((50, 50), (1, 0), False, ((0, 50), (100, 50))),
        ((50, 50), (1, 0), True, ((50, 50), (100, 50))),
        ((50, 50), (0, -2), True, ((50, 50), (50, 0))),
        ((150, 50), (1, 0), True, None),  # ray pointing away from the frame
        ((50, 150), (1, 0), False, None),  # horizontal line below the frame
    ],
)
def test_clip_to_frame(
    start: tuple[float, float],
    direction: tuple[float, float],
    ray: bool,
    expected: tuple[tuple[float, float], tuple[float, float]] | None,
) -> None:
    assert clip_to_frame(start, direction, 100, ray) == expected


def test_empty_scene_renders_blank() -> None:
    image = _decode(render_scene(Scene(), 100))
    assert _colours(image) == {BACKGROUND_COLOUR}


def test_single_point_scene_renders_it_centred() -> None:
    image = _decode(render_scene(Scene({"P": Point(1e5, -1e5)}), 100))
    assert image.getpixel((50, 50)) == POINT_COLOUR


def test_same_scene_same_bytes() -> None:
    program = "point : 0 0 -> A\npoint : 4 0 -> B\npoint : 1 3 -> C\npolygon : A B C -> t"
    assert render_scene(_scene(program)) == render_scene(_scene(program))


def test_every_kind_of_object_renders() -> None:
    scene = _scene(
        "point : 0 0 -> A\npoint : 100 0 -> B\npoint : 30 60 -> C\npolygon : A B C -> t\n"
        "circle : A B C -> k\nline : A C -> l\nray : B C -> r\nsemicircle : A B -> s\n"
        "angle : B A C -> ang\nvector : A C -> v\ndistance : A B -> d"
    )
    image = _decode(render_scene(scene, 256))
    assert {POINT_COLOUR, OBJECT_COLOUR} <= _colours(image)


def test_degenerate_segment_does_not_crash() -> None:
    scene = Scene({"s": Segment(Point(1, 1), Point(1, 1))})
    assert _decode(render_scene(scene, 64)).size == (64, 64)
