"""An original-layout LLaVA checkpoint given as `--model FOLDER`: detected, converted once into
the cache and run from there; bad checkpoints refused in one line with nothing written; an
interrupted conversion leaves nothing a later run would load."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from pipelines.cli import main
from pipelines.engines.models import llava_convert
from pipelines.engines.models.llava_original import RECORD
from pipelines.engines.models.model_resolution import resolve_model
from pipelines.noregeo.generate import MANIFEST
from tests.tiny_llava_original import HIDDEN, TOWER_WIDTH, build_llava_original


def test_a_checkpoint_folder_is_converted_once_and_run_from_the_copy(
    original: Path, cache: Path
) -> None:
    cfg = resolve_model("vllm", str(original))
    assert cfg.layout == "llava-original" and cfg.repo == str(original.resolve())
    assert cfg.snapshot is not None and Path(cfg.snapshot).parent == cache
    assert cfg.modality == "image-text" and cfg.setups == ["text", "dotted", "full"]
    assert cfg.weights == "random"  # the checkpoint's provenance file, carried over
    converted = json.loads((Path(cfg.snapshot) / "config.json").read_text())
    assert converted["architectures"] == ["LlavaForConditionalGeneration"]
    assert converted["text_config"]["max_position_embeddings"] == cfg.max_model_len
    record = Path(cfg.snapshot) / RECORD
    made = record.stat().st_mtime_ns
    again = resolve_model("vllm", str(original))
    assert again.snapshot == cfg.snapshot and record.stat().st_mtime_ns == made
    assert [p.name for p in cache.iterdir()] == [Path(cfg.snapshot).name]


def _items(tmp_path: Path) -> Path:
    items = tmp_path / "items"
    items.mkdir()
    (items / MANIFEST).write_text('{"tasks": ["C-BCT-CT"], "setups": ["text"]}')
    (items / "part-C-BCT-CT.parquet").write_bytes(b"")  # never read: the model fails first
    return items


BAD = [
    ({"mm_vision_tower": "/nonexistent/clip-tower"}, {}, "vision tower"),
    ({}, {"projector_in": TOWER_WIDTH + 8}, "model.mm_projector.0.weight has shape"),
    ({}, {"projector_out": HIDDEN + 8}, "model.mm_projector.0.weight has shape"),
    ({"mm_hidden_size": TOWER_WIDTH * 2}, {}, "mm_hidden_size"),
    ({"mm_vision_select_layer": -9}, {}, "mm_vision_select_layer -9"),
    ({"mm_projector_type": "linear"}, {}, "mlp2x_gelu"),
    ({"image_aspect_ratio": "anyres"}, {}, "image_aspect_ratio"),
]


@pytest.mark.parametrize(("changes", "shapes", "said"), BAD)
def test_a_bad_checkpoint_is_refused_in_one_line_with_nothing_written(
    changes: dict[str, object],
    shapes: dict[str, int],
    said: str,
    tmp_path: Path,
    cache: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    folder = build_llava_original(tmp_path / "model", **shapes, **changes)  # type: ignore[arg-type]
    capsys.readouterr()  # the build's own progress bars
    out = tmp_path / "results"
    args = ["evaluate", "--items", str(_items(tmp_path)), "--engine", "vllm"]
    assert main([*args, "--model", str(folder), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and said in err, err
    assert not out.exists() and not cache.exists()


def test_an_interrupted_conversion_leaves_nothing_and_a_rerun_converts(
    original: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def interrupted(*args: object) -> None:
        raise KeyboardInterrupt  # after the weights, before the config and the record

    with monkeypatch.context() as patch:
        patch.setattr(llava_convert, "_config", interrupted)
        with pytest.raises(KeyboardInterrupt):
            llava_convert.converted_folder(original, str(original))
    assert list(cache.iterdir()) == []
    # A staging folder a killed process left (no cleanup ran) goes on the next run.
    checked = llava_convert.plan(original)
    dest = cache / llava_convert.conversion_key(checked, str(original))
    stale = dest.with_name(f"{dest.name}.{2**31 - 1}.tmp")
    stale.mkdir()
    assert llava_convert.converted_folder(original, str(original)) == dest
    assert (dest / RECORD).is_file() and not stale.exists()
    assert sorted(p.name for p in cache.iterdir()) == [dest.name]
    assert os.listdir(dest).count("config.json") == 1
