"""The public GeoBuildBench agent's prompt files, read at run time from a checkout the user
points to (`--public-repo PATH`); geosee never ships them.

The public ReAct agent (src/agent/react_agent.py) reads `prompts/system_prompt.txt` (the
system message) and `prompts/react_template.txt` (the user message, with `{problem_text}`
and `{history}`), and one hint file per error kind, `prompts/hints/error_<kind>.txt`, that
it appends to the history when a step's error is of that kind. It does not read
`prompts/dsl_guidelines.txt` or `prompts/examples.txt`, so neither is needed here.
The public agent falls back to an empty text for a missing file; we refuse the checkout
instead, naming the file, since an empty prompt would silently be another protocol.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from store.errors import UsageError

SYSTEM_FILE = "prompts/system_prompt.txt"
TEMPLATE_FILE = "prompts/react_template.txt"
# Our DSL error categories -> the public hint file of that error kind. `limit` (a program
# over our size limits), `no_program` and `engine_error` have no public counterpart: no hint.
HINT_KINDS: dict[str, str] = {
    "syntax": "syntax",
    "undefined_label": "undefined",
    "duplicate_label": "duplicate",
    "unknown_command": "invalid_command",
    "bad_overload": "type",
    "output_count": "output_count",
    "geometric": "geometric",
}


def hint_file(kind: str) -> str:
    """The checkout-relative path of the hint file of a public error kind."""
    return f"prompts/hints/error_{kind}.txt"


def required_files() -> list[str]:
    """Every file the public protocol reads, checkout-relative, in the order checked."""
    hints = sorted({hint_file(kind) for kind in HINT_KINDS.values()})
    return [SYSTEM_FILE, TEMPLATE_FILE, *hints]


@dataclass(frozen=True)
class PublicPrompts:
    """The public agent's system prompt, ReAct template and hints by our error category."""

    system: str
    template: str
    hints: dict[str, str]  # our error category -> hint text
    digest: str  # sha256 over every file read: resume refuses a changed checkout

    def hint_for(self, category: str | None) -> str:
        """The hint text of an error category; '' for a category without one."""
        return self.hints.get(category or "", "")

    def user_text(self, problem_text: str, history: str) -> str:
        """The ReAct template filled in, as the public agent fills it (`str.format`)."""
        return self.template.format(problem_text=problem_text, history=history)


def load_public_prompts(repo: str | Path) -> PublicPrompts:
    """The prompt files of a GeoBuildBench checkout; UsageError naming the first missing or
    unreadable file, or a template `str.format` cannot fill."""
    root = Path(repo)
    if not root.is_dir():
        raise UsageError(f"--public-repo {repo}: not a directory (a GeoBuildBench checkout)")
    texts: dict[str, str] = {}
    digest = hashlib.sha256()
    for name in required_files():
        path = root / name
        if not path.is_file():
            raise UsageError(f"--public-repo {repo}: missing {name}")
        try:
            texts[name] = path.read_text(encoding="utf-8")
        except UnicodeDecodeError as err:
            raise UsageError(f"--public-repo {repo}: {name} is not UTF-8 text") from err
        except OSError as err:
            reason = f"{name} cannot be read: {err.strerror}"
            raise UsageError(f"--public-repo {repo}: {reason}") from err
        digest.update(name.encode() + b"\0" + texts[name].encode() + b"\0")
    prompts = PublicPrompts(
        system=texts[SYSTEM_FILE],
        template=texts[TEMPLATE_FILE],
        hints={category: texts[hint_file(kind)] for category, kind in HINT_KINDS.items()},
        digest=digest.hexdigest(),
    )
    try:  # a template with other braces would fail at round 1 in the middle of a run
        prompts.user_text("problem", "history")
    except (KeyError, IndexError, ValueError) as err:
        raise UsageError(
            f"--public-repo {repo}: {TEMPLATE_FILE} is not a str.format template with "
            f"{{problem_text}} and {{history}} ({err!r})"
        ) from err
    return prompts
