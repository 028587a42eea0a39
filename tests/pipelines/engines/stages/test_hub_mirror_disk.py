"""Issue 51 item 1: the sweep's mirrors within the head's disk.

Three hub-style models (config and tokenizer files, three weights files of 1 MiB each) on
a fake hub on loopback; the store an S3 server on loopback (moto); the head's download
folder (HF_HUB_CACHE) a tmpfs of 2 MiB in a mount namespace of the scenario's own, smaller
than one model (3 MiB), let alone two. The scenario (hub_mirror_scenario.py) mirrors the
three at once as the sweep's model tasks do, then again as their GeoBuild runs do, then one
whose manifest is there and one of whose files is not, after a killed copy left 1 MiB in
the download folder. Counted at the sources: the bytes and files in the store, and the
requests the hub answered.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from store.model_mirror import MANIFEST, PENDING, read_manifest
from store.storage import RemotePath, location
from tests.conftest import REPO
from tests.pipelines.fake_hub import FakeHub, fake_hub
from tests.pipelines.ray_nodes import needs_private_mounts
from tests.pipelines.s3_server import S3Server, s3_fixture  # noqa: F401  (fixture `s3`)

pytestmark = needs_private_mounts
MIB = 1 << 20
SHARDS = [f"model-0000{i}-of-00003.safetensors" for i in (1, 2, 3)]
SCENARIO = "tests.pipelines.engines.stages.hub_mirror_scenario"


@pytest.fixture(scope="module")
def hub(tiny_llm_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeHub]:
    with fake_hub() as fake:
        for name in ("tiny-a", "tiny-b", "tiny-c"):
            folder = tmp_path_factory.mktemp(name)
            for path in tiny_llm_dir.iterdir():
                if path.suffix != ".safetensors":
                    shutil.copyfile(path, folder / path.name)
            for shard in SHARDS:  # bytes of their own: the mirror never parses weights
                (folder / shard).write_bytes(os.urandom(MIB))
            fake.publish(f"org/{name}", folder)
        yield fake


def specs(hub: FakeHub) -> list[str]:
    return [f"{repo}@{commit}" for (repo, rev), commit in hub.commits.items() if rev == "main"]


def model_bytes(hub: FakeHub, spec: str) -> int:
    repo, commit = spec.split("@")
    return sum(len(data) for data in hub.files[(repo, commit)].values())


def run_scenario(
    hub: FakeHub, tmp_path: Path, mode: str, out: str, size: str, models: list[str]
) -> list[dict]:
    """The scenario in a mount namespace whose HF_HUB_CACHE is a tmpfs of `size`."""
    cache = tmp_path / "hf-cache"
    cache.mkdir()
    command = " ".join([sys.executable, "-m", SCENARIO, mode, f"'{out}'", *models])
    script = f"mount -t tmpfs -o size={size} tmpfs {cache} && exec {command}"
    env = {**os.environ, "PYTHONPATH": str(REPO), "HF_ENDPOINT": hub.endpoint,
           "HF_HUB_CACHE": str(cache), "HF_HUB_OFFLINE": "0"}  # fmt: skip
    done = subprocess.run(
        ["unshare", "-m", "--propagation", "private", "sh", "-c", script],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


@pytest.mark.slow  # one process: transformers' import, three tiny mirrors (moto, fake hub)
def test_three_models_mirror_through_a_download_folder_smaller_than_one(
    hub: FakeHub, s3: S3Server, tmp_path: Path
) -> None:
    models = specs(hub)
    assert len(models) == 3 and all(model_bytes(hub, m) > 3 * MIB for m in models)
    out = s3.uri("sweep-mirrors")
    results = run_scenario(hub, tmp_path, "sweep", out, "2m", models)
    first, again, leftover, redo = results[:3], results[3:6], results[6], results[7:]
    assert all("error" not in r for r in results), results
    # Each model's every file is in the store once, with the hub's bytes.
    for spec in models:
        repo, commit = spec.split("@")
        mirror = location(out) / ".models" / spec
        assert isinstance(mirror, RemotePath)
        manifest = read_manifest(mirror)
        assert manifest is not None and not (mirror / PENDING).is_file()
        assert {f.name: f.size for f in manifest} == {
            name: len(data) for name, data in hub.files[(repo, commit)].items()
        }
        assert (mirror / SHARDS[1]).read_bytes() == hub.files[(repo, commit)][SHARDS[1]]
    # Copied now: the model, and the tokenize stage's copy of its tokenizer (kilobytes).
    copied = {r["model"]: r["copied"] for r in first}
    assert len(copied) == 3, first
    for spec in models:
        extra = copied[spec.split("/")[1].split("@")[0]] - model_bytes(hub, spec)
        assert 0 <= extra < 64 << 10, (spec, copied)
    # Their GeoBuild runs find the mirrors complete: nothing copied, the hub not asked.
    paths = hub.requests
    asked = paths[paths.index("/phase/again") + 1 : paths.index("/phase/redo")]
    assert [r["copied"] for r in again] == [0, 0, 0] and asked == [], asked
    # The leftover of a killed copy is removed (the redo below needs its room).
    assert leftover == {"leftover": False}
    # A manifest whose file is gone: the mirror is copied again, that file with it.
    assert len(redo) == 1 and redo[0]["copied"] == model_bytes(hub, models[0]), redo
    refetched = [p for p in paths[paths.index("/phase/redo") :] if "/resolve/" in p]
    assert any(p.endswith(SHARDS[1]) for p in refetched), refetched
    mirror = location(redo[0]["mirror"])
    assert isinstance(mirror, RemotePath) and (mirror / SHARDS[1]).is_file()
    assert (mirror / MANIFEST).is_file()


def test_a_download_folder_smaller_than_one_file_is_refused_before_the_first_byte(
    hub: FakeHub, s3: S3Server, tmp_path: Path
) -> None:
    model = specs(hub)[0]
    out = s3.uri("refused")
    start = len(hub.requests)
    (result,) = run_scenario(hub, tmp_path, "refuse", out, "512k", [model])
    line = result.get("error", "")
    assert line.startswith("MirrorError: model mirror of tiny-a: needs "), result
    assert f"bytes free at {tmp_path}/hf-cache/" in line and "\n" not in line
    needed = int(line.split("needs ")[1].split(" ")[0])
    assert MIB < needed < 2 * MIB, line  # the largest file and the small ones
    assert not any("/resolve/" in p for p in hub.requests[start:])  # no file fetched
    root = location(out)
    assert isinstance(root, RemotePath) and not any(root.rglob("*"))  # nothing uploaded
