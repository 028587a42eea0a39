"""Issue 51 item 1: the original-layout LLaVA conversions within the head's disk
(pipelines/engines/models/llava_hub.py). Two tiny original checkpoints on a fake hub on
loopback (tests/pipelines/fake_hub.py), converted as the sweep's model tasks do
(`llava_convert.prepare`): one original at a time on the node, each deleted once converted,
a user's own files kept, and a download folder too small for an original and its
converted copy refused before the first byte (a tmpfs in a mount namespace of its own, as
tests/pipelines/engines/stages/test_hub_mirror_disk.py mounts one)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from pipelines.engines.models import llava_convert
from pipelines.engines.models.llava_original import RECORD
from pipelines.engines.models.model_schema import ModelConfig
from pipelines.noregeo.generate import MANIFEST
from tests.conftest import REPO
from tests.pipelines.fake_hub import FakeHub, fake_hub
from tests.pipelines.ray_nodes import needs_private_mounts

REPOS = ("org/llava-a", "org/llava-b")


@pytest.fixture
def hub(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, original: Path) -> Iterator[FakeHub]:
    """The fake hub with the tiny original checkpoint under two names, huggingface_hub
    pointed at it (its constants: it reads the variables once, at import) and caching under
    tmp_path/hf-cache."""
    import huggingface_hub.constants as constants

    with fake_hub() as fake:
        for repo in REPOS:
            fake.publish(repo, original, note=repo)
        monkeypatch.setattr(constants, "ENDPOINT", fake.endpoint)
        template = fake.endpoint + "/{repo_id}/resolve/{revision}/{filename}"
        monkeypatch.setattr(constants, "HUGGINGFACE_CO_URL_TEMPLATE", template)
        monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
        monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hf-cache"))
        yield fake


def config(repo: str, commit: str) -> ModelConfig:
    return ModelConfig(name=repo.split("/")[1], repo=repo, revision=commit, engine="vllm",
                       modality="image-text", setups=["text"],
                       layout="llava-original")  # fmt: skip


def originals_held(hf_cache: Path, shard: int) -> list[str]:
    """The repos of which the Hugging Face cache holds a weights shard (`shard`: the smaller
    one's size; the config and tokenizer files are far smaller)."""
    return sorted(
        repo.name
        for repo in hf_cache.glob("models--*")
        if any(
            f.is_file() and not f.is_symlink() and f.stat().st_size >= shard
            for f in repo.rglob("*")
        )
    )


def state(folder: Path) -> dict[str, tuple[int, int, bytes]]:
    """Every file of `folder`: size, mtime and bytes."""
    return {
        p.relative_to(folder).as_posix(): (p.stat().st_size, p.stat().st_mtime_ns, p.read_bytes())
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def test_two_conversions_at_once_hold_one_original_at_a_time_and_delete_it(
    hub: FakeHub, original: Path, cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """(a) Two model tasks converting at once (threads: each takes its flock through a file
    it opens itself, as the sweep's processes do) never hold two originals: counted in the
    cache whenever a conversion writes. (b) Each original fetched for its conversion is gone
    after; the converted copies stay, and a second run finds them without the hub's files."""
    from transformers import AutoTokenizer, CLIPVisionConfig  # noqa: F401  (before the threads)

    hf_cache = tmp_path / "hf-cache"
    shard = min(p.stat().st_size for p in original.glob("*.bin"))
    seen: list[list[str]] = []
    write = llava_convert._write

    def counted(p: object, out: Path) -> None:
        seen.append(originals_held(hf_cache, shard))
        write(p, out)  # type: ignore[arg-type]

    monkeypatch.setattr(llava_convert, "_write", counted)
    configs = [config(repo, hub.commits[(repo, "main")]) for repo in REPOS]
    done: dict[str, ModelConfig] = {}
    failed: list[BaseException] = []

    def run(cfg: ModelConfig) -> None:
        try:
            done[cfg.name] = llava_convert.prepare(cfg)
        except BaseException as err:  # noqa: BLE001 (reported by the assertion below)
            failed.append(err)

    threads = [threading.Thread(target=run, args=(cfg,)) for cfg in configs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failed, failed
    assert len(seen) == 2 and all(len(held) == 1 for held in seen), seen
    assert originals_held(hf_cache, shard) == []
    assert list(hf_cache.rglob("*.bin")) == []  # nor a link to one
    snapshots = {Path(str(cfg.snapshot)) for cfg in done.values()}
    assert len(snapshots) == 2 and all((s / RECORD).is_file() for s in snapshots)
    assert {s.parent for s in snapshots} == {cache}
    # The next run (the model's GeoBuild run, a resumed sweep): the copy, nothing fetched.
    start = len(hub.requests)
    again = llava_convert.prepare(configs[0])
    assert again.snapshot == done[configs[0].name].snapshot
    assert not any("/resolve/" in p for p in hub.requests[start:]), hub.requests[start:]


def test_only_what_the_conversion_fetched_is_deleted(
    hub: FakeHub, original: Path, cache: Path, tmp_path: Path
) -> None:
    """(b) A local folder given as the model, and a snapshot the user had fetched into the
    cache before, are left as they were; the same run's fetch of another repo is deleted."""
    from pipelines.engines.models.hub_model import HubId, download, resolve_commit

    hf_cache = tmp_path / "hf-cache"
    shard = min(p.stat().st_size for p in original.glob("*.bin"))
    mine, fetched = REPOS
    user_snapshot = download(HubId(mine, None), resolve_commit(HubId(mine, None)))
    before_snapshot, before_folder = state(user_snapshot), state(original)
    local = config("org/local", "main").model_copy(update={"repo": str(original)})
    for cfg in (config(mine, hub.commits[(mine, "main")]), local,
                config(fetched, hub.commits[(fetched, "main")])):  # fmt: skip
        converted = llava_convert.prepare(cfg)
        assert (Path(str(converted.snapshot)) / RECORD).is_file()
    assert state(user_snapshot) == before_snapshot and state(original) == before_folder
    held = originals_held(hf_cache, shard)
    assert held == ["models--org--llava-a"], held
    assert len(list(cache.iterdir())) == 3


def test_a_hub_id_given_as_the_model_is_converted_and_its_original_deleted(
    hub: FakeHub, original: Path, cache: Path, tmp_path: Path
) -> None:
    """`--model ORG/NAME` of an original-layout checkpoint (config_from_checkpoint's path,
    not a config's): the same discipline; only its config.json, read before, stays."""
    from pipelines.engines.models.model_resolution import resolve_model

    shard = min(p.stat().st_size for p in original.glob("*.bin"))
    cfg = resolve_model("vllm", REPOS[0])
    assert cfg.layout == "llava-original" and cfg.repo == REPOS[0]
    assert (Path(str(cfg.snapshot)) / RECORD).is_file() and Path(str(cfg.snapshot)).parent == cache
    assert originals_held(tmp_path / "hf-cache", shard) == []
    kept = [p.name for p in (tmp_path / "hf-cache").glob("models--*/snapshots/*/*")]
    assert kept == ["config.json"], kept


def test_a_conversion_cut_short_is_cleaned_up_by_the_next(
    hub: FakeHub, original: Path, cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A conversion killed after its fetch (its cleanup never ran): the next conversion on
    the node deletes what it fetched before fetching its own."""
    from pipelines.engines.models import llava_hub

    hf_cache = tmp_path / "hf-cache"
    shard = min(p.stat().st_size for p in original.glob("*.bin"))
    first, second = (config(repo, hub.commits[(repo, "main")]) for repo in REPOS)

    def killed(*args: object) -> None:
        raise SystemExit("killed")  # as if the process died: no cleanup after this

    with monkeypatch.context() as patch:
        patch.setattr(llava_hub, "_delete_fetched", lambda *args: None)
        patch.setattr(llava_convert, "_write", killed)
        with pytest.raises(SystemExit):
            llava_convert.prepare(first)
    assert originals_held(hf_cache, shard) == ["models--org--llava-a"]
    held: list[list[str]] = []
    write = llava_convert._write

    def counted(p: object, out: Path) -> None:
        held.append(originals_held(hf_cache, shard))
        write(p, out)  # type: ignore[arg-type]

    monkeypatch.setattr(llava_convert, "_write", counted)
    llava_convert.prepare(second)
    assert held == [["models--org--llava-b"]], held
    assert originals_held(hf_cache, shard) == []
    assert list((hf_cache / llava_hub.NOTES).iterdir()) == []


# -- the download folder too small: a tmpfs of its own, through the CLI ------------------------


@needs_private_mounts
def test_a_download_folder_too_small_for_original_and_copy_is_refused_before_the_first_byte(
    hub: FakeHub, original: Path, tmp_path: Path
) -> None:
    """(c) `evaluate` of an original-layout config whose HF_HUB_CACHE (where the original is
    fetched, and its copy converted) has room for the original but not for both: exit 2,
    one line naming the bytes needed and the folder, and nothing fetched."""
    repo = REPOS[0]
    commit = hub.commits[(repo, "main")]
    files = hub.files[(repo, commit)]
    size = sum(len(data) for data in files.values())
    weights = sum(len(data) for name, data in files.items() if name.endswith(".bin"))
    tmpfs = (size + weights // 2) // 4096 * 4096  # the original fits, both do not
    (tmp_path / "hf-cache").mkdir()
    model = tmp_path / "llava-a.yaml"
    model.write_text(
        f"name: llava-a\nrepo: {repo}\nrevision: {commit}\nengine: vllm\n"
        "modality: image-text\nsetups: [text]\nlayout: llava-original\n"
    )
    items = tmp_path / "items"
    items.mkdir()
    (items / MANIFEST).write_text('{"tasks": ["C-BCT-CT"], "setups": ["text"]}')
    (items / "part-C-BCT-CT.parquet").write_bytes(b"")  # never read: the model fails first
    out = tmp_path / "results"
    command = [sys.executable, "-m", "pipelines", "evaluate", "--items", str(items),
               "--engine", "vllm", "--model", str(model), "--out", str(out)]  # fmt: skip
    cache = tmp_path / "hf-cache"
    script = f'mount -t tmpfs -o size={tmpfs} tmpfs {cache} && exec "$@"'
    env = {**os.environ, "PYTHONPATH": str(REPO), "HF_ENDPOINT": hub.endpoint,
           "HF_HUB_CACHE": str(cache), "HF_HUB_OFFLINE": "0"}  # fmt: skip
    env.pop(llava_convert.CACHE_ENV, None)  # converted beside the downloads, on the tmpfs
    start = len(hub.requests)
    done = subprocess.run(
        ["unshare", "-m", "--propagation", "private", "sh", "-c", script, "sh", *command],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    err = done.stderr.strip()
    assert done.returncode == 2, err[-3000:]
    assert len(err.splitlines()) == 1, err
    assert err.startswith("error: conversion to llava-hf of llava-a: needs "), err
    needed = int(err.split("needs ")[1].split(" ")[0])
    assert needed == size + weights, err  # the original's files and its converted copy
    assert f"bytes free at {cache} (its original checkpoint, {size} bytes" in err, err
    asked = hub.requests[start:]
    assert asked and not any("/resolve/" in p for p in asked), asked  # listed, not fetched
    assert not out.exists()
