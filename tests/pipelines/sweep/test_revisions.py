"""Revisions pinned by use, against a fake hub on loopback (tests/pipelines/fake_hub.py:
the model-info API `HfApi.model_info` asks, at HF_ENDPOINT)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from pipelines import cli
from pipelines.engines.models.config_yaml import load_config
from pipelines.sweep.revisions import pin_by_use, resolve
from store.errors import UsageError
from store.records import model_dir
from tests.conftest import REPO
from tests.pipelines.fake_hub import FakeHub, fake_hub

REPO_ID = "Qwen/Qwen3-8B"
FIRST = "1" * 40
MOVED = "2" * 40


@pytest.fixture
def hub(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeHub]:
    import huggingface_hub.constants

    with fake_hub() as fake:
        fake.commits[(REPO_ID, "main")] = FIRST
        monkeypatch.setenv("HF_ENDPOINT", fake.endpoint)
        # huggingface_hub reads HF_ENDPOINT once, at import (another test may have imported it)
        monkeypatch.setattr(huggingface_hub.constants, "ENDPOINT", fake.endpoint)
        monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
        monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
        yield fake


def _models(tmp_path: Path) -> Path:
    """A config folder holding the repository's qwen3-8b config (revision: main)."""
    folder = tmp_path / "models"
    folder.mkdir()
    (folder / "qwen3-8b.yaml").write_text((REPO / "configs/models/qwen3-8b.yaml").read_text())
    return folder


def _record(out: Path, name: str, revision: str) -> None:
    """settings.json as evaluate writes it for a model's results."""
    root = model_dir(out, "noregeo", name)
    assert isinstance(root, Path)
    root.mkdir(parents=True)
    (root / "settings.json").write_text(json.dumps({"revision": revision, "engine": "vllm"}))


def test_first_use_resolves_main_to_its_commit(hub: FakeHub, tmp_path: Path) -> None:
    cfg = load_config(_models(tmp_path) / "qwen3-8b.yaml")
    assert cfg.revision == "main"
    (pinned,), commits = pin_by_use([cfg], tmp_path / "out", ask_hub=True, keep_recorded=False)
    assert pinned.revision == FIRST and commits == {"qwen3-8b": FIRST}
    assert f"/api/models/{REPO_ID}/revision/main" in hub.requests


def test_a_moved_revision_is_refused_unless_the_recorded_one_is_kept(
    hub: FakeHub, tmp_path: Path
) -> None:
    cfg = load_config(_models(tmp_path) / "qwen3-8b.yaml")
    out = tmp_path / "out"
    _record(out, "qwen3-8b", FIRST)
    same, _ = pin_by_use([cfg], out, ask_hub=True, keep_recorded=False)
    assert same[0].revision == FIRST  # main has not moved: the results go on
    hub.commits[(REPO_ID, "main")] = MOVED
    with pytest.raises(UsageError) as refused:
        pin_by_use([cfg], out, ask_hub=True, keep_recorded=False)
    message = str(refused.value)
    assert FIRST in message and MOVED in message and "--keep-recorded-revisions" in message
    kept, commits = pin_by_use([cfg], out, ask_hub=True, keep_recorded=True)
    assert kept[0].revision == FIRST and commits == {"qwen3-8b": FIRST}
    asked = len(hub.requests)
    dry, _ = pin_by_use([cfg], out, ask_hub=False, keep_recorded=False)
    assert dry[0].revision == FIRST and len(hub.requests) == asked  # a dry run asks no hub


def test_sweep_with_a_moved_revision_exits_2_and_writes_nothing(
    hub: FakeHub, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import ray

    models = _models(tmp_path)
    out = tmp_path / "out"
    _record(out, "qwen3-8b", FIRST)
    hub.commits[(REPO_ID, "main")] = MOVED
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    was_up = ray.is_initialized()
    argv = ["sweep", "--models", str(models), "--out", str(out), "--gpus", "8"]
    assert cli.main(argv) == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and "qwen3-8b" in lines[0] and MOVED in lines[0], lines
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before
    assert ray.is_initialized() == was_up


def test_pin_revisions_writes_commits_into_the_configs(
    hub: FakeHub, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    models = _models(tmp_path)
    (models / "oracle.yaml").write_text((REPO / "configs/models/local/oracle.yaml").read_text())
    original = (models / "qwen3-8b.yaml").read_text()
    assert cli.main(["pin-revisions", "--models", str(models)]) == 0
    assert f"qwen3-8b: main -> {FIRST}" in capsys.readouterr().out
    pinned = (models / "qwen3-8b.yaml").read_text()
    assert load_config(models / "qwen3-8b.yaml").revision == FIRST
    # Only the revision line changed; the oracle (no hub revision) is untouched.
    changed = [(a, b) for a, b in zip(original.splitlines(), pinned.splitlines(), strict=True)
               if a != b]  # fmt: skip
    assert changed == [("revision: main", f'revision: "{FIRST}"  # main, pinned by pin-revisions')]
    # Pinned configs are left alone: nothing more to resolve, nothing asked.
    asked = len(hub.requests)
    assert cli.main(["pin-revisions", "--models", str(models)]) == 0
    assert len(hub.requests) == asked


def test_pin_revisions_writes_nothing_when_the_hub_cannot_answer(
    hub: FakeHub, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    models = _models(tmp_path)
    (models / "qwen3-4b.yaml").write_text((REPO / "configs/models/qwen3-4b.yaml").read_text())
    before = {p.name: p.read_text() for p in models.iterdir()}
    assert cli.main(["pin-revisions", "--models", str(models)]) == 2  # qwen3-4b unknown
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and "Qwen/Qwen3-4B@main" in err[0] and "nothing was written" in err[0]
    assert {p.name: p.read_text() for p in models.iterdir()} == before


def test_a_malformed_hub_answer_is_no_commit(hub: FakeHub) -> None:
    from pipelines.sweep.revisions import HubError

    hub.commits[("a/b", "main")] = "not-a-commit"
    with pytest.raises(HubError, match="no commit"):
        resolve("a/b", "main")
