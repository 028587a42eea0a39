"""`geobuild --protocol public`: the public GeoBuildBench ReAct agent's protocol, on our loop.

What the public agent (src/agent/react_agent.py, agent_memory.py) does each iteration, and
so what this module rebuilds from the rows of earlier rounds:

- one request of two messages, never a growing chat: the system prompt file, and the
  ReAct template filled with the problem and a history;
- the history: a progress summary over every earlier step, then the last 3 steps in full
  (thought, action, DSL, execution result, error with the hint file of its kind,
  validation scores, missing objects, failed conditions);
- at most one image: the figure of the latest step, when vision is on and that step's
  program ran (the public executor renders nothing for a program that fails);
- the reply parsed into thought, action (`generate_dsl`, `modify_dsl`, `final_answer`) and
  DSL as the public agent parses it (first ``` or ```dsl block, else the `->` lines);
  `final_answer` re-submits the last program that executed, and ends the problem;
- a problem ends when a program executes and passes the public rule (object and
  condition scores both >= 0.9), or on `final_answer`, or after the last iteration.

Our executor still judges each program (and writes our feedback text, unused here), so
scores, error categories and rows are those of `--protocol geosee`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from actors.contract import chat_message, image_part, text_part
from geometry.dsl.dataset import Problem
from pipelines.geobuild.public_prompts import PublicPrompts

PROTOCOLS = ("geosee", "public")
MEMORY_STEPS = 3  # the public agent's `_format_history(memory, max_steps=3)`
FIRST_HISTORY = "This is your first attempt."
VISION_OFF_NOTE = "\n\n**Note: Vision is disabled. No images will be shown.**\n"
DSL_ACTIONS = ("generate_dsl", "modify_dsl")
FINAL_ANSWER = "final_answer"
RULE = "=" * 70
# Request columns the public stages read; the round writer keeps only its schema's columns.
REPLY_COLUMN = "react_reply"
FINAL_DSL_COLUMN = "react_final_dsl"

_THOUGHT = re.compile(r"\*\*Thought:\*\*\s*(.*?)(?=\*\*Action:\*\*|$)", re.DOTALL | re.IGNORECASE)
_ACTION = re.compile(r"\*\*Action:\*\*\s*(\w+)", re.IGNORECASE)
_CODE = re.compile(r"```(?:dsl)?\n(.*?)\n```", re.DOTALL)


@dataclass(frozen=True)
class Reply:
    """A reply as the public agent reads it."""

    thought: str
    action: str
    content: str


def parse_reply(text: str) -> Reply:
    """Thought, action and DSL of a reply, by the public agent's rules: the action defaults
    to generate_dsl; the DSL is the first ``` (or ```dsl) block, else the run of lines from
    the first holding `-> ` (or `const `) to the next blank line, else the whole reply."""
    thought = _THOUGHT.search(text)
    action = _ACTION.search(text)
    code = _CODE.search(text)
    if code:
        content = code.group(1).strip()
    else:
        lines: list[str] = []
        for line in text.split("\n"):
            # A statement starts the run; any non-blank line after one continues it.
            if "-> " in line or "const " in line or (lines and line.strip()):
                lines.append(line.strip())
            elif lines:
                break
        content = "\n".join(lines) if lines else text
    return Reply(
        thought=thought.group(1).strip() if thought else "No thought provided",
        action=action.group(1).lower() if action else "generate_dsl",
        content=content,
    )


@dataclass(frozen=True)
class Step:
    """One earlier iteration of a problem, rebuilt from its result row."""

    iteration: int
    reply: Reply
    executed: bool  # the program ran without error (the public Observation.success)
    category: str | None  # our error category, which picks the hint file
    error: str | None
    verdict: dict[str, Any] | None  # only for a program that executed, as the public agent
    has_image: bool  # a figure was rendered: the public executor renders programs that ran
    image: bytes | None  # its bytes, when read (the latest step's only)

    @classmethod
    def of_row(cls, row: dict[str, Any]) -> Step:
        """The step a round's result row records."""
        executed = row["error_category"] is None
        error = None
        if not executed:
            line = row.get("error_line")
            where = f"line {line} [{row['error_category']}]: " if line is not None else ""
            error = where + str(row.get("error_message") or row["error_category"])
        return cls(
            iteration=int(row["round"]),
            reply=parse_reply(row.get("generated_text") or ""),
            executed=executed,
            category=row["error_category"],
            error=error,
            verdict=json.loads(row["verdict"]) if executed and row.get("verdict") else None,
            has_image=executed and row.get("feedback_image_sha256") is not None,
            image=row.get("feedback_image") if executed else None,
        )

    @property
    def ends_problem(self) -> bool:
        """Whether the public agent stops after this step."""
        passed = self.verdict is not None and bool(self.verdict.get("success_public"))
        return self.reply.action == FINAL_ANSWER or passed


def final_dsl(steps: list[Step]) -> str | None:
    """The last program that executed (the public memory's `final_dsl`), if any."""
    for step in reversed(steps):
        if step.executed and step.reply.action in DSL_ACTIONS:
            return step.reply.content
    return None


def progress_summary(steps: list[Step]) -> str:
    """Counts of executions that ran and failed, the recent trend, and the errors seen most."""
    ran = sum(s.executed for s in steps)
    lines = [
        f"**Progress Summary (Total: {len(steps)} iterations)**",
        f"- Successful executions: {ran}",
        f"- Failed executions: {len(steps) - ran}",
    ]
    if len(steps) >= 3:
        recent = [s.executed for s in steps[-3:]]
        if all(recent):
            lines.append("- Recent trend: ✓ All recent attempts successful!")
        elif not any(recent):
            lines.append("- Recent trend: ✗ All recent attempts failed - try a different approach")
        else:
            lines.append("- Recent trend: ⚡ Mixed results - getting closer")
    counts: dict[str, int] = {}
    for step in steps:
        if step.error:
            first = step.error.split("\n")[0]
            counts[first] = counts.get(first, 0) + 1
    if counts:
        common = sorted(counts.items(), key=lambda kv: kv[1], reverse=True)
        lines.append("\n**Most Common Errors:**")
        lines += [f"  - {error[:80]} (occurred {n}x)" for error, n in common[:3]]
        repeated = [(error, n) for error, n in counts.items() if n >= 2]
        if repeated:
            lines.append("\n**⚠️ Repeated Mistakes - Avoid These:**")
            lines += [f"  - {error[:80]} (failed {n}x)" for error, n in repeated[:2]]
    return "\n".join(lines)


def format_step(step: Step, prompts: PublicPrompts) -> str:
    """One step of the detailed history."""
    mark = "✓ Success" if step.executed else "✗ Failed"
    parts = [
        f"**Iteration {step.iteration}: {mark}**\n",
        f"**Thought:**\n{step.reply.thought}\n",
        f"**Action:** {step.reply.action}",
    ]
    if step.reply.action in DSL_ACTIONS:
        parts.append(f"\n**DSL Code:**\n```\n{step.reply.content}\n```\n")
    parts.append("**Observation:**")
    if step.executed:
        parts.append("- Execution successful")
        if step.has_image:
            parts.append("- Image rendered successfully")
    else:
        parts.append("- Execution failed")
    if step.error:
        parts.append(f"\n**Error Details:**\n```\n{step.error}\n```")
        hint = prompts.hint_for(step.category)
        if hint:
            parts.append("\n\n---\n\n## 💡 Helpful Hints for Your Error:\n\n" + hint)
    if step.verdict is not None:
        parts += _validation_lines(step.verdict)
    parts.append("\n" + RULE + "\n")
    return "\n".join(parts)


def _validation_lines(verdict: dict[str, Any]) -> list[str]:
    passed = "✓ PASS" if verdict.get("success_public") else "✗ FAIL"
    lines = [
        "\n**Validation Scores:**",
        f"  - Object Score: {verdict.get('object_score', 0):.1%}",
        f"  - Condition Score: {verdict.get('condition_score', 0):.1%}",
        f"  - **Total Score: {verdict.get('partial_score', 0):.1%}** ({passed})",
    ]
    missing = verdict.get("missing_objects") or []
    if missing:
        lines.append("\n**Missing Objects:**")
        lines += [f"  - {name}" for name in missing]
    failed = verdict.get("failed_conditions") or []
    if failed:
        lines.append(f"\n**✗ Failed Conditions:** {len(failed)} conditions NOT satisfied")
        for n, condition in enumerate(failed, 1):
            lines.append(f"\n  {n}. **{condition.get('type', 'unknown')}**")
            lines.append(f"     Status: {condition.get('reason', '')}")
            lines.append(f"     • condition: {condition.get('condition', '')}")
    return lines


def history_text(steps: list[Step], prompts: PublicPrompts) -> str:
    """The template's `{history}`: the progress summary, then the last 3 steps in full."""
    if not steps:
        return FIRST_HISTORY
    detailed = "\n".join(format_step(s, prompts) for s in steps[-MEMORY_STEPS:])
    return f"{progress_summary(steps)}\n\n{RULE}\n\n**Detailed History:**\n\n{detailed}"


def problem_text(problem: Problem) -> str:
    """The problem as the public agent states it: the data set's `subject`."""
    return problem.subject or problem.text


def messages(
    problem: Problem,
    steps: list[Step],
    prompts: PublicPrompts,
    *,
    vision: bool,
    text_only: bool,
) -> list[dict[str, Any]]:
    """An iteration's request: the system prompt file and one user message (the filled
    template, then the latest step's figure when vision is on and that step has one)."""
    text = prompts.user_text(problem_text(problem), history_text(steps, prompts))
    latest = steps[-1] if steps else None
    parts: list[dict[str, Any]] = []
    if vision and latest is not None and latest.image is not None:
        status = "✓ Success" if latest.executed else "✗ Failed"
        text += "\n\n**Recent Rendered Images (for comparison):**\n"
        text += f"- Iteration {latest.iteration}: {status}\n"
        parts = [image_part(latest.image)]
    elif not vision:
        text += VISION_OFF_NOTE
    return [
        chat_message("system", [text_part(prompts.system)], text_only),
        chat_message("user", [text_part(text), *parts], text_only),
    ]


# -- Ray Data stages around our DSL executor ---------------------------------------------------
def to_public_program(batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Before the executor: keep each reply in `react_reply` and hand the executor the program
    the public agent would run (fenced, so our extractor takes it whole)."""
    replies = batch["generated_text"]
    finals = batch.get(FINAL_DSL_COLUMN)
    programs = []
    for i, reply in enumerate(replies):
        if not isinstance(reply, str):  # an engine error: the executor records it
            programs.append(reply)
            continue
        parsed = parse_reply(reply)
        program = parsed.content
        if parsed.action == FINAL_ANSWER and finals is not None and isinstance(finals[i], str):
            program = finals[i]
        programs.append(f"```\n{program}\n```")
    return {**batch, REPLY_COLUMN: replies, "generated_text": np.array(programs, dtype=object)}


def restore_reply(batch: pa.Table) -> pa.Table:
    """After the executor: the row keeps the model's reply as it came, not the program.

    Arrow in and out (map it with batch_format="pyarrow"): a numpy round trip turned a
    block's all-null column (error_category where every program ran) into floats, which
    the round writer then could not merge with another block's strings (seen with the
    solver engine: "Field error_category has incompatible types: string vs float")."""
    reply = batch.column(REPLY_COLUMN)
    kept = batch.drop_columns(
        [c for c in (REPLY_COLUMN, FINAL_DSL_COLUMN) if c in batch.schema.names]
    )
    index = kept.schema.get_field_index("generated_text")
    return kept.set_column(index, "generated_text", reply)
