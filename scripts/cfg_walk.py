"""`.venv-vllm/bin/python scripts/cfg_walk.py [WORK]`: a model config's walk through our
modules during one `evaluate --engine vllm` of the tiny LM (one item, text setup), on the
driver, as issue 48 counts it (docs/architecture.md, "A model's vLLM path").

A stop is a call of one of our functions that takes a ModelConfig as an argument (the
config's own methods aside); a re-entry is a call into a module the walk had entered before
and left. Prints the counts and the walk as JSON. WORK (default: a temporary folder) keeps
the tiny model and the items between runs.
"""

from __future__ import annotations

import json
import sys
import tempfile
import threading
from pathlib import Path
from types import FrameType
from typing import Any

OURS = ("pipelines.", "actors.", "store.", "geometry.", "probes.")
START = ("pipelines.noregeo.evaluate_pipeline", "evaluate")


def main() -> int:
    """Build the tiny LM and one item if WORK lacks them, trace the evaluate, print."""
    from pipelines.cli import main as geosee

    work = Path(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix="cfg-walk-"))
    model, items = work / "tiny", work / "items"
    if not (model / "config.json").is_file():
        assert geosee(["tiny-model", "--kind", "llm", "--out", str(model)]) == 0
    if not (items / "manifest.json").is_file():
        assert (
            geosee(["generate", "--out", str(items), "--per-task", "1", "--tasks", "C-BCT-CT"]) == 0
        )
    walk: list[tuple[str, str, str]] = []

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        module = frame.f_globals.get("__name__", "")
        if event != "call" or not module.startswith(OURS):
            return
        code = frame.f_code
        for name in code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]:
            if name != "self" and type(frame.f_locals.get(name)).__name__ == "ModelConfig":
                caller = frame.f_back.f_globals.get("__name__", "") if frame.f_back else ""
                walk.append((module, code.co_name, caller))
                return

    out = tempfile.mkdtemp(prefix="cfg-walk-out-")
    argv = ["evaluate", "--items", str(items), "--engine", "vllm", "--model", str(model)]
    sys.setprofile(profile)
    threading.setprofile(profile)
    try:
        rc = geosee([*argv, "--setups", "text", "--max-tokens", "16", "--out", out])
    finally:
        sys.setprofile(None)
        threading.setprofile(None)  # type: ignore[arg-type]
    walk = walk[[w[:2] for w in walk].index(START) :]
    entered: set[str] = set()
    reentered = []
    for module, function, caller in walk:
        if module == caller:
            continue
        if module in entered:
            reentered.append(f"{module}.{function}")
        entered.add(module)
    stops = [(m, f) for m, f, caller in walk if m != caller]
    print(json.dumps({"rc": rc, "stops": len(stops), "modules": len(entered),
                      "reentries": len(reentered), "reentered": reentered,
                      "walk": [f"{m}.{f}" for m, f in stops]}, indent=1))  # fmt: skip
    return rc


if __name__ == "__main__":
    sys.exit(main())
