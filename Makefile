# kubetrain — the two commands that matter are `make run` and `make test` (see README.md).
SHELL := /bin/bash
CARGO ?= cargo

.PHONY: run test e2e unit lint fmt clippy crds bench bench-sizes bench-docs control-plane control-plane-down deploy release labeler-gpu-check

# The release version: the workspace version of Cargo.toml, the one place it is written
# (charts/kubetrain/Chart.yaml and the image tags of config/ must equal it; e2e/tests/helm.rs
# checks that).
VERSION := $(shell awk -F'"' '/^\[workspace.package\]/{p=1} p && $$1 ~ /^version *= */{print $$2; exit}' Cargo.toml)
KUBETRAIN_CACHE ?= $(HOME)/.cache/kubetrain
# CI builds once from a clean clone: incremental state would only cost disk (cargo's advice).
ifeq ($(CI),true)
export CARGO_INCREMENTAL := 0
endif

## run: a local real control plane with simulated GPU nodes, the samples, and the operator
run:
	bash e2e/scripts/run.sh

## test: formatting, lints, unit tests, and API/e2e tests against a real kube-apiserver
test: lint
	bash e2e/scripts/install-control-plane.sh >/dev/null
	bash e2e/scripts/install-helm.sh >/dev/null
	@mkdir -p target && rm -f target/e2e-timings.txt
	$(CARGO) test --workspace --all-targets
	python3 -m py_compile docs/examples/train_ddp.py
	python3 -m unittest discover -s docs/examples -p 'test_*.py'
	@echo "e2e scenario timings:" && cat target/e2e-timings.txt 2>/dev/null || true

lint: fmt clippy

fmt:
	$(CARGO) fmt --all --check

clippy:
	$(CARGO) clippy --workspace --all-targets -- -D warnings

unit:
	$(CARGO) test --workspace --lib --bins

## e2e: only the tests that need the control plane
e2e:
	bash e2e/scripts/install-control-plane.sh >/dev/null
	bash e2e/scripts/install-helm.sh >/dev/null
	$(CARGO) test -p kubetrain-e2e -p kubectl-kubetrain

## crds: regenerate crds/, config/crds/ and the Helm chart's CRDs from the Rust API types
crds:
	$(CARGO) run -q -p kubetrain --bin crdgen -- crds config/crds charts/kubetrain/files/crds

## bench: scheduling-core benchmarks, the quick simulator runs (Setups A and B) and the
## control-plane throughput and reclaim runs (Setup C, release: the operator runs in-process
## and a debug build costs it about three times the CPU) in both binding modes, beside the
## stock batch/v1 Job path, kube-scheduler's rate for pre-pinned pods on the same nodes
## (separate processes: no operator runs beside the peers) and Kueue (built from its Go module
## by e2e/scripts/install-kueue.sh, once) admitting the same Jobs, ending with Setup C's
## systems side by side (target/bench-c/quick.jsonl holds the runs); reads ../shared/traces
bench:
	$(CARGO) bench -p kubetrain --bench sched
	$(CARGO) build --release -p kubetrain --bin kubetrain-sim
	./target/release/kubetrain-sim bench --traces ../shared/traces --out target/sim
	bash e2e/scripts/bench-control-plane.sh target/bench-c/quick.jsonl

# Setup C's sizes of the peers issue, on 1,000 nodes: 1,000 one-GPU jobs and 125 gangs of 8
# (NODES:JOBS:GANG), and 10,000 one-GPU jobs with `make bench-sizes` alone
SIZES_1000 := 1000:1000:1 1000:125:8
## bench-sizes: Setup C at the peers issue's sizes, every system one after another, on 1,000
## nodes: 1,000 one-GPU jobs, 125 gangs of 8 and 10,000 one-GPU jobs (about 80 minutes on
## 2 cores, most of it the 10,000-job runs; not part of `make bench`, whose quick form stays
## under 15 minutes)
bench-sizes:
	bash e2e/scripts/bench-control-plane.sh target/bench-c/sizes.jsonl $(SIZES_1000) 1000:10000:1

## bench-docs: full simulator benchmarks, rewriting docs/benchmarks.md and docs/img/*.svg, and
## Setup C at the quick size and at 1,000 nodes, rewriting the generated part of
## docs/benchmarks-control-plane.md (about an hour on 2 cores)
bench-docs:
	$(CARGO) build --release -p kubetrain --bin kubetrain-sim
	./target/release/kubetrain-sim bench --full --traces ../shared/traces --out target/sim --docs docs
	DOCS=$(CURDIR)/docs/benchmarks-control-plane.md bash e2e/scripts/bench-control-plane.sh \
	  target/bench-c/docs.jsonl 100:1000:1 $(SIZES_1000)

## control-plane: start a control plane in .kubetrain/ and leave it running
control-plane:
	bash e2e/scripts/control-plane.sh up .kubetrain
	@echo "export KUBECONFIG=$(CURDIR)/.kubetrain/kubeconfig"

control-plane-down:
	bash e2e/scripts/control-plane.sh down .kubetrain

## labeler-gpu-check: on a machine with an NVIDIA driver, run the node labeler through NVML
## against a throwaway API server, with the RBAC of config/labeler (results in target/labeler-gpu-check)
labeler-gpu-check:
	bash e2e/scripts/install-control-plane.sh >/dev/null
	$(CARGO) build --release -p kubetrain-node-labeler
	rm -rf target/labeler-gpu-bin && mkdir -p target/labeler-gpu-bin
	cp $(KUBETRAIN_CACHE)/bin/etcd $(KUBETRAIN_CACHE)/bin/kube-apiserver $(KUBETRAIN_CACHE)/bin/kubectl \
	  target/release/kubetrain-node-labeler target/labeler-gpu-bin/
	bash e2e/scripts/labeler-on-gpu.sh target/labeler-gpu-bin target/labeler-gpu-check

## deploy: install the CRDs and the operator on the cluster of the current kubeconfig
deploy:
	kubectl apply --server-side -k config/default

## release: dist/install.yaml (what config/default installs, images tagged $(VERSION)) and the
## Helm chart package dist/kubetrain-$(VERSION).tgz; the images are built from the Dockerfile.
## Fails first, naming each mismatch, unless Cargo.toml, the chart, CHANGELOG.md and the docs'
## install commands agree on $(VERSION) and CHANGELOG.md lists no unreleased change
## (e2e/scripts/check-release.sh)
release:
	bash e2e/scripts/install-control-plane.sh >/dev/null
	bash e2e/scripts/install-helm.sh >/dev/null
	PATH=$(KUBETRAIN_CACHE)/bin:$$PATH bash e2e/scripts/release.sh $(VERSION) dist
