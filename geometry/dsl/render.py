"""Draw an executed GeoBuild scene as a PNG: the figure a model sees in its feedback.

The view is fitted to the figure (points, ends of segments, vertices, whole circles) with a
margin, one scale on both axes and y pointing up. Lines and rays are clipped to the frame.
Images are palette PNGs without anti-aliasing, so a pixel of `POINT_COLOUR` always belongs
to a point's dot (tests find points by colour). Same scene, same bytes.
"""

from __future__ import annotations

import io
import math
from dataclasses import dataclass
from functools import lru_cache

from PIL import Image, ImageDraw, ImageFont

from geometry.dsl.scene import (
    Angle,
    Arc,
    Circle,
    GeoObject,
    Line,
    Point,
    Polygon,
    Ray,
    Scene,
    Segment,
    Vector,
)

MIN_SIZE = 64
MARGIN = 0.1  # fraction of the image kept free on each side, room for labels
MIN_SPAN = 1.0  # a figure smaller than this (e.g. one point) is shown in a 1-unit window

RGB = tuple[int, int, int]
BACKGROUND_COLOUR: RGB = (255, 255, 255)
OBJECT_COLOUR: RGB = (20, 90, 200)
ANGLE_COLOUR: RGB = (0, 150, 70)
TEXT_COLOUR: RGB = (0, 0, 0)
POINT_COLOUR: RGB = (225, 20, 50)
_PALETTE = (BACKGROUND_COLOUR, OBJECT_COLOUR, ANGLE_COLOUR, TEXT_COLOUR, POINT_COLOUR)
_BG, _OBJECT, _ANGLE, _TEXT, _POINT = range(len(_PALETTE))

XY = tuple[float, float]


@dataclass(frozen=True)
class View:
    """Maps figure coordinates to pixels: uniform `scale`, y up, figure centred."""

    size: int
    center_x: float
    center_y: float
    scale: float  # pixels per figure unit

    def pixel(self, x: float, y: float) -> XY:
        """(column, row) of figure point (x, y)."""
        half = self.size / 2
        return (half + (x - self.center_x) * self.scale, half - (y - self.center_y) * self.scale)


def fit_view(scene: Scene, size: int) -> View:
    """The view that shows every point, segment end, vertex and whole circle of `scene`."""
    xs: list[float] = []
    ys: list[float] = []
    for obj in scene.objects.values():
        for x, y in _extent(obj):
            xs.append(x)
            ys.append(y)
    if not xs:
        return View(size, 0.0, 0.0, size * (1 - 2 * MARGIN) / MIN_SPAN)
    span = max(max(xs) - min(xs), max(ys) - min(ys), MIN_SPAN)
    return View(
        size,
        (max(xs) + min(xs)) / 2,
        (max(ys) + min(ys)) / 2,
        size * (1 - 2 * MARGIN) / span,
    )


def _extent(obj: GeoObject) -> list[XY]:
    """Figure points that must be in view for `obj` (lines and rays only their anchors)."""
    if isinstance(obj, Point):
        return [(obj.x, obj.y)]
    if isinstance(obj, Segment):
        return [(obj.a.x, obj.a.y), (obj.b.x, obj.b.y)]
    if isinstance(obj, Ray):
        return [(obj.origin.x, obj.origin.y)]
    if isinstance(obj, Line):
        return [(obj.p.x, obj.p.y), (obj.q.x, obj.q.y)]
    if isinstance(obj, Vector):
        return [(obj.start.x, obj.start.y), (obj.end.x, obj.end.y)]
    if isinstance(obj, Circle | Arc):
        c, r = obj.center, obj.radius
        return [(c.x - r, c.y - r), (c.x + r, c.y + r)]
    if isinstance(obj, Polygon):
        return [(v.x, v.y) for v in obj.vertices]
    if isinstance(obj, Angle):
        return [(obj.vertex.x, obj.vertex.y)]
    return []  # measures have no place in the figure


@lru_cache(maxsize=8)
def _font(px: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    return ImageFont.load_default(size=px)


def clip_to_frame(start: XY, direction: XY, size: int, ray: bool) -> tuple[XY, XY] | None:
    """The part of the line (or ray from `start`) inside [0, size]^2, in pixels; None if none.

    Liang-Barsky: the parameter interval of the line within both pairs of frame edges.
    """
    (sx, sy), (dx, dy) = start, direction
    low, high = (0.0 if ray else -math.inf), math.inf
    for origin, delta in ((sx, dx), (sy, dy)):
        if delta == 0:
            if not 0 <= origin <= size:
                return None
            continue
        t0, t1 = (0 - origin) / delta, (size - origin) / delta
        low, high = max(low, min(t0, t1)), min(high, max(t0, t1))
    if low > high or math.isinf(low) or math.isinf(high):
        return None
    return (sx + low * dx, sy + low * dy), (sx + high * dx, sy + high * dy)


class _Painter:
    """Draws objects of one scene onto one canvas through one view."""

    def __init__(self, view: View) -> None:
        self.view = view
        self.image = Image.new("P", (view.size, view.size), _BG)
        self.image.putpalette([c for rgb in _PALETTE for c in rgb])
        self.canvas = ImageDraw.Draw(self.image)
        self.width = max(1, round(view.size / 256))
        self.dot = max(2, round(view.size / 128))

    def px(self, p: Point) -> XY:
        return self.view.pixel(p.x, p.y)

    def segment(self, a: Point, b: Point, fill: int = _OBJECT) -> None:
        self.canvas.line((*self.px(a), *self.px(b)), fill=fill, width=self.width)

    def infinite(self, a: Point, b: Point, ray: bool) -> None:
        (ax, ay), (bx, by) = self.px(a), self.px(b)
        clipped = clip_to_frame((ax, ay), (bx - ax, by - ay), self.view.size, ray)
        if clipped is not None:
            self.canvas.line((*clipped[0], *clipped[1]), fill=_OBJECT, width=self.width)

    def circle_arc(self, center: Point, radius: float, start_deg: float, end_deg: float) -> None:
        cx, cy = self.px(center)
        r = radius * self.view.scale
        # Figure angles run counter-clockwise with y up; Pillow's run clockwise with y down.
        self.canvas.arc(
            (cx - r, cy - r, cx + r, cy + r),
            -end_deg,
            -start_deg,
            fill=_OBJECT,
            width=self.width,
        )

    def vector(self, v: Vector) -> None:
        self.segment(v.start, v.end)
        (sx, sy), (ex, ey) = self.px(v.start), self.px(v.end)
        length = math.hypot(ex - sx, ey - sy)
        if length == 0:
            return
        ux, uy = (ex - sx) / length, (ey - sy) / length
        head = 3 * self.dot
        left = (ex - head * ux - head / 2 * uy, ey - head * uy + head / 2 * ux)
        right = (ex - head * ux + head / 2 * uy, ey - head * uy - head / 2 * ux)
        self.canvas.polygon([(ex, ey), left, right], fill=_OBJECT)

    def angle(self, a: Angle) -> None:
        start = math.degrees(math.atan2(a.a.y - a.vertex.y, a.a.x - a.vertex.x))
        end = math.degrees(math.atan2(a.b.y - a.vertex.y, a.b.x - a.vertex.x))
        if (end - start) % 360 > 180:  # always mark the angle below 180 degrees
            start, end = end, start
        if end < start:
            end += 360
        cx, cy = self.px(a.vertex)
        r = 4 * self.dot
        self.canvas.arc((cx - r, cy - r, cx + r, cy + r), -end, -start, fill=_ANGLE, width=1)

    def draw(self, obj: GeoObject) -> None:
        if isinstance(obj, Segment):
            self.segment(obj.a, obj.b)
        elif isinstance(obj, Line):
            self.infinite(obj.p, obj.q, ray=False)
        elif isinstance(obj, Ray):
            self.infinite(obj.origin, obj.through, ray=True)
        elif isinstance(obj, Circle):
            self.circle_arc(obj.center, obj.radius, 0.0, 360.0)
        elif isinstance(obj, Arc):
            start, end = math.degrees(obj.start), math.degrees(obj.end)
            self.circle_arc(obj.center, obj.radius, start, end if end > start else end + 360)
        elif isinstance(obj, Polygon):
            v = obj.vertices
            for i in range(len(v)):
                self.segment(v[i], v[(i + 1) % len(v)])
        elif isinstance(obj, Vector):
            self.vector(obj)
        elif isinstance(obj, Angle):
            self.angle(obj)

    def points(self, points: dict[str, Point]) -> None:
        """Labels first, then dots, so no label covers another point's dot."""
        font_px = max(10, round(self.view.size / 36))
        d = self.dot
        for label, p in points.items():
            x, y = self.px(p)
            # Up and right of the dot, clamped so labels near the frame stay readable.
            tx = min(max(x + d + 1, 0), self.view.size - font_px * len(label))
            ty = min(max(y - d - font_px, 0), self.view.size - font_px)
            self.canvas.text((tx, ty), label, fill=_TEXT, font=_font(font_px))
        for p in points.values():
            x, y = self.px(p)
            self.canvas.ellipse((x - d, y - d, x + d, y + d), fill=_POINT)


def render_scene(scene: Scene, size: int = 512) -> bytes:
    """PNG bytes of `scene`, `size` x `size` px, fitted to the figure.

    Curves and lines first, then points, so no stroke covers a point's dot.
    """
    if size < MIN_SIZE:
        raise ValueError(f"size={size} is too small for a readable figure; use at least {MIN_SIZE}")
    painter = _Painter(fit_view(scene, size))
    for obj in scene.objects.values():
        painter.draw(obj)
    painter.points(scene.points())
    buffer = io.BytesIO()
    painter.image.save(buffer, format="PNG")
    return buffer.getvalue()
