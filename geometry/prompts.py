"""NoReGeo prompts: the paper's system prompt, answer-format instructions and question
templates, all read from `prompts.yaml` next to this module.

`build_prompt` = question for the setup + the answer-format instruction of the task's answer
type (the paper appends the "structuring prompt" to each question).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from string import Template
from typing import Any

import yaml

from geometry.figure import Draw
from geometry.item import SETUPS
from geometry.tasks.options import DEFAULT_OPTIONS, GeneratorOptions
from geometry.tasks.registry import TaskSpec

PROMPTS_PATH = Path(__file__).with_name("prompts.yaml")


@cache
def load_prompts() -> dict[str, Any]:
    """The parsed prompts.yaml (cached: it is read once per process)."""
    with PROMPTS_PATH.open(encoding="utf-8") as handle:
        data: dict[str, Any] = yaml.safe_load(handle)
    return data


SYSTEM_PROMPT: str = load_prompts()["system_prompt"]


def format_instruction(answer_type: str, options: tuple[str, ...] | list[str] = ()) -> str:
    """The paper's answer-structuring prompt for an answer type; choices list their options.

    >>> format_instruction("choice", ("yes", "no")).split(": ")[-1]
    'yes, no. Return only that object.'
    """
    templates = load_prompts()["format"]
    if answer_type not in templates:
        raise ValueError(f"unknown answer type {answer_type!r}; valid: {', '.join(templates)}")
    return Template(templates[answer_type]).substitute(options=", ".join(options))


def _coordinates(point: tuple[int, int]) -> str:
    return f"({point[0]},{point[1]})"


def _variables(draw: Draw, setup: str) -> dict[str, str]:
    axis_names: dict[str, str] = load_prompts()["axis_names"]
    values: dict[str, str] = {"labels": "".join(draw.points)}
    if setup == "text":
        named = {label: f"{label}={_coordinates(p)}" for label, p in draw.points.items()}
        values.update(named)
        values["points"] = ", ".join(named.values())
    params = draw.params
    if "axis" in params:
        values["axis"] = axis_names[params["axis"]]
    for key in ("angle", "radius", "line"):
        if key in params:
            values[key] = str(params[key])
    return values


def _templates(task_id: str, options: GeneratorOptions) -> dict[str, str]:
    """The task's question per setup; a worded variant (`variants` in prompts.yaml) when an
    option asks for one."""
    data = load_prompts()
    if options.semicircle_prompt != "paper":
        key = f"semicircle_prompt={options.semicircle_prompt}"
        variant = data["variants"].get(task_id, {}).get(key)
        if variant is not None:
            return dict(variant)
    if task_id not in data["tasks"]:
        raise KeyError(f"prompts.yaml has no questions for task {task_id}")
    return dict(data["tasks"][task_id])


def question(
    task: TaskSpec, draw: Draw, setup: str, options: GeneratorOptions = DEFAULT_OPTIONS
) -> str:
    """The question of one item in one setup; image setups give no coordinates."""
    if setup not in SETUPS:
        raise ValueError(f"unknown setup {setup!r}; valid: {', '.join(SETUPS)}")
    templates = _templates(task.task_id, options)
    try:
        return Template(templates[setup]).substitute(_variables(draw, setup))
    except KeyError as err:
        raise KeyError(
            f"prompt of {task.task_id} ({setup}) needs ${err.args[0]}, which this draw lacks"
        ) from err


def build_prompt(
    task: TaskSpec, draw: Draw, setup: str, options: GeneratorOptions = DEFAULT_OPTIONS
) -> str:
    """Question + answer-format instruction: the user text of one item row."""
    asked = question(task, draw, setup, options)
    return f"{asked}\n{format_instruction(task.answer_type, task.options)}"
