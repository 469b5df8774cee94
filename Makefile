# Ballast — make help lists the targets.
SHELL := /usr/bin/env bash
GO    ?= go
BIN   := $(CURDIR)/bin
# envtest finds etcd, kube-apiserver and kubectl here.
export KUBEBUILDER_ASSETS := $(BIN)
GOTESTFLAGS ?= -count=1 -timeout 30m
# make images writes the OCI image archives here; the real-node tier (test/node) imports them.
IMAGES_DIR ?= $(CURDIR)/_output/images
export BALLAST_IMAGES := $(IMAGES_DIR)

.PHONY: help
help: ## list the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-z-]+:.*## / {printf "  %-10s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: tools
tools: ## build the pinned test-bed tools (kube v1.37.2, etcd, helm, kwok, controller-gen, metrics-server, prometheus v3.16.0) into bin/
	@hack/tools/build.sh

.PHONY: build
build: ## build ballast-control into bin/
	$(GO) build -o $(BIN)/ ./cmd/...

.PHONY: images
images: ## build the OCI image archives (ballast-control, ballast-node, load app, pause, valkey) into _output/images
	cd hack/imagebuild && $(GO) run . -out $(IMAGES_DIR)

.PHONY: generate
generate: ## regenerate deepcopy code and CRD manifests
	@hack/tools/build.sh controller-gen
	$(BIN)/controller-gen object paths=./pkg/apis/... crd:crdVersions=v1 output:crd:artifacts:config=pkg/apis/ballast/v1/crds
	cp pkg/apis/ballast/v1/crds/*.yaml charts/ballast/crds/
	$(MAKE) --no-print-directory generate-bpf

# The eBPF objects (bpf/memsignal.c → pkg/nodeagent/ebpf/memsignal_*_bpfel.{go,o}) need
# clang, llvm-strip and libbpf-dev (hack/install-deps.sh). bpf/vmlinux.h is regenerated only
# by `make vmlinux` (it describes one kernel's types; CO-RE relocates them at load time).
.PHONY: generate-bpf
generate-bpf: ## rebuild the committed eBPF objects with bpf2go
	$(GO) generate ./pkg/nodeagent/ebpf/

.PHONY: vmlinux
vmlinux: ## regenerate bpf/vmlinux.h from this machine's kernel BTF
	bpftool btf dump file /sys/kernel/btf/vmlinux format c > bpf/vmlinux.h
	uname -r > bpf/vmlinux.kernel

.PHONY: verify
verify: generate ## regenerate everything and fail if the tree changed
	@git diff --exit-code -- pkg/apis charts/ballast/crds pkg/nodeagent/ebpf || { echo "generated files are stale: run make generate and commit"; exit 1; }
	@test -z "$$(git status --porcelain -- pkg/apis charts/ballast/crds pkg/nodeagent/ebpf)" || { git status --porcelain -- pkg/apis charts/ballast/crds pkg/nodeagent/ebpf; echo "untracked generated files: run make generate and commit"; exit 1; }
	@sha256sum pkg/nodeagent/ebpf/*.o > /tmp/ballast-bpf.sum && $(GO) generate ./pkg/nodeagent/ebpf/ && sha256sum -c --quiet /tmp/ballast-bpf.sum || { echo "eBPF objects are not reproducible: two generations differ"; exit 1; }
	@$(GO) mod tidy -diff
	@cd hack/imagebuild && $(GO) mod tidy -diff
	@$(GO) run ./hack/archtable -check

.PHONY: archtable
archtable: ## rewrite the package import table and diagram of docs/architecture.md from go list
	$(GO) run ./hack/archtable

.PHONY: lint
lint: ## gofmt, go vet and the dependency-direction check (hack/checkdeps)
	@out=$$(gofmt -l $$(git ls-files '*.go')); test -z "$$out" || { echo "gofmt needed:"; echo "$$out"; exit 1; }
	$(GO) vet ./...
	cd hack/imagebuild && $(GO) vet ./...
	$(GO) run ./hack/checkdeps

.PHONY: test
test: tools images ## run every test against the real servers, the real-node tier included (builds the tools and images first)
	$(GO) test $(GOTESTFLAGS) ./...

.PHONY: bench
bench: tools ## run the benchmarks behind docs/benchmarks.md (several minutes)
	$(GO) test -run '^$$' -bench . -benchtime 1x -timeout 60m ./test/integration/store/ ./test/bench/ ./test/integration/nodeagent/
	$(GO) test -run '^$$' -bench . -benchtime 3s -timeout 30m ./pkg/nodeagent/agent/
	$(GO) test -run '^$$' -bench . -benchtime 1s -count 3 ./pkg/resizeplan/

# Side by side with VPA 1.8.1 (issue 17); neither is part of make test. They build only
# their own tools (VPA, metrics-server), never the whole tool set.
BENCH_DIR   ?= $(CURDIR)/_output/bench
SCALE_NODES ?= 1000
SCALE_PODS  ?= 20000

.PHONY: bench-vpa bench-scale
bench-vpa: ## Ballast and VPA 1.8.1 on identical sandboxes, one scenario, same seed; table + chart into docs/benchmarks.md
	@hack/tools/build.sh vpa metrics-server
	$(GO) run ./test/vpabench -dir $(BENCH_DIR)/vpa -docs docs/benchmarks.md $(BENCH_VPA_FLAGS)

bench-scale: ## SCALE_NODES nodes / SCALE_PODS pods (1,000 / 20,000): Ballast's store and webhook, then VPA in a kwok cluster
	@hack/tools/build.sh vpa metrics-server
	@mkdir -p $(BENCH_DIR)
	BALLAST_SCALE_NODES=$(SCALE_NODES) BALLAST_SCALE_PODS=$(SCALE_PODS) BALLAST_ADMISSION_PROFILES=$$(( $(SCALE_PODS) / 2 )) \
	BALLAST_SCALE_OUT=$(BENCH_DIR)/scale-ballast.json BALLAST_ADMISSION_OUT=$(BENCH_DIR)/admission-ballast.json \
	  $(GO) test -run '^$$' -bench 'BenchmarkScale|BenchmarkAdmissionLatency' -benchtime 1x -timeout 60m ./test/bench/
	$(GO) run ./test/vpabench -mode scale -dir $(BENCH_DIR)/scale -nodes $(SCALE_NODES) -pods $(SCALE_PODS) \
	  -ballast $(BENCH_DIR)/scale-ballast.json -ballast-admission $(BENCH_DIR)/admission-ballast.json -docs docs/benchmarks.md $(BENCH_SCALE_FLAGS)

# The real ballast-control binary at scale, agents simulated in the bench process; writes
# $(BENCH_DIR)/live/scale-ballast-live.json (BENCH_LIVE_FLAGS: -steady, -sampling, -rate, -history-days, -memory-limit,
# -control-args "...").
.PHONY: bench-scale-live
bench-scale-live: ## SCALE_NODES / SCALE_PODS: live ballast-control (reconcile loop, RSS, API writes, webhook under 200 creates/s)
	$(GO) run ./test/vpabench -mode ballast-live -dir $(BENCH_DIR)/live -nodes $(SCALE_NODES) -pods $(SCALE_PODS) $(BENCH_LIVE_FLAGS)

.PHONY: demo demo-check
demo: demo-check tools build ## run the measure → profile → apply loop locally (DEMO_FLAGS=--keep keeps it running)
	$(BIN)/ballast-demo $(DEMO_FLAGS)

# demo-check fails fast, before the tool build, when the demo could not run anyway.
demo-check:
	hack/check-demo.sh
