"""The encoder registry: hf: towers of tiny VLMs (CLIP, SigLIP, Qwen2-VL) cut where
docs/probes.md says, --token-norm, one-trial grids through each tower, and refusals."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
import torch
import yaml

import probes.grid as grid
from probes.encoder import TINY_ARCH, OpenClipTower, load_encoder
from probes.towers import EncoderError, check_encoder, load_tower, parse_arch
from probes.towers.hf import _patchify
from probes.towers.tiny import WIDTH, build_qwen2_vl, build_siglip

torch.set_num_threads(1)
CONFIGS = Path(__file__).resolve().parents[2] / "configs" / "probes"


@pytest.fixture(scope="module")
def siglip_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny SigLIP vision model with its image processor."""
    return build_siglip(tmp_path_factory.mktemp("siglip"))


@pytest.fixture(scope="module")
def qwen_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny Qwen2-VL model (patch merger, dynamic resolution) with its image processor."""
    return build_qwen2_vl(tmp_path_factory.mktemp("qwen2vl"))


def _images(n: int = 2, size: int = 32, seed: int = 0) -> torch.Tensor:
    return torch.randn(n, 3, size, size, generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize(
    ("arch", "parsed"),
    [
        ("ViT-B-32", ("open_clip", "ViT-B-32")),
        ("open_clip:ViT-B-32", ("open_clip", "ViT-B-32")),
        ("hf:Qwen/Qwen2-VL-2B-Instruct", ("hf", "Qwen/Qwen2-VL-2B-Instruct")),
    ],
)
def test_registry_reads_both_forms(arch: str, parsed: tuple[str, str]) -> None:
    assert parse_arch(arch) == parsed


def test_hf_without_a_name_is_refused() -> None:
    with pytest.raises(EncoderError, match="names no model"):
        parse_arch("hf:")


def test_open_clip_token_norm_switches_ln_post() -> None:
    torch.manual_seed(0)
    visual, mean, std = load_encoder(TINY_ARCH, None)
    images = _images(size=224)
    plain = OpenClipTower(visual, mean, std, "none").eval()(images)
    normed = OpenClipTower(visual, mean, std, "ln_post").eval()(images)
    assert not torch.allclose(plain, normed)
    ln_post = visual.get_submodule("ln_post")
    assert torch.allclose(ln_post(plain), normed, atol=1e-5)


def test_clip_tower_is_hf_last_hidden_state(tiny_vlm_dir: Path) -> None:
    from transformers import AutoModel

    tower = load_tower(f"hf:{tiny_vlm_dir}", None, "none").eval()
    clip = AutoModel.from_pretrained(tiny_vlm_dir).vision_tower.float().eval()
    images = _images()
    with torch.no_grad():
        expected = clip(pixel_values=images).last_hidden_state
        assert torch.allclose(tower(images), expected, atol=1e-5)
        normed = load_tower(f"hf:{tiny_vlm_dir}", None, "ln_post").eval()(images)
    # HF applies CLIP's post_layernorm to the pooled class token only; ln_post: every token
    assert torch.allclose(normed, clip.post_layernorm(expected), atol=1e-5)


def test_siglip_none_reads_before_its_post_layernorm(siglip_dir: Path) -> None:
    from transformers import SiglipVisionModel

    model = SiglipVisionModel.from_pretrained(siglip_dir).eval()
    images = _images()
    with torch.no_grad():
        hf_last = model(pixel_values=images).last_hidden_state  # SigLIP: after post_layernorm
        plain = load_tower(f"hf:{siglip_dir}", None, "none").eval()(images)
        normed = load_tower(f"hf:{siglip_dir}", None, "ln_post").eval()(images)
    assert plain.shape == (2, (32 // 8) ** 2, WIDTH)
    assert torch.allclose(normed, hf_last, atol=1e-5)
    assert torch.allclose(model.post_layernorm(plain), hf_last, atol=1e-5)


def test_qwen_patches_are_its_image_processor_layout(qwen_dir: Path) -> None:
    from transformers import AutoImageProcessor

    processor = AutoImageProcessor.from_pretrained(qwen_dir)
    pictures = torch.rand(2, 3, 32, 32, generator=torch.Generator().manual_seed(1))
    batch = processor(images=list(pictures), do_resize=False, do_rescale=False, return_tensors="pt")
    mean = torch.tensor(processor.image_mean).view(1, 3, 1, 1)
    std = torch.tensor(processor.image_std).view(1, 3, 1, 1)
    ours = _patchify((pictures - mean) / std, patch=4, merge=2, temporal=2)
    assert batch["image_grid_thw"].tolist() == [[1, 8, 8]] * 2
    assert torch.allclose(ours, batch["pixel_values"].float(), atol=1e-5)


def test_qwen_tower_stops_before_the_merger(qwen_dir: Path) -> None:
    from transformers import AutoModel

    tower = load_tower(f"hf:{qwen_dir}", None, "none").eval()
    visual = AutoModel.from_pretrained(qwen_dir).visual.float().eval()
    images = _images(size=32)
    pixels = _patchify(images, patch=4, merge=2, temporal=2)
    with torch.no_grad():
        out = visual(pixels, grid_thw=torch.tensor([[1, 8, 8]] * 2))
        tokens = tower(images)
        normed = load_tower(f"hf:{qwen_dir}", None, "ln_post").eval()(images)
    # one token per 4-px patch (8 x 8), not the 4 x 4 merged tokens the LLM sees
    assert tokens.shape == (2, 64, WIDTH) and out.pooler_output.shape[0] == 2 * 16
    assert torch.allclose(tokens.reshape(-1, WIDTH), out.last_hidden_state, atol=1e-5)
    assert torch.allclose(normed, visual.merger.ln_q(tokens), atol=1e-5)


def test_qwen_token_count_follows_the_image_size(qwen_dir: Path) -> None:
    tower = load_tower(f"hf:{qwen_dir}", None, "none")
    # 40 px rounds to 40 (a multiple of patch 4 x merge 2): 10 x 10 patches
    assert tower.token_shape(40) == (100, WIDTH)
    assert tower.token_shape(32) == (64, WIDTH)


def _one_trial_spec(arch: str, token_norm: str) -> grid.GridSpec:
    spec: dict[str, Any] = yaml.safe_load((CONFIGS / "smoke.yaml").read_text())
    spec.update(
        encoder={"arch": arch, "pretrained": None},
        tasks=["C-BCT-CT"],
        configs=["UF"],  # unfrozen: gradients reach the tower through the cut
        regimes=["separate"],
        token_norm=token_norm,
    )
    spec["data"].update(train=2, val=2, test=2, image_size=64)
    spec["train"].update(epochs=1, batch_size=2, eval_every=1)
    return grid.GridSpec.model_validate(spec)


@pytest.mark.parametrize(
    ("tower", "token_norm"), [("clip", "none"), ("siglip", "ln_post"), ("qwen", "none")]
)
def test_one_trial_grid_through_each_tower(
    tower: str, token_norm: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    folder = request.getfixturevalue({"clip": "tiny_vlm_dir"}.get(tower, f"{tower}_dir"))
    spec = _one_trial_spec(f"hf:{folder}", token_norm)
    (trial,) = grid.expand(spec)
    path = grid.run_trial(trial, tmp_path)
    rows = pq.read_table(path).to_pylist()
    assert path.parent == grid.encoder_dir(tmp_path, trial.arch, None)
    assert {r["token_norm"] for r in rows} == {token_norm}
    assert {r["arch"] for r in rows} == {f"hf:{folder}"} and rows[0]["pretrained"] == "main"
    history = json.loads(rows[0]["history_json"])
    assert rows[0]["steps"] >= 1 and history, "one training step ran"


@pytest.mark.parametrize("tower", ["clip", "siglip", "qwen"])
def test_an_unfrozen_tower_gets_gradients_through_the_cut(
    tower: str, request: pytest.FixtureRequest
) -> None:
    from probes.encoder import ProbeModel

    folder = request.getfixturevalue({"clip": "tiny_vlm_dir"}.get(tower, f"{tower}_dir"))
    model = ProbeModel(load_tower(f"hf:{folder}", None, "none"), frozen=False, image_size=32)
    model(_images()).sum().backward()
    grads = [p.grad for p in model.visual.parameters() if p.grad is not None]
    assert grads and any(g.abs().sum() > 0 for g in grads)


def test_token_norm_is_part_of_the_trial_id() -> None:
    none = grid.expand(_one_trial_spec("hf:x", "none"))[0]
    ln_post = dataclasses.replace(none, token_norm="ln_post")
    assert none.trial_id != ln_post.trial_id


def test_ln_post_trials_keep_their_ids_from_before_the_switch() -> None:
    # Every trial before --token-norm read ln_post tokens and hashed no token_norm field:
    # those result files must still count as done.
    trial = dataclasses.replace(grid.expand(_one_trial_spec(TINY_ARCH, "none"))[0])
    ln_post = dataclasses.replace(trial, token_norm="ln_post")
    fields = {k: v for k, v in dataclasses.asdict(trial).items() if k not in ("grid", "token_norm")}
    old = hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()[:10]
    assert ln_post.trial_id.endswith(old) and not trial.trial_id.endswith(old)


def test_paper_default_is_no_final_norm() -> None:
    for name in ("paper", "smoke", "vlm-towers"):
        assert grid.load_grid(CONFIGS / f"{name}.yaml").token_norm == "none"


def test_text_only_model_is_refused_before_loading(tiny_llm_dir: Path) -> None:
    with pytest.raises(EncoderError, match=f"hf:{tiny_llm_dir}: no vision tower"):
        check_encoder(f"hf:{tiny_llm_dir}", None)


def test_uncached_repo_without_hub_fails_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(EncoderError, match="hf:no-org/no-such-vlm: not cached.*HF_HUB_OFFLINE"):
        check_encoder("hf:no-org/no-such-vlm", None)


def test_model_config_supplies_trust_remote_code_and_revision() -> None:
    from probes.towers.hf import resolve_source

    by_repo = resolve_source("OpenGVLab/InternVL3-2B", None)
    assert by_repo.trust_remote_code and by_repo.path == "OpenGVLab/InternVL3-2B"
    assert resolve_source("internvl3-2b", None) == dataclasses.replace(by_repo, name="internvl3-2b")
    assert not resolve_source("Qwen/Qwen2-VL-2B-Instruct", None).trust_remote_code
    assert resolve_source("Qwen/Qwen2-VL-2B-Instruct", "abc123").revision == "abc123"
    assert not resolve_source("some/unlisted-repo", None).trust_remote_code


@pytest.mark.parametrize("which", ["text-only", "missing"])
def test_probe_refuses_a_tower_that_cannot_load(
    which: str, tiny_llm_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import pipelines.cli as cli

    model = str(tiny_llm_dir) if which == "text-only" else str(tmp_path / "no-such-model")
    out = tmp_path / "results"
    argv = ["probe", "--grid", str(CONFIGS / "smoke.yaml"), "--out", str(out)]
    assert cli.main([*argv, "--arch", f"hf:{model}", "--executor", "local"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"hf:{model}" in err[0]
    assert not out.exists()


def test_probe_token_norm_flag_reaches_the_trials(tmp_path: Path, monkeypatch) -> None:
    import pipelines.cli as cli
    import pipelines.probes.grid as command

    ran: list[grid.Trial] = []
    monkeypatch.setattr(command, "run_trial", lambda trial, out: ran.append(trial))
    argv = ["probe", "--grid", str(CONFIGS / "smoke.yaml"), "--out", str(tmp_path)]
    assert cli.main([*argv, "--executor", "local", "--token-norm", "ln_post"]) == 0
    assert ran and {t.token_norm for t in ran} == {"ln_post"}
