"""The 25 NoReGeo tasks, registered in DESIGN.md's table order when this package is imported.

Generator functions in the modules below raise `Degenerate` on a bad draw; the wrappers here
redraw them in the bounded, seeded loop of `geometry.thresholds.draw_until_valid` and check
that the caller asked for a label the task has.
"""

from __future__ import annotations

import inspect
import random
from collections.abc import Callable
from typing import Any

from geometry.figure import Draw
from geometry.tasks import classification, numeric, special_lines, triangles, unstable
from geometry.tasks.options import DEFAULT_OPTIONS, GeneratorOptions
from geometry.tasks.registry import (
    AnswerType,
    GenerateOne,
    GeneratePair,
    TaskSpec,
    register,
)
from geometry.thresholds import draw_until_valid

YES_NO = ("yes", "no")


def _caller(make: Callable[..., Any]) -> Callable[[random.Random, Any, GeneratorOptions], Any]:
    """`make` called as (rng, label, options); generators without an `options` parameter
    (most: the options change nothing of theirs) get (rng, label)."""
    if "options" in inspect.signature(make).parameters:
        return lambda rng, label, options: make(rng, label, options)
    return lambda rng, label, options: make(rng, label)


def _one(task_id: str, choices: tuple[str, ...], make: Callable[..., Draw]) -> GenerateOne:
    call = _caller(make)

    def generate(
        rng: random.Random, label: str | None, options: GeneratorOptions = DEFAULT_OPTIONS
    ) -> Draw:
        if choices and label not in choices:
            raise ValueError(f"task {task_id} needs a label of {choices}, got {label!r}")
        if not choices and label is not None:
            raise ValueError(f"task {task_id} is numeric: its label must be None, got {label!r}")
        draw: Draw = draw_until_valid(lambda r: call(r, label, options), rng, task=task_id)
        return draw

    generate.__doc__ = make.__doc__
    return generate


def _pair(task_id: str, make: Callable[..., tuple[Draw, Draw]]) -> GeneratePair:
    call = _caller(make)

    def generate_pair(
        rng: random.Random, labels: tuple[str, str], options: GeneratorOptions = DEFAULT_OPTIONS
    ) -> tuple[Draw, Draw]:
        pair: tuple[Draw, Draw] = draw_until_valid(
            lambda r: call(r, labels, options), rng, task=task_id
        )
        return pair

    generate_pair.__doc__ = make.__doc__
    return generate_pair


def _task(
    task_id: str,
    make: Callable[..., Any],
    category: str,
    answer_type: AnswerType,
    options: tuple[str, ...] = (),
) -> None:
    name = make.__name__
    if task_id.startswith("U-"):
        pair = _pair(task_id, make)
        register(TaskSpec(task_id, name, category, answer_type, options, generate_pair=pair))
    else:
        one = _one(task_id, options, make)
        register(TaskSpec(task_id, name, category, answer_type, options, generate=one))


_AREA = "Area comparison"
_BASIC = "Basic coordinate tasks"
_SYMMETRY = "Symmetry"
_CALC = "Elementary calculations"
_TRANSFORM = "Geometric transformations"
_LINES = "Remarkable triangle lines"
_CIRCLES = "Simple circle properties"

_task("C-ACM-PST", classification.parallelogram_size, _AREA, "choice", ("ABCD", "EFGH", "equal"))
_task("C-ACM-TST", classification.triangle_size, _AREA, "choice", ("ABC", "DEF", "equal"))
_task("C-BCT-CT", classification.collinearity, _BASIC, "choice", YES_NO)
_task("C-SYM-SST", classification.shape_symmetry, _SYMMETRY, "choice", YES_NO)
_task("N-BCT-MT", numeric.midpoint, _BASIC, "point")
_task("N-BCT-PAT", numeric.parallelogram_area, _BASIC, "number")
_task("N-BCT-PPT", numeric.parallelogram_perim, _BASIC, "number")
_task("N-BCT-TAT", numeric.triangle_area, _BASIC, "number")
_task("N-BCT-TPT", numeric.triangle_perim, _BASIC, "number")
_task("N-ECL-IT", numeric.intersection, _CALC, "point")
_task("N-ECL-SLT", numeric.segment_length, _CALC, "number")
_task("N-GTR-RT", numeric.reflection, _TRANSFORM, "point")
_task("N-GTR-RPT", numeric.rotation_point, _TRANSFORM, "point")
_task("N-RLT-BT", triangles.bisector, _LINES, "point")
_task("N-SCP-ICCT", triangles.inner_circle_center, _CIRCLES, "point")
_task("N-SCP-ICRT", triangles.inner_circle_radius, _CIRCLES, "number")
_task("N-SCP-OCCT", triangles.outer_circle_center, _CIRCLES, "point")
_task("N-SCP-TTT", triangles.triangle_type, _CIRCLES, "choice", ("acute", "right", "obtuse"))
_task("U-CPR-CDT", unstable.circle_diameter, "Circle properties", "choice", YES_NO)
_task("U-PAP-PLT", unstable.parallel_lines, "Parallelism and perpendicularity", "choice", YES_NO)
_task("U-PAP-PT", unstable.perpendicular, "Parallelism and perpendicularity", "choice", YES_NO)
_task("U-PAP-RAT", unstable.right_angle, "Parallelism and perpendicularity", "choice", YES_NO)
_task("U-RLT-SLT", special_lines.special_lines, _LINES, "choice", special_lines.OPTIONS)
_task("U-SCP-STT", unstable.semicircle_triangle, _CIRCLES, "choice", YES_NO)
_task("U-SYM-ST", unstable.symmetry, _SYMMETRY, "choice", YES_NO)
