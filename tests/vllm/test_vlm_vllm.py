"""Tiny random image-text models of four families (Qwen2-VL; Idefics3, SmolVLM's
architecture; Llava-1.5; an original-layout LLaVA-1.5 checkpoint as G-LLaVA publishes it,
given as its folder and converted by `evaluate` itself, with its vicuna_v1 conversation as the
chat template) through `evaluate --engine vllm`: the project's own vllm stage on vLLM's CPU
build.

One engine load per family (a module-scoped run): 5 tasks x 2 items in the text, dotted and
full setups. Per row, the prompt token ids vLLM received (Ray's `prompt_token_ids`, kept by a
test-only wrapper around the stage's postprocess) decode to a prompt holding the item's
question, and hold exactly the family's image placeholder count (recomputed from the image
size in `tiny_vlms.expected_image_tokens`), 0 in text rows. Needs torchvision in .venv-vllm
(`scripts/torchvision_cpu.sh`, part of `make setup-vllm`).
"""

from __future__ import annotations

import io
import json
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from pipelines.cli import main
from pipelines.engines.models import llava_convert
from pipelines.noregeo.summarize import load_results
from tests.tiny_llava_original import build_llava_original
from tests.tiny_vlms import BUILDERS, IMAGE_TOKEN, expected_image_tokens

FAMILIES: dict[str, Callable[[Path], Path]] = {**BUILDERS, "llava-original": build_llava_original}

# Four engine loads of 60-90 s each on an idle 2-core machine, several minutes when busy.
pytestmark = pytest.mark.timeout(2400)

# One task of each answer type and category mix (choice, number, point).
TASKS = ("C-BCT-CT", "C-SYM-SST", "N-BCT-MT", "N-ECL-SLT", "U-PAP-PT")


def _keep_prompt_ids(ids_dir: Path) -> Callable[..., Any]:
    """Wraps `vllm_path.vllm_postprocess` so each row's prompt ids also land in `ids_dir` (the
    stage runs in Ray workers on this machine; the results keep only their digest)."""
    from pipelines.engines.stages import vllm_path

    original = vllm_path.vllm_postprocess

    def wrapped(*args: Any, **kwargs: Any) -> Callable[[dict[str, Any]], dict[str, Any]]:
        inner = original(*args, **kwargs)  # whatever the stage passes it, passed on

        def postprocess(row: dict[str, Any]) -> dict[str, Any]:
            ids = [int(i) for i in row["prompt_token_ids"]]
            record = {"item_id": row["item_id"], "setup": row["setup"], "ids": ids}
            (ids_dir / f"{uuid.uuid4().hex}.json").write_text(json.dumps(record))
            return inner(row)

        return postprocess

    return wrapped


def _loadable(family: str, model: Path) -> Path:
    """The folder the engines load: the original layout's conversion (cached: made already
    by `evaluate` when it ran first), else the folder as built."""
    if family != "llava-original":
        return model
    return llava_convert.converted_folder(model, str(model))


@pytest.fixture(scope="module", params=sorted(FAMILIES))
def family_run(
    request: pytest.FixtureRequest,
    vllm_ray: Any,
    few_items: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[str, Path, pl.DataFrame, dict[tuple[str, str], list[int]]]]:
    """One engine load per family: its rows and the prompt ids vLLM received per row."""
    from pipelines.engines.stages import vllm_path

    family = request.param
    model = FAMILIES[family](tmp_path_factory.mktemp(family))
    converted = tmp_path_factory.mktemp(f"{family}_converted")
    ids_dir = tmp_path_factory.mktemp(f"{family}_ids")
    out = tmp_path_factory.mktemp(f"{family}_out")
    args = ["evaluate", "--items", str(few_items), "--engine", "vllm", "--model", str(model)]
    args += ["--tasks", ",".join(TASKS), "--setups", "text,dotted,full"]
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(llava_convert.CACHE_ENV, str(converted))
        patch.setattr(vllm_path, "vllm_postprocess", _keep_prompt_ids(ids_dir))
        assert main([*args, "--max-tokens", "48", "--out", str(out)]) == 0
        model = _loadable(family, model)
    # Every vllm evaluate first checks its prompts (pipelines.engines.prompts.prompt_canary): the
    # family's real template passed, one placeholder per image by vLLM's rule.
    (record,) = out.glob("noregeo/model=*/runs/*.json")
    canary = json.loads(record.read_text())["prompt_canary"]
    assert set(canary["prompts"]) == {"text", "dotted", "full"}, canary
    assert "image_placeholders" in canary["checks"] and canary["unchecked"] == [], canary
    records = [json.loads(p.read_text()) for p in ids_dir.glob("*.json")]
    ids = {(r["item_id"], r["setup"]): r["ids"] for r in records}
    assert len(ids) == len(records)  # one record per row: none ran twice
    yield family, model, load_results(out), ids


def _image_sizes(items: Path) -> dict[tuple[str, str], tuple[int, int]]:
    from PIL import Image

    table = pl.read_parquet(items / "part-*.parquet", columns=["item_id", "setup", "image"])
    return {
        (row["item_id"], row["setup"]): Image.open(io.BytesIO(row["image"])).size
        for row in table.filter(pl.col("image").is_not_null()).iter_rows(named=True)
    }


def test_every_row_is_valid_with_no_engine_error(family_run: Any) -> None:
    _, _, df, ids = family_run
    assert df.height == len(TASKS) * 2 * 3
    assert set(df["task"]) == set(TASKS)
    assert set(df["setup"]) == {"text", "dotted", "full"}
    assert df["engine_error"].null_count() == df.height
    assert df.filter(~pl.col("valid"))["generated_text"].to_list() == []
    assert set(ids) == set(zip(df["item_id"], df["setup"], strict=True))


def test_vllm_got_the_question_and_the_image_placeholders(family_run: Any, few_items: Path) -> None:
    """Per row: the question in the decoded prompt, and exactly the expected number of image
    placeholder tokens (0 in text rows); the recorded ids are the row's own (its digest)."""
    from transformers import AutoTokenizer

    from actors.contract import prompt_ids_digest

    family, model, df, ids = family_run
    tokenizer = AutoTokenizer.from_pretrained(model)
    image_id = tokenizer.convert_tokens_to_ids(IMAGE_TOKEN[family])
    sizes = _image_sizes(few_items)
    for row in df.iter_rows(named=True):
        key = (row["item_id"], row["setup"])
        prompt_ids = ids[key]
        assert prompt_ids_digest(prompt_ids) == row["prompt_ids_sha256"], key
        assert row["num_input_tokens"] == len(prompt_ids), key
        decoded = tokenizer.decode(prompt_ids)
        assert row["prompt"].strip() in decoded, (key, decoded)
        want = 0 if row["setup"] == "text" else expected_image_tokens(family, *sizes[key])
        assert prompt_ids.count(image_id) == want, (key, decoded)


# Square, tiny (scaled up), large (scaled down), odd and elongated images.
SIZES = [(128, 128), (32, 32), (448, 448), (100, 60), (97, 131), (200, 50)]


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_placeholder_rule_matches_the_families_processor(
    family: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`expected_image_tokens` agrees with transformers' processor of the family (the real
    artifact vLLM calls) on sizes that take each branch of its resize rule."""
    from PIL import Image
    from transformers import AutoProcessor

    monkeypatch.setenv(llava_convert.CACHE_ENV, str(tmp_path / "converted"))
    processor = AutoProcessor.from_pretrained(
        _loadable(family, FAMILIES[family](tmp_path / "model"))
    )
    messages = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "q"}]}]
    text = processor.apply_chat_template(messages, add_generation_prompt=True)
    image_id = processor.tokenizer.convert_tokens_to_ids(IMAGE_TOKEN[family])
    for width, height in SIZES:
        image = Image.new("RGB", (width, height), "white")
        ids = processor(text=[text], images=[image], return_tensors="pt")["input_ids"][0]
        got = int((ids == image_id).sum())
        assert got == expected_image_tokens(family, width, height), (width, height)
