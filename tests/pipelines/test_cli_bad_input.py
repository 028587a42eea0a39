"""Every command x each class of bad input: exit 2, one line on stderr naming the flag (or
file), nothing written, Ray never started.

The table is the point: add a row for each new flag or input file. Rows run in-process
through `pipelines.cli.main` (fast, no Ray); a few run through `python -m pipelines` to
check the real exit code and undecodable argv bytes.

Placeholders in a row's argv: `{tmp}` the test's folder, `{dir}` an empty folder, `{file}`
a small text file, `{items}` an item folder with a malformed manifest.json, and `{latin1}`,
`{badjson}`, `{badyaml}`, `{badcsv}`, `{junk}` files of those kinds (see `_inputs`).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pipelines import cli
from tests.conftest import REPO

NOT_UTF8 = "caf\xe9 = 1\n".encode("latin-1")  # 0xE9 alone is not UTF-8
UNDECODABLE = os.fsdecode(b"\xff\xfe")  # how Python hands over argv bytes that are not UTF-8
MODELS = str(REPO / "configs" / "models")
OUT = "{tmp}/out"

# (row id, argv, text the one error line must contain)
BAD_NUMBERS = [
    ("generate-per-task-0", ["generate", "--out", OUT, "--per-task", "0"], "--per-task"),
    ("generate-image-size-0", ["generate", "--out", OUT, "--image-size", "0"], "--image-size"),
    ("generate-seed-negative", ["generate", "--out", OUT, "--seed", "-1"], "--seed"),
    ("generate-per-task-text", ["generate", "--out", OUT, "--per-task", "ten"], "--per-task"),
    *[
        (f"evaluate-{flag[2:]}-{value}", ["evaluate", *"E", flag, value], flag)
        for flag, value in [
            ("--batch-size", "0"),
            ("--shard-rows", "0"),
            ("--pool-size", "0"),
            ("--max-tokens", "-5"),
            ("--limit", "0"),
            ("--seed", "-1"),
            ("--temperature", "nan"),
            ("--temperature", "-1"),
            ("--baseline-delay", "inf"),
            ("--baseline-delay", "-0.5"),
            ("--max-error-rate", "1.5"),
            ("--max-error-rate", "nan"),
            ("--batch-size", "2.5"),
        ]
    ],
    *[
        (f"geobuild-{flag[2:]}-{value}", ["geobuild", *"G", flag, value], flag)
        for flag, value in [
            ("--image-size", "0"),
            ("--max-rounds", "0"),
            ("--executors", "0"),
            ("--batch-size", "0"),
            ("--pool-size", "-2"),
            ("--shard-rows", "0"),
            ("--max-tokens", "0"),
            ("--limit", "0"),
            ("--temperature", "nan"),
            ("--seed", "-3"),
        ]
    ],
    *[
        (f"geobuild-solve-{flag[2:]}-{value}", ["geobuild-solve", *"S", flag, value], flag)
        for flag, value in [
            ("--solve-seconds", "nan"),
            ("--solve-seconds", "0"),
            ("--restarts", "0"),
            ("--workers", "0"),
        ]
    ],
    *[
        (f"sweep-{flag[2:]}-{value}", ["sweep", *"W", flag, value], flag)
        for flag, value in [
            ("--replicas", "0"),
            ("--gpus", "-1"),
            ("--gpus", "nan"),
            ("--cpu-parallel", "0"),
            ("--progress-interval", "0"),
            ("--per-task", "0"),
            ("--image-size", "0"),
            ("--max-tokens", "0"),
            ("--batch-size", "0"),
            ("--shard-rows", "0"),
            ("--baseline-delay", "nan"),
            ("--seed", "-1"),
        ]
    ],
    # argparse reads a bare "-inf" as a flag; "=" hands it over as the value
    ("geobuild-solve-conflict-seconds--inf", ["geobuild-solve", *"S", "--conflict-seconds=-inf"],
     "--conflict-seconds"),  # fmt: skip
    ("tiny-model-seed", ["tiny-model", "--kind", "llm", "--out", OUT, "--seed", "-1"], "--seed"),
    ("report-min-accuracy-nan", ["report", "{dir}", "--out", OUT, "--min-accuracy", "nan"],
     "--min-accuracy"),  # fmt: skip
    ("report-min-accuracy-101", ["report", "{dir}", "--out", OUT, "--min-accuracy", "101"],
     "--min-accuracy"),  # fmt: skip
    ("probe-summarize-min-accuracy", ["probe-summarize", "{dir}", "--min-accuracy", "-1"],
     "--min-accuracy"),  # fmt: skip
    ("probe-limit-0", ["probe", "--grid", "{file}", "--out", OUT, "--limit", "0"], "--limit"),
    ("human-export-seed", ["human-export", "{dir}", "--out", OUT, "--seed", "-1"], "--seed"),
]

BAD_PATHS = [
    # a file where a directory is wanted
    ("generate-out-file", ["generate", "--out", "{file}"], "--out"),
    ("evaluate-out-file", ["evaluate", "--items", "{dir}", "--engine", "oracle", "--model", "o",
                           "--out", "{file}"], "--out"),  # fmt: skip
    ("evaluate-items-file", ["evaluate", "--items", "{file}", "--engine", "oracle", "--model",
                             "o", "--out", OUT], "--items"),  # fmt: skip
    ("geobuild-out-file", ["geobuild", "--dataset", "{dir}", "--engine", "hf", "--model", "m",
                           "--out", "{file}"], "--out"),  # fmt: skip
    ("geobuild-solve-out-file", ["geobuild-solve", "--dataset", "{dir}", "--out", "{file}"],
     "--out"),  # fmt: skip
    ("sweep-out-file", ["sweep", "--models", MODELS, "--out", "{file}", "--dry-run"], "--out"),
    ("sweep-items-file", ["sweep", "--models", MODELS, "--out", OUT, "--items", "{file}",
                          "--dry-run"], "--items"),  # fmt: skip
    ("sweep-models-file", ["sweep", "--models", "{file}", "--out", OUT, "--dry-run"], "--models"),
    ("tiny-model-out-file", ["tiny-model", "--kind", "llm", "--out", "{file}"], "--out"),
    ("report-out-file", ["report", "{dir}", "--out", "{file}"], "--out"),
    ("report-results-file", ["report", "{file}", "--out", OUT], "results"),
    ("summarize-results-file", ["summarize", "{file}"], "results"),
    ("geobuild-summarize-results-file", ["geobuild-summarize", "{file}"], "results"),
    ("probe-summarize-results-file", ["probe-summarize", "{file}"], "results"),
    ("probe-out-file", ["probe", "--grid", "{file}", "--out", "{file}"], "--out"),
    ("human-export-out-file", ["human-export", "{dir}", "--out", "{file}"], "--out"),
    ("human-export-items-file", ["human-export", "{file}", "--out", OUT], "items"),
    ("human-import-out-file", ["human-import", "{file}", "--items", "{dir}", "--out", "{file}"],
     "--out"),  # fmt: skip
    ("human-import-items-file", ["human-import", "{file}", "--items", "{file}", "--out", OUT],
     "--items"),  # fmt: skip
    # a directory where a file is wanted
    ("report-audit-dir", ["report", "{dir}", "--out", OUT, "--audit", "{dir}"], "--audit"),
    ("probe-grid-dir", ["probe", "--grid", "{dir}", "--out", OUT], "--grid"),
    ("human-import-annotations-dir", ["human-import", "{dir}", "--items", "{dir}", "--out", OUT],
     "annotations"),  # fmt: skip
    ("geobuild-check-programs-dir", ["geobuild-check", "--dataset", "{dir}", "--programs",
                                     "{dir}"], "--programs"),  # fmt: skip
    # missing paths
    ("evaluate-items-missing", ["evaluate", "--items", "{tmp}/none", "--engine", "oracle",
                                "--model", "o", "--out", OUT], "--items"),  # fmt: skip
    ("summarize-results-missing", ["summarize", "{tmp}/none"], "results"),
    ("report-results-missing", ["report", "{tmp}/none", "--out", OUT], "results"),
    ("report-audit-missing", ["report", "{dir}", "--out", OUT, "--audit", "{tmp}/none.csv"],
     "--audit"),  # fmt: skip
    ("probe-grid-missing", ["probe", "--grid", "{tmp}/none.yaml", "--out", OUT], "--grid"),
    ("geobuild-check-programs-missing", ["geobuild-check", "--dataset", "{dir}", "--programs",
                                         "{tmp}/none"], "--programs"),  # fmt: skip
    ("geobuild-check-dataset-missing", ["geobuild-check", "--dataset", "{tmp}/none",
                                        "--programs", "{file}"], "none"),  # fmt: skip
    ("geobuild-solve-dataset-missing", ["geobuild-solve", "--dataset", "{tmp}/none", "--out",
                                        OUT], "none"),  # fmt: skip
    ("human-import-annotations-missing", ["human-import", "{tmp}/none.csv", "--items", "{dir}",
                                          "--out", OUT], "annotations"),  # fmt: skip
    # names that would reach outside the results folder
    *[
        (f"summarize-benchmark-{i}", ["summarize", "{dir}", "--benchmark", name], "--benchmark")
        for i, name in enumerate(["../../x", "a/b", "..", ".", "", "a\\b"])
    ],
    # --out that report would have to replace: the results themselves, or a folder of files
    ("report-out-is-results", ["report", "{dir}", "--out", "{dir}"], "--out"),
    ("report-out-not-a-report", ["report", "{dir}", "--out", "{items}"], "--out"),
]

BAD_FILES = [
    # not UTF-8
    ("evaluate-model-yaml-latin1", ["evaluate", "--items", "{items_ok}", "--engine", "hf",
                                    "--model", "{latin1_yaml}", "--out", OUT], "latin1.yaml"),
    ("report-audit-latin1", ["report", "{dir}", "--out", OUT, "--audit", "{latin1}"], "--audit"),
    ("probe-grid-latin1", ["probe", "--grid", "{latin1}", "--out", OUT], "--grid"),
    ("human-import-latin1", ["human-import", "{latin1}", "--items", "{dir}", "--out", OUT],
     "latin1"),  # fmt: skip
    ("geobuild-check-programs-latin1", ["geobuild-check", "--dataset", "{dir}", "--programs",
                                        "{latin1}"], "--programs"),  # fmt: skip
    ("geobuild-check-dataset-latin1", ["geobuild-check", "--dataset", "{latin1}", "--programs",
                                       "{file}"], "--dataset"),  # fmt: skip
    ("geobuild-solve-dataset-latin1", ["geobuild-solve", "--dataset", "{latin1}", "--out", OUT],
     "--dataset"),  # fmt: skip
    ("evaluate-manifest-latin1", ["evaluate", "--items", "{items_latin1}", "--engine", "oracle",
                                  "--model", "o", "--out", OUT], "manifest.json"),
    # malformed JSON / YAML / CSV / Parquet
    ("evaluate-manifest-malformed", ["evaluate", "--items", "{items}", "--engine", "oracle",
                                     "--model", "o", "--out", OUT], "manifest.json"),
    ("evaluate-manifest-not-object", ["evaluate", "--items", "{items_list}", "--engine",
                                      "oracle", "--model", "o", "--out", OUT], "manifest.json"),
    ("sweep-manifest-malformed", ["sweep", "--models", MODELS, "--out", OUT, "--items",
                                  "{items}", "--dry-run"], "manifest.json"),  # fmt: skip
    ("evaluate-model-yaml-malformed", ["evaluate", "--items", "{items_ok}", "--engine", "hf",
                                       "--model", "{badyaml}", "--out", OUT], "bad.yaml"),
    ("probe-grid-malformed", ["probe", "--grid", "{badyaml}", "--out", OUT], "--grid"),
    ("probe-grid-wrong-shape", ["probe", "--grid", "{listyaml}", "--out", OUT], "--grid"),
    ("geobuild-check-dataset-malformed", ["geobuild-check", "--dataset", "{badjson}",
                                          "--programs", "{file}"], "--dataset"),  # fmt: skip
    ("report-audit-wrong-columns", ["report", "{dir}", "--out", OUT, "--audit", "{file}"],
     "--audit"),  # fmt: skip
    ("report-audit-not-numeric", ["report", "{dir}", "--out", OUT, "--audit", "{badaudit}"],
     "--audit"),  # fmt: skip
    ("human-import-wrong-columns", ["human-import", "{file}", "--items", "{dir}", "--out", OUT],
     "lacks column"),  # fmt: skip
    ("human-export-junk-shard", ["human-export", "{junk_items}", "--out", OUT], "part-x.parquet"),
]

BAD_ARGV = [
    ("unknown-command", ["nope"], "COMMAND"),
    ("unknown-flag", ["summarize", "{dir}", "--bogus"], "--bogus"),
    ("missing-required", ["generate"], "--out"),
    ("bad-choice", ["geobuild-check", "--dataset", "{dir}", "--programs", "{file}", "--lang",
                    "xx"], "--lang"),  # fmt: skip
    *[
        (f"{argv[0]}-not-utf8", argv, flag)
        for argv, flag in [
            (["generate", "--out", OUT, "--tasks", UNDECODABLE], "--tasks"),
            (["evaluate", *"E", "--model", UNDECODABLE], "--model"),
            (["summarize", "{dir}", "--benchmark", UNDECODABLE], "--benchmark"),
            (["tiny-model", "--kind", UNDECODABLE, "--out", OUT], "--kind"),
            (["geobuild-check", "--dataset", UNDECODABLE, "--programs", "{file}"], "--dataset"),
            (["geobuild", *"G", "--ids", UNDECODABLE], "--ids"),
            (["geobuild-summarize", "{dir}", "--model", UNDECODABLE], "--model"),
            (["geobuild-solve", *"S", "--ids", UNDECODABLE], "--ids"),
            (["sweep", *"W", "--only", UNDECODABLE], "--only"),
            (["report", "{dir}", "--out", f"{{tmp}}/{UNDECODABLE}"], "--out"),
            (["human-export", "{dir}", f"--out={UNDECODABLE}"], "--out"),
            (["human-import", UNDECODABLE, "--items", "{dir}", "--out", OUT], "number 2"),
            (["probe", "--grid", "{file}", "--out", OUT, "--arch", UNDECODABLE], "--arch"),
            (["probe-summarize", "{dir}", f"--min-accuracy={UNDECODABLE}"], "--min-accuracy"),
        ]
    ],
]

ROWS = BAD_NUMBERS + BAD_PATHS + BAD_FILES + BAD_ARGV

# Stand-ins for a command's required arguments, spliced in where a row says "E", "G"...
BASE = {
    "E": ["--items", "{dir}", "--engine", "oracle", "--model", "o", "--out", OUT],
    "G": ["--dataset", "{dir}", "--engine", "hf", "--model", "m", "--out", OUT],
    "S": ["--dataset", "{dir}", "--out", OUT],
    "W": ["--models", MODELS, "--out", OUT, "--dry-run"],
}


def _inputs(tmp: Path) -> dict[str, str]:
    """Every placeholder's file or folder, made fresh under `tmp`."""
    (tmp / "empty").mkdir()
    made = {"tmp": str(tmp), "dir": str(tmp / "empty")}
    files = {
        "file": b"just some text\n",
        "latin1": NOT_UTF8,
        "latin1_yaml": NOT_UTF8,
        "badjson": b'{"problems": [',
        "badyaml": b"name: [unclosed\n",
        "listyaml": b"- 1\n- 2\n",
        "badaudit": b"id,status,conflicts,reason,seconds\n1,solved,,,fast\n",
    }
    names = {"latin1_yaml": "latin1.yaml", "badyaml": "bad.yaml", "listyaml": "list.yaml"}
    for key, data in files.items():
        path = tmp / names.get(key, f"{key}.txt")
        path.write_bytes(data)
        made[key] = str(path)
    manifests = {
        "items": b"{not json",
        "items_latin1": NOT_UTF8,
        "items_list": b"[1, 2]",
        "items_ok": b'{"tasks": ["C-BCT-CT"], "setups": ["text"], "per_task": 1}',
    }
    for key, manifest in manifests.items():
        folder = tmp / key
        folder.mkdir()
        (folder / "part-C-BCT-CT.parquet").write_bytes(b"not parquet")
        (folder / "manifest.json").write_bytes(manifest)
        made[key] = str(folder)
    junk = tmp / "junk_items"
    junk.mkdir()
    (junk / "part-x.parquet").write_bytes(b"not parquet")
    made["junk_items"] = str(junk)
    return made


def _argv(row_argv: list[str], inputs: dict[str, str]) -> list[str]:
    expanded = [part for arg in row_argv for part in BASE.get(arg, [arg])]
    return [arg.format(**inputs) for arg in expanded]


def _tree(root: Path) -> dict[str, int]:
    """Every path under root with its size (folders as -1) and modification time folded in."""
    return {
        str(p.relative_to(root)): (p.stat().st_size if p.is_file() else -1) + p.stat().st_mtime_ns
        for p in root.rglob("*")
    }


@pytest.mark.parametrize(("argv", "names"), [r[1:] for r in ROWS], ids=[r[0] for r in ROWS])
def test_bad_input_exits_2_with_one_line_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], names: str
) -> None:
    import ray

    ray_was_up = ray.is_initialized()
    inputs = _inputs(tmp_path)
    before = _tree(tmp_path)
    code = cli.main(_argv(argv, inputs))
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert code == 2, captured
    assert len(lines) == 1 and lines[0].startswith("error: "), captured.err
    assert names in lines[0], lines[0]
    assert _tree(tmp_path) == before, "a bad input wrote something"
    assert ray.is_initialized() == ray_was_up, "Ray started for a bad input"


def test_the_table_covers_every_command() -> None:
    covered = {r[1][0] for r in ROWS}
    assert set(cli.COMMANDS) <= covered, set(cli.COMMANDS) - covered


SUBPROCESS_ROWS = [
    ("batch-size-0", ["evaluate", *BASE["E"], "--batch-size", "0"], "--batch-size"),
    ("image-size-0", ["geobuild", *BASE["G"], "--image-size", "0"], "--image-size"),
    ("benchmark-escapes", ["summarize", "{dir}", "--benchmark", "../../x"], "--benchmark"),
    ("unknown-flag", ["report", "{dir}", "--out", OUT, "--nope"], "--nope"),
]


@pytest.mark.parametrize(
    ("argv", "names"), [r[1:] for r in SUBPROCESS_ROWS], ids=[r[0] for r in SUBPROCESS_ROWS]
)
def test_real_process_exits_2_with_one_line(tmp_path: Path, argv: list[str], names: str) -> None:
    inputs = _inputs(tmp_path)
    before = _tree(tmp_path)
    result = _python_m(_argv(argv, inputs))
    lines = result.stderr.decode().splitlines()
    assert result.returncode == 2, result.stderr
    assert len(lines) == 1 and names in lines[0], result.stderr
    assert _tree(tmp_path) == before


def test_undecodable_argv_bytes_exit_2(tmp_path: Path) -> None:
    """Bytes that are not UTF-8 on the real command line (not a Python string)."""
    result = _python_m(["summarize", str(tmp_path), "--benchmark", b"caf\xe9"])
    lines = result.stderr.decode("utf-8", "replace").splitlines()
    assert result.returncode == 2, result.stderr
    assert len(lines) == 1 and "--benchmark" in lines[0] and "UTF-8" in lines[0], lines


def _python_m(argv: list[str | bytes]) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONUTF8": "0", "LC_ALL": "C.UTF-8"}
    return subprocess.run(
        [sys.executable, "-m", "pipelines", *argv],
        capture_output=True,
        env=env,
        cwd=REPO,
        timeout=120,
        check=False,
    )
