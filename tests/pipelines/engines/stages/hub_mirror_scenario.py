"""The sweep's mirror step on a head whose download folder is small (a tmpfs the test mounts
at HF_HUB_CACHE): run as `python -m tests.pipelines.engines.stages.hub_mirror_scenario
MODE OUT REPO@COMMIT...`, with HF_ENDPOINT naming the fake hub.

- `mirror`: each model's mirror, one after the other (the test starts one process per
  model at once, as the sweep runs each model's task in a process of its own on the head);
- `again`: after a `GET /phase/again` to the hub (the test splits the hub's request log
  there), each model's mirror again (their GeoBuild runs);
- `redo`: after `GET /phase/redo`, the first model's mirror once one of its weights files
  is removed from the store (its manifest kept).

Prints one JSON line per call: {"model", "copied"} or {"model", "error"}.
"""

from __future__ import annotations

import json
import sys
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


def main(mode: str, out_uri: str, specs: list[str]) -> None:
    ns.several_nodes = lambda: True  # as a cluster whose autoscaler can add nodes answers
    out = location(out_uri)
    assert isinstance(out, RemotePath)
    configs = [config(s) for s in specs]
    if mode in ("again", "redo"):
        phase(mode)
    if mode == "redo":  # the first model's mirror keeps its manifest and loses a file
        mirror_of = out / ".models" / specs[0]
        assert (mirror_of / "geosee-mirror.json").is_file()
        (mirror_of / "model-00002-of-00003.safetensors").unlink()
        configs = configs[:1]
    for cfg in configs:
        print(json.dumps(mirror(cfg, out)), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3:])
