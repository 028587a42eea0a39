"""Each command and overload against hand-computed coordinates, plus the table's shape."""

from __future__ import annotations

import math

import pytest

from geometry.dsl.commands import COMMANDS
from geometry.dsl.executor import execute
from geometry.dsl.overloads import KINDS
from geometry.dsl.scene import (
    Angle,
    Arc,
    Circle,
    GeoObject,
    Line,
    Measure,
    Point,
    Polygon,
    Scene,
    Segment,
    Vector,
)

SQ3 = math.sqrt(3)


def run(source: str) -> Scene:
    result = execute(source)
    assert result.error is None, str(result.error)
    return result.scene


def error_of(source: str) -> tuple[str, str]:
    result = execute(source)
    assert result.error is not None
    return result.error.category, result.error.message


def xy(obj: GeoObject) -> tuple[float, float]:
    assert isinstance(obj, Point)
    return obj.x, obj.y


def close(a: tuple[float, float], b: tuple[float, float]) -> bool:
    return math.isclose(a[0], b[0], abs_tol=1e-9) and math.isclose(a[1], b[1], abs_tol=1e-9)


def line_contains(line: GeoObject, p: tuple[float, float]) -> bool:
    assert isinstance(line, Line)
    cross = (line.q.x - line.p.x) * (p[1] - line.p.y) - (line.q.y - line.p.y) * (p[0] - line.p.x)
    return abs(cross) < 1e-9 * max(1.0, line.p.distance(line.q))


def test_table_is_well_formed() -> None:
    for name, command in COMMANDS.items():
        assert command.name == name and command.overloads
        seen = set()
        for overload in command.overloads:
            assert all(kind in KINDS for kind in overload.inputs)
            assert overload.summary
            key = (overload.inputs, overload.variadic)
            assert key not in seen, f"{name} has two overloads {key}"
            seen.add(key)


AXES = "point : 0 0 -> O\npoint : 10 0 -> X\npoint : 0 10 -> Y\n"


def test_intersection_of_two_known_lines() -> None:
    scene = run(
        "point : 0 0 -> A\npoint : 4 4 -> B\npoint : 0 4 -> C\npoint : 4 0 -> D\n"
        "line : A B -> l1\nline : C D -> l2\nintersect : l1 l2 -> P"
    )
    assert close(xy(scene.objects["P"]), (2, 2))


def test_segment_and_ray_intersections_outside_are_errors() -> None:
    base = "point : 0 0 -> A\npoint : 1 0 -> B\npoint : 3 -1 -> C\npoint : 3 1 -> D\n"
    scene = run(base + "ray : A B -> r\nsegment : C D -> s\nintersect : r s -> P")
    assert close(xy(scene.objects["P"]), (3, 0))
    category, message = error_of(
        base + "segment : A B -> s1\nsegment : C D -> s2\nintersect : s1 s2 -> P"
    )
    assert category == "geometric" and "outside segment s1" in message
    category, _ = error_of(
        "point : 0 0 -> A\npoint : 1 0 -> B\npoint : -3 -1 -> C\n"
        "point : -3 1 -> D\nray : A B -> r\nline : C D -> l\nintersect : r l -> P"
    )
    assert category == "geometric"


def test_parallel_lines_do_not_intersect() -> None:
    category, message = error_of(
        AXES + "line : O X -> a\nparallel_line : Y a -> b\nintersect : a b -> P"
    )
    assert category == "geometric" and "parallel" in message


def test_circle_circle_intersections_and_their_order() -> None:
    scene = run(
        "point : 0 0 -> A\npoint : 8 0 -> B\ncircle : A 5 -> c1\ncircle : B 5 -> c2\n"
        "intersect : c1 c2 -> P Q"
    )
    # 3-4-5 triangles; the first point lies left of A -> B (positive y).
    assert close(xy(scene.objects["P"]), (4, 3))
    assert close(xy(scene.objects["Q"]), (4, -3))


def test_touching_circles_give_one_point_and_apart_circles_none() -> None:
    scene = run(
        "point : 0 0 -> A\npoint : 10 0 -> B\ncircle : A 5 -> c1\ncircle : B 5 -> c2\n"
        "intersect : c1 c2 -> T"
    )
    assert close(xy(scene.objects["T"]), (5, 0))
    category, message = error_of(
        "point : 0 0 -> A\npoint : 11 0 -> B\ncircle : A 5 -> c1\n"
        "circle : B 5 -> c2\nintersect : c1 c2 -> P Q"
    )
    assert category == "geometric" and "do not meet" in message


def test_line_circle_points_in_order_along_the_line() -> None:
    scene = run(
        "point : 0 0 -> O\ncircle : O 5 -> c\npoint : 10 3 -> A\npoint : -10 3 -> B\n"
        "line : A B -> l\nintersect : l c -> P Q\nintersect : c l -> R S"
    )
    assert close(xy(scene.objects["P"]), (4, 3))  # A is on the right, so x=4 comes first
    assert close(xy(scene.objects["Q"]), (-4, 3))
    assert close(xy(scene.objects["R"]), (4, 3))


def test_segment_from_centre_meets_circle_once() -> None:
    src = "point : 0 0 -> O\npoint : 10 0 -> A\nsegment : O A -> s\ncircle : O 5 -> c\n"
    assert close(xy(run(src + "intersect : c s -> P").objects["P"]), (5, 0))
    category, message = error_of(src + "intersect : c s -> P Q")
    assert category == "output_count" and "1 result" in message


def test_tangent_line_touches_once_and_missing_line_is_explained() -> None:
    src = "point : 0 0 -> O\ncircle : O 5 -> c\npoint : -1 5 -> A\npoint : 1 5 -> B\n"
    scene = run(src + "line : A B -> l\nintersect : l c -> T")
    assert close(xy(scene.objects["T"]), (0, 5))
    category, message = error_of(
        src.replace(" 5 ->", " 6 ->").replace("circle : O 6", "circle : O 5")
        + "line : A B -> l\nintersect : l c -> T"
    )
    assert category == "geometric" and "do not meet" in message and "radius 5" in message


def test_semicircle_keeps_the_left_half() -> None:
    scene = run(
        "point : -1 0 -> A\npoint : 1 0 -> B\nsemicircle : A B -> s\npoint : 0 -5 -> P\n"
        "point : 0 5 -> Q\nline : P Q -> l\nintersect : l s -> T"
    )
    assert isinstance(scene.objects["s"], Arc)
    assert close(xy(scene.objects["T"]), (0, 1))


@pytest.mark.parametrize(
    "angle", ["90°", "90", "90deg", "pi/2", "1.5707963267948966rad", "asin(1)"]
)
def test_rotate_by_ninety_degrees(angle: str) -> None:
    scene = run(f"point : 1 1 -> A\npoint : 4 1 -> B\nrotate : B {angle} A -> C")
    assert close(xy(scene.objects["C"]), (1, 4))


def test_rotate_with_centre_first_and_whole_objects() -> None:
    scene = run(
        "point : 0 0 -> O\npoint : 2 0 -> B\nrotate : B O 180 -> C\n"
        "segment : O B -> s\nrotate : s 90 O -> s2"
    )
    assert close(xy(scene.objects["C"]), (-2, 0))
    s2 = scene.objects["s2"]
    assert isinstance(s2, Segment) and close(xy(s2.b), (0, 2))


def test_rotate_by_angle_object_and_const() -> None:
    scene = run(
        "point : 1 0 -> A\npoint : 0 0 -> O\npoint : 1 1 -> B\nangle : A O B -> a45\n"
        "rotate : A a45 O -> C\nconst int 90 -> deg\nrotate : A deg O -> D\n"
        "const AngleSize 3.141592653589793 -> half\nrotate : A half O -> E"
    )
    assert close(xy(scene.objects["C"]), (math.sqrt(0.5), math.sqrt(0.5)))
    assert close(xy(scene.objects["D"]), (0, 1))
    assert close(xy(scene.objects["E"]), (-1, 0))


def test_mirror_across_line_and_point() -> None:
    scene = run(
        "point : 0 0 -> O\npoint : 1 1 -> D\nline : O D -> diag\npoint : 3 1 -> P\n"
        "mirror : P diag -> P1\npoint : 1 1 -> C\nmirror : P C -> P2\n"
        "circle : P 1 -> c\nmirror : c diag -> c2"
    )
    assert close(xy(scene.objects["P1"]), (1, 3))
    assert close(xy(scene.objects["P2"]), (-1, 1))
    c2 = scene.objects["c2"]
    assert isinstance(c2, Circle) and close(xy(c2.center), (1, 3)) and c2.radius == 1


def test_translate_by_vector() -> None:
    scene = run(
        "point : 1 2 -> A\npoint : 4 6 -> B\nvector : A B -> v\npoint : 0 0 -> P\n"
        "translate : P v -> Q"
    )
    assert isinstance(scene.objects["v"], Vector)
    assert close(xy(scene.objects["Q"]), (3, 4))


def test_regular_square_and_hexagon() -> None:
    scene = run("point : 0 0 -> A\npoint : 1 0 -> B\npolygon : A B 4 -> sq a b c d C D")
    assert close(xy(scene.objects["C"]), (1, 1)) and close(xy(scene.objects["D"]), (0, 1))
    sides = [scene.objects[k] for k in "abcd"]
    assert all(isinstance(s, Segment) for s in sides)
    scene = run("point : 0 0 -> A\npoint : 1 0 -> B\npolygon : A B 6 -> hex C D E F")
    hexagon = scene.objects["hex"]
    assert isinstance(hexagon, Polygon) and len(hexagon.vertices) == 6
    centre = (0.5, SQ3 / 2)  # counter-clockwise: the centre lies above AB
    for vertex in hexagon.vertices:
        assert math.isclose(math.dist(xy(vertex), centre), 1.0)
    assert close(xy(scene.objects["D"]), (1, SQ3))  # opposite A: A + 2 * (centre - A)


def test_polygon_outputs_and_degenerate_polygons() -> None:
    scene = run(
        "point : 0 0 -> A\npoint : 4 0 -> B\npoint : 0 3 -> C\n"
        "polygon : A B C -> tri c a b\npolygon : A B C -> alone"
    )
    c = scene.objects["c"]
    a = scene.objects["a"]
    assert isinstance(c, Segment) and (xy(c.a), xy(c.b)) == ((0, 0), (4, 0))
    assert isinstance(a, Segment) and (xy(a.a), xy(a.b)) == ((4, 0), (0, 3))
    assert isinstance(scene.objects["alone"], Polygon)
    category, _ = error_of(
        "point : 0 0 -> A\npoint : 4 0 -> B\npoint : 0 3 -> C\npolygon : A B C -> tri c a"
    )
    assert category == "output_count"
    category, message = error_of(
        "point : 0 0 -> A\npoint : 1 1 -> B\npoint : 2 2 -> C\npolygon : A B C -> tri"
    )
    assert category == "geometric" and "collinear" in message
    category, message = error_of("point : 0 0 -> A\npoint : 1 0 -> B\npolygon : A B 2.5 -> p")
    assert category == "geometric" and "whole number" in message


def test_tangents_from_an_external_point() -> None:
    scene = run(
        "point : 0 0 -> O\ncircle : O 5 -> c\npoint : 10 0 -> P\ntangent : P c -> t1 t2\n"
        "intersect : t1 c -> T1\nintersect : t2 c -> T2"
    )
    # cos(angle TOP) = r/d = 1/2: touch points at 60 degrees either side of OP.
    assert close(xy(scene.objects["T1"]), (2.5, -5 * SQ3 / 2))  # left of P -> O
    assert close(xy(scene.objects["T2"]), (2.5, 5 * SQ3 / 2))
    for t in ("t1", "t2"):
        assert line_contains(scene.objects[t], (10, 0))


def test_tangent_at_a_point_on_the_circle_and_from_inside() -> None:
    scene = run("point : 0 0 -> O\ncircle : O 5 -> c\npoint : 0 5 -> P\ntangent : P c -> t")
    assert line_contains(scene.objects["t"], (3, 5))
    category, message = error_of(
        "point : 0 0 -> O\ncircle : O 5 -> c\npoint : 1 1 -> P\ntangent : P c -> t1 t2"
    )
    assert category == "geometric" and "inside" in message


def test_polar_line() -> None:
    scene = run("point : 0 0 -> O\ncircle : O 5 -> c\npoint : 10 0 -> P\npolar : P c -> p")
    assert line_contains(scene.objects["p"], (2.5, 0)) and line_contains(
        scene.objects["p"], (2.5, 7)
    )


def test_midpoints_bisectors_and_perpendicular_foot() -> None:
    scene = run(
        "point : 0 0 -> A\npoint : 4 2 -> B\nsegment : A B -> s\nmidpoint : A B -> M\n"
        "midpoint : s -> M2\nline_bisector : A B -> b\npoint : 2 5 -> P\n"
        "line : A B -> l\northogonal_line : P l -> perp\nintersect : perp l -> F"
    )
    assert close(xy(scene.objects["M"]), (2, 1)) and close(xy(scene.objects["M2"]), (2, 1))
    assert line_contains(scene.objects["b"], (2, 1)) and line_contains(scene.objects["b"], (1, 3))
    # Foot of (2,5) on y = x/2: t = (2*4 + 5*2)/20 = 0.9 -> (3.6, 1.8).
    assert close(xy(scene.objects["F"]), (3.6, 1.8))


def test_angular_bisectors() -> None:
    scene = run(
        AXES + "angular_bisector : X O Y -> b\nline : O X -> lx\nline : O Y -> ly\n"
        "angular_bisector : lx ly -> b1 b2\nangle : X O Y -> a\nangular_bisector : a -> b3"
    )
    for name in ("b", "b1", "b3"):
        assert line_contains(scene.objects[name], (3, 3))
    assert line_contains(scene.objects["b2"], (3, -3))


def test_line_through_point_parallel_and_parallel_line() -> None:
    scene = run(AXES + "segment : O X -> s\nline : Y s -> l1\nparallel_line : Y s -> l2")
    for name in ("l1", "l2"):
        assert line_contains(scene.objects[name], (7, 10))


def test_circles_all_overloads() -> None:
    scene = run(
        "point : 0 0 -> A\npoint : 4 0 -> B\npoint : 0 4 -> C\ncircle : A B -> c1\n"
        "circle : A 2.5 -> c2\nsegment : A C -> s\ncircle : B s -> c3\n"
        "circle : A B C -> c4"
    )
    radii = [scene.objects[k] for k in ("c1", "c2", "c3", "c4")]
    assert all(isinstance(c, Circle) for c in radii)
    assert [c.radius for c in radii if isinstance(c, Circle)][:3] == [4.0, 2.5, 4.0]
    c4 = scene.objects["c4"]
    assert isinstance(c4, Circle) and close(xy(c4.center), (2, 2))
    assert math.isclose(c4.radius, 2 * math.sqrt(2))
    category, message = error_of(
        "point : 0 0 -> A\npoint : 1 1 -> B\npoint : 3 3 -> C\ncircle : A B C -> c"
    )
    assert category == "geometric" and "collinear" in message
    category, _ = error_of("point : 0 0 -> A\ncircle : A -2 -> c")
    assert category == "geometric"


def test_angle_and_measures() -> None:
    scene = run(
        "point : 0 0 -> A\npoint : 4 0 -> B\npoint : 0 3 -> C\nangle : B A C -> right\n"
        "distance : B C -> d\npolygon : A B C -> tri\narea : tri -> S\n"
        "perimeter : tri -> per\narea : A B C -> S2\ncircle : A 2 -> c\nradius : c -> r\n"
        "area : c -> Sc\nsegment : B C -> h\nlength : h -> L\nsum : d r -> s1\n"
        "minus : d r -> m1\nminus : d -> neg\nproduct : d r -> p1\nratio : d r -> q1\n"
        "line : A B -> ab\ndistance : C ab -> dl\ncenter : c -> O2"
    )
    right = scene.objects["right"]
    assert isinstance(right, Angle) and math.isclose(right.value, math.pi / 2)
    expected = {
        "d": 5,
        "S": 6,
        "per": 12,
        "S2": 6,
        "r": 2,
        "Sc": 4 * math.pi,
        "L": 5,
        "s1": 7,
        "m1": 3,
        "neg": -5,
        "p1": 10,
        "q1": 2.5,
        "dl": 3,
    }
    for label, value in expected.items():
        measure = scene.objects[label]
        assert isinstance(measure, Measure) and math.isclose(measure.value, value), label
    assert close(xy(scene.objects["O2"]), (0, 0))


def test_ratio_by_zero_and_measures_in_expressions() -> None:
    category, message = error_of("const : 0 -> z\nconst : 3 -> t\nratio : t z -> q")
    assert category == "geometric" and "division by zero" in message
    scene = run(
        "point : 0 0 -> A\npoint : 6 8 -> B\ndistance : A B -> d\ncircle : A d/2 -> c\n"
        "segment : A B -> AB\ncircle : B AB/5 -> c2"
    )
    c, c2 = scene.objects["c"], scene.objects["c2"]
    assert isinstance(c, Circle) and c.radius == 5
    assert isinstance(c2, Circle) and c2.radius == 2


def test_const_forms_and_prove_compatibility() -> None:
    scene = run(
        "const : 2*3 -> six\nconst Measure 10 -> L\npoint : 0 0 -> A\n"
        "equality : A A -> e\nequality : six 6 -> e2\nprove : e -> result"
    )
    assert scene.objects["six"] == Measure(6.0) and scene.objects["L"] == Measure(10.0)
    assert scene.objects["e"] == Measure(1.0) and scene.objects["e2"] == Measure(1.0)
    assert "result" not in scene.objects
    category, _ = error_of("const int 2.5 -> x")
    assert category == "bad_overload"
