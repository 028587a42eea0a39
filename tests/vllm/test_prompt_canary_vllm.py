"""The prompt canary with vLLM's prepare-multimodal stage: a tiny Qwen2-VL whose template
lost its `<|vision_start|><|image_pad|><|vision_end|>` is caught; the canary of a run on one
node (its stages in the driver) decodes what Ray's actors decode; and a sweep that lists a
model whose template fails the canary as failed and goes on with the next.

No engine is loaded here: the canary runs before the engine stage. The tiny models passing
their canary (Qwen2-VL, Idefics3, Llava-1.5 and the tiny LM, each inside a whole
`evaluate --engine vllm`, which always runs it): test_vlm_vllm.py, test_evaluate_vllm.py."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import pipelines.cli as cli
from pipelines.engines.models.model_resolution import resolve_model
from pipelines.engines.prompts.prompt_canary import EXPECT, CanaryError
from pipelines.engines.prompts.requests import SamplingConfig, add_requests
from pipelines.engines.stages.options import EngineOptions
from pipelines.engines.stages.vllm_path import check_model_prompts
from tests.conftest import REPO
from tests.tiny_vlms import BUILDERS

pytestmark = pytest.mark.timeout(900)

QWEN_IMAGE = "<|vision_start|><|image_pad|><|vision_end|>"


def _rows(items: Path, cfg: Any) -> list[dict[str, Any]]:
    """Request rows of one task in every setup the model takes, as evaluate builds them."""
    table = pq.read_table(items / "part-N-BCT-MT.parquet")
    text_only = cfg.modality == "text"
    if text_only:
        table = table.filter(pc.equal(table["setup"], "text"))
    rows = add_requests(table, cfg.repo, cfg.revision, SamplingConfig(), text_only=text_only)
    return rows.to_pylist()


@pytest.fixture(scope="module")
def qwen(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return BUILDERS["qwen2-vl"](tmp_path_factory.mktemp("qwen2-vl"))


def test_a_template_without_the_image_placeholder_is_caught(
    vllm_ray: Any, few_items: Path, qwen: Path, tmp_path: Path
) -> None:
    broken = tmp_path / "qwen-no-image"
    shutil.copytree(qwen, broken)
    for path in broken.glob("*"):
        if path.suffix in (".json", ".jinja") and QWEN_IMAGE in path.read_text():
            text = path.read_text().replace(QWEN_IMAGE, "")
            path.write_text(text)
    cfg = resolve_model("vllm", str(broken), None, False)
    with pytest.raises(CanaryError) as caught:
        check_model_prompts(cfg, EngineOptions(), _rows(few_items, cfg))
    line = str(caught.value)
    want = f"check image_placeholders failed for model {cfg.name}: 0 x {QWEN_IMAGE!r} for 1 image"
    assert "\n" not in line and want in line, line


@pytest.mark.parametrize("model", ["qwen2-vl", "llm"])
def test_the_stages_in_the_driver_decode_what_rays_actors_decode(
    vllm_ray: Any,
    few_items: Path,
    qwen: Path,
    tiny_llm_dir: Path,
    model: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The canary of a run on one node runs the processor's stages in this process
    (canary_stage.render_here), with rows converted by Ray Data's block code between them:
    the same decoded prompts and placeholders, row for row, as the same stages in Ray Data's
    actors (canary_stage.render), for image and text rows; and no Ray pipeline is run."""
    from pipelines.engines.prompts.prompt_canary import canary_rows
    from pipelines.engines.stages import canary_stage
    from pipelines.engines.stages.vllm_path import build_vllm_processor

    cfg = resolve_model("vllm", str(qwen if model == "qwen2-vl" else tiny_llm_dir), None, False)
    opts = EngineOptions()
    picked = canary_rows(_rows(few_items, cfg))
    assert {json.loads(r[EXPECT])["setup"] for r in picked} == (
        {"text", "dotted", "full"} if model == "qwen2-vl" else {"text"}
    )
    processor = build_vllm_processor(cfg, opts)

    def by_row(results: list[Any]) -> list[Any]:
        return sorted(results, key=lambda pair: (pair[0].setup, pair[0].request))

    in_actors = by_row(canary_stage.render(processor, picked))
    here = by_row(canary_stage.render_here(processor, picked))
    assert here == in_actors
    assert all(result["decoded"] for _, result in here)

    def no_ray_pipeline(*args: Any) -> None:
        raise AssertionError("the canary of a run on one node started Ray actors")

    monkeypatch.setattr(canary_stage, "render", no_ray_pipeline)
    record = check_model_prompts(cfg, opts, _rows(few_items, cfg))
    assert record["checked_rows"] == len(picked)


def test_the_sweep_lists_a_model_failing_its_canary_and_runs_the_next(
    vllm_ray: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pipelines.engines.models.tiny_model import build_tiny_model

    monkeypatch.setitem(cli.COMMANDS, "sweep", ("pipelines.sweep.run", "run the model sweep"))
    tiny = build_tiny_model("llm", tmp_path / "tiny")
    # The system turn skipped: the model would answer questions without their instructions.
    (tiny / "chat_template.jinja").write_text(
        "{{ bos_token }}{%- for message in messages if message['role'] != 'system' -%}"
        "<|{{ message['role'] }}|>{{ message['content'] }}{{ eos_token }}{%- endfor -%}"
        "<|assistant|>"
    )
    models = tmp_path / "models"
    models.mkdir()
    shutil.copy(REPO / "configs" / "models" / "local" / "oracle.yaml", models)
    (models / "tiny-broken.yaml").write_text(
        "name: tiny-broken\n"
        f"repo: {tiny}\n"
        "revision: local\nengine: vllm\nmodality: text\nsetups: [text]\n"
        "max_model_len: 2048\ndtype: float32\nlocal: true\nweights: random\n"
    )
    out = tmp_path / "results"
    args = ["sweep", "--models", str(models), "--only", "tiny-broken,oracle", "--out", str(out)]
    assert cli.main([*args, "--tasks", "C-BCT-CT", "--per-task", "1"]) == 1
    states = json.loads((out / "sweep" / "status.json").read_text())["states"]
    assert states["oracle"] == "done", states
    failed = states["tiny-broken"]
    # Ray names the error's class by its module; the check and the model come first after.
    want = "CanaryError: prompt canary: check system_prompt failed for model tiny-broken: "
    assert failed.startswith("failed: ") and want in failed, failed
    assert not list((out / "noregeo" / "model=tiny-broken").rglob("*.parquet"))
