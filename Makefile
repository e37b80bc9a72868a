# Switchboard — kubebuilder-style Makefile.
# Tools and envtest binaries are cached outside the checkout (CACHE_DIR) so a clean
# clone needs nothing installed by hand and the second run is fast.

IMG ?= switchboard:latest
# The image's version (switchboard --version, labels) and its timestamps: the commit's, so the
# same commit builds the same image digest.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)
IMAGE_ARCHIVE ?= bin/switchboard-image.tar
CACHE_DIR ?= $(or $(SWITCHBOARD_CACHE),$(or $(XDG_CACHE_HOME),$(HOME)/.cache)/switchboard)
LOCALBIN ?= $(CACHE_DIR)/bin
# Tools are pinned by the separate module hack/tools (go.mod `tool` directives), so their
# dependencies never move the project's; each is built once per version into LOCALBIN.
tool_version = $(shell cd hack/tools && go list -m -f '{{.Version}}' $(1))
CONTROLLER_TOOLS_VERSION ?= $(call tool_version,sigs.k8s.io/controller-tools)
CONTROLLER_GEN ?= $(LOCALBIN)/controller-gen-$(CONTROLLER_TOOLS_VERSION)
KUSTOMIZE_VERSION ?= $(call tool_version,sigs.k8s.io/kustomize/kustomize/v5)
KUSTOMIZE ?= $(LOCALBIN)/kustomize-$(KUSTOMIZE_VERSION)
GOLANGCI_LINT_VERSION ?= $(call tool_version,github.com/golangci/golangci-lint/v2)
GOLANGCI_LINT ?= $(LOCALBIN)/golangci-lint-$(GOLANGCI_LINT_VERSION)
KUBECTL ?= kubectl
GO_TEST_FLAGS ?= -count=1 -timeout 40m
# The release before this one: the upgrade tests run its binary (built from this repository's
# history by hack/previous-release.sh) against this release's schema. Move it at each release.
PREVIOUS_RELEASE ?= f0c53fda29026ee657b9bc97ab9d23afec34c274
export SWITCHBOARD_CACHE := $(CACHE_DIR)
export PREVIOUS_RELEASE

.PHONY: all
all: build

##@ General

.PHONY: help
help: ## Display this help.
	@awk 'BEGIN {FS = ":.*##"; printf "\nUsage:\n  make \033[36m<target>\033[0m\n"} /^[a-zA-Z_0-9-]+:.*?##/ { printf "  \033[36m%-18s\033[0m %s\n", $$1, $$2 } /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) } ' $(MAKEFILE_LIST)

##@ Development

.PHONY: manifests
manifests: controller-gen ## Generate CRDs and RBAC from kubebuilder markers.
	$(CONTROLLER_GEN) rbac:roleName=manager-role crd paths="./api/..." paths="./controllers/..." output:crd:artifacts:config=config/crd/bases output:rbac:artifacts:config=config/rbac

.PHONY: generate
generate: controller-gen tools ## Generate DeepCopy methods, internal/store/schema.sql, api/openapi/v1.json, the Go client (api/client) and the summarizer's intent classifier (internal/transcription/intent_model.json).
	$(CONTROLLER_GEN) object:headerFile="hack/boilerplate.go.txt" paths="./api/..."
	go run ./hack/schemadump internal/store/schema.sql
	hack/generate-openapi.sh
	go generate ./internal/transcription/

.PHONY: verify-generated
verify-generated: controller-gen tools ## Fail when committed CRDs, RBAC, deepcopy, schema.sql, OpenAPI description, Go client or summarizer intent classifier are stale.
	@hack/verify-generated.sh "$(CONTROLLER_GEN)"

.PHONY: verify-tracked
verify-tracked: ## Fail when a tracked file is an executable binary or over 1 MB outside the allow-list.
	@hack/verify-tracked.sh

.PHONY: verify-config
verify-config: kustomize ## Fail when the kustomize bases do not render.
	@$(KUSTOMIZE) build config/default >/dev/null && $(KUSTOMIZE) build config/crd >/dev/null && echo "config/ renders"
	@$(KUSTOMIZE) build config/prometheus >/dev/null && echo "config/prometheus renders"

.PHONY: verify-bench-results
verify-bench-results: ## Test hack/benchresults (a module of its own, outside ./...) and fail when docs/benchmarks.md's "Current figures" differ from the latest file in docs/bench-results.
	cd hack/benchresults && go vet ./... && go test -count=1 ./...

.PHONY: fmt
fmt: ## Run go fmt.
	go fmt ./...

.PHONY: vet
vet: ## Run go vet.
	go vet ./...

.PHONY: lint
lint: golangci-lint ## Run golangci-lint (configuration in .golangci.yml).
	$(GOLANGCI_LINT) run ./...

.PHONY: tools
tools: ## Install what the tests and `make run` need (PostgreSQL, envtest binaries).
	@hack/ensure-tools.sh

.PHONY: envtest
envtest: ## Build (once) and cache kube-apiserver and etcd for envtest.
	@hack/envtest-binaries.sh >/dev/null

.PHONY: test
test: tools verify-tracked verify-generated verify-config verify-bench-results vet lint envtest previous-release ## Run unit and envtest integration tests (real kube-apiserver, etcd, PostgreSQL).
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed on:"; gofmt -l $$(git ls-files '*.go'); exit 1; }
	KUBEBUILDER_ASSETS="$$(hack/envtest-binaries.sh)" PREVIOUS_RELEASE_BIN="$$(hack/previous-release.sh)" go test $(GO_TEST_FLAGS) ./...
	# The chaos run last and alone: it needs the machine to itself, not beside the other packages.
	$(MAKE) --no-print-directory test-chaos

.PHONY: test-e2e
test-e2e: tools envtest kustomize ## As root: a single-node cluster here (hack/node/up.sh), config/default deployed on it with the image: the public API through its Service, a rollout restart under load, a drain under the PodDisruptionBudget, a leader killed.
	KUSTOMIZE=$(KUSTOMIZE) hack/node/up.sh --then hack/node/e2e.sh

.PHONY: test-chaos
test-chaos: envtest ## Every fault at once against three replicas for CHAOS_DURATION (default 5m; CHAOS_SEED replays a schedule; docs/reliability.md); the last step of make test.
	CHAOS=1 KUBEBUILDER_ASSETS="$$(hack/envtest-binaries.sh)" go test -count=1 -p 1 -v -timeout 60m -run '^TestChaos$$' ./test/e2e/chaos/

.PHONY: previous-release
previous-release: ## Build (once) and cache the previous release's binary (PREVIOUS_RELEASE) for the upgrade tests.
	@hack/previous-release.sh >/dev/null

.PHONY: bench
bench: tools envtest ## Run the benchmarks (see docs/benchmarks.md), one package at a time.
	# -p 1: go test runs packages in parallel by default, and two benchmarks sharing these cores
	# measure each other. The retention soak alone runs BENCH_SOAK_DURATION (default 30m), the
	# outage BENCH_OUTAGE_FOR (default 30m) and the recovery after it, the chaos run
	# CHAOS_DURATION (default 30m) and its settling (CHAOS=1: with -p 1 it has the machine).
	# hack/bench/go-bench.sh shows go test's output and writes it as a results file in
	# docs/bench-results (commit, date, machine, load, each figure with its command).
	CHAOS=1 KUBEBUILDER_ASSETS="$$(hack/envtest-binaries.sh)" CONVOY_BIN= OUTPOST_BIN= SVIX_BIN= hack/bench/go-bench.sh -p 1 -run '^$$' -bench . -benchtime 1x -timeout 300m ./...
	$(MAKE) bench-docs
	@if [ -n "$$CONVOY_BIN$$OUTPOST_BIN$$SVIX_BIN" ]; then hack/bench/peer.sh; \
	else echo "Peer comparison skipped: set CONVOY_BIN, OUTPOST_BIN or SVIX_BIN to run it (make bench-peer, docs/benchmarks.md)"; fi
	$(MAKE) bench-stt

.PHONY: bench-docs
bench-docs: ## Write docs/benchmarks.md's "Current figures" from the latest results file in docs/bench-results.
	cd hack/benchresults && go run . docs -results ../../docs/bench-results -doc ../../docs/benchmarks.md

.PHONY: bench-stt
bench-stt: tools ## Speech-to-text word error rate and real-time factor per engine, and the labelled calls (docs/transcription.md, docs/benchmarks.md; BENCH_STT_LIMIT=N for a quick run of the first).
	hack/install-vosk.sh >/dev/null
	go run ./hack/sttbench -limit $(or $(BENCH_STT_LIMIT),0) -hypotheses $(CACHE_DIR)/stt-bench-hypotheses.txt
	go run ./hack/sttbench -calls -hypotheses $(CACHE_DIR)/stt-bench-calls-hypotheses.txt

.PHONY: bench-peer
bench-peer: tools envtest ## Switchboard, Convoy, Outpost and Svix side by side, same harness and cases (CONVOY_BIN, OUTPOST_BIN, SVIX_BIN: binaries built beforehand; BENCH_EVENTS, default 2000).
	hack/bench/peer.sh

##@ Build

.PHONY: build
build: ## Build the switchboard binary.
	go build -o bin/switchboard .

.PHONY: run
run: tools envtest ## Run the whole service locally: kube-apiserver+etcd, PostgreSQL, controllers, API on :8080.
	KUBEBUILDER_ASSETS="$$(hack/envtest-binaries.sh)" go run ./hack/localdev

.PHONY: image
image: ## Build the container image without a daemon or base image, reproducibly, as an OCI archive (IMAGE_ARCHIVE).
	go run ./hack/imagebuild -o $(IMAGE_ARCHIVE) -name $(IMG) -version $(VERSION) \
		-revision "$$(git rev-parse HEAD 2>/dev/null)" -created $(SOURCE_DATE_EPOCH)

.PHONY: docker-build
docker-build: ## Build the container image with Docker (same binary and base contents as make image).
	docker build --build-arg VERSION=$(VERSION) -t $(IMG) .

.PHONY: docker-push
docker-push: ## Push the container image.
	docker push $(IMG)

##@ Deployment

.PHONY: install
install: manifests kustomize ## Install CRDs into the cluster of ~/.kube/config.
	$(KUSTOMIZE) build config/crd | $(KUBECTL) apply -f -

.PHONY: uninstall
uninstall: manifests kustomize ## Remove CRDs from the cluster.
	$(KUSTOMIZE) build config/crd | $(KUBECTL) delete --ignore-not-found -f -

.PHONY: deploy
deploy: manifests kustomize ## Deploy the manager to the cluster.
	cd config/manager && $(KUSTOMIZE) edit set image controller=$(IMG)
	$(KUSTOMIZE) build config/default | $(KUBECTL) apply -f -

.PHONY: undeploy
undeploy: kustomize ## Remove the manager from the cluster.
	$(KUSTOMIZE) build config/default | $(KUBECTL) delete --ignore-not-found -f -

##@ Tool binaries

.PHONY: controller-gen
controller-gen: $(CONTROLLER_GEN)
$(CONTROLLER_GEN):
	@mkdir -p $(LOCALBIN)
	cd hack/tools && go build -o $(CONTROLLER_GEN) sigs.k8s.io/controller-tools/cmd/controller-gen

.PHONY: kustomize
kustomize: $(KUSTOMIZE)
$(KUSTOMIZE):
	@mkdir -p $(LOCALBIN)
	cd hack/tools && go build -o $(KUSTOMIZE) sigs.k8s.io/kustomize/kustomize/v5

.PHONY: golangci-lint
golangci-lint: $(GOLANGCI_LINT)
$(GOLANGCI_LINT):
	@mkdir -p $(LOCALBIN)
	cd hack/tools && go build -o $(GOLANGCI_LINT) github.com/golangci/golangci-lint/v2/cmd/golangci-lint
