"""The 25 task generators, checked through the item table's `answer` and `geometry` columns.

Answers are recomputed here with floats and textbook formulas, independently of
geometry.exact and the generators (which work with Fractions and other constructions),
for the paper's default options and for every non-default value of each generator option.
"""

from __future__ import annotations

import itertools
import json
import math
import random
from collections import Counter, defaultdict
from collections.abc import Callable
from functools import cache
from typing import Any

import pytest

from geometry.item import Item
from geometry.items import build_items
from geometry.tasks.options import GeneratorOptions
from geometry.tasks.registry import all_tasks, get_task
from geometry.thresholds import GRID_MAX, GRID_MIN

PER_TASK = 100
SEED = 20240
TASK_IDS = list(all_tasks())
DESIGN_ORDER = [
    "C-ACM-PST",
    "C-ACM-TST",
    "C-BCT-CT",
    "C-SYM-SST",
    "N-BCT-MT",
    "N-BCT-PAT",
    "N-BCT-PPT",
    "N-BCT-TAT",
    "N-BCT-TPT",
    "N-ECL-IT",
    "N-ECL-SLT",
    "N-GTR-RT",
    "N-GTR-RPT",
    "N-RLT-BT",
    "N-SCP-ICCT",
    "N-SCP-ICRT",
    "N-SCP-OCCT",
    "N-SCP-TTT",
    "U-CPR-CDT",
    "U-PAP-PLT",
    "U-PAP-PT",
    "U-PAP-RAT",
    "U-RLT-SLT",
    "U-SCP-STT",
    "U-SYM-ST",
]
EPS = 1e-6

P = tuple[float, float]
Geo = dict[str, Any]


# The paper's defaults, and every option at its other value (the options are independent).
OPTION_SETS = {
    "paper": GeneratorOptions(),
    "other": GeneratorOptions(
        variants="extended", semicircle_prompt="diameter", semicircle_figure="triangle", grid_step=1
    ),
}
with_options = pytest.mark.parametrize("option_set", list(OPTION_SETS))


@cache
def items(task_id: str, option_set: str = "paper") -> tuple[Item, ...]:
    options = OPTION_SETS[option_set]
    return tuple(build_items(task_id, PER_TASK, SEED, ("text",), 64, None, options))


def _pts(geo: Geo, labels: str) -> list[P]:
    return [tuple(geo["points"][label]) for label in labels]


def _shoelace(pts: list[P]) -> float:
    n = len(pts)
    return (
        abs(
            sum(pts[i][0] * pts[(i + 1) % n][1] - pts[(i + 1) % n][0] * pts[i][1] for i in range(n))
        )
        / 2
    )


def _perimeter(pts: list[P]) -> float:
    return sum(math.dist(pts[i], pts[(i + 1) % len(pts)]) for i in range(len(pts)))


def _solve(a11: float, a12: float, b1: float, a21: float, a22: float, b2: float) -> P:
    det = a11 * a22 - a12 * a21
    assert abs(det) > 1e-12
    return (b1 * a22 - a12 * b2) / det, (a11 * b2 - b1 * a21) / det


def _lines_meet(a: P, b: P, c: P, d: P) -> P:
    # a + t (b - a) = c + s (d - c)
    t, _ = _solve(
        b[0] - a[0], -(d[0] - c[0]), c[0] - a[0], b[1] - a[1], -(d[1] - c[1]), c[1] - a[1]
    )
    return a[0] + t * (b[0] - a[0]), a[1] + t * (b[1] - a[1])


def _unit(u: P) -> P:
    n = math.hypot(*u)
    return u[0] / n, u[1] / n


def _bisector_direction(a: P, b: P, c: P) -> P:
    ua, uc = _unit((a[0] - b[0], a[1] - b[1])), _unit((c[0] - b[0], c[1] - b[1]))
    return ua[0] + uc[0], ua[1] + uc[1]


def _bisector_foot(a: P, b: P, c: P) -> P:
    w = _bisector_direction(a, b, c)
    return _lines_meet(b, (b[0] + w[0], b[1] + w[1]), a, c)


def _incenter(a: P, b: P, c: P) -> P:
    wb, wa = _bisector_direction(a, b, c), _bisector_direction(b, a, c)
    return _lines_meet(b, (b[0] + wb[0], b[1] + wb[1]), a, (a[0] + wa[0], a[1] + wa[1]))


def _circumcenter(a: P, b: P, c: P) -> P:
    # |X - a|^2 = |X - b|^2 and |X - a|^2 = |X - c|^2 are linear in X
    return _solve(
        2 * (b[0] - a[0]),
        2 * (b[1] - a[1]),
        b[0] ** 2 + b[1] ** 2 - a[0] ** 2 - a[1] ** 2,
        2 * (c[0] - a[0]),
        2 * (c[1] - a[1]),
        c[0] ** 2 + c[1] ** 2 - a[0] ** 2 - a[1] ** 2,
    )


def _heron_inradius(a: P, b: P, c: P) -> float:
    x, y, z = math.dist(b, c), math.dist(c, a), math.dist(a, b)
    s = (x + y + z) / 2
    return math.sqrt(max(s * (s - x) * (s - y) * (s - z), 0.0)) / s


def _largest_angle(a: P, b: P, c: P) -> float:
    x, y, z = sorted((math.dist(b, c), math.dist(c, a), math.dist(a, b)))
    return math.degrees(math.acos((x * x + y * y - z * z) / (2 * x * y)))


def _angle(a: P, b: P, c: P) -> float:
    u, v = (a[0] - b[0], a[1] - b[1]), (c[0] - b[0], c[1] - b[1])
    return math.degrees(math.atan2(abs(u[0] * v[1] - u[1] * v[0]), u[0] * v[0] + u[1] * v[1]))


def _mirror(p: P, axis: str) -> P:
    # reflection across a line through the origin with unit direction d: 2 (p.d) d - p
    d = _unit({"x": (1, 0), "y": (0, 1), "y=x": (1, 1), "y=-x": (1, -1)}[axis])
    k = 2 * (p[0] * d[0] + p[1] * d[1])
    return k * d[0] - p[0], k * d[1] - p[1]


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


def _compare(first: str, second: str, s1: float, s2: float) -> str:
    return "equal" if abs(s1 - s2) < EPS else (first if s1 > s2 else second)


def _y_symmetric(pts: list[P]) -> bool:
    edges = {frozenset((pts[i], pts[(i + 1) % len(pts)])) for i in range(len(pts))}
    mirrored = {frozenset((-x, y) for x, y in edge) for edge in edges}
    return edges == mirrored


def _special_line(a: P, b: P, c: P, d: P) -> str:
    mid = ((a[0] + c[0]) / 2, (a[1] + c[1]) / 2)
    ac = (c[0] - a[0], c[1] - a[1])
    t = ((b[0] - a[0]) * ac[0] + (b[1] - a[1]) * ac[1]) / (ac[0] ** 2 + ac[1] ** 2)
    foot = (a[0] + t * ac[0], a[1] + t * ac[1])
    found = [
        name
        for name, ok in (
            ("median", math.dist(d, mid) < EPS),
            ("altitude", math.dist(d, foot) < EPS),
            ("bisector", abs(_angle(a, b, d) - _angle(d, b, c)) < EPS),
        )
        if ok
    ]
    assert len(found) == 1, found
    return found[0]


def _line_angle(g: Geo) -> float:
    """The angle between the directions AB and CD, in [0, 180]."""
    a, b, c, d = _pts(g, "ABCD")
    return _angle((b[0] - a[0], b[1] - a[1]), (0.0, 0.0), (d[0] - c[0], d[1] - c[1]))


def _is_diameter(oab: list[P], radius: float) -> bool:
    o, a, b = oab
    centre = ((a[0] + b[0]) / 2, (a[1] + b[1]) / 2)
    return math.dist(centre, o) < EPS and abs(math.dist(a, b) - 2 * radius) < EPS


def _triangle_type(largest_angle: float) -> str:
    if abs(largest_angle - 90) < EPS:
        return "right"
    return "acute" if largest_angle < 90 else "obtuse"


def _rotate(p: P, angle: float) -> P:
    r = math.radians(angle)
    return p[0] * math.cos(r) - p[1] * math.sin(r), p[0] * math.sin(r) + p[1] * math.cos(r)


def _thales(a: P, b: P, c: P) -> bool:
    centre = ((a[0] + b[0]) / 2, (a[1] + b[1]) / 2)
    return abs(math.dist(centre, c) - math.dist(a, b) / 2) < EPS


RECOMPUTE: dict[str, Callable[[Geo], Any]] = {
    "C-ACM-PST": lambda g: _compare(
        "ABCD", "EFGH", _shoelace(_pts(g, "ABCD")), _shoelace(_pts(g, "EFGH"))
    ),
    "C-ACM-TST": lambda g: _compare(
        "ABC", "DEF", _shoelace(_pts(g, "ABC")), _shoelace(_pts(g, "DEF"))
    ),
    "C-BCT-CT": lambda g: _yes(_shoelace(_pts(g, "ABC")) == 0),
    "C-SYM-SST": lambda g: _yes(_y_symmetric(_pts(g, "".join(g["points"])))),
    "N-BCT-MT": lambda g: tuple((p + q) / 2 for p, q in zip(*_pts(g, "AB"), strict=True)),
    "N-BCT-PAT": lambda g: _shoelace(_pts(g, "ABCD")),
    "N-BCT-PPT": lambda g: _perimeter(_pts(g, "ABCD")),
    "N-BCT-TAT": lambda g: _shoelace(_pts(g, "ABC")),
    "N-BCT-TPT": lambda g: _perimeter(_pts(g, "ABC")),
    "N-ECL-IT": lambda g: _lines_meet(*_pts(g, "ABCD")),
    "N-ECL-SLT": lambda g: math.dist(*_pts(g, "AB")),
    "N-GTR-RT": lambda g: _mirror(_pts(g, "P")[0], g["params"]["axis"]),
    "N-GTR-RPT": lambda g: _rotate(_pts(g, "P")[0], g["params"]["angle"]),
    "N-RLT-BT": lambda g: _bisector_foot(*_pts(g, "ABC")),
    "N-SCP-ICCT": lambda g: _incenter(*_pts(g, "ABC")),
    "N-SCP-ICRT": lambda g: _heron_inradius(*_pts(g, "ABC")),
    "N-SCP-OCCT": lambda g: _circumcenter(*_pts(g, "ABC")),
    "N-SCP-TTT": lambda g: _triangle_type(_largest_angle(*_pts(g, "ABC"))),
    "U-CPR-CDT": lambda g: _yes(_is_diameter(_pts(g, "OAB"), g["params"]["radius"])),
    "U-PAP-PLT": lambda g: _yes(min(_line_angle(g), 180 - _line_angle(g)) < EPS),
    "U-PAP-PT": lambda g: _yes(abs(_line_angle(g) - 90) < EPS),
    "U-PAP-RAT": lambda g: _yes(abs(_angle(*_pts(g, "ABC")) - 90) < EPS),
    "U-RLT-SLT": lambda g: _special_line(*_pts(g, "ABCD")),
    "U-SCP-STT": lambda g: _yes(_thales(*_pts(g, "ABC"))),
    "U-SYM-ST": lambda g: _yes(math.dist(_mirror(_pts(g, "P")[0], "y=x"), _pts(g, "Q")[0]) < EPS),
}
# Labelled triangles and parallelograms whose area must be far from zero.
SHAPES: dict[str, tuple[str, ...]] = {
    "C-ACM-PST": ("ABCD", "EFGH"),
    "C-ACM-TST": ("ABC", "DEF"),
    "N-BCT-PAT": ("ABCD",),
    "N-BCT-PPT": ("ABCD",),
    "N-BCT-TAT": ("ABC",),
    "N-BCT-TPT": ("ABC",),
    "N-RLT-BT": ("ABC",),
    "N-SCP-ICCT": ("ABC",),
    "N-SCP-ICRT": ("ABC",),
    "N-SCP-OCCT": ("ABC",),
    "N-SCP-TTT": ("ABC",),
    "U-PAP-RAT": ("ABC",),
    "U-RLT-SLT": ("ABC",),
    "U-SCP-STT": ("ABC",),
}


def _matches(stored: str, expected: Any) -> bool:
    truth = json.loads(stored)
    if isinstance(expected, str):
        return bool(truth == {"answer": expected})
    if isinstance(expected, tuple):
        return abs(truth["x"] - expected[0]) < EPS and abs(truth["y"] - expected[1]) < EPS
    return abs(truth["answer"] - expected) < EPS


def test_registry_is_the_design_table() -> None:
    assert TASK_IDS == DESIGN_ORDER
    assert set(RECOMPUTE) == set(TASK_IDS)
    for task_id in TASK_IDS:
        spec = get_task(task_id)
        assert spec.paired == task_id.startswith("U-")
        assert (spec.answer_type == "choice") == bool(spec.options)


@pytest.mark.parametrize("task_id", TASK_IDS)
@with_options
def test_answers_agree_with_float_recomputation(task_id: str, option_set: str) -> None:
    for item in items(task_id, option_set):
        geo = json.loads(item.geometry)
        expected = RECOMPUTE[task_id](geo)
        assert _matches(item.answer, expected), (item.item_id, item.geometry, item.answer, expected)


@pytest.mark.parametrize("task_id", TASK_IDS)
@with_options
def test_figures_are_on_the_grid_and_not_degenerate(task_id: str, option_set: str) -> None:
    for item in items(task_id, option_set):
        geo = json.loads(item.geometry)
        pts = list(geo["points"].values())
        for x, y in pts:
            assert isinstance(x, int) and isinstance(y, int)
            assert GRID_MIN <= x <= GRID_MAX and GRID_MIN <= y <= GRID_MAX
        for p, q in itertools.combinations(pts, 2):
            assert math.dist(p, q) >= 1, item.geometry  # distinct labelled points
        for shape in SHAPES.get(task_id, ()):
            assert _shoelace(_pts(geo, shape)) >= 1, item.geometry
        truth = json.loads(item.answer)
        if "x" in truth:
            assert -20 <= truth["x"] <= 20 and -20 <= truth["y"] <= 20
        elif isinstance(truth["answer"], float):
            assert 0 < truth["answer"] < 10000


@pytest.mark.parametrize("task_id", [t for t in TASK_IDS if get_task(t).options])
@with_options
def test_labels_are_balanced(task_id: str, option_set: str) -> None:
    counts = Counter(json.loads(item.answer)["answer"] for item in items(task_id, option_set))
    options = get_task(task_id).options
    assert set(counts) == set(options)
    assert sum(counts.values()) == PER_TASK
    assert max(counts.values()) - min(counts.values()) <= (0 if len(options) == 2 else 1)


@pytest.mark.parametrize("task_id", [t for t in TASK_IDS if get_task(t).options])
def test_every_prefix_is_label_balanced(task_id: str) -> None:
    """`evaluate --per-task N` takes each task's first N items: every such subset keeps its
    labels balanced (whole U- pairs for an even N), so a one-label answerer scores chance."""
    labels = [json.loads(item.answer)["answer"] for item in items(task_id)]
    options = get_task(task_id).options
    step = 2 if get_task(task_id).paired else 1
    for n in range(step, PER_TASK + 1, step):
        counts = [labels[:n].count(o) for o in options]
        assert max(counts) - min(counts) <= 1, (n, dict(zip(options, counts, strict=True)))


@pytest.mark.parametrize("task_id", [t for t in TASK_IDS if t.startswith("U-")])
@with_options
def test_pairs_differ_by_one_grid_step_and_flip_the_answer(task_id: str, option_set: str) -> None:
    pairs: dict[str, list[Item]] = defaultdict(list)
    for item in items(task_id, option_set):
        assert item.pair_id is not None
        pairs[item.pair_id].append(item)
    assert len(pairs) == PER_TASK // 2
    for first, second in pairs.values():
        g1, g2 = json.loads(first.geometry), json.loads(second.geometry)
        assert list(g1["points"]) == list(g2["points"]) and g1["params"] == g2["params"]
        moved = [k for k in g1["points"] if g1["points"][k] != g2["points"][k]]
        assert len(moved) == 1
        (x1, y1), (x2, y2) = g1["points"][moved[0]], g2["points"][moved[0]]
        assert abs(x1 - x2) + abs(y1 - y2) == 1
        assert first.answer != second.answer
        if get_task(task_id).options == ("yes", "no"):
            assert json.loads(first.answer)["answer"] == "yes"


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_generators_reject_wrong_labels(task_id: str) -> None:
    spec = get_task(task_id)
    with pytest.raises(ValueError):
        if spec.generate_pair is not None:
            spec.generate_pair(random.Random(0), ("maybe", "no"))
        else:
            assert spec.generate is not None
            spec.generate(random.Random(0), "maybe" if not spec.options else None)


@pytest.mark.parametrize(
    ("task_id", "param", "paper", "extended"),
    [
        ("N-GTR-RT", "axis", {"x"}, {"x", "y", "y=x", "y=-x"}),
        ("N-GTR-RPT", "angle", {90}, {90, 180, 270}),
    ],
)
def test_variants_choose_the_papers_transformation_or_all_of_them(
    task_id: str, param: str, paper: set[Any], extended: set[Any]
) -> None:
    def asked(option_set: str) -> set[Any]:
        return {json.loads(i.geometry)["params"][param] for i in items(task_id, option_set)}

    assert asked("paper") == paper
    assert asked("other") == extended  # 100 items: every value turns up


@with_options
def test_semicircle_answer_does_not_depend_on_which_side_is_the_diameter(option_set: str) -> None:
    """The paper's question names no diameter: "yes" must mean a right angle somewhere
    (then on the circle over the hypotenuse), "no" none at all, in either wording."""
    for item in items("U-SCP-STT", option_set):
        a, b, c = _pts(json.loads(item.geometry), "ABC")
        right = [abs(_angle(*corner) - 90) < EPS for corner in ((b, a, c), (a, b, c), (a, c, b))]
        assert json.loads(item.answer)["answer"] == _yes(any(right)), item.geometry
        assert not right[0] and not right[1], item.geometry


@with_options
def test_semicircle_question_is_worded_as_the_option_says(option_set: str) -> None:
    rows = build_items("U-SCP-STT", 2, SEED, ("text", "dotted", "full"), 64, None,
                       OPTION_SETS[option_set])  # fmt: skip
    for row in rows:
        question = row.prompt.splitlines()[0]
        if option_set == "paper":  # Table 1 of the paper, word for word after the points
            assert question.endswith("Is it inscribed in a semicircle?") or question.endswith(
                "Is triangle ABC inscribed in a semicircle?"
            ), question
        else:
            assert question.endswith("inscribed in a semicircle with diameter AB?"), question


@pytest.mark.parametrize("task_id", ["N-GTR-RPT", "U-SCP-STT"])
def test_full_figures_follow_the_options(task_id: str) -> None:
    from geometry.items import task_draws

    paper = task_draws(task_id, 2, SEED, OPTION_SETS["paper"])[0][0].figure
    other = task_draws(task_id, 2, SEED, OPTION_SETS["other"])[0][0].figure
    if task_id == "U-SCP-STT":
        assert paper.semicircles == (("A", "B", "C"),) and other.semicircles == ()
    else:  # the rotation is drawn whatever the variants: the full figure was empty
        assert paper.rotations[0][0] == "P" and other.rotations[0][0] == "P"


def test_options_refuse_unknown_values_naming_the_option() -> None:
    bad: tuple[tuple[str, Any], ...] = (
        ("variants", "wide"),
        ("semicircle_prompt", "x"),
        ("semicircle_figure", "circle"),
        ("grid_step", 2.0),
    )
    for field, value in bad:
        with pytest.raises(ValueError, match=field):
            GeneratorOptions(**{field: value})
