"""A GeoBuild problem as a least-squares model: unknowns, residuals, gauge, starting points.

The residual vector is the structural part (always on) followed by each condition's
residuals; `residuals(x, active)` switches conditions off by index, which the conflict
search uses. Structural residuals:
- gauge: the first point at the origin, and, when no condition fixes lengths, the first two
  points a fixed distance apart (conditions are invariant under translation and, without
  absolute lengths, under scaling, so these never conflict with them);
- every two labelled points at least MARGIN x scale apart (distinct labels are distinct
  points in the data set's figures, and the checks need non-degenerate figures);
- what the drawn objects need: required polygons not flat, lines through 3+ points straight,
  named-line anchors apart, radius unknowns positive.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from geometry.dsl.dataset import Problem
from geometry.dsl.solver_residuals import BUILDERS
from geometry.dsl.solver_space import (
    MARGIN,
    Compiled,
    ResidualFn,
    Space,
    State,
    cross,
    dist,
    hinge,
    line_offset,
)

# Figure size used when no condition gives a length: the data's figures are drawn in units
# where a side of 10 is ordinary.
DEFAULT_SCALE = 10.0


class Unsupported(ValueError):
    """The problem's data cannot be turned into residuals (names the condition and why)."""


@dataclass
class Model:
    """Unknowns and residuals of one problem."""

    problem: Problem
    space: Space
    compiled: list[Compiled]
    structural: list[tuple[str, ResidualFn]]
    separation: ResidualFn

    def residuals(
        self, x: np.ndarray, active: Sequence[int] | None = None, separate: bool = True
    ) -> np.ndarray:
        """The residual vector at x, with only the conditions at `active` (default all);
        `separate=False` leaves out the distinct-points hinges (a first, relaxed stage)."""
        state = self.space.state(x)
        out: list[float] = self.separation(state) if separate else []
        for _name, fn in self.structural:
            out += fn(state)
        indices = range(len(self.compiled)) if active is None else active
        for i in indices:
            out += self.compiled[i].residual(state)
        return np.asarray(out, dtype=float)

    def condition_errors(self, x: np.ndarray) -> list[float]:
        """Largest absolute residual of each condition at x (0 when it holds exactly)."""
        state = self.space.state(x)
        return [max((abs(v) for v in item.residual(state)), default=0.0) for item in self.compiled]

    def strained(self, x: np.ndarray, tolerance: float) -> list[str]:
        """What the figure itself needs but does not get at x (for conflict reports): close
        labelled points, flat required polygons, crooked lines, vanishing radii."""
        state = self.space.state(x)
        points = self.space.points
        out = [
            f"points {p} and {q} distinct"
            for i, p in enumerate(points)
            for q in points[i + 1 :]
            if dist(state.pt(p), state.pt(q)) < (MARGIN - tolerance) * self.space.scale
        ]
        for name, fn in self.structural:
            if max((abs(v) for v in fn(state)), default=0.0) > tolerance:
                out.append(name)
        return out

    def initial(self, rng: np.random.Generator, place: bool = True) -> np.ndarray:
        """A random start: points spread over the figure's square, radii about half its size;
        with `place`, points then moved onto the objects incidence conditions name."""
        scale = self.space.scale
        n_points = len(self.space.points) + len(self.space.anchors)
        xy = rng.uniform(-scale, scale, size=2 * n_points)
        scalars = [
            rng.uniform(0.3, 1.0) * scale if name.startswith("~r.") else rng.uniform(-3.0, 3.0)
            for name in self.space.scalars
        ]
        x = np.concatenate([xy, np.asarray(scalars, dtype=float)])
        if place:
            _place_incidences(self, x, rng)
        return x

    def state(self, x: np.ndarray) -> State:
        """The candidate solution `x` decoded into labelled coordinates."""
        return self.space.state(x)


def build_model(problem: Problem) -> Model:
    """The model of `problem`; raises Unsupported when a condition cannot be expressed."""
    for condition in problem.conditions:
        if condition.error is not None:
            raise Unsupported(f"{condition.type}: {condition.error}")
        if condition.type not in BUILDERS:
            raise Unsupported(f"no residual for condition type {condition.type!r}")
    lengths = _absolute_lengths(problem)
    space = Space(scale=statistics.median(lengths) if lengths else DEFAULT_SCALE)
    _register_required(problem, space)
    compiled = []
    for condition in problem.conditions:
        try:
            residual = BUILDERS[condition.type](condition, space)
        except (KeyError, TypeError, ValueError) as err:
            raise Unsupported(f"{condition.describe()}: {err}") from err
        compiled.append(Compiled(condition, residual))
    structural = _structural(problem, space, fixed_size=bool(lengths))
    return Model(problem, space, compiled, structural, _separation(space))


def _absolute_lengths(problem: Problem) -> list[float]:
    """Lengths the data fixes (distances, perimeters per side, radii): they set the scale."""
    out: list[float] = []
    for c in problem.conditions:
        if c.type == "distance_equals" or (c.type == "point_inside_circle" and "radius" in c.args):
            out.append(c.number("value" if c.type == "distance_equals" else "radius"))
        elif c.type == "perimeter":
            out.append(c.number("value") / len(c.labels("polygon")))
    out += [k.radius for k in problem.required.circles if k.radius is not None]
    return [v for v in out if v > 0.0]


def _register_required(problem: Problem, space: Space) -> None:
    req = problem.required
    space.labels(req.points)
    for segment in req.segments:
        space.labels(segment)
    for line in req.lines:
        space.line(line)
    for circle in req.circles:
        if circle.radius_point is not None:
            space.add_circle(circle.center, ("point", circle.radius_point))
        else:
            assert circle.radius is not None
            space.add_circle(circle.center, ("value", circle.radius))
    for polygon in req.polygons:
        space.labels(polygon)


def _structural(problem: Problem, space: Space, fixed_size: bool) -> list[tuple[str, ResidualFn]]:
    out: list[tuple[str, ResidualFn]] = []
    points = list(space.points)
    if points:
        out.append(("gauge", _at_origin(points[0])))
    if len(points) >= 2 and not fixed_size:
        out.append(("gauge", _unit_apart(points[0], points[1])))
    for line, (p, q) in space.named_lines.items():
        out.append((f"line {line} drawable", _apart(p, q)))
    for name in space.scalars:
        if name.startswith("~r."):
            out.append((f"circle {name[3:]} of positive radius", _positive(name)))
    for labels in space.long_lines:
        out.append((f"line {''.join(labels)} straight", _straight(labels)))
    for polygon in problem.required.polygons:
        out.append((f"polygon {''.join(polygon)} of non-zero area", _with_area(polygon)))
    return out


def _at_origin(label: str) -> ResidualFn:
    return lambda s: [s.pt(label)[0] / s.scale, s.pt(label)[1] / s.scale]


def _unit_apart(a: str, b: str) -> ResidualFn:
    """The two points one scale apart: fixes the size when no condition does."""
    return lambda s: [dist(s.pt(a), s.pt(b)) / s.scale - 1.0]


def _apart(a: str, b: str) -> ResidualFn:
    return lambda s: [hinge(MARGIN - dist(s.pt(a), s.pt(b)) / s.scale)]


def _positive(scalar: str) -> ResidualFn:
    return lambda s: [hinge(MARGIN - s.scalars[scalar] / s.scale)]


def _straight(labels: tuple[str, ...]) -> ResidualFn:
    a, b = labels[0], labels[1]
    return lambda s: [line_offset(s.pt(p), s.pt(a), s.pt(b)) / s.scale for p in labels[2:]]


def _with_area(labels: tuple[str, ...]) -> ResidualFn:
    """The executor refuses a polygon of zero signed (shoelace) area, which includes
    self-crossing ones such as a parallelogram listed in bow-tie order."""

    def residual(s: State) -> list[float]:
        pts = [s.pt(label) for label in labels]
        area = sum(cross((0.0, 0.0), pts[i - 1], pts[i]) for i in range(len(pts))) / 2
        return [hinge(MARGIN - abs(area) / s.scale**2)]

    return residual


def _place_incidences(model: Model, x: np.ndarray, rng: np.random.Generator) -> None:
    """Move points onto the segments, lines and circles conditions put them on, in data
    order, never moving a point twice or once another placement used it: a start that
    already satisfies the incidences leaves the optimiser only the metric conditions."""
    index = {label: 2 * i for i, label in enumerate(model.space.points)}
    settled: set[str] = set()

    def pt(label: str) -> np.ndarray:
        return x[index[label] : index[label] + 2]

    for item in model.compiled:
        c = item.condition
        if c.type in ("point_on_segment", "midpoint_of", "point_on_line"):
            if c.type == "point_on_line":
                ref = c.line("line")
                if ref.through is None:
                    continue
                ends, low, high = ref.through[:2], -0.5, 1.5
            else:
                ends, low, high = c.labels("segment"), 0.2, 0.8
            p = c.text("point")
            if p in settled or p in ends:
                continue
            t = 0.5 if c.type == "midpoint_of" else rng.uniform(low, high)
            a, b = pt(ends[0]).copy(), pt(ends[1]).copy()
            pt(p)[:] = a + t * (b - a)
            settled.update((p, *ends))
        elif c.type == "point_on_circle":
            p, center = c.text("point"), c.text("center")
            radius = model.space.circles[center][0]
            if p in settled or p == center or radius[0] != "point" or radius[1] == p:
                continue
            through = str(radius[1])
            r = float(np.linalg.norm(pt(through) - pt(center)))
            theta = rng.uniform(0.0, 2 * np.pi)
            pt(p)[:] = pt(center) + r * np.array([np.cos(theta), np.sin(theta)])
            settled.update((p, center, through))


def _separation(space: Space) -> ResidualFn:
    """Hinges keeping every two labelled points at least MARGIN x scale apart."""
    points = list(space.points)
    pairs = [(p, q) for i, p in enumerate(points) for q in points[i + 1 :]]
    return lambda s: [hinge(MARGIN - dist(s.pt(p), s.pt(q)) / s.scale) for p, q in pairs]
