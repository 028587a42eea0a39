"""The public DSL's predicate commands and `power`: a true case, a false case, a wrong input."""

from __future__ import annotations

import math

import pytest

from geometry.dsl.executor import execute
from geometry.dsl.scene import Measure

# A 4 x 3 rectangle A B C D with diagonal AC; circle c1 centred A through B (radius 4),
# c2 centred F = (8, 0) through B (touching c1 at B), c3 centred F with radius 3; angles
# BAC = DCA = 36.87°, CAD = ACB = 53.13°, CAN = 143.13°; a semicircle on AF.
FIGURE = """\
point : 0 0 -> A
point : 4 0 -> B
point : 4 3 -> C
point : 0 3 -> D
point : 8 0 -> F
point : 2 0 -> M
point : 1 1 -> G
point : -4 0 -> N
segment : A B -> ab
segment : D C -> dc
segment : A D -> ad
segment : A C -> ac
segment : B C -> bc
line : A C -> l_ac
line : B C -> l_bc
ray : A B -> r_ab
line : D C -> l_dc
circle : A B -> c1
circle : F B -> c2
circle : F 3 -> c3
angle : B A C -> a_bac
angle : C A D -> a_cad
angle : A C B -> a_acb
angle : D C A -> a_dca
angle : C A N -> a_can
semicircle : A F -> half
"""


def value_of(statement: str) -> float:
    """Run the figure plus `statement` (output `v`) and return v's value."""
    result = execute(FIGURE + statement + "\n")
    assert result.error is None, str(result.error)
    measure = result.scene.objects["v"]
    assert isinstance(measure, Measure)
    return measure.value


def category_of(statement: str) -> str:
    result = execute(FIGURE + statement + "\n")
    assert result.error is not None, f"{statement} should fail"
    return str(result.error.category)


# (true statement, false statement, statement with inputs of the wrong kind)
CASES = {
    "are_parallel": (
        "are_parallel : ab dc -> v",
        "are_parallel : ab ac -> v",
        "are_parallel : A B -> v",
    ),
    "are_perpendicular": (
        "are_perpendicular : r_ab l_bc -> v",
        "are_perpendicular : ab l_ac -> v",
        "are_perpendicular : ab c1 -> v",
    ),
    "are_collinear": (
        "are_collinear : A M B -> v",
        "are_collinear : A B C -> v",
        "are_collinear : A B ab -> v",
    ),
    "are_concyclic": (
        "are_concyclic : A B C D -> v",
        "are_concyclic : A B C G -> v",
        "are_concyclic : A B C c1 -> v",
    ),
    "are_concurrent": (
        "are_concurrent : ab ad ac -> v",
        "are_concurrent : ab ad bc -> v",
        "are_concurrent : ab ad A -> v",
    ),
    "are_congruent": (
        "are_congruent : a_bac a_dca -> v",
        "are_congruent : a_bac a_cad -> v",
        "are_congruent : a_bac ab -> v",
    ),
    "are_complementary": (
        "are_complementary : a_bac a_can -> v",  # 36.87° + 143.13° = 180°
        "are_complementary : a_bac a_cad -> v",  # 36.87° + 53.13° = 90°: not the public sense
        "are_complementary : ab dc -> v",
    ),
    "are_equal": (
        "are_equal : ab dc -> v",
        "are_equal : ab ad -> v",
        "are_equal : A ab -> v",
    ),
    "contained_by": (
        "contained_by : B c1 -> v",
        "contained_by : C c1 -> v",
        "contained_by : c1 B -> v",
    ),
    "touches": (
        "touches : c1 c2 -> v",
        "touches : c1 c3 -> v",
        "touches : A c1 -> v",
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_predicate_true_false_and_wrong_input(name: str) -> None:
    true_case, false_case, wrong_kind = CASES[name]
    assert value_of(true_case) == 1.0
    assert value_of(false_case) == 0.0
    assert category_of(wrong_kind) == "bad_overload"


def test_angles_of_the_figure_are_what_the_cases_assume() -> None:
    bac, cad = value_of("const : a_bac -> v"), value_of("const : a_cad -> v")
    assert math.degrees(bac) + math.degrees(cad) == pytest.approx(90.0)


@pytest.mark.parametrize(
    ("statement", "expected"),
    [
        ("are_parallel : l_dc r_ab -> v", 1.0),  # line and ray: a mix the public table lacks
        ("are_perpendicular : ad ab -> v", 1.0),
        ("are_congruent : ab ac -> v", 0.0),
        ("are_congruent : ac ac -> v", 1.0),
        ("are_equal : A A -> v", 1.0),
        ("are_equal : ab 4 -> v", 1.0),
        ("contained_by : M ab -> v", 1.0),
        ("contained_by : F ab -> v", 0.0),  # on the line AB, beyond the segment
        ("contained_by : F r_ab -> v", 1.0),  # ... but on the ray
        ("contained_by : F half -> v", 1.0),  # an end of the semicircle
        ("touches : l_dc c1 -> v", 0.0),  # y = 3 crosses the radius-4 circle
        ("touches : c3 ab -> v", 0.0),
        ("touches : bc c1 -> v", 1.0),  # a segment: the line x = 4 carrying it is tangent
        ("touches : c2 ad -> v", 0.0),
        ("are_concurrent : l_ac c1 ad -> v", 0.0),  # AC and c1 meet away from line AD
        ("are_concurrent : ab c1 c2 -> v", 1.0),  # all three pass through B
        ("are_concurrent : ab dc c1 -> v", 0.0),  # parallel: no common point
    ],
)
def test_predicate_forms(statement: str, expected: float) -> None:
    assert value_of(statement) == expected


def test_tangent_line_touches() -> None:
    # Line x = 8 + 3 is tangent to c3 (centre (8, 0), radius 3).
    extra = "point : 11 0 -> T\npoint : 11 5 -> U\nline : T U -> t\n"
    assert value_of(extra + "touches : c3 t -> v") == 1.0
    assert value_of(extra + "touches : t c3 -> v") == 1.0


def test_power() -> None:
    assert value_of("power : ab 2 -> v") == pytest.approx(16.0)
    assert value_of("power : 2 0.5 -> v") == pytest.approx(math.sqrt(2))
    assert value_of("power : -2 3 -> v") == pytest.approx(-8.0)
    assert category_of("power : -2 0.5 -> v") == "geometric"
    assert category_of("power : 0 -1 -> v") == "geometric"
    assert category_of("power : 10 10 -> v") == "limit"
    assert category_of("power : A 2 -> v") == "bad_overload"


def test_predicate_output_count_and_prove() -> None:
    assert category_of("are_parallel : ab dc -> v w") == "output_count"
    result = execute(FIGURE + "are_parallel : ab dc -> v\nprove : v -> _\n")
    assert result.error is None


def test_predicate_reads_as_a_number_in_expressions() -> None:
    assert value_of("are_parallel : ab dc -> p\nconst : p+1 -> v") == 2.0
