# The two commands: `make demo` and `make test`. Each creates .venv and installs what it needs by itself.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cksum < pyproject.toml | cut -d' ' -f1)
export TF_CLI_CONFIG_FILE := $(CURDIR)/.terraformrc
export TF_IN_AUTOMATION := 1
# Python's compiled modules are kept (__pycache__, ignored by git): the tests start Python processes of their own
# (`autoscaler run`, `lab`, `invoke`, the process kubelet's pods), and each would otherwise compile every module it imports.
unexport PYTHONDONTWRITEBYTECODE

.PHONY: demo test lint unit e2e tools venv bench bench-live bench-live-small bench-peers-small clean docs-check faults localcluster-bin day-one

$(STAMP): pyproject.toml
	@echo "make: installing the Python dependencies into $(VENV) (once; a few minutes on a first run, pip's lines follow)"
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --disable-pip-version-check --upgrade pip
	set -o pipefail; $(BIN)/pip install --disable-pip-version-check --progress-bar off -e '.[dev]' \
	  | (grep --line-buffered -E '^(Collecting|Successfully installed|ERROR)' || true)
	rm -f $(VENV)/.installed-*
	touch $@

venv: $(STAMP)

.terraformrc:
	touch $@

# The local cluster's binaries (localcluster/build-tools.sh): about 12 minutes the first time on 2 cores, then
# nothing until a pinned go.mod changes.
localcluster-bin:
	localcluster/build-tools.sh

demo: venv .terraformrc localcluster-bin
	$(BIN)/invoke demo

lint: venv
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# Four workers on two cores: many tests wait (on a subprocess, a watch, a clock) and the CPU stays busy. The ten
# slowest tests are listed at the end (the 5-minute budget: where it goes).
unit: venv .terraformrc
	$(BIN)/pytest -n 4 -m "not e2e" --durations=10

test: lint unit

# The end-to-end runs (the e2e marker): a researcher's project trained by torchrun as the Job's pods, with their
# uid, environment and working directory, and `invoke local-cluster` used by `lab`; about 80 s of CPU, so kept out
# of `make test` and run by CI.
e2e: venv .terraformrc
	$(BIN)/pytest -n 2 -m e2e

# The fault scenarios (tests/faults, docs/autoscaler.md "What it guarantees"): real `autoscaler run` processes
# against moto and the real control plane (`make tools`; one per test process, kube-apiserver behind a fault proxy)
# with injected faults (22 scenarios, two at a time: most of a scenario is waiting on the controller's clock); 13.6
# minutes measured on 2 cores shared at a load average of 20-30, so not part of `make test`. One scenario alone:
# FAULTS=1 $(BIN)/pytest tests/faults -p no:xdist -s -k NAME
faults: venv .terraformrc
	FAULTS=1 $(BIN)/pytest tests/faults -n 2 -q

# The day-one path rehearsed (issue 34, docs/terraform.md "Rehearsal"): a fresh embedded AWS (moto on loopback, TLS),
# `invoke up --all` with the real hashicorp/aws provider from this machine's mirror, its deploys on a local control
# plane with the apply's outputs, a second plan that must converge (drift.py), `invoke down`; prints timings.
day-one: venv .terraformrc
	$(BIN)/python -m localcluster.rehearsal

# System tools that tests use when present (they skip with a reason when absent; under CI=true they fail).
tools:
	./scripts/install-tools.sh

# The planner at lean and kubectl-sized objects (docs/benchmarks.md, "Planner"): about 4 minutes on 2 cores.
bench: venv
	$(BIN)/invoke bench

# The live controller on the real local stack (kwok nodes) at 5,000 nodes / 50,000 kubectl-sized pods
# (docs/benchmarks.md, "Live controller"): needs `make tools`; not part of `make test`. The small size runs in CI.
bench-live: venv
	$(BIN)/invoke bench-live

bench-live-small: venv
	$(BIN)/invoke bench-live --nodes 50 --pods 500 --loops 20 --samples 3 --events 50 --lone-pod-idle 100ms,1s --scan-interval 1s
	$(BIN)/python -m demos.bench_live --churn 40 --boot-s 5
	$(BIN)/python -m demos.bench_events --pods 50 --repeat 1

# Ours and Karpenter (kwok provider) on the same bursts on the real local stack, at the CI size (README, "Beside a
# real peer"; `invoke bench-peers` for the full size): needs `make tools`; 13 minutes on 2 cores.
bench-peers-small: venv
	$(BIN)/invoke bench-peers --small

# Every command the README and docs show, the slow ones included (the demo, the simulator, the benchmarks).
docs-check: venv .terraformrc
	DOC_COMMANDS=all $(BIN)/pytest -q tests/test_doc_commands.py

clean:
	rm -rf build .venv .checkov-venv .awscli-venv .terraformrc
