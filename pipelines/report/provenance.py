"""What the report's numbers come from, read from the run records (store.records) and the
item table's manifest, never recomputed: the items (count per task and setup, setups, item
seed, generator version, content hash), each model's engine, repo, revision and sampling,
the git commits and package versions of the runs.

Run records: `RESULTS/<benchmark>/model=*/runs/*.json` (NoReGeo, GeoBuild) and
`RESULTS/probes/**/runs/*.json`. A NoReGeo record names its item table by `items` (when the
recording code writes it) or else by the `--items` argument in its argv; the manifest of
that folder gives the counts and the hash. A folder that is gone is reported as such.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from pipelines.noregeo.generate import MANIFEST
from store.storage import Location, children

# The fields of a record's sampling settings shown, in this order (others follow).
SAMPLING_ORDER = ("temperature", "top_p", "max_tokens", "seed")
# Characters of a canary's decoded prompt the report shows from each end (the template's
# frame around the question, where a broken template shows).
CANARY_ENDS = 160


@dataclass(frozen=True)
class Record:
    """One run record: its benchmark, its model folder and the JSON it holds."""

    benchmark: str
    folder: str
    data: dict[str, Any]


def run_records(results: Location) -> list[Record]:
    """Every readable run record under RESULTS, oldest first within each folder."""
    found: list[Record] = []
    for benchmark in ("noregeo", "geobuild"):
        for folder in children(results / benchmark, "model=*"):
            found += _read(benchmark, folder)
    probes = results / "probes"
    if isinstance(probes, Path) and probes.is_dir():
        for runs in sorted(probes.rglob("runs")):
            found += _read("probes", runs.parent)
    return found


def _read(benchmark: str, folder: Location) -> list[Record]:
    records = []
    for path in sorted(children(folder / "runs", "*.json"), key=str):
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            continue  # a record being written or damaged: the others still tell the story
        if isinstance(data, dict):
            records.append(Record(benchmark, folder.name, data))
    return records


def items_folder(record: dict[str, Any]) -> str | None:
    """The item table a NoReGeo run read: its `items` field, else `--items` in its argv."""
    items = record.get("items")
    if isinstance(items, dict):
        items = items.get("path") or items.get("dir")
    if isinstance(items, str) and items:
        return items
    argv = [str(a) for a in record.get("argv") or []]
    for i, arg in enumerate(argv):
        if arg == "--items" and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith("--items="):
            return arg.split("=", 1)[1]
    return None


def read_item_manifest(folder: str) -> dict[str, Any] | None:
    """The manifest of a local item folder, None when it is gone or unreadable."""
    path = Path(folder) / MANIFEST
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _sampling_text(sampling: Any) -> str:
    if not isinstance(sampling, dict):
        return ""
    keys = [k for k in SAMPLING_ORDER if k in sampling] + sorted(
        k for k in sampling if k not in SAMPLING_ORDER and not isinstance(sampling[k], dict)
    )
    return ", ".join(f"{k}={sampling[k]}" for k in keys)


def _joined(values: list[Any]) -> str:
    """Distinct values in first-seen order, joined; `?` for a missing one."""
    seen: list[str] = []
    for value in values:
        text = "?" if value in (None, "") else str(value)
        if text not in seen:
            seen.append(text)
    return ", ".join(seen)


def items_table(records: list[Record]) -> pl.DataFrame:
    """One row per item table the NoReGeo runs read, from its manifest."""
    rows = []
    for folder in dict.fromkeys(
        f for r in records if r.benchmark == "noregeo" and (f := items_folder(r.data))
    ):
        manifest = read_item_manifest(folder) or {}
        counts = manifest.get("counts") or {}
        per_cell = sorted({int(n) for c in counts.values() for n in c.values()})
        rows.append(
            {
                "item table": folder,
                "found": "yes" if manifest else "no (moved or deleted)",
                "tasks": len(manifest.get("tasks") or []) or None,
                "setups": ", ".join(manifest.get("setups") or []),
                "items per task and setup": _joined(per_cell) if per_cell else "",
                "items in all": manifest.get("rows"),
                "item seed": manifest.get("item_seed", manifest.get("seed")),
                "generator": manifest.get("generator_version"),
                "image size": manifest.get("image_size"),
                "content sha256": manifest.get("content_sha256"),
            }
        )
    if not rows:
        return pl.DataFrame()
    # One folder named two ways (a relative --items, a resolved `items`) is one item table.
    frame = pl.DataFrame(rows).with_columns(_key=pl.coalesce("content sha256", "item table"))
    return frame.unique("_key", keep="first", maintain_order=True).drop("_key")


def items_per_task(records: list[Record]) -> pl.DataFrame:
    """Items per task (rows) and setup (columns) of every item table read, from manifests."""
    rows = []
    for r in records:
        folder = items_folder(r.data) if r.benchmark == "noregeo" else None
        manifest = read_item_manifest(folder) if folder else None
        for task, cells in ((manifest or {}).get("counts") or {}).items():
            rows += [{"task": task, "setup": s, "items": int(n)} for s, n in cells.items()]
    if not rows:
        return pl.DataFrame()
    frame = pl.DataFrame(rows).unique(["task", "setup"], keep="first")
    wide = frame.pivot(on="setup", index="task", values="items").sort("task")
    setups = [s for s in ("text", "dotted", "full") if s in wide.columns]
    return wide.select("task", *setups, *[c for c in wide.columns if c not in ("task", *setups)])


def _who(benchmark: str, folder: str, data: dict[str, Any]) -> dict[str, Any]:
    """Model, engine, repo and revision of one record. A NoReGeo or GeoBuild record holds
    the model's settings as a dict; `human-import` names the model as text (its engine is
    `human`, its revision the annotations' hash); a probe record has the encoder in its grid."""
    model = data.get("model")
    if isinstance(model, dict):
        return {
            "model": model.get("name") or folder.removeprefix("model="),
            "engine": model.get("engine") or data.get("engine"),
            "repo": repo_text(model.get("repo"), model.get("repo_env")),
            "revision": model.get("revision"),
            "weights": _weights_text(model.get("weights")),
        }
    if isinstance(model, str):
        return {
            "model": model,
            "engine": data.get("engine") or model,
            "repo": data.get("annotations"),
            "revision": str(data.get("annotations_sha256") or "")[:16] or None,
            "weights": "none (human annotators)",
        }
    grid = data.get("grid") if isinstance(data.get("grid"), dict) else {}
    encoder = (grid or {}).get("encoder") or {}
    return {
        "model": folder.removeprefix("model="),
        "engine": "probe" if benchmark == "probes" else data.get("engine"),
        "repo": encoder.get("arch"),
        # The probe grid's encoder without pretrained weights is a random initialisation.
        "revision": encoder.get("pretrained") or "none (random weights)",
        # Not "answers are noise": a probe on an untrained encoder is the control the paper
        # compares with, and may well be accurate (issue 39 saw "RANDOM" beside 100%).
        "weights": "real" if encoder.get("pretrained") else UNTRAINED_ENCODER,
    }


def repo_text(repo: Any, env: Any = None) -> str | None:
    """The repo column: a hub id or API name as it is; a checkpoint folder given by an
    absolute path (often a temporary one, meaningless on another machine) as `local folder
    NAME`, with the variable that named it (`repo_env`) when there is one."""
    if not isinstance(repo, str) or not repo.startswith("/"):
        return repo if repo is None else str(repo)
    source = f" (from ${env})" if env else ""
    return f"local folder {Path(repo).name}{source}"


UNTRAINED_ENCODER = "random (an untrained encoder: the control)"


def _weights_text(weights: Any) -> str | None:
    """The weights column: random-weight rows say so loudly (their numbers are noise);
    None for records written before configs named their weights."""
    if weights == "random":
        return "RANDOM (answers are noise)"
    return str(weights) if weights else None


def runs_table(records: list[Record]) -> pl.DataFrame:
    """One row per benchmark and model folder: what ran, with which settings, when."""
    by_folder: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in records:
        by_folder.setdefault((r.benchmark, r.folder), []).append(r.data)
    rows = []
    for (benchmark, folder), datas in by_folder.items():
        who = [_who(benchmark, folder, d) for d in datas]
        rows.append(
            {
                "benchmark": benchmark,
                **{
                    k: _joined([w[k] for w in who])
                    for k in ("model", "engine", "repo", "revision", "weights")
                },
                "sampling": _joined([_sampling_text(d.get("sampling")) for d in datas])
                if any("sampling" in d for d in datas)
                else "",
                "runs": len(datas),
                "git commit": _joined([str(d.get("git_commit") or "")[:12] for d in datas]),
                "first run (UTC)": min(str(d.get("started_utc", "")) for d in datas),
                "last run (UTC)": max(str(d.get("started_utc", "")) for d in datas),
            }
        )
    return pl.DataFrame(rows) if rows else pl.DataFrame()


def software_table(records: list[Record]) -> pl.DataFrame:
    """Package versions, Python and platform the runs recorded (distinct values joined)."""
    names: list[str] = []
    for r in records:
        names += [n for n in (r.data.get("packages") or {}) if n not in names]
    rows = [
        {
            "software": name,
            "versions": _joined([(r.data.get("packages") or {}).get(name) for r in records]),
        }
        for name in names
    ]
    rows.append(
        {"software": "python", "versions": _joined([r.data.get("python") for r in records])}
    )
    rows.append(
        {"software": "platform", "versions": _joined([r.data.get("platform") for r in records])}
    )
    return pl.DataFrame(rows) if records else pl.DataFrame()


def _ends(text: str, keep: int = CANARY_ENDS) -> str:
    """`text`, or its first and last `keep` characters around an elision mark."""
    if len(text) <= 2 * keep + 5:
        return text
    return f"{text[:keep]} [...] {text[-keep:]}"


def canary_table(records: list[Record]) -> pl.DataFrame:
    """The prompt canary's decoded prompt per model and setup (pipelines.engines.
    prompt_canary), from the newest record of each model folder that holds one: what the
    vllm engine was given, as its own tokenizer decodes it."""
    newest: dict[tuple[str, str], dict[str, Any]] = {}
    for r in records:  # oldest first within a folder: the last one wins
        canary = r.data.get("prompt_canary")
        if isinstance(canary, dict) and canary.get("prompts"):
            newest[(r.benchmark, r.folder)] = {**canary, "_data": r.data}
    rows = [
        {
            "benchmark": benchmark,
            "model": _who(benchmark, folder, canary["_data"])["model"],
            "setup": setup,
            "rows checked": canary.get("checked_rows"),
            "decoded prompt": _ends(str(prompt)),
        }
        for (benchmark, folder), canary in newest.items()
        for setup, prompt in canary["prompts"].items()
    ]
    return pl.DataFrame(rows) if rows else pl.DataFrame()
