"""A required polygon is present as a polygon object or as drawn edges closing a simple cycle."""

from __future__ import annotations

from collections.abc import Mapping

from geometry.dsl.dataset import Problem, parse_problem
from geometry.dsl.executor import execute
from geometry.dsl.scene import GeoObject, Point, Polygon, Scene, Segment
from geometry.dsl.validator import is_simple_polygon, validate

# A square, counter-clockwise: A B C D.
A, B, C, D = Point(0, 0), Point(4, 0), Point(4, 4), Point(0, 4)
E = Point(9, 9)  # a point outside the polygon


def polygon_problem(vertices: str) -> Problem:
    return parse_problem(
        {
            "id": "p",
            "required_objects": {"points": list(vertices), "polygons": [list(vertices)]},
            "verification_conditions": [],
        }
    )


def missing(vertices: str, objects: Mapping[str, GeoObject]) -> tuple[str, ...]:
    scene = Scene({"A": A, "B": B, "C": C, "D": D, "E": E, **objects})
    return validate(polygon_problem(vertices), scene).missing_objects


def test_triangle_from_three_drawn_segments_is_present() -> None:
    edges = {"ab": Segment(A, B), "bc": Segment(C, B), "ca": Segment(C, A)}
    assert missing("ABC", edges) == ()


def test_triangle_missing_one_edge_is_missing() -> None:
    edges = {"ab": Segment(A, B), "bc": Segment(B, C)}
    assert missing("ABC", edges) == ("polygon ABC",)


def test_square_whose_edges_only_make_a_bow_tie_is_missing() -> None:
    # A-B, B-D, D-C, C-A: two sides and both diagonals; the only cycle crosses itself.
    edges = {
        "ab": Segment(A, B),
        "bd": Segment(B, D),
        "dc": Segment(D, C),
        "ca": Segment(C, A),
    }
    assert missing("ABCD", edges) == ("polygon ABCD",)


def test_extra_edges_and_diagonals_do_not_matter() -> None:
    edges = {
        "ab": Segment(A, B),
        "bc": Segment(B, C),
        "cd": Segment(C, D),
        "da": Segment(D, A),
        "ac": Segment(A, C),
        "bd": Segment(B, D),
        "ae": Segment(A, E),
    }
    assert missing("ABCD", edges) == ()


def test_the_name_fixes_the_vertex_set_not_the_order() -> None:
    # Required "ACBD", drawn as the simple square A B C D: some order closes a simple cycle.
    edges = {"ab": Segment(A, B), "bc": Segment(B, C), "cd": Segment(C, D), "da": Segment(D, A)}
    assert missing("ACBD", edges) == ()


def test_polygon_edges_and_segments_combine() -> None:
    # Triangle ABD drawn as a polygon supplies AB and DA; segments BC and CD close ABCD.
    objects: dict[str, GeoObject] = {
        "t": Polygon((A, B, D)),
        "bc": Segment(B, C),
        "cd": Segment(C, D),
    }
    assert missing("ABCD", objects) == ()
    del objects["cd"]
    assert missing("ABCD", objects) == ("polygon ABCD",)


def test_cycle_through_a_point_outside_the_polygon_does_not_count() -> None:
    # A-B-E-A closes a cycle, but through E, not C: triangle ABC is still missing.
    edges = {"ab": Segment(A, B), "be": Segment(B, E), "ea": Segment(E, A), "bc": Segment(B, C)}
    assert missing("ABC", edges) == ("polygon ABC",)


def test_collinear_triangle_from_segments_is_not_a_polygon() -> None:
    m = Point(2, 0)  # on AB
    scene = Scene({"A": A, "B": B, "M": m, "s1": Segment(A, B), "s2": Segment(B, m)})
    scene.objects["s3"] = Segment(m, A)
    verdict = validate(polygon_problem("ABM"), scene)
    assert verdict.missing_objects == ("polygon ABM",)


def test_vertices_matched_by_coordinates_within_tolerance() -> None:
    # Segments drawn between points a hair away from the labelled ones (rounded coordinates).
    nudge = Point(4.0001, 0.0)
    edges = {"ab": Segment(A, nudge), "bc": Segment(nudge, C), "ca": Segment(C, A)}
    assert missing("ABC", edges) == ()


def test_executed_program_with_a_segment_quadrilateral() -> None:
    program = """\
point : 0 0 -> A
point : 4 0 -> B
point : 5 3 -> C
point : 1 4 -> D
segment : A B -> ab
segment : B C -> bc
segment : C D -> cd
segment : D A -> da
"""
    result = execute(program)
    assert result.error is None
    assert validate(polygon_problem("ABCD"), result.scene).missing_objects == ()
    broken = execute(program.replace("segment : C D -> cd\n", ""))
    assert validate(polygon_problem("ABCD"), broken.scene).missing_objects == ("polygon ABCD",)


def test_is_simple_polygon() -> None:
    tol = 1e-6
    assert is_simple_polygon([A, B, C, D], tol)
    assert not is_simple_polygon([A, C, B, D], tol)  # bow-tie
    assert not is_simple_polygon([A, B, Point(2, 0)], tol)  # folds back along AB
    assert not is_simple_polygon([A, B, B, D], tol)  # a repeated vertex
    # Vertex P lies on edge AB, which is not one of P's own edges: the polygon touches itself.
    assert not is_simple_polygon([A, B, C, Point(2, 0), D], tol)
    assert is_simple_polygon([A, B, C, Point(2, 1), D], tol)  # lifted off AB: simple
