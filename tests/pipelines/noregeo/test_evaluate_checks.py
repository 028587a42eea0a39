"""`evaluate` refuses runs that cannot work and fails runs that mostly did not.

Bad input (a context shorter than the prompts, custom code without trust, a bad
--max-error-rate) is one line on stderr, exit 2 and nothing written; a run whose rows are
mostly engine errors prints its rates and exits 1; max_tokens beyond the context is
clamped, not an error.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pytest

from pipelines.cli import main
from pipelines.engines.models.model_schema import ModelConfig
from pipelines.engines.models.tiny_model import build_tiny_model
from pipelines.engines.prompts.preflight import ContextReport
from pipelines.engines.prompts.requests import SamplingConfig
from pipelines.engines.stages.engine_stages import baseline_stage
from pipelines.engines.stages.options import LIGHT_CPUS
from pipelines.noregeo import evaluate as evaluate_module
from pipelines.noregeo import evaluate_pipeline as pipeline_module
from pipelines.noregeo.generate import generate
from pipelines.noregeo.run_settings import EvaluateSettings
from pipelines.noregeo.summarize import load_results

TASKS = ["C-BCT-CT", "N-BCT-MT"]
PER_TASK = 2


@pytest.fixture(scope="module")
def items(ray_local: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """2 tasks x 2 items, text setup only: 4 request rows."""
    out = tmp_path_factory.mktemp("few_items")
    generate(out, TASKS, per_task=PER_TASK, seed=0, setups=["text"], image_size=64)
    return out


@pytest.fixture(scope="module")
def tiny_64(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every NoReGeo prompt is longer than 64 tokens (the system prompt alone is)."""
    return build_tiny_model("llm", tmp_path_factory.mktemp("tiny_64"), max_positions=64)


def _evaluate(items: Path, engine: str, model: str, out: Path, *extra: str) -> int:
    args = ["evaluate", "--items", str(items), "--engine", engine, "--model", model]
    return main([*args, "--out", str(out), *extra])


# A run's own progress lines (pipelines.terminal.progress, stderr off a terminal): not messages.
PROGRESS_LINE = re.compile(r"^evaluate \S+: \d+(/\d+)? rows")


def _one_line(err: str) -> str:
    """The one message on stderr, progress lines aside."""
    lines = [line for line in err.strip().splitlines() if not PROGRESS_LINE.match(line)]
    assert len(lines) == 1, err
    return lines[0]


@pytest.mark.parametrize("rate", ["1.5", "-0.1", "nan"])
def test_bad_max_error_rate_is_refused_before_anything_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], rate: str
) -> None:
    # The items dir does not exist either: the rate is checked first.
    out = tmp_path / "results"
    code = _evaluate(tmp_path / "no-items", "oracle", "o", out, "--max-error-rate", rate)
    assert code == 2
    assert "--max-error-rate" in _one_line(capsys.readouterr().err)
    assert not out.exists()


def test_context_shorter_than_the_prompts_is_refused(
    items: Path, tiny_64: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "results"
    assert _evaluate(items, "hf", str(tiny_64), out) == 2
    line = _one_line(capsys.readouterr().err)
    assert "tiny_64" in line and "context is 64" in line
    assert not out.exists()


def test_counting_a_prompt_longer_than_the_context_prints_no_warning(
    tiny_64: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The preflight's one line stays one: transformers' "sequence length is longer" warning
    reached stderr through our log handler whenever transformers' loggers propagated (CI
    caught it, order-dependent), so the count asks the tokenizer not to warn."""
    import transformers

    from actors.hf_engine import PromptRenderer
    from pipelines.terminal import logs

    logs.configure()
    transformers.utils.logging.disable_default_handler()
    transformers.utils.logging.enable_propagation()
    try:
        renderer = PromptRenderer.load(str(tiny_64), None, False)
        capsys.readouterr()
        assert renderer.count_tokens([{"role": "user", "content": "word " * 300}]) > 64
        assert capsys.readouterr().err == ""
    finally:
        transformers.utils.logging.disable_propagation()
        transformers.utils.logging.enable_default_handler()


def test_custom_code_without_trust_is_refused(
    items: Path, tiny_llm_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    custom = tmp_path / "custom-lm"
    shutil.copytree(tiny_llm_dir, custom)
    config = json.loads((custom / "config.json").read_text())
    config |= {"model_type": "geosee_custom", "auto_map": {"AutoConfig": "cfg.CustomConfig"}}
    (custom / "config.json").write_text(json.dumps(config))
    out = tmp_path / "results"
    assert _evaluate(items, "hf", str(custom), out) == 2
    line = _one_line(capsys.readouterr().err)
    assert "custom-lm" in line and "--trust-remote-code" in line  # a folder: the flag
    assert not out.exists()


def test_template_that_refuses_the_system_role_is_refused_before_anything_runs(
    items: Path, tiny_llm_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.pipelines.engines.prompts.test_preflight import NO_SYSTEM_TEMPLATE, with_template

    model = with_template(tiny_llm_dir, tmp_path / "no-system-lm", NO_SYSTEM_TEMPLATE)
    out = tmp_path / "results"
    assert _evaluate(items, "hf", str(model), out) == 2
    line = _one_line(capsys.readouterr().err)
    assert "no-system-lm" in line and "cannot render a system message" in line
    assert not out.exists()


def test_default_max_tokens_is_clamped_to_a_short_context(
    items: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # 512 positions: a prompt (~280 tokens) plus the default 2,048 tokens would not fit; each
    # row gets what its prompt leaves instead of an engine error.
    model = build_tiny_model("llm", tmp_path / "tiny-512", max_positions=512)
    out = tmp_path / "results"
    assert _evaluate(items, "hf", str(model), out) == 0
    df = load_results(out)
    assert df.height == len(TASKS) * PER_TASK
    assert df["engine_error"].null_count() == df.height
    assert df["valid"].all()
    assert "engine errors 0 (0.0%)" in capsys.readouterr().out
    (record,) = (out / "noregeo" / "model=tiny-512" / "runs").glob("*.json")
    context = json.loads(record.read_text())["context"]
    assert context["context_length"] == 512
    assert context["max_tokens_clamped_to_context"] is True
    assert 0 < context["effective_max_tokens_for_longest_prompt"] < 2048


def test_a_run_of_engine_errors_exits_1_with_its_rates(
    items: Path,
    tiny_64: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Should the driver's count ever be fooled, the real engine's per-row errors still fail
    # the run: skip the pre-flight check and let every prompt overflow the 64 positions.
    def no_check(cfg: ModelConfig, prompts: Any) -> ContextReport:
        return ContextReport(None, "skipped by the test", None, 0)

    monkeypatch.setattr(evaluate_module, "check_model", no_check)
    out = tmp_path / "results"
    assert _evaluate(items, "hf", str(tiny_64), out) == 1
    captured = capsys.readouterr()
    assert "engine errors 4 (100.0%); invalid outputs 0 of 0 answered" in captured.out
    line = _one_line(captured.err)
    assert "4 of 4 rows (100.0%) are engine errors" in line and "64 positions" in line
    assert load_results(out)["engine_error"].null_count() == 0  # the rows are kept


def _half_errors(ds: Any, cfg: ModelConfig, opts: Any) -> Any:
    """The oracle, with every even-numbered item's row turned into an engine error."""

    def spoil(batch: pa.Table) -> pa.Table:
        bad = [int(i.rsplit("-", 1)[1]) % 2 == 0 for i in batch["item_id"].to_pylist()]
        texts = batch["generated_text"].to_pylist()
        columns = {
            "generated_text": [None if b else t for b, t in zip(bad, texts, strict=True)],
            "engine_error": ["RuntimeError: spoiled by the test" if b else None for b in bad],
        }
        for name, values in columns.items():
            index = batch.column_names.index(name)
            batch = batch.set_column(index, name, pa.array(values, pa.string()))
        return batch

    oracle = baseline_stage("oracle")(ds, cfg, opts)
    return oracle.map_batches(spoil, batch_format="pyarrow", num_cpus=LIGHT_CPUS)


def test_error_rate_threshold_covers_the_runs_rows(
    items: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setitem(pipeline_module.STAGES, "oracle", _half_errors)
    out = tmp_path / "results"
    # Half the rows: not more than 0.5, so the run passes.
    assert _evaluate(items, "oracle", "oracle", out) == 0
    printed = capsys.readouterr().out
    assert "engine errors 2 (50.0%); invalid outputs 0 of 2 answered" in printed
    _check_accuracy_line(printed, load_results(out))
    # Run again with a stricter bound: nothing new is written, yet the rows this run covers
    # (written by the first call) are still half errors.
    assert _evaluate(items, "oracle", "oracle", out, "--max-error-rate", "0.4") == 1
    captured = capsys.readouterr()
    assert "0 new rows" in captured.out
    assert "spoiled by the test" in _one_line(captured.err)
    df = load_results(out)
    assert df.height == 4 and df.filter(pl.col("engine_error").is_null())["valid"].all()
    # Each run record holds the whole settings model its command line built.
    records = sorted((out / "noregeo" / "model=oracle" / "runs").glob("*.json"))
    settings = [EvaluateSettings.model_validate(_settings_fields(r)) for r in records]
    assert sorted(s.max_error_rate for s in settings) == [0.4, 0.5]
    assert all(s.sampling == SamplingConfig() and s.tasks == TASKS for s in settings)


def _check_accuracy_line(printed: str, rows: pl.DataFrame) -> None:
    """evaluate's accuracy line against the rows recomputed here: per setup, the share of
    rows right with an engine error counted wrong (the paper's rule), and the row count."""
    [line] = [x for x in printed.splitlines() if x.startswith("accuracy % ")]
    shown = re.findall(r"(\w+) ([\d.]+) \[([\d.]+), ([\d.]+)\] of (\d+)", line)
    right = pl.col("correct").fill_null(False) & pl.col("engine_error").is_null()
    expected = rows.group_by("setup").agg(right.mean().alias("acc"), pl.len().alias("n"))
    assert len(shown) == expected.height > 0, line
    for setup, acc, low, high, n in shown:
        [(want, count)] = expected.filter(setup=setup).select("acc", "n").iter_rows()
        assert float(acc) == round(100 * want, 1) and int(n) == count, line
        assert float(low) <= float(acc) <= float(high), line


def _settings_fields(record: Path) -> dict[str, Any]:
    """The EvaluateSettings fields of a run record (which holds more beside them)."""
    fields = json.loads(record.read_text())
    return {name: fields[name] for name in EvaluateSettings.model_fields}


def test_a_missing_api_key_is_refused_before_ray_starts(
    items: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    started: list[object] = []
    monkeypatch.setattr(
        "pipelines.engines.session.ray_session.ensure_ray", lambda *a: started.append(a)
    )
    out = tmp_path / "results"
    assert _evaluate(items, "http", "gpt-4.1", out) == 2
    assert "$OPENAI_API_KEY, which is not set" in _one_line(capsys.readouterr().err)
    assert started == [] and not out.exists()
