"""The `programs` engine: replays scripted replies per problem and round (tests, audits).

The script is JSONL, one `{"id": ..., "round": k, "text": ...}` per line; a problem and
round without a line gets the empty reply, which the loop reports as "no program". It
follows the engine row contract (`actors.contract`), reading `problem_id` and `round`.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from actors.contract import check_columns, with_outputs


def load_script(path: Path | str) -> dict[tuple[str, int], str]:
    """Replies by (problem id, round); ValueError naming the line when one is malformed."""
    script: dict[tuple[str, int], str] = {}
    with Path(path).open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                key = (str(record["id"]), int(record["round"]))
                text = record["text"]
            except (json.JSONDecodeError, KeyError, TypeError, ValueError) as err:
                raise ValueError(
                    f'{path}, line {number}: expected {{"id", "round", "text"}} ({err})'
                ) from err
            if not isinstance(text, str):
                raise ValueError(f"{path}, line {number}: 'text' must be a string")
            script[key] = text
    return script


class ProgramReplay:
    """Ray Data step: the scripted reply of each row's problem and round."""

    def __init__(self, path: str) -> None:
        self.script = load_script(path)

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Every input column plus ENGINE_OUTPUT; each reply is the script's for its row."""
        check_columns(batch, ("problem_id", "round"), "ProgramReplay")
        n = len(batch["problem_id"])
        texts = [
            self.script.get((str(batch["problem_id"][i]), int(batch["round"][i])), "")
            for i in range(n)
        ]
        return with_outputs(batch, texts)
