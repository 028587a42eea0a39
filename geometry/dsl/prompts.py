"""GeoBuild prompts: the system prompt with the DSL reference, the problem prompt, and the
feedback a model gets after each round. All text lives in `prompts.yaml`.

The command reference is generated from the command table, so the prompt never documents
a command the executor lacks (docs/dsl.md is kept in step with the same table by a test).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from string import Template
from typing import Any

import yaml

from geometry.dsl.commands import COMMANDS
from geometry.dsl.dataset import LANGUAGES, Problem
from geometry.dsl.errors import DSLError
from geometry.dsl.validator import Verdict

PROMPTS_PATH = Path(__file__).with_name("prompts.yaml")
# Feedback detail (geosee's own levels, not an ablation of either source): each level adds to
# the one before.
FEEDBACK_MODES = ("errors", "conditions", "full")


@cache
def load_prompts() -> dict[str, Any]:
    """The parsed prompts.yaml (read once per process)."""
    with PROMPTS_PATH.open(encoding="utf-8") as handle:
        data: dict[str, Any] = yaml.safe_load(handle)
    return data


def command_reference() -> str:
    """One line per command form: `signature`: what it builds."""
    lines = []
    for name, command in COMMANDS.items():
        for overload in command.overloads:
            lines.append(f"- `{overload.signature(name)}`: {overload.summary}")
    return "\n".join(lines)


@cache
def system_prompt() -> str:
    """The system prompt: role, syntax, how to build, the command reference, reply format."""
    return Template(load_prompts()["system"]).substitute(reference=command_reference()).strip()


def problem_prompt(problem: Problem, lang: str = "en") -> str:
    """The first user message: the problem text in its language and what to write."""
    templates = load_prompts()["problem"]
    if lang not in LANGUAGES:
        raise ValueError(f"lang must be one of {LANGUAGES}, got {lang!r}")
    return Template(templates[lang]).substitute(text=problem.text.strip()).strip()


def _line(key: str, **values: object) -> str:
    return Template(load_prompts()["feedback"][key]).substitute(
        {k: str(v) for k, v in values.items()}
    )


def feedback_text(
    *,
    mode: str,
    round_number: int,
    max_rounds: int,
    engine_error: str | None,
    program: str,
    error: DSLError | None,
    verdict: Verdict,
    with_image: bool,
) -> str:
    """The feedback message after a round, at the detail `mode` asks for.

    `errors`: execution errors only; `conditions`: + missing objects and failed conditions;
    `full`: + scores and (when `with_image`) a note that the figure is attached.
    """
    if mode not in FEEDBACK_MODES:
        raise ValueError(f"feedback mode must be one of {FEEDBACK_MODES}, got {mode!r}")
    parts = [_line("header", round=round_number, max_rounds=max_rounds)]
    if engine_error is not None:
        return "\n".join([*parts, _line("engine_error", message=engine_error), _line("ask")])
    if not program.strip():
        return "\n".join([*parts, _line("no_program"), _line("ask")])
    if error is None and verdict.success:
        return "\n".join([*parts, _line("success")])
    if error is not None:
        parts.append(_execution_error(error, program))
    else:
        parts += [_line("executed"), _line("unsolved")]
    if mode in ("conditions", "full"):
        parts += _judgement(verdict)
    if mode == "full":
        parts.append(
            _line(
                "scores",
                objects=f"{verdict.object_score:.2f}",
                conditions=f"{verdict.condition_score:.2f}",
                partial=f"{verdict.partial_score:.2f}",
            )
        )
        if with_image:
            parts.append(_line("image"))
    parts.append(_line("ask"))
    return "\n".join(parts)


def _execution_error(error: DSLError, program: str) -> str:
    lines = program.splitlines()
    source = lines[error.line - 1].strip() if 0 < error.line <= len(lines) else "(no such line)"
    return _line(
        "execution_error",
        line=error.line,
        category=error.category,
        message=error.message,
        source=source,
    )


def _judgement(verdict: Verdict) -> list[str]:
    out = []
    if verdict.missing_objects:
        out.append(_line("missing_objects", objects=", ".join(verdict.missing_objects)))
    if verdict.failed_conditions:
        out.append(_line("failed_conditions"))
        out += [
            _line("failed_condition", type=f.type, condition=f.description, reason=f.reason)
            for f in verdict.failed_conditions
        ]
    return out
