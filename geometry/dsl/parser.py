"""Splits DSL source lines into statements: `command : inputs -> outputs`.

The parser knows only the surface syntax; what inputs mean (labels or expressions) and
whether a command exists is decided by the executor against the command table.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from geometry.dsl.errors import DSLFailure
from geometry.dsl.limits import Limits

# Labels: a letter or underscore, then letters, digits, underscores, then optional primes
# (the data set names image points A', B′).
LABEL = re.compile(r"[^\W\d]\w*['′]*")
COMMAND_NAME = re.compile(r"[A-Za-z_]\w*")
DISCARD = "_"
# `const TYPE value -> label`, as in the public GeoBuildBench prompts.
CONST_TYPES = ("int", "float", "Measure", "AngleSize")


@dataclass(frozen=True)
class Statement:
    """One executable line. `outputs` holds None for each `_`."""

    line: int
    command: str
    inputs: tuple[str, ...]
    outputs: tuple[str | None, ...]
    const_type: str | None = None  # only for `const TYPE value -> label`

    def text(self) -> str:
        """The statement in normal form (comments and spacing removed)."""
        outs = " ".join(o if o is not None else DISCARD for o in self.outputs)
        head = self.command if self.const_type is None else f"{self.command} {self.const_type}"
        return f"{head} : {' '.join(self.inputs)} -> {outs}"


def strip_comment(raw: str) -> str:
    """The line without its `#` or `//` comment."""
    cut = len(raw)
    for marker in ("#", "//"):
        index = raw.find(marker)
        if index != -1:
            cut = min(cut, index)
    return raw[:cut].strip()


def split_inputs(text: str) -> list[str]:
    """Split inputs on whitespace outside parentheses, so `(100 + 50)` stays one input."""
    parts: list[str] = []
    depth = 0
    current: list[str] = []
    for char in text:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth < 0:
                raise DSLFailure("syntax", f"unbalanced ')' in inputs {text!r}")
        if char.isspace() and depth == 0:
            if current:
                parts.append("".join(current))
                current = []
            continue
        current.append(char)
    if depth != 0:
        raise DSLFailure("syntax", f"unbalanced '(' in inputs {text!r}")
    if current:
        parts.append("".join(current))
    return parts


def _outputs(text: str, command: str) -> tuple[str | None, ...]:
    outputs: list[str | None] = []
    for token in text.split():
        if token == DISCARD:
            outputs.append(None)
        elif LABEL.fullmatch(token):
            outputs.append(token)
        else:
            raise DSLFailure(
                "syntax",
                f"{command}: output {token!r} is not a valid label; labels start with a "
                "letter and use letters, digits, _ and primes (A'), or are _ to discard",
            )
    return tuple(outputs)


def _const(body: str, line: int) -> Statement:
    head, _, outputs = body.partition("->")
    head = head.strip()
    const_type: str | None = None
    if head.startswith(":"):
        value_text = head[1:].strip()
    else:
        first, _, rest = head.partition(" ")
        if first not in CONST_TYPES:
            raise DSLFailure(
                "syntax",
                f"const needs `const : VALUE -> label` or `const TYPE VALUE -> label` with "
                f"TYPE one of {', '.join(CONST_TYPES)}; got {head!r}",
            )
        const_type, value_text = first, rest.strip().lstrip(":").strip()
    return Statement(
        line=line,
        command="const",
        inputs=tuple(split_inputs(value_text)),
        outputs=_outputs(outputs, "const"),
        const_type=const_type,
    )


def parse_line(raw: str, line: int, limits: Limits) -> Statement | None:
    """Parse one source line; None for blank and comment lines. Raises DSLFailure."""
    if len(raw) > limits.max_line_chars:
        raise DSLFailure(
            "limit",
            f"line is {len(raw)} characters long, over the limit of {limits.max_line_chars}",
        )
    body = strip_comment(raw)
    if not body:
        return None
    if body.count("->") > 1:
        raise DSLFailure("syntax", f"more than one '->' in {body!r}; write one command per line")
    if re.match(r"const(?=[\s:])", body):
        return _const(body[len("const") :].strip(), line)
    name, colon, rest = body.partition(":")
    name = name.strip()
    if not colon:
        raise DSLFailure(
            "syntax",
            f"missing ':' in {body!r}; every line reads `command : inputs -> outputs`, "
            "e.g. `segment : A B -> AB`",
        )
    if not COMMAND_NAME.fullmatch(name):
        raise DSLFailure(
            "syntax", f"{name!r} is not a command name; a line starts with the command, then ':'"
        )
    inputs, arrow, outputs = rest.partition("->")
    if not arrow:
        raise DSLFailure(
            "syntax",
            f"{name}: missing '->' in {body!r}; name the results after it, e.g. "
            f"`{name} : {inputs.strip()} -> X` (use _ for results you do not need)",
        )
    return Statement(
        line=line,
        command=name,
        inputs=tuple(split_inputs(inputs)),
        outputs=_outputs(outputs, name),
    )
