"""The sweep's mirror step on a head whose download folder is small (a tmpfs the test mounts
at HF_HUB_CACHE): run as `python -m tests.pipelines.engines.stages.hub_mirror_scenario
MODE OUT REPO@COMMIT...`, with HF_ENDPOINT naming the fake hub.

- `sweep`: the models' mirrors at once (`at_once`); then, with 1 MiB left in the staging
  folder of a killed copy, after a `GET /phase/again` to the hub (the test splits the hub's
  request log there), each model's mirror again (their GeoBuild runs), and whether the
  leftover is still there; then, after `GET /phase/redo`, the first model's mirror once one
  of its weights files is removed from the store (its manifest kept).
- `refuse`: the first model's mirror alone.

Prints one JSON line per call: {"model", "copied"} or {"model", "error"}.
"""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path
from typing import Any

from pipelines.engines.models.model_schema import ModelConfig
from pipelines.engines.stages import node_sources as ns
from store.storage import RemotePath, location


def config(spec: str) -> ModelConfig:
    repo, commit = spec.split("@")
    return ModelConfig(name=repo.split("/")[1], repo=repo, revision=commit, engine="vllm",
                       modality="text", setups=["text"])  # fmt: skip


def mirror(cfg: ModelConfig, out: RemotePath) -> dict[str, Any]:
    try:
        sources = ns.node_sources(cfg, out, "sweep")
    except Exception as err:  # noqa: BLE001 (the test reads the one line)
        return {"model": cfg.name, "error": f"{type(err).__name__}: {err}"}
    assert sources is not None
    return {"model": cfg.name, "copied": sources.copied_bytes, "mirror": sources.mirror}


def phase(name: str) -> None:
    """A request the hub logs (and answers 404): where the test splits its request log."""
    import contextlib
    import os
    import urllib.error
    import urllib.request

    with contextlib.suppress(urllib.error.HTTPError):
        urllib.request.urlopen(f"{os.environ['HF_ENDPOINT']}/phase/{name}").close()


def at_once(configs: list[ModelConfig], out: RemotePath) -> list[dict[str, Any]]:
    """Each model's mirror in a thread of its own, all at once. Each takes its locks through
    a file it opens itself, and flock locks are per open file, so the threads contend for
    them as the sweep's model tasks (processes on the head) do."""
    # Imported before the threads: transformers' lazy module is not safe to import from
    # several threads at once (each of the sweep's processes imports its own).
    from transformers import AutoTokenizer  # noqa: F401

    results: list[dict[str, Any]] = []
    threads = [threading.Thread(target=lambda c=c: results.append(mirror(c, out))) for c in configs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def main(mode: str, out_uri: str, specs: list[str]) -> None:
    ns.several_nodes = lambda: True  # as a cluster whose autoscaler can add nodes answers
    out = location(out_uri)
    assert isinstance(out, RemotePath)
    configs = [config(s) for s in specs]
    if mode == "refuse":
        print(json.dumps(mirror(configs[0], out)), flush=True)
        return
    for result in at_once(configs, out):
        print(json.dumps(result), flush=True)
    leftover = leftover_file()  # what a copy killed mid-file leaves: 1 MiB of a 2 MiB folder
    leftover.parent.mkdir(parents=True)
    leftover.write_bytes(b"\0" * (1 << 20))
    phase("again")
    for cfg in configs:
        print(json.dumps(mirror(cfg, out)), flush=True)
    print(json.dumps({"leftover": leftover.exists()}), flush=True)
    phase("redo")
    mirror_of = out / ".models" / specs[0]  # its manifest kept, a weights file lost
    assert (mirror_of / "geosee-mirror.json").is_file()
    (mirror_of / "model-00002-of-00003.safetensors").unlink()
    print(json.dumps(mirror(configs[0], out)), flush=True)


def leftover_file() -> Path:
    """A part file in the staging folder of a copy that was killed (its lock is free)."""
    from huggingface_hub.constants import HF_HUB_CACHE

    from store.mirror_stream import STAGING

    return Path(HF_HUB_CACHE, STAGING, "0123456789abcdef", "weights", "model.incomplete")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3:])
