"""`--model ORG/NAME[@REVISION]` against a fake hub on loopback (tests/pipelines/fake_hub.py,
which serves what huggingface_hub's own code asks for), serving tiny models built offline.

In-process tests point huggingface_hub at the fake hub through its constants (it reads
HF_ENDPOINT, HF_HOME and HF_HUB_OFFLINE once, at import); the end-to-end run sets the
environment variables of a real `python -m pipelines evaluate` process instead.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from pipelines.engines.models.hub_model import HubId, parse_hub_id
from pipelines.engines.models.model_resolution import resolve_model
from pipelines.engines.models.model_schema import ModelConfigError
from pipelines.engines.models.tiny_model import MAX_POSITIONS
from tests.conftest import REPO
from tests.pipelines.fake_hub import FakeHub, fake_hub

LLM = "org/tiny-llm"
VLM = "org/tiny-vlm"
CUSTOM = "org/custom-lm"


@pytest.fixture
def hub(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, tiny_llm_dir: Path) -> Iterator[FakeHub]:
    """The fake hub with the tiny LM at `main`, huggingface_hub pointed at it and caching
    under tmp_path/hf."""
    import huggingface_hub.constants as constants

    with fake_hub() as fake:
        fake.publish(LLM, tiny_llm_dir)
        monkeypatch.setattr(constants, "ENDPOINT", fake.endpoint)
        # hf_hub_download's URLs come from a template made of HF_ENDPOINT at import
        template = fake.endpoint + "/{repo_id}/resolve/{revision}/{filename}"
        monkeypatch.setattr(constants, "HUGGINGFACE_CO_URL_TEMPLATE", template)
        monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
        monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hf" / "hub"))
        yield fake


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("org/name", HubId("org/name", None)),
        ("Qwen/Qwen2.5-0.5B-Instruct@v1.0", HubId("Qwen/Qwen2.5-0.5B-Instruct", "v1.0")),
        ("org/name@", None),  # an empty revision
        ("org/name@ main", None),
        ("a/b/c", None),  # a path, not an id
        ("name", None),  # a config name
        ("configs/qwen3-8b.yaml", None),  # a config file
        ("org/na..me", None),  # huggingface_hub's own rules refuse it
        ("../x", None),
    ],
)
def test_what_is_a_hub_id(text: str, expected: HubId | None) -> None:
    assert parse_hub_id(text) == expected


def test_a_hub_id_is_the_commit_its_revision_names_loaded_from_its_snapshot(
    hub: FakeHub, tmp_path: Path, tiny_llm_dir: Path
) -> None:
    commit = hub.commits[(LLM, "main")]
    cfg = resolve_model("hf", f"{LLM}@main")
    assert (cfg.name, cfg.repo, cfg.revision, cfg.engine) == (LLM, LLM, commit, "hf")
    snapshot = Path(str(cfg.snapshot))
    assert cfg.source == str(snapshot) and snapshot.is_relative_to(tmp_path / "hf")
    for name in ("config.json", "model.safetensors", "tokenizer.json", "chat_template.jinja"):
        assert (snapshot / name).read_bytes() == (tiny_llm_dir / name).read_bytes(), name
    config = json.loads((tiny_llm_dir / "config.json").read_text())
    assert (cfg.modality, cfg.setups) == ("text", ["text"])
    assert cfg.max_model_len == config["max_position_embeddings"] == MAX_POSITIONS
    assert cfg.weights == "random"  # the tiny model's provenance.json says so
    assert not cfg.trust_remote_code


def test_vllm_gets_the_local_snapshot_and_the_pinned_commit(hub: FakeHub) -> None:
    """The config handed to Ray's vLLM processor, built without starting vLLM."""
    from pipelines.engines.stages.vllm_config import processor_config

    cfg = resolve_model("vllm", LLM)  # no revision: main
    commit = hub.commits[(LLM, "main")]
    asked = len(hub.requests)
    config = processor_config(cfg, 1, 16, has_images=False)
    assert config.model_source == cfg.snapshot
    assert (config.engine_kwargs["revision"], config.engine_kwargs["tokenizer_revision"]) == (
        commit,
        commit,
    )
    assert config.engine_kwargs["max_model_len"] == MAX_POSITIONS
    assert config.chat_template_stage["model_source"] == cfg.snapshot  # the same files
    assert len(hub.requests) == asked  # the snapshot is all the stages need: no hub call


def test_a_vision_language_model_is_image_text_with_its_language_models_context(
    hub: FakeHub, tiny_vlm_dir: Path
) -> None:
    hub.publish(VLM, tiny_vlm_dir, revision="v1")
    cfg = resolve_model("hf", f"{VLM}@v1")
    config = json.loads((tiny_vlm_dir / "config.json").read_text())
    assert "vision_config" in config
    assert (cfg.modality, cfg.setups) == ("image-text", ["text", "dotted", "full"])
    assert cfg.max_model_len == config["text_config"]["max_position_embeddings"]


def _custom(src: Path, dest: Path) -> Path:
    shutil.copytree(src, dest)
    config = json.loads((dest / "config.json").read_text())
    config["model_type"] = "geosee_custom"  # a type transformers lacks
    config["auto_map"] = {"AutoModelForCausalLM": "modeling_custom.CustomForCausalLM"}
    (dest / "config.json").write_text(json.dumps(config))
    return dest


def test_remote_code_needs_the_flag_and_is_refused_before_the_weights(
    hub: FakeHub, tiny_llm_dir: Path, tmp_path: Path
) -> None:
    hub.publish(CUSTOM, _custom(tiny_llm_dir, tmp_path / "custom"))
    with pytest.raises(ModelConfigError) as refused:
        resolve_model("hf", CUSTOM)
    message = str(refused.value)
    assert CUSTOM in message and "--trust-remote-code" in message
    assert len(message.splitlines()) == 1
    assert not any(r.endswith("model.safetensors") for r in hub.requests)  # no weights fetched
    cfg = resolve_model("hf", CUSTOM, trust_remote_code=True)
    assert cfg.trust_remote_code and Path(str(cfg.snapshot), "model.safetensors").is_file()


def test_a_config_name_or_a_local_folder_wins_over_a_hub_id(
    hub: FakeHub, tmp_path: Path, tiny_llm_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    shutil.copytree(tiny_llm_dir, tmp_path / LLM)  # ./org/tiny-llm, spelled as the hub id
    asked = len(hub.requests)
    cfg = resolve_model("hf", LLM)
    assert (cfg.repo, cfg.revision, cfg.snapshot) == (
        str((tmp_path / LLM).resolve()),
        "local",
        None,
    )
    (tmp_path / "org" / "empty").mkdir()  # an existing folder that is no checkpoint
    with pytest.raises(ModelConfigError, match="not a local checkpoint directory"):
        resolve_model("hf", "org/empty")
    assert len(hub.requests) == asked  # neither asked the hub
    with pytest.raises(ModelConfigError, match="not a hub id"):
        resolve_model("hf", "qwen2.5-vl-7b-instrct")
    with pytest.raises(ModelConfigError, match="--trust-remote-code applies to"):
        resolve_model("hf", "tiny-llm", trust_remote_code=True)


def test_two_revisions_for_one_hub_id_are_refused(hub: FakeHub) -> None:
    with pytest.raises(ModelConfigError, match="name two revisions"):
        resolve_model("hf", f"{LLM}@main", revision="v2")
    commit = hub.commits[(LLM, "main")]
    assert resolve_model("hf", LLM, revision=commit).revision == commit  # a commit is one too


# -- end to end: a real `evaluate` process, HF_ENDPOINT and HF_HOME set -----------------------
TASK = "C-BCT-CT"


def _evaluate(
    items: Path, out: Path, endpoint: str, hf_home: Path
) -> subprocess.CompletedProcess[str]:
    argv = ["evaluate", "--items", str(items), "--engine", "hf", "--model", f"{LLM}@main",
            "--tasks", TASK, "--setups", "text", "--per-task", "1", "--out", str(out)]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(REPO), "HF_ENDPOINT": endpoint,
           "HF_HOME": str(hf_home), "HF_HUB_OFFLINE": "0"}  # fmt: skip
    return subprocess.run(
        [sys.executable, "-m", "pipelines", *argv],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=600,
        check=False,
    )


def _recorded(out: Path) -> dict[str, object]:
    """Where the run recorded the model's revision: settings.json, the run record,
    results.json and the result rows."""
    root = out / "noregeo" / "model=org__tiny-llm"
    (record,) = [json.loads(p.read_text()) for p in (root / "runs").glob("*.json")]
    rows = pq.read_table(next(root.glob("setup=text/*.parquet"))).to_pylist()
    return {
        "settings": json.loads((root / "settings.json").read_text())["revision"],
        "record": record["model"]["revision"],
        "snapshot": record["model"]["snapshot"],
        "results_json": json.loads((root / "results.json").read_text())["config"]["model"][
            "revision"
        ],
        "rows": sorted({r["revision"] for r in rows if r["engine_error"] is None}),
        "row_count": len(rows),
    }


def test_evaluate_records_the_commit_the_hub_served_and_refuses_a_moved_one(
    small_items: Path, tiny_llm_dir: Path, tmp_path: Path
) -> None:
    hf_home = tmp_path / "hf"
    with fake_hub() as hub:
        first = hub.publish(LLM, tiny_llm_dir)
        done = _evaluate(small_items, tmp_path / "run1", hub.endpoint, hf_home)
        assert done.returncode == 0, done.stderr[-3000:]
        seen = _recorded(tmp_path / "run1")
        assert seen.pop("snapshot") == str(
            hf_home / "hub" / "models--org--tiny-llm" / "snapshots" / first
        )
        assert seen == {k: first for k in ("settings", "record", "results_json")} | {
            "rows": [first],
            "row_count": 1,
        }
        # main moves to a new commit: it is what a run would now record, and the folder
        # holding the first commit's rows refuses to mix the two, in one line naming both.
        # (A second Ray run into a fresh --out, recording the second commit, was cut for
        # time: ~50 s at load 15; the refusal comes before Ray starts.)
        second = hub.publish(LLM, tiny_llm_dir, note="second commit")
        assert second != first
        refused = _evaluate(small_items, tmp_path / "run1", hub.endpoint, hf_home)
        assert refused.returncode == 2, refused.stderr[-3000:]
        lines = [line for line in refused.stderr.splitlines() if line.startswith("error:")]
        assert len(lines) == 1 and f"revision='{first}' (now '{second}')" in lines[0], lines
        snapshots = hf_home / "hub" / "models--org--tiny-llm" / "snapshots"
        assert sorted(p.name for p in snapshots.iterdir()) == sorted([first, second])
        assert _recorded(tmp_path / "run1")["record"] == first  # nothing of the refused run


def test_the_image_text_table_read_from_source_is_transformers_own() -> None:
    """checkpoint_files reads transformers' VLM table from its source (no model-code
    import); it is the table the module itself builds."""
    from transformers.models.auto.modeling_auto import MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES

    from pipelines.engines.models.checkpoint_files import image_text_table

    assert image_text_table() == dict(MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES)
    assert image_text_table()["qwen2_vl"] == "Qwen2VLForConditionalGeneration"
