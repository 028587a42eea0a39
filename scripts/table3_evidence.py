"""Recompute the Table 3 residual table from the paper's printed Tables 2-3 (the test
fixture) and write it into docs/report.md between its markers; `--check` only compares
(exit 1 when the docs differ). tests/pipelines/report/test_report_paper.py checks the same.

    .venv/bin/python scripts/table3_evidence.py [--check]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pipelines.report.table3_evidence import (
    docs_block,
    load_paper_tables,
    markdown,
    with_docs_block,
)

REPO = Path(__file__).resolve().parents[1]
FIXTURE = REPO / "tests" / "pipelines" / "fixtures" / "noregeo_paper_tables.json"
DOCS = REPO / "docs" / "report.md"


def main() -> int:
    """Write (or with --check compare) the generated block; the exit code."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare only, write nothing")
    args = parser.parse_args()
    block = markdown(load_paper_tables(FIXTURE))
    text = DOCS.read_text(encoding="utf-8")
    if args.check:
        same = docs_block(text) == block
        print("docs/report.md is up to date" if same else "docs/report.md differs: rerun")
        return 0 if same else 1
    DOCS.write_text(with_docs_block(text, block), encoding="utf-8")
    print(f"wrote the Table 3 residual table into {DOCS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
