"""Bare vLLM in a fresh process, for bench/vllm.py: `import vllm`, load the engine, one
`LLM.chat` over the rows. Its parent times the load from this process's start (Python
start-up, vLLM's import and the engine load: what a bare vLLM user and the pipeline's
engine actor both pay) to the "loaded" line; the chat is timed here.

    vllm_bare.py JOB.json   (JOB: {"engine": {...LLM kwargs}, "rows": [{messages,
                            sampling_params}, ...]}, written by bench/vllm.py; no rows:
                            load only)
"""

from __future__ import annotations

import importlib
import json
import sys
import time
from pathlib import Path

# As in bench/vllm.py: this folder heads sys.path, where `vllm` would be bench/vllm.py.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).parent.resolve()]


def main() -> None:
    """Load, print "loaded", chat, print the chat's seconds."""
    job = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
    vllm = importlib.import_module("vllm")
    params_module = importlib.import_module("vllm.sampling_params")
    llm = vllm.LLM(**job["engine"])
    print("loaded", flush=True)
    if not job["rows"]:  # a load-only job: the bench times loads again
        return
    params = [
        vllm.SamplingParams(
            temperature=r["sampling_params"]["temperature"],
            max_tokens=r["sampling_params"]["max_tokens"],
            seed=r["sampling_params"]["seed"],
            structured_outputs=params_module.StructuredOutputsParams(
                grammar=r["sampling_params"]["structured_outputs"]["grammar"]
            ),
        )
        for r in job["rows"]
    ]
    start = time.perf_counter()
    outputs = llm.chat([r["messages"] for r in job["rows"]], params, use_tqdm=False)
    took = time.perf_counter() - start
    assert len(outputs) == len(job["rows"])
    print(f"chat {took:.3f}", flush=True)


if __name__ == "__main__":  # vLLM spawns its engine core: the guard keeps it from re-running
    main()
