"""The prompt canary (pipelines.engines.prompts.prompt_canary): its checks as pure functions, the
tiny LM through the real processor's stages (Ray's own chat-template and tokenize UDFs,
which need no vLLM), and `evaluate --engine vllm` stopping a broken template before any
engine or row. Image-text models (vLLM's prepare-multimodal stage): tests/vllm."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from actors.contract import image_part
from pipelines.cli import main
from pipelines.engines.models.model_schema import ModelConfig
from pipelines.engines.prompts.prompt_canary import (
    CanaryError,
    Expected,
    canary_rows,
    expected,
    failed_check,
    failure_line,
)
from pipelines.engines.prompts.requests import build_messages
from pipelines.engines.stages.canary_stage import run_canary
from pipelines.report.provenance import Record, canary_table

SYSTEM = "You are a careful geometer."
QUESTION = 'Points A=(2,1), B=(4,5). Is AB vertical? Answer as JSON: {"answer": "yes"}.'
GOOD = f"<|begin|><|system|>{SYSTEM}<|end|><|user|>{QUESTION}<|end|><|assistant|>"
TEXT = Expected("text", "item-0", (SYSTEM,), (QUESTION,), 0)
IMAGE = Expected("full", "item-0", (SYSTEM,), (QUESTION,), 1)
QWEN = "<|vision_start|><|image_pad|><|vision_end|>"
CFG = ModelConfig(name="tiny-broken", repo="/models/tiny", engine="vllm")


def test_a_good_text_prompt_passes() -> None:
    assert failed_check(GOOD, TEXT, None) is None
    # Whitespace is the template's business: trimmed, re-indented, split across lines.
    assert failed_check(GOOD.replace(" ", "\n  "), TEXT, None) is None


@pytest.mark.parametrize(
    ("decoded", "check"),
    [
        # Llama-3.x-style templates print a list of parts as it comes.
        (GOOD.replace(QUESTION, str([{"type": "text", "text": QUESTION}])), "no_repr"),
        # Ray hands nested lists over as numpy arrays: Jinja prints `<ndarray>`.
        (GOOD.replace(QUESTION, "<ndarray>").replace(SYSTEM, "<ndarray>"), "no_repr"),
        (GOOD.replace(QUESTION, json.dumps([{"type": "text", "text": QUESTION}])), "no_repr"),
        (GOOD.replace(f"<|system|>{SYSTEM}<|end|>", ""), "system_prompt"),
        (GOOD.replace(QUESTION, QUESTION[:20]), "question"),
    ],
)
def test_a_broken_text_prompt_names_its_check(decoded: str, check: str) -> None:
    failed = failed_check(decoded, TEXT, None)
    assert failed is not None and failed[0] == check, failed


def test_json_in_the_question_itself_is_no_repr() -> None:
    """The question's own `{"answer": ...}` is the question, not a leaked structure."""
    assert '{"' in QUESTION and failed_check(GOOD, TEXT, None) is None


def test_image_placeholders_follow_vllms_rule() -> None:
    with_one = GOOD.replace(QUESTION, QWEN + QUESTION)
    assert failed_check(with_one, IMAGE, [QWEN]) is None
    assert failed_check(GOOD, IMAGE, [QWEN]) == (
        "image_placeholders",
        f"0 x {QWEN!r} for 1 image(s); the model's rule wants 1",
    )
    twice = GOOD.replace(QUESTION, QWEN + QWEN + QUESTION)
    assert failed_check(twice, IMAGE, [QWEN])[0] == "image_placeholders"  # type: ignore[index]
    # A text row of an image-text model holds none; a text model is sent no image.
    assert failed_check(GOOD, TEXT, [QWEN]) is None
    assert failed_check(with_one, TEXT, [QWEN])[0] == "image_placeholders"  # type: ignore[index]
    assert failed_check(GOOD, IMAGE, None)[0] == "image_placeholders"  # type: ignore[index]
    # Numbered placeholders (Phi-3.5-vision's `<|image_1|>`): each image its own.
    two = Expected("full", "item-0", (SYSTEM,), (QUESTION,), 2)
    numbered = ["<|image_1|>", "<|image_2|>"]
    both = GOOD.replace(QUESTION, "<|image_1|><|image_2|>" + QUESTION)
    assert failed_check(both, two, numbered) is None
    assert failed_check(both.replace("<|image_2|>", "<|image_1|>"), two, numbered) is not None
    # No rule known (neither vLLM nor the processor names a placeholder): not guessed.
    assert failed_check(GOOD, IMAGE, [None]) is None


def test_expectations_come_from_the_rows_own_messages() -> None:
    png = b"\x89PNG fake"
    row = {"item_id": "t-1", "setup": "dotted", "messages": build_messages(SYSTEM, QUESTION, png)}
    assert expected(row) == Expected("dotted", "t-1", (SYSTEM,), (QUESTION,), 1)
    text = {
        "item_id": "t-2",
        "setup": "text",
        "messages": build_messages(SYSTEM, QUESTION, None, True),
    }
    assert expected(text) == Expected("text", "t-2", (SYSTEM,), (QUESTION,), 0)
    # A GeoBuild round: no setup column; the last user turn (feedback, a figure) is asked.
    turns = [
        *build_messages(SYSTEM, "Build it.", None),
        {"role": "assistant", "content": [{"type": "text", "text": "point : 0 0 -> A"}]},
        {"role": "user", "content": [image_part(png), {"type": "text", "text": "Missing: B"}]},
    ]
    got = expected({"problem_id": "p7", "messages": turns})
    assert got == Expected("image", "p7", (SYSTEM,), ("Missing: B",), 1)
    assert Expected.from_json(got.to_json()) == got


def test_canary_rows_are_the_first_few_of_each_setup() -> None:
    rows = [
        {"item_id": f"{s}-{i}", "setup": s, "messages": build_messages(SYSTEM, QUESTION, None)}
        for s in ("text", "full")
        for i in range(4)
    ]
    picked = canary_rows(rows, per_setup=2)
    assert [r["item_id"] for r in picked] == ["text-0", "text-1", "full-0", "full-1"]
    assert all(Expected.from_json(r["geosee_canary_expect"]).setup == r["setup"] for r in picked)


def test_a_failure_is_one_line_naming_the_check_and_the_config() -> None:
    line = failure_line(CFG, "no_repr", "a repr", TEXT, "<|begin|>\n" * 100)
    assert "\n" not in line and len(line) < 400
    assert line.startswith("prompt canary: check no_repr failed for model tiny-broken: a repr")
    assert "(setup text, request item-0, repo /models/tiny)" in line


def test_run_canary_stops_at_the_first_failing_row(monkeypatch: pytest.MonkeyPatch) -> None:
    """The driver side over rendered rows (the stages are faked here; below, they are real)."""
    from pipelines.engines.stages import canary_stage

    rows = [
        {"item_id": f"i{k}", "setup": "text", "messages": build_messages(SYSTEM, QUESTION, None)}
        for k in range(2)
    ]

    def rendered(decoded: list[str]) -> Any:
        def render(processor: Any, picked: list[dict[str, Any]]) -> list[Any]:
            exp = [Expected.from_json(r["geosee_canary_expect"]) for r in picked]
            # Out of order, as Ray may return them.
            results = [
                (e, {"decoded": d, "placeholders": None}) for e, d in zip(exp, decoded, strict=True)
            ]
            return results[::-1]

        return render

    monkeypatch.setattr(canary_stage, "render", rendered([GOOD, GOOD]))
    record = run_canary(None, CFG, rows)
    assert record["prompts"] == {"text": GOOD} and record["checked_rows"] == 2
    monkeypatch.setattr(canary_stage, "render", rendered([GOOD, GOOD.replace(SYSTEM, "")]))
    with pytest.raises(
        CanaryError,
        match=r"check system_prompt failed for model tiny-broken: .* \(setup text, request i1,",
    ):
        run_canary(None, CFG, rows)

    def fails(processor: Any, picked: list[dict[str, Any]]) -> list[Any]:
        raise ValueError(
            "Traceback ...\njinja2.exceptions.TemplateError: System role not supported"
        )

    monkeypatch.setattr(canary_stage, "render", fails)
    with pytest.raises(
        CanaryError,
        match=r"check renders failed for model tiny-broken: .*not supported \(repo /models/tiny\)$",
    ):
        run_canary(None, CFG, rows)


def test_an_image_model_without_a_placeholder_rule_is_recorded_unchecked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from pipelines.engines.stages import canary_stage

    png = b"\x89PNG fake"
    rows = [{"item_id": "i0", "setup": "full", "messages": build_messages(SYSTEM, QUESTION, png)}]

    def render(processor: Any, picked: list[dict[str, Any]]) -> list[Any]:
        exp = Expected.from_json(picked[0]["geosee_canary_expect"])
        return [(exp, {"decoded": GOOD, "placeholders": [None]})]

    monkeypatch.setattr(canary_stage, "render", render)
    record = run_canary(None, CFG, rows)
    assert record["unchecked"] == ["image_placeholders"]
    assert "image_placeholders" not in record["checks"] and "question" in record["checks"]


def test_the_report_shows_each_models_newest_canary_prompt() -> None:
    def record(prompt: str) -> Record:
        canary = {"checked_rows": 2, "prompts": {"text": prompt}}
        return Record("noregeo", "model=tiny", {"model": {"name": "tiny"}, "prompt_canary": canary})

    long = "x" * 200 + QUESTION + "y" * 200
    table = canary_table([record("old"), record(long), Record("noregeo", "model=o", {})])
    assert table.to_dicts() == [
        {
            "benchmark": "noregeo",
            "model": "tiny",
            "setup": "text",
            "rows checked": 2,
            "decoded prompt": f"{long[:160]} [...] {long[-160:]}",
        }
    ]
    assert canary_table([]).is_empty()


# -- the real stages ------------------------------------------------------------------------
NO_SYSTEM_TEMPLATE = (
    "{{ bos_token }}{%- for message in messages if message['role'] != 'system' -%}"
    "<|{{ message['role'] }}|>{{ message['content'] }}{{ eos_token }}{%- endfor -%}"
    "<|assistant|>"
)


def _with_template(model: Path, template: str, folder: Path) -> Path:
    """A copy of the tiny model whose chat template is `template`."""
    import shutil

    copy = folder / "broken"
    shutil.copytree(model, copy)
    (copy / "chat_template.jinja").write_text(template)
    return copy


def test_the_tiny_lm_passes_through_its_processors_own_stages(
    ray_local: Any, tiny_llm_dir: Path
) -> None:
    from pipelines.engines.stages.options import EngineOptions
    from pipelines.engines.stages.vllm_path import check_model_prompts

    cfg = ModelConfig(name="tiny", repo=str(tiny_llm_dir), engine="vllm")
    rows = [
        {
            "item_id": f"i{k}",
            "setup": "text",
            "messages": build_messages(SYSTEM, QUESTION, None, True),
        }
        | {"sampling_params": {"max_tokens": 8}}
        for k in range(3)
    ]
    record = check_model_prompts(cfg, EngineOptions(pool_size=2), rows)
    assert record["checked_rows"] == 2  # CANARY_ROWS of the one setup
    # Decoded from the tokenize stage's ids: the tiny tokenizer's own BOS, once.
    assert record["prompts"] == {"text": GOOD}
    # A list of parts, where the template wants a string: Ray hands it over as an array.
    parts = [r | {"messages": build_messages(SYSTEM, QUESTION, None, False)} for r in rows]
    with pytest.raises(
        CanaryError, match="check no_repr failed for model tiny: the prompt holds '<ndarray'"
    ):
        check_model_prompts(cfg, EngineOptions(), parts)


def test_the_stages_in_the_driver_get_the_rows_as_rays_actors_do(
    ray_local: Any, tiny_llm_dir: Path
) -> None:
    """A run on one node renders its canary in the driver (canary_stage.render_here): the
    same results as the same stages in Ray Data's actors (canary_stage.render), row for row,
    for lists of parts too, which Ray hands over as arrays (the tiny template prints them as
    they come: `<ndarray>`; handed over as lists, they printed as Python reprs)."""
    from pipelines.engines.stages import canary_stage
    from pipelines.engines.stages.options import EngineOptions
    from pipelines.engines.stages.vllm_path import build_vllm_processor

    cfg = ModelConfig(name="tiny", repo=str(tiny_llm_dir), engine="vllm")
    rows = [
        {
            "item_id": f"i{k}",
            "setup": setup,
            "messages": build_messages(SYSTEM, QUESTION, None, False),
        }
        | {"sampling_params": {"max_tokens": 8}}
        for k, setup in enumerate(["text", "text", "dotted"])
    ]
    processor = build_vllm_processor(cfg, EngineOptions())
    picked = canary_rows(rows)

    def by_row(results: list[Any]) -> list[Any]:
        return sorted(results, key=lambda pair: pair[0].request)

    here = by_row(canary_stage.render_here(processor, picked))
    assert here == by_row(canary_stage.render(processor, picked))
    assert [expect.request for expect, _ in here] == ["i0", "i1", "i2"]
    for _, result in here:
        assert "<ndarray>" in result["decoded"], result["decoded"]


def test_evaluate_stops_a_broken_template_before_its_engine(
    ray_local: Any,
    small_items: Path,
    tiny_llm_dir: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Exit 2 with one line naming the check and the model, before the engine stage is built.
    This machine has no GPU, whose refusal comes first (test_engines_e2e): the GPU check
    passes here as on a GPU cluster."""
    import pipelines.engines.stages.vllm_path as vllm_path

    monkeypatch.setattr(vllm_path, "check_gpus", lambda *_, **__: None)
    broken = _with_template(tiny_llm_dir, NO_SYSTEM_TEMPLATE, tmp_path)
    out = tmp_path / "out"
    args = ["evaluate", "--items", str(small_items), "--engine", "vllm", "--model", str(broken)]
    assert main([*args, "--tasks", "C-BCT-CT,N-BCT-MT", "--out", str(out)]) == 2
    # Ray's own log lines may come first (its model downloader's "No cloud storage mirror").
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error:")]
    assert len(err) == 1, err
    assert f"prompt canary: check system_prompt failed for model {broken.name}: " in err[0]
    assert list(out.rglob("*.parquet")) == [] and list(out.rglob("settings.json")) == []


def test_geobuild_stops_a_broken_template_before_its_engine(
    ray_local: Any,
    tiny_llm_dir: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """GeoBuild's first round through the canary: the same one line, exit 2, nothing written
    (no settings, no run record, no round). The GPU check passes, as on a GPU cluster."""
    import pipelines.cli
    import pipelines.engines.stages.vllm_path as vllm_path
    from tests.conftest import SHARED

    monkeypatch.setattr(vllm_path, "check_gpus", lambda *_, **__: None)

    monkeypatch.setitem(pipelines.cli.COMMANDS, "geobuild", ("pipelines.geobuild.loop", "loop"))
    broken = _with_template(tiny_llm_dir, NO_SYSTEM_TEMPLATE, tmp_path)
    out = tmp_path / "out"
    args = ["geobuild", "--dataset", str(SHARED / "geobuildbench"), "--engine", "vllm"]
    args += ["--model", str(broken), "--first", "1", "--max-rounds", "1", "--out", str(out)]
    assert main(args) == 2
    # Ray's own log lines may come first (its model downloader's "No cloud storage mirror").
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error:")]
    assert len(err) == 1, err
    assert f"prompt canary: check system_prompt failed for model {broken.name}: " in err[0]
    assert [p for p in out.rglob("*") if p.is_file() and p.suffix != ".lock"] == []
