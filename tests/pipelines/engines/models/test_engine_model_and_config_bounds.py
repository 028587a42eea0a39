"""Issue 38: `--engine` and `--model` agree, and a config file is bounded, before anything
is written or Ray starts: one line, exit 2."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from pipelines.cli import main
from pipelines.engines.models.config_yaml import load_config
from pipelines.engines.models.model_resolution import resolve_model
from pipelines.engines.models.model_schema import ModelConfigError
from pipelines.noregeo.generate import MANIFEST
from tests.conftest import REPO

LOCAL = REPO / "configs" / "models" / "local"


@pytest.fixture
def no_ray(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Any start of Ray fails the test (a refusal must come before it)."""
    import ray

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("Ray was started")

    monkeypatch.setattr(ray, "init", refuse)
    yield


@pytest.fixture
def items(tmp_path: Path) -> Path:
    """An item folder that is never read: the model fails first."""
    folder = tmp_path / "items"
    folder.mkdir()
    (folder / MANIFEST).write_text('{"tasks": ["C-BCT-CT"], "setups": ["text"]}')
    (folder / "part-C-BCT-CT.parquet").write_bytes(b"")
    return folder


def _refused(items: Path, engine: str, model: str, capsys: pytest.CaptureFixture[str]) -> str:
    """evaluate's one-line refusal of `--engine engine --model model`; nothing written."""
    out = items.parent / "results"
    args = ["evaluate", "--items", str(items), "--engine", engine, "--model", model]
    assert main([*args, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("error: "), err
    assert not out.exists()
    return err


@pytest.mark.parametrize(
    ("engine", "model"),
    [
        ("random", "oracle"),  # random answers stored as the oracle's
        ("oracle", "constant"),
        ("random", "gpt-4.1"),  # a baseline under an API model's name
        ("constant", str(LOCAL / "oracle.yaml")),
        ("hf", "random"),  # a baseline config given to a weights engine
        ("vllm", "oracle"),
        ("hf", "gpt-4.1"),
        ("http", "tiny-llm"),
    ],
)
def test_a_model_of_another_engine_is_refused_naming_both(
    items: Path, engine: str, model: str, capsys: pytest.CaptureFixture[str], no_ray: None
) -> None:
    err = _refused(items, engine, model, capsys)
    assert f"--engine {engine} and --model {model} disagree" in err


def test_a_yaml_path_must_be_a_config_for_a_baseline_too(
    items: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], no_ray: None
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: [unclosed\n")
    assert str(bad) in _refused(items, "random", str(bad), capsys)
    assert "no such config file" in _refused(items, "random", str(tmp_path / "gone.yml"), capsys)


def test_what_agrees_still_resolves() -> None:
    assert resolve_model("random", "random").engine == "random"
    assert resolve_model("random", "my-run").name == "my-run"  # a baseline takes a name
    constant = resolve_model("constant", str(LOCAL / "constant.yaml"))
    assert constant.name == "constant"  # the config's name, not its path
    assert resolve_model("vllm", "tiny-llm").engine == "vllm"  # hf and vllm share configs


@pytest.mark.parametrize(
    "text",
    [
        "[" * 5000,  # a RecursionError traceback thousands of lines long before
        "name: x\nrepo: r\nengine_kwargs: " + "{a: " * 40 + "1" + "}" * 40 + "\n",
        "name: x\nrepo: r\nengine_kwargs:\n" + "".join("  " * i + " a:\n" for i in range(1, 30)),
        "name: x\nrepo: &r r\nchat_template_notes: *r\n",  # aliases build exponential trees
        "name: x\nrepo: r\nmax_model_len: 100000000000000000000000000\n",
        "name: x\nrepo: r\nmax_model_len: 1.0e+26\n",
        "name: x\nrepo: r\ntensor_parallel_size: 100000\n",
        "name: x\nrepo: r\nparams_b: .inf\n",
        "name: x\nrepo: r\nthinking_max_tokens: 99999999999\n",
        "name: x\nrepo: r\nsampling: {temperature: 1.0e+300}\n",
        "name: x\nrepo: r\nsampling: {top_p: .nan}\n",
        "name: ../../etc\nrepo: r\n",
        "name: a b\nrepo: r\n",
        "name: a/b/c\nrepo: r\n",
        "name: ..\nrepo: r\n",
    ],
)
def test_a_config_past_a_bound_is_one_line_naming_the_file(tmp_path: Path, text: str) -> None:
    path = tmp_path / "x.yaml"
    path.write_text(text)
    with pytest.raises(ModelConfigError) as err:
        load_config(path)
    assert str(path) in str(err.value) and len(str(err.value)) < 400


def test_a_ten_megabyte_config_is_refused_by_its_size(
    items: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], no_ray: None
) -> None:
    big = tmp_path / "big.yaml"
    big.write_text("name: big\nrepo: r\nengine: hf\nchat_template_notes: " + "a" * 10_000_000)
    assert "bytes, more than the" in _refused(items, "hf", str(big), capsys)


def test_a_deep_config_stops_evaluate_in_one_line(
    items: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], no_ray: None
) -> None:
    deep = tmp_path / "deep.yaml"
    deep.write_text("[" * 20000)
    assert "nested more than" in _refused(items, "hf", str(deep), capsys)
