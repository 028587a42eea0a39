"""`python scripts/demo_diff.py BEFORE AFTER`: are two `make demo` outputs the same, but for
what changes from run to run?

Compares the report (every page, table and figure), the results' summaries
(`results.json`, audit files) and the samples of two demo folders (DEMO_DIR), after masking
the fields that differ between any two runs of the same code (`VOLATILE`): the folder
itself, timestamps and run-record names, the git commit, and measured durations. Result
shards are compared by their rows (sorted), not their random file names. Prints each file
that differs with its first difference; exit 1 when any does, 0 when none.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

# What differs between two runs of the same code, and why it is masked.
VOLATILE = {
    "demo folder": "the two runs write to different DEMO_DIRs",
    "timestamps": "run starts, report build time, run-record file names (<UTC>-<pid>-<id>)",
    "git commit": "the code's commit, recorded in run records and the provenance table",
    "durations": "measured seconds: the audit's per-problem time, an answer's time taken",
    "completion order": "rows a parallel step writes as they finish (compared sorted)",
    "training logs": "TensorBoard event files, named by the time and process that wrote them",
    "audit digest": "the solver's revision, a digest of its audit journal (timings, finish order),"
    " and the request keys hashed from it",
    "checkout folder": "the program path a run record's argv starts with",
}
TIME = re.compile(
    r"\d{8}T\d{6}Z(-\d+-[0-9a-f]{8})?(\.json)?"
    r"|\d{4}-\d\d-\d\d[ T]\d\d:\d\d(:\d\d(\.\d+)?)?( UTC|Z|\+00:00)?"
)
DURATION_KEYS = re.compile(r"(seconds|elapsed|duration|wall|time_taken\w*|_s|_at)$")
AUDIT_DIGEST = re.compile(r"audit-[0-9a-f]{16}")
DURATION_COLUMNS = ("median_seconds", "median seconds", "seconds", "elapsed_s")
# The audit status table's median seconds, in its HTML and Markdown copies.
AUDIT_SECONDS = re.compile(
    r"(<td class=\"txt\">\w+</td><td class=\"num\">\d+</td><td class=\"num\">)[\d.]+"
    r"|(\| (solved|unsolved|failed|conflict\w*|empty|error) +\| +\d+ +\| +)[\d.]+"
)
SHARD = re.compile(r"part-[0-9a-f]{24}\.parquet$")


def commits(root: Path) -> set[str]:
    """The git commits the folder's run records name."""
    found = set()
    for path in root.rglob("*.json"):
        found |= set(
            re.findall(r'"git_commit": "([0-9a-f]{40})"', path.read_text(errors="replace"))
        )
    return found


def masked(text: str, root: Path, shas: set[str]) -> str:
    """`text` with the volatile fields replaced by their names."""
    text = text.replace(str(root.resolve()), "<demo folder>").replace(str(root), "<demo folder>")
    text = AUDIT_DIGEST.sub("<audit digest>", text)
    for sha in shas:
        text = text.replace(sha, "<git commit>").replace(sha[:12], "<git commit>")
    return TIME.sub("<timestamp>", text)


def _durations_out(data: Any) -> Any:
    if isinstance(data, dict):
        data = dict(data)
        if isinstance(data.get("argv"), list) and data["argv"]:
            data["argv"] = ["<checkout folder>", *data["argv"][1:]]
        if (
            AUDIT_DIGEST.fullmatch(str(data.get("revision")))
            or data.get("revision") == "<audit digest>"
        ):
            data["request_key"] = "<audit digest>"
        return {
            k: "<duration>" if DURATION_KEYS.search(str(k)) else _durations_out(v)
            for k, v in data.items()
        }
    if isinstance(data, list):
        return [_durations_out(v) for v in data]
    return data


def _csv_durations_out(text: str) -> str:
    lines = text.splitlines()
    if not lines:
        return text
    head = lines[0].split(",")
    drop = [i for i, name in enumerate(head) if name in DURATION_COLUMNS]
    if not drop:
        return text
    out = [lines[0]]
    for line in lines[1:]:
        cells = line.split(",")
        out.append(",".join("<duration>" if i in drop else c for i, c in enumerate(cells)))
    return "\n".join(out)


def normalised(path: Path, root: Path, shas: set[str]) -> str | bytes:
    """What is compared of one file."""
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        rows = [_durations_out(r) for r in pq.read_table(path).to_pylist()]
        text = json.dumps(sorted(json.dumps(r, sort_keys=True, default=str) for r in rows))
        return masked(text, root, shas)
    if path.suffix in (".png", ".gz"):
        return path.read_bytes()
    text = masked(path.read_text(errors="replace"), root, shas)
    if path.suffix == ".json":
        return json.dumps(_durations_out(json.loads(text)), sort_keys=True, indent=1)
    if path.suffix == ".jsonl":
        rows = [_durations_out(json.loads(line)) for line in text.splitlines() if line]
        return "\n".join(sorted(json.dumps(r, sort_keys=True) for r in rows))
    if path.suffix == ".csv":
        return _csv_durations_out(text)
    if path.suffix in (".md", ".html"):
        return AUDIT_SECONDS.sub(lambda m: (m.group(1) or m.group(2)) + "<duration>", text)
    return text


def compared(root: Path) -> dict[str, Path]:
    """The files compared, by their path under the demo folder (shards by their rows)."""
    found = {}
    for path in sorted(root.rglob("*")):
        if not path.is_file() or path.parts[len(root.parts)] not in ("report", "results"):
            continue
        if "tensorboard" in path.parts:
            continue
        key = str(path.relative_to(root))
        if SHARD.search(path.name):
            key = str(path.parent.relative_to(root) / "<shard>")
            key += f"#{sum(1 for k in found if k.startswith(key))}"
        found[TIME.sub("<timestamp>", key)] = path
    return found


def first_difference(a: str | bytes, b: str | bytes) -> str:
    """Where two normalised files first differ, with some text around it."""
    if isinstance(a, bytes) or isinstance(b, bytes):
        return "bytes differ"
    at = next(
        (i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b))
    )
    return f"at {at}: ...{a[max(0, at - 60) : at + 60]!r} / ...{b[max(0, at - 60) : at + 60]!r}"


def main() -> int:
    """Compare the two folders named on the command line."""
    before, after = (Path(a) for a in sys.argv[1:3])
    shas = commits(before) | commits(after)
    a, b = compared(before), compared(after)
    problems = [f"only in {before}: {k}" for k in sorted(a.keys() - b.keys())]
    problems += [f"only in {after}: {k}" for k in sorted(b.keys() - a.keys())]
    for key in sorted(a.keys() & b.keys()):
        x, y = normalised(a[key], before, shas), normalised(b[key], after, shas)
        if x != y:
            problems.append(f"{key}: {first_difference(x, y)}")
    print(f"{len(a)} files compared; masked: {', '.join(VOLATILE)}")
    print("\n".join(problems) if problems else "same, but for the masked fields")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
