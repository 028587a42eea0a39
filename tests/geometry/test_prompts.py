"""Prompts: the paper's protocol texts, coordinates only in the text setup, params everywhere."""

from __future__ import annotations

import json
import random
import re

import pytest

from geometry.figure import Draw
from geometry.item import SETUPS
from geometry.prompts import SYSTEM_PROMPT, build_prompt, format_instruction, load_prompts
from geometry.tasks.registry import TaskSpec, all_tasks

TASKS = all_tasks()
# Anything like "(3,-4)" or "( 3 , 4 )": a coordinate pair.
COORDINATES = re.compile(r"\(\s*-?\d+(\.\d+)?\s*,\s*-?\d+(\.\d+)?\s*\)")


def _draws(task: TaskSpec, n: int = 8) -> list[Draw]:
    rng = random.Random(task.task_id)
    draws: list[Draw] = []
    for i in range(n):
        if task.generate_pair is not None:
            labels = ("yes", "no") if task.options == ("yes", "no") else task.options[:2]
            draws.extend(task.generate_pair(rng, (labels[0], labels[1])))
        else:
            assert task.generate is not None
            label = task.options[i % len(task.options)] if task.options else None
            draws.append(task.generate(rng, label))
    return draws


def test_system_prompt_and_formats_are_the_papers() -> None:
    assert SYSTEM_PROMPT == (
        "You are a highly capable AI assistant with expertise in geometry. You can accurately "
        "analyze geometric figures, solve problems."
    )
    assert format_instruction("point") == (
        "Provide your answer as JSON with keys: 'x' and 'y' for point coordinates. "
        "Return only that object."
    )
    assert format_instruction("choice", ("ABC", "DEF", "equal")) == (
        "Provide your answer as JSON: {'answer': <value>}, where <value> is from the options: "
        "ABC, DEF, equal. Return only that object."
    )
    with pytest.raises(ValueError):
        format_instruction("essay")


def test_every_task_has_a_question_per_setup() -> None:
    questions = load_prompts()["tasks"]
    assert set(questions) == set(TASKS)
    for task_id in TASKS:
        assert set(questions[task_id]) == set(SETUPS)


@pytest.mark.parametrize("task_id", list(TASKS))
def test_text_lists_coordinates_and_images_hide_them(task_id: str) -> None:
    task = TASKS[task_id]
    for draw in _draws(task):
        text = build_prompt(task, draw, "text")
        for label, (x, y) in draw.points.items():
            assert f"{label}=({x},{y})" in text
        for setup in ("dotted", "full"):
            prompt = build_prompt(task, draw, setup)
            assert not COORDINATES.search(prompt), prompt
            assert prompt.startswith("Refer to the input image.")
            for label in draw.points:
                assert label in prompt  # the objects are still named
        for setup in SETUPS:
            prompt = build_prompt(task, draw, setup)
            assert prompt.endswith(format_instruction(task.answer_type, task.options))
            for option in task.options:
                assert option in prompt
            params = json.loads(draw.geometry_json())["params"]
            for key in ("angle", "radius"):
                if key in params:
                    assert str(params[key]) in prompt
            if "axis" in params:
                assert load_prompts()["axis_names"][params["axis"]] in prompt
            if "line" in params:
                assert params["line"] in prompt


def test_unknown_setup_is_rejected() -> None:
    task = TASKS["N-BCT-MT"]
    with pytest.raises(ValueError, match="setup"):
        build_prompt(task, _draws(task, 1)[0], "audio")
