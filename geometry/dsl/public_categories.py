"""Our error categories as the public GeoBuildBench's error kinds, one public kind each.

The public benchmark reports the DSL errors of a run (`hallucination_error_types` in its
result.json) in the kinds of `DetailedMetrics._categorize_error` (run_agent_benchmark.py):
undefined_reference, syntax_error, type_error, invalid_command, duplicate_error,
constraint_error, output_mismatch and other_error. It finds them by keywords in the error
text, first match wins, and its texts carry tracebacks and tips, so its own counts are
noisy; we map by meaning, which is what the kind names say. Its feedback hints
(prompts/hints/error_*.txt, chosen in src/agent/react_agent.py) use a similar set that also
has `geometric`; the reported kinds have none, so our `geometric` goes to other_error.

Where the public loop has no counterpart:
- `no_program`: the public agent executes the whole reply when it holds no code block, and
  its parser rejects prose: a syntax_error;
- `engine_error`: a failed model call ends the public problem with an error result and no
  error kind; it is counted among other_error here so that every failed row has a kind;
- `limit` (our bounds on program size and numbers): no public check exists; other_error.
"""

from __future__ import annotations

from typing import Final

from geometry.dsl.errors import ERROR_CATEGORIES

# The public kinds in the order the public classifier tries them.
PUBLIC_ERROR_KINDS: Final = (
    "undefined_reference",
    "syntax_error",
    "type_error",
    "invalid_command",
    "duplicate_error",
    "constraint_error",
    "output_mismatch",
    "other_error",
)
# Categories the GeoBuild loop adds beyond the DSL's own (actors/dsl_executor.py names them
# too; geometry/ must not import actors/).
ENGINE_ERROR: Final = "engine_error"
NO_PROGRAM: Final = "no_program"
LOOP_CATEGORIES: Final = (ENGINE_ERROR, NO_PROGRAM)

PUBLIC_KIND: Final[dict[str, str]] = {
    "syntax": "syntax_error",
    "undefined_label": "undefined_reference",
    "duplicate_label": "duplicate_error",
    "unknown_command": "invalid_command",
    # A command given inputs of the wrong types: the public "type" hint's case.
    "bad_overload": "type_error",
    "output_count": "output_mismatch",
    "geometric": "other_error",
    "limit": "other_error",
    NO_PROGRAM: "syntax_error",
    ENGINE_ERROR: "other_error",
}


def public_kind(category: str | None) -> str | None:
    """The public error kind of one of our categories; None for no error. An unknown
    category raises KeyError: a new category must be mapped here first."""
    if category is None:
        return None
    return PUBLIC_KIND[category]


def unmapped() -> list[str]:
    """Our categories without a public kind (empty while the table is complete)."""
    return [c for c in (*ERROR_CATEGORIES, *LOOP_CATEGORIES) if c not in PUBLIC_KIND]
