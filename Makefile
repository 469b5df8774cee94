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
tools: ## build the pinned test-bed tools (kube v1.37.2, etcd, helm, kwok, controller-gen) into bin/
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

.PHONY: verify
verify: generate ## regenerate everything and fail if the tree changed
	@git diff --exit-code -- pkg/apis charts/ballast/crds || { echo "generated files are stale: run make generate and commit"; exit 1; }
	@test -z "$$(git status --porcelain -- pkg/apis charts/ballast/crds)" || { git status --porcelain -- pkg/apis charts/ballast/crds; echo "untracked generated files: run make generate and commit"; exit 1; }
	@$(GO) mod tidy -diff
	@cd hack/imagebuild && $(GO) mod tidy -diff

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
	$(GO) test -run '^$$' -bench . -benchtime 1s -count 3 ./pkg/control/resize/

.PHONY: demo
demo: tools build ## run the measure → profile → apply loop locally (DEMO_FLAGS=--keep keeps it running)
	$(BIN)/ballast-demo $(DEMO_FLAGS)
