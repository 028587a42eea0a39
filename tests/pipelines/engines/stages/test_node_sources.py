"""On a cluster of several nodes every source a vLLM stage or engine loads is remote.

`several_nodes` is answered here as a cluster of several nodes would answer it; the stages
are Ray's own, built by Ray's processor from our config, and each one's constructor
arguments are read back: what a worker node would be handed. The mirror lives in an S3
server on loopback (moto). (tests/vllm/test_multinode_vllm.py runs a worker node that lacks
the head's folders; this test needs no vLLM.)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pipelines.cli import main
from pipelines.engines.models.config_from_checkpoint import checkpoint_config
from pipelines.engines.models.model_schema import ModelConfig
from pipelines.engines.stages import node_sources as ns
from pipelines.engines.stages.chained_stage import unchained
from pipelines.engines.stages.options import EngineOptions
from pipelines.engines.stages.vllm_path import build_vllm_processor
from store.model_mirror import MANIFEST, MIRRORS, MirrorError, folder_files, read_manifest
from store.storage import RemotePath, location
from tests.pipelines.s3_server import S3Server, s3_fixture  # noqa: F401  (fixture `s3`)

REMOTE = ("s3://",)


@pytest.fixture
def several(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ns, "several_nodes", lambda: True)


def _config(folder: Path, **update: Any) -> ModelConfig:
    config = json.loads((folder / "config.json").read_text())
    cfg = checkpoint_config("vllm", folder.name, str(folder), "main", config, False)
    return cfg.model_copy(update=update)


def _stage_sources(processor: Any) -> dict[str, list[str]]:
    """Stage name -> every model or tokenizer source in its constructor arguments."""
    found: dict[str, list[str]] = {}
    for stage in unchained(list(processor.stages.values())):  # also where one actor runs two
        name = type(stage).__name__
        kwargs = stage.fn_constructor_kwargs
        inner = kwargs.get("model_config_kwargs") or {}
        values = [kwargs.get("model"), inner.get("model"), inner.get("tokenizer")]
        engine = kwargs.get("engine_kwargs") or {}
        values.append(engine.get("tokenizer"))
        found[name] = [v for v in values if isinstance(v, str)]
    return found


@pytest.mark.parametrize("kind", ["llm", "vlm"])
def test_every_stage_of_a_multinode_run_loads_from_the_bucket(
    kind: str, several: None, s3: S3Server, ray_local: Any, request: pytest.FixtureRequest
) -> None:
    folder: Path = request.getfixturevalue(f"tiny_{kind}_dir")
    cfg = _config(folder)
    out = location(s3.uri(f"sources-{kind}"))
    sources = ns.node_sources(cfg, out)
    assert sources is not None
    processor = build_vllm_processor(cfg, EngineOptions(sources=sources))
    by_stage = _stage_sources(processor)
    assert any(by_stage.values())
    for stage, values in by_stage.items():
        for value in values:
            assert value.startswith(REMOTE), f"{stage} is handed {value}, not a remote source"
    engine = next(
        s for s in processor.stages.values() if "engine_kwargs" in s.fn_constructor_kwargs
    )
    kwargs = engine.fn_constructor_kwargs["engine_kwargs"]
    assert kwargs["revision"] is None and kwargs["tokenizer_revision"] is None
    if kind == "vlm":  # Ray's prepare-multimodal stage cannot load s3:// by itself
        from pipelines.engines.stages.node_stages import NodeLocalPrepareMultimodalUDF

        fns = [s.fn for s in processor.stages.values()]
        assert NodeLocalPrepareMultimodalUDF in fns, fns
    # The mirror holds every file of the checkpoint, with its size and digest.
    mirror = next(p.parent for p in (out / MIRRORS).rglob(MANIFEST) if "local" in str(p))
    manifest = read_manifest(mirror)
    assert manifest is not None
    assert {f.name for f in manifest} == set(folder_files(folder))
    again = ns.node_sources(cfg, out)  # complete already: nothing copied
    assert again is not None and again.copied_bytes == 0 and again.engine == sources.engine


def test_a_single_node_keeps_local_paths(
    monkeypatch: pytest.MonkeyPatch, tiny_llm_dir: Path
) -> None:
    monkeypatch.setattr(ns, "several_nodes", lambda: False)
    assert ns.node_sources(_config(tiny_llm_dir), Path("/nonexistent")) is None


def test_an_incomplete_mirror_is_copied_again_and_a_changed_one_refused(
    several: None, s3: S3Server, tiny_llm_dir: Path, tmp_path: Path
) -> None:
    import shutil

    folder = Path(shutil.copytree(tiny_llm_dir, tmp_path / "model"))
    cfg = _config(folder)
    out = location(s3.uri("broken"))
    assert isinstance(out, RemotePath)
    first = ns.node_sources(cfg, out)
    assert first is not None and first.copied_bytes > 0
    mirror = next(p.parent for p in (out / MIRRORS).rglob(MANIFEST))
    config = (folder / "config.json").read_bytes()
    model = sum(p.stat().st_size for p in folder_files(folder).values())
    # Its manifest there, a file gone or resized: the mirror is copied again.
    (mirror / "config.json").unlink()
    again = ns.node_sources(cfg, out)
    assert again is not None and again.copied_bytes == model
    assert (mirror / "config.json").read_bytes() == config
    (mirror / "config.json").write_bytes(config + b" ")
    again = ns.node_sources(cfg, out)
    assert again is not None and again.copied_bytes == model
    assert (mirror / "config.json").read_bytes() == config
    # A local file changed under the same mirror name: the digests differ.
    mirror_key = mirror.relative_to(out / MIRRORS)
    monkey_key = str(mirror_key)
    (folder / "generation_config.json").write_text("{}")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(ns, "mirror_key", lambda *_: monkey_key)
        with pytest.raises(MirrorError, match="holds other files"):
            ns.node_sources(cfg, out)


def test_local_results_on_several_nodes_are_refused_before_anything_is_written(
    several: None, ray_local: Any, small_items: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    out = tmp_path / "results"
    code = main(["evaluate", "--items", str(small_items), "--engine", "oracle",
                 "--model", "oracle", "--out", str(out)])  # fmt: skip
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert len(err) == 1 and "several nodes" in err[0] and str(out) in err[0], err
    assert not out.exists() or not any(out.rglob("*"))


def test_a_converted_hub_checkpoint_is_mirrored_under_its_commit_and_the_conversion(
    tmp_path: Path,
) -> None:
    """An original-layout LLaVA at a pinned commit is mirrored from its converted folder
    under `<repo>@<commit>+llava-hf` (what the sweep's dry run prints), never under the
    name a mirror of the unconverted repo would have."""
    commit = "0123456789abcdef0123456789abcdef01234567"
    fields = {"name": "g-llava-7b", "repo": "renjiepi/G-LLaVA-7B", "revision": commit}
    converted = ModelConfig(**fields, layout="llava-original", snapshot=str(tmp_path))
    assert ns.mirror_key(converted, []) == f"renjiepi/G-LLaVA-7B@{commit}+llava-hf"
    assert ns.mirror_key(ModelConfig(**fields), []) == f"renjiepi/G-LLaVA-7B@{commit}"
