"""Every architecture the runnable vLLM configs use imports in vLLM 0.29.0 under the
transformers that cluster.yaml's setup installs; a failure is one line naming it."""

from __future__ import annotations

import re
import sys
from importlib.metadata import version
from pathlib import Path

import pytest
import yaml
from packaging.specifiers import SpecifierSet

from pipelines.engines.models.config_yaml import CONFIG_DIR, load_configs
from pipelines.sweep.engine_imports import architectures, import_failures, main
from tests.conftest import REPO


def _cluster_transformers() -> SpecifierSet:
    """The transformers requirement cluster.yaml's setup installs over the image's."""
    raw = yaml.safe_load((REPO / "cluster.yaml").read_text())
    (spec,) = re.findall(r"'transformers([^']*)'", " ".join(raw["setup_commands"]))
    return SpecifierSet(spec)


def test_every_architecture_imports_under_the_transformers_the_cluster_installs() -> None:
    installed = version("transformers")
    assert installed in _cluster_transformers(), (installed, str(_cluster_transformers()))
    used, unknown = architectures(load_configs(CONFIG_DIR))
    assert unknown == []
    # The Llava family is what transformers 5.17 breaks: it must be among the checked.
    assert {"LlavaForConditionalGeneration", "LlavaOnevisionForConditionalGeneration",
            "Mistral3ForConditionalGeneration"} <= set(used)  # fmt: skip
    assert import_failures(used) == []


def test_an_architecture_vllm_does_not_know_is_one_line_naming_it_and_its_configs() -> None:
    assert import_failures({"NoSuchForCausalLM": ["fake-a", "fake-b"]}) == [
        "NoSuchForCausalLM (fake-a, fake-b): not an architecture vLLM's ModelRegistry knows"
    ]


def test_transformers_without_pixtrals_rotary_embedding_fails_the_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The check cluster.yaml's GPU workers run, under a transformers whose modeling_pixtral
    lacks `PixtralRotaryEmbedding` as 5.17's does (measured with the 5.17.0 wheel: the same
    three architectures fail with this ImportError): exit 1, one line per Llava-family
    architecture naming the missing name and its configs, none for those that import."""
    import transformers.models.pixtral.modeling_pixtral as pixtral

    monkeypatch.delattr(pixtral, "PixtralRotaryEmbedding")
    for module in ("pixtral", "llava", "mistral3"):  # imported afresh; restored afterwards
        monkeypatch.delitem(sys.modules, f"vllm.model_executor.models.{module}", raising=False)
    models = tmp_path / "models"
    models.mkdir()
    for name in ("llava-1.5-7b", "mistral-small-3.1-24b-instruct", "qwen3-8b"):
        (models / f"{name}.yaml").write_text((CONFIG_DIR / f"{name}.yaml").read_text())
    assert main(["--models", str(models)]) == 1
    captured = capsys.readouterr()
    llava, mistral3, summary = captured.err.splitlines()
    assert llava.startswith("engine import: LlavaForConditionalGeneration (llava-1.5-7b): ")
    assert mistral3.startswith(
        "engine import: Mistral3ForConditionalGeneration (mistral-small-3.1-24b-instruct): "
    )
    assert all("PixtralRotaryEmbedding" in ln for ln in (llava, mistral3))
    assert summary.startswith("engine imports: 2 failure(s) under ")
    assert "Qwen3" not in captured.err and captured.out == ""
