"""An original-layout LLaVA-1.5 checkpoint written out in the llava-hf layout (the checks and
the name table: `llava_original`), once, into a cache folder named by what it was made from.

`prepare` is the one call the runs make: for a config with `layout: llava-original` (or a
checkpoint folder detected as one) it returns the config with `snapshot` pointing at the
converted folder, converting first if no finished conversion is cached; everything after it
(the pre-flight check, the canary, the mirrors of a cluster run, the engines) sees an ordinary
llava-hf checkpoint. A local folder is converted where it is; a hub checkpoint is fetched for
its conversion within the node's disk and deleted after (llava_hub).

The tensors are streamed one shard at a time (a 13B checkpoint is 26 GB in bf16), each
written under its new name; only the two vocabulary matrices gain rows.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
from pathlib import Path
from typing import Any

from pipelines.engines.models.hub_model import HubCommit, HubError, HubId
from pipelines.engines.models.hub_model import resolve_commit as resolve_hub_commit
from pipelines.engines.models.llava_hub import hub_conversion
from pipelines.engines.models.llava_original import (
    CACHE_ENV,
    CONVERTER_VERSION,
    EMBED,
    HEAD,
    IMAGE_TOKEN,
    LAYOUT,
    RECORD,
    TEXT_FIELDS,
    LayoutError,
    Plan,
    load_tensors,
    plan,
    renamed,
    tower_name,
)
from pipelines.engines.models.model_schema import ModelConfig

log = logging.getLogger(__name__)


def cache_root() -> Path:
    """Where converted checkpoints are kept: $GEOSEE_CONVERTED_DIR, else beside the Hugging
    Face cache's snapshots (where the hf engine keeps its mirrors too)."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    from huggingface_hub.constants import HF_HUB_CACHE

    return Path(HF_HUB_CACHE) / "geosee-converted"


def _fingerprint(paths: list[Path]) -> list[tuple[str, int, int]]:
    """Name, size and mtime of each file: enough to tell a changed checkpoint apart without
    hashing gigabytes."""
    return [(str(p.resolve()), p.stat().st_size, p.stat().st_mtime_ns) for p in paths]


def conversion_key(p: Plan, origin: str) -> str:
    """The cache folder name of a local folder's conversion: its origin (the folder) and a
    digest of every input it reads and of the converter's version."""
    inputs = [p.folder / "config.json", *p.weights, *p.tower_weights]
    inputs += [p.tower / "config.json", p.tower / "preprocessor_config.json"]
    inputs += sorted(q for q in p.folder.glob("tokenizer*") if q.is_file())
    return _key(origin, [CONVERTER_VERSION, origin, p.conversation, _fingerprint(inputs)])


def hub_conversion_key(
    origin: str, conversation: str | None, tower: str | None, tower_revision: str | None
) -> str:
    """The cache folder name of a hub checkpoint's conversion (`origin`: `<repo>@<commit>`),
    known before anything is fetched: the original is deleted once converted
    (llava_hub), so its files cannot name it. The commit pins the checkpoint, its config
    (the tower it names) and its tokenizer (the default conversation); the rest is what the
    config asks for, with the files of a tower given as a folder. A tower named at no
    commit is the one fetched at the first conversion, as the mirror `<repo>@<commit>+llava-hf`
    already takes it (pin `vision_tower_revision` to change it)."""
    tower_files: list[Path] = []
    if tower and Path(tower).is_dir():
        folder = Path(tower)
        tower_files = [folder / n for n in ("config.json", "preprocessor_config.json")]
        tower_files += [f for f in folder.glob("*") if f.suffix in (".safetensors", ".bin")]
    inputs = [p for p in tower_files if p.is_file()]
    body = [CONVERTER_VERSION, origin, conversation, tower, tower_revision, _fingerprint(inputs)]
    return _key(origin, body)


def _key(origin: str, body: list[Any]) -> str:
    """`<origin, as a folder name>@<digest of body>`."""
    digest = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:16]
    slug = "".join(c if c.isalnum() or c in "-_." else "-" for c in origin)[-60:].strip("-.")
    return f"{slug}@{digest}"


def convert(p: Plan, dest: Path) -> Path:
    """`p`'s checkpoint converted into `dest` (kept if a finished conversion is there): a
    staging folder beside it, renamed into place once complete."""
    if (dest / RECORD).is_file():
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    _drop_stale_staging(dest)
    staging = dest.with_name(f"{dest.name}.{os.getpid()}.tmp")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir()
    try:
        _write(p, staging)
        staging.rename(dest)
    except OSError:
        shutil.rmtree(staging, ignore_errors=True)
        if (dest / RECORD).is_file():  # another process finished the same conversion first
            return dest
        raise
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return dest


def _drop_stale_staging(dest: Path) -> None:
    """Staging folders of interrupted conversions of `dest` (their process is gone)."""
    for old in dest.parent.glob(f"{dest.name}.*.tmp"):
        pid = old.name[len(dest.name) + 1 : -len(".tmp")]
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(old, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _write(p: Plan, out: Path) -> None:
    """Tokenizer and processor, weights, config, then the record (last: it marks a whole
    conversion)."""
    tokenizer, image_id = _tokenizer(p)
    rows = max(int(p.config["vocab_size"]), len(tokenizer))
    weight_map = _weights(p, out, rows)
    (out / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {}, "weight_map": weight_map}, indent=1), encoding="utf-8"
    )
    _config(p, rows, image_id).save_pretrained(out)
    processor = _processor(p, tokenizer)
    processor.save_pretrained(out)
    # transformers 5 nests the image processor in processor_config.json; loaders that read
    # only preprocessor_config.json (older transformers) find it there too.
    processor.image_processor.save_pretrained(out)
    for extra in ("generation_config.json", "provenance.json"):
        if (p.folder / extra).is_file():
            shutil.copyfile(p.folder / extra, out / extra)
    record = {
        "converter_version": CONVERTER_VERSION,
        "layout": LAYOUT,
        "source": str(p.folder),
        "vision_tower": str(p.tower),
        "conversation": p.conversation,
        "image_token_id": image_id,
        "vocab_rows": [int(p.config["vocab_size"]), rows],
        "do_pad": p.do_pad,
        "vision_feature_layer": p.select_layer,
        "vision_feature_select_strategy": p.strategy,
    }
    (out / RECORD).write_text(json.dumps(record, indent=1), encoding="utf-8")


def _tokenizer(p: Plan) -> tuple[Any, int]:
    """The checkpoint's tokenizer with `<image>` as a real token (llava-hf embeds the image
    token before splicing, so its id must be a row: tf-convert adds it the same way), and
    pad = unk where no pad is set (LLaVA train.py:903-908 for `--version v1`)."""
    from transformers import AddedToken, AutoTokenizer

    try:
        tokenizer = AutoTokenizer.from_pretrained(p.folder)
    except (OSError, ValueError, ImportError) as err:  # e.g. tokenizer.model without sentencepiece
        message = " ".join(str(err).split())[:200]
        raise LayoutError(f"{p.folder}: its tokenizer cannot be loaded ({message})") from err
    if IMAGE_TOKEN not in tokenizer.get_vocab():
        token = AddedToken(IMAGE_TOKEN, special=True, normalized=False)
        tokenizer.add_tokens([token], special_tokens=True)
    if tokenizer.pad_token is None and tokenizer.unk_token is not None:
        tokenizer.pad_token = tokenizer.unk_token
    image_id = tokenizer.convert_tokens_to_ids(IMAGE_TOKEN)
    assert isinstance(image_id, int)
    return tokenizer, image_id


def _weights(p: Plan, out: Path, rows: int) -> dict[str, str]:
    """Every shard renamed into `out` (one output shard per input shard, the tower last);
    the vocabulary matrices grown to `rows`. The weight map of the index."""
    from safetensors.torch import save_file

    total = len(p.weights) + 1
    weight_map: dict[str, str] = {}
    dropped = 0
    for number, path in enumerate(p.weights, start=1):
        tensors: dict[str, Any] = {}
        for key, tensor in load_tensors(path).items():
            name = renamed(key)
            if name is None:
                dropped += 1
                continue
            tensors[name] = _grown(tensor, rows) if key in (EMBED, HEAD) else tensor
        _save(save_file, tensors, out, number, total, weight_map)
    tower: dict[str, Any] = {}
    for path in p.tower_weights:
        for key, tensor in load_tensors(path).items():
            name = tower_name(key)
            if name is not None:
                tower[name] = tensor
    _save(save_file, tower, out, total, total, weight_map)
    log.info("%s: converted; %d tensor(s) dropped (embedded tower, rotary buffers)", out, dropped)
    return weight_map


def _save(
    save_file: Any,
    tensors: dict[str, Any],
    out: Path,
    number: int,
    total: int,
    weight_map: dict[str, str],
) -> None:
    name = f"model-{number:05d}-of-{total:05d}.safetensors"
    # clone(): a memory-mapped pickle's tensors may share one storage, which safetensors
    # refuses to write.
    save_file({k: t.contiguous().clone() for k, t in tensors.items()}, out / name, {"format": "pt"})
    weight_map.update(dict.fromkeys(tensors, name))


def _grown(matrix: Any, rows: int) -> Any:
    """`matrix` with new rows up to `rows`, each the mean of the old ones: LLaVA's own
    initialisation of added tokens (llava_arch.py:339-345), so `<image>` gets an average
    logit rather than a random one."""
    import torch

    extra = rows - matrix.shape[0]
    if extra <= 0:
        return matrix
    mean = matrix.float().mean(dim=0, keepdim=True).to(matrix.dtype)
    return torch.cat([matrix, mean.expand(extra, -1)], dim=0)


def _config(p: Plan, rows: int, image_id: int) -> Any:
    from transformers import LlavaConfig

    text = {k: p.config[k] for k in TEXT_FIELDS if k in p.config}
    text.update(model_type="llama", vocab_size=rows, tie_word_embeddings=False)
    vision = {**p.vision_config, "model_type": "clip_vision_model"}
    patches = (int(vision["image_size"]) // int(vision["patch_size"])) ** 2
    config = LlavaConfig(
        text_config=text,
        vision_config=vision,
        image_token_index=image_id,
        image_seq_length=patches + (p.strategy == "full"),
        projector_hidden_act="gelu",  # nn.GELU() in LLaVA's builder: the exact (erf) GELU
        multimodal_projector_bias=True,
        vision_feature_layer=p.select_layer,
        vision_feature_select_strategy=p.strategy,
        tie_word_embeddings=False,
    )
    config.architectures = ["LlavaForConditionalGeneration"]  # vLLM picks its class by this
    dtype = p.config.get("torch_dtype") or p.config.get("dtype")
    if isinstance(dtype, str):
        config.dtype = dtype
    return config


def _processor(p: Plan, tokenizer: Any) -> Any:
    """LlavaProcessor: the tower's CLIP preprocessing with do_pad where the original pads
    (LlavaImageProcessor pads to a square in int(mean * 255), as LLaVA's expand2square), and
    one extra image token for CLIP's CLS position, which the "default" strategy drops."""
    from transformers import LlavaImageProcessor, LlavaProcessor

    from pipelines.engines.models.llava_conversations import chat_template

    images = LlavaImageProcessor(**p.image_processor, do_pad=p.do_pad)
    return LlavaProcessor(
        image_processor=images,
        tokenizer=tokenizer,
        patch_size=int(p.vision_config["patch_size"]),
        vision_feature_select_strategy=p.strategy,
        num_additional_image_tokens=1,
        chat_template=chat_template(p.conversation),
    )


def converted_folder(
    folder: Path,
    origin: str,
    conversation: str | None = None,
    tower: str | None = None,
    tower_revision: str | None = None,
) -> Path:
    """The llava-hf conversion of the original checkpoint in `folder` (`origin`: its hub id
    at a commit, or the folder), made now unless cached."""
    checked = plan(folder, conversation, tower, tower_revision)
    return convert(checked, cache_root() / conversion_key(checked, origin))


def hub_converted(
    hub_id: HubId,
    commit: HubCommit,
    what: str,
    conversation: str | None = None,
    tower: str | None = None,
    tower_revision: str | None = None,
) -> Path:
    """The llava-hf conversion of the original checkpoint `hub_id` at `commit` (`what`: the
    model, for messages), fetched and converted now unless cached: one at a time on this
    node, within its disk, the fetched original deleted after (llava_hub)."""
    origin = f"{commit.repo}@{commit.commit}"
    dest = cache_root() / hub_conversion_key(origin, conversation, tower, tower_revision)

    def make(folder: Path) -> Path:
        return convert(plan(folder, conversation, tower, tower_revision), dest)

    return hub_conversion(hub_id, commit, what, dest, make)


def prepare(cfg: ModelConfig) -> ModelConfig:
    """`cfg` ready for the engines: an original-layout model's config with `snapshot` set to
    its converted folder (fetched and converted now if not cached: a hub checkpoint one
    conversion at a time per node, its original deleted after, `hub_converted`); any other
    as it is."""
    if cfg.layout != LAYOUT:
        return cfg
    if cfg.snapshot and (Path(cfg.snapshot) / RECORD).is_file():
        return cfg
    folder = Path(cfg.repo)
    tower, revision = cfg.vision_tower, cfg.vision_tower_revision
    if folder.is_dir():  # the user's own folder: converted from where it is, never deleted
        dest = converted_folder(folder, str(folder.resolve()), cfg.conversation, tower, revision)
        return cfg.model_copy(update={"snapshot": str(dest)})
    from pipelines.engines.models.model_revisions import hub_revision

    hub_id = HubId(cfg.repo, hub_revision(cfg.revision))
    try:
        commit = resolve_hub_commit(hub_id)
    except HubError as err:
        raise LayoutError(f"model {cfg.name}: {err}") from err
    dest = hub_converted(hub_id, commit, cfg.name, cfg.conversation, tower, revision)
    return cfg.model_copy(update={"snapshot": str(dest)})
