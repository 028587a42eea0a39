"""The sample pages' item images: one file per image, named by the hash of its bytes
(`DIR/samples/img/<sha256[:20]>.png`), so an image every model shares is written once, and
kept between reports: a file the previous report already holds is linked, not made again.

An item's own PNG is used as it is when it is small (the generator's 448 px figures are
about 3 KB: a 140 px thumbnail re-encoded from one is larger, 7.6 KB, and re-encoding 5,000
of them took 162 s of the 45-model report, issue 50); the page shows it 140 px wide and
links the full size. Anything else (another format, a large file) gets a 140 px PNG
thumbnail, made once per image hash; one of those that does not decode is left out and
counted.
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
from pathlib import Path

import pyarrow.compute as pc
import pyarrow.parquet as pq
from PIL import Image

from pipelines.noregeo.generate import SHARD_GLOB
from pipelines.report.provenance import Record, items_folder

THUMBNAIL_PX = 140
KEEP_AS_IS_BYTES = 64 * 1024  # a PNG this small is shown as it is
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
FOLDER = "samples/img"


def image_name(image: bytes) -> str:
    """The file an image gets: the hash of its bytes."""
    return hashlib.sha256(image).hexdigest()[:20] + ".png"


def _thumbnail(image: bytes) -> bytes | None:
    """A 140 px PNG of `image`; None when it does not decode."""
    try:
        with Image.open(io.BytesIO(image)) as picture:
            small = picture.convert("RGB")
    except (OSError, ValueError, Image.DecompressionBombError):
        return None
    small.thumbnail((THUMBNAIL_PX, THUMBNAIL_PX))
    buffer = io.BytesIO()
    small.save(buffer, format="PNG", compress_level=6)
    return buffer.getvalue()


def write_file(path: Path, data: bytes) -> None:
    """A plain write: the report is built in a staging folder renamed into place whole
    (build.py), so its files need no rename and no fsync of their own (5,000 of them cost
    seconds)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def reuse(old: Path, new: Path) -> bool:
    """Put the previous report's `old` file at `new` (a hard link, else a copy); False when
    there is no such file."""
    if not old.is_file():
        return False
    new.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(old, new)
    except OSError:  # another file system, or links not allowed
        shutil.copy2(old, new)
    return True


def item_images(
    records: list[Record], wanted: set[tuple[str, str]], out: Path, previous: Path | None
) -> tuple[dict[tuple[str, str], str], str, dict[str, int]]:
    """({(item_id, setup): relative path}, a note on what is missing, counts of images
    linked from the previous report, written as they are, and made as thumbnails)."""
    folders = dict.fromkeys(
        f for r in records if r.benchmark == "noregeo" and (f := items_folder(r.data))
    )
    found: dict[tuple[str, str], str] = {}
    counts = {"reused": 0, "as_is": 0, "thumbnails": 0, "undecodable": 0}
    done: set[str] = set()
    ids = sorted({item for item, _setup in wanted})
    for folder in folders:
        for shard in sorted(Path(folder).glob(SHARD_GLOB)) if Path(folder).is_dir() else []:
            try:
                table = pq.read_table(shard, columns=["item_id", "setup", "image"])
            except (OSError, ValueError):
                continue
            table = table.filter(pc.is_in(table["item_id"], value_set=pc.cast(ids, "string")))
            for item, setup, image in zip(
                *(table[c].to_pylist() for c in table.column_names), strict=True
            ):
                key = (item, setup)
                if key not in wanted or key in found or not image:
                    continue
                name = image_name(image)
                if name not in done:
                    if not _place(image, name, out, previous, counts):
                        continue
                    done.add(name)
                found[key] = f"{FOLDER}/{name}"
    lacking = len(wanted) - len(found)
    note = "" if not lacking else (
        f"{lacking} image(s) not shown: the item table the runs read "
        f"({', '.join(folders) or 'not recorded'}) is not here, lacks them or holds images "
        "that do not decode."
    )  # fmt: skip
    return found, note, counts


def _place(
    image: bytes, name: str, out: Path, previous: Path | None, counts: dict[str, int]
) -> bool:
    """Write (or link) one image file; False when it cannot be shown."""
    target = out / FOLDER / name
    if previous is not None and reuse(previous / FOLDER / name, target):
        counts["reused"] += 1
        return True
    if image.startswith(PNG_MAGIC) and len(image) <= KEEP_AS_IS_BYTES:
        write_file(target, image)
        counts["as_is"] += 1
        return True
    small = _thumbnail(image)
    if small is None:
        counts["undecodable"] += 1
        return False
    write_file(target, small)
    counts["thumbnails"] += 1
    return True
