"""Probe results read with and without token_norm: ln_post probes never mix with the paper's."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from probes.tables import load_results


def _write(out: Path, name: str, token_norm: str | None, accuracy: float) -> None:
    row = {
        "arch": "ViT-B-32",
        "pretrained": "openai",
        "regime": "joint",
        "config": "FF",
        "train_tasks": "All",
        "eval_task": "C-BCT-CT",
        "eval_setup": "F",
        "accuracy": accuracy,
    }
    if token_norm is not None:
        row["token_norm"] = token_norm
    folder = out / "probes" / "model=ViT-B-32-openai"
    folder.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist([row]), folder / f"trial-{name}.parquet")


def test_token_norm_splits_encoders_and_old_rows_count_as_ln_post(tmp_path: Path) -> None:
    _write(tmp_path, "paper", "none", 0.9)
    _write(tmp_path, "normed", "ln_post", 0.7)
    _write(tmp_path, "before-the-switch", None, 0.6)
    df = load_results(tmp_path)
    by_encoder = {enc: sorted(group["acc"].to_list()) for (enc,), group in df.group_by("encoder")}
    assert by_encoder == {"ViT-B-32/openai": [90.0], "ViT-B-32/openai/ln_post": [60.0, 70.0]}
    assert sorted(df["token_norm"].to_list()) == ["ln_post", "ln_post", "none"]
