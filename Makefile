# Reconcile Lab. `make help` lists the targets.

GO      ?= go
BIN     := bin/rlab
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X main.version=$(VERSION)
# Go test output lists every test that ran (CI reads it). Two tiers: the fast
# one (go test -short -race ./...: every test that needs no control plane;
# one that does calls simtest.NeedsControlPlane), then the long one,
# scripts/test-all.sh: `go test` of the packages holding such a test, where
# cmd/rlab (every backend, a classroom) and lessons/e2e (the course by
# autoplay and by hand) are the long ones, then the kind passes, two streams
# side by side; a cold asset build from source takes minutes more (where the
# release binaries cannot be fetched).
TESTFLAGS ?= -count=1 -v -timeout 60m

.DEFAULT_GOAL := help

##@ General

.PHONY: help
help: ## Show this help
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make <target>\n"} \
		/^[a-zA-Z_-]+:.*?##/ { printf "  \033[36m%-10s\033[0m %s\n", $$1, $$2 } \
		/^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) }' $(MAKEFILE_LIST)

##@ Run

.PHONY: run
run: build assets ## Start the sandbox and the screen (gets the control plane first if needed)
	$(BIN) up

# Where `make install` puts rlab: every lesson types `rlab …`, so it must be on PATH.
PREFIX ?= $(HOME)/.local

.PHONY: install
install: build ## Put rlab on PATH: a link to bin/rlab in $(PREFIX)/bin (default ~/.local/bin)
	@mkdir -p "$(PREFIX)/bin"
	@ln -sfn "$(abspath $(BIN))" "$(PREFIX)/bin/rlab"
	@case ":$$PATH:" in \
		*":$(PREFIX)/bin:"*) echo "rlab: $(PREFIX)/bin/rlab -> $(abspath $(BIN))" ;; \
		*) echo "rlab: $(PREFIX)/bin/rlab -> $(abspath $(BIN)); $(PREFIX)/bin is not on your PATH: add this line to your shell's profile (~/.bashrc, ~/.zshrc), then open a new terminal:"; \
		   echo '  export PATH="$(PREFIX)/bin:$$PATH"' ;; \
	esac

##@ Build

.PHONY: build
build: ## Build bin/rlab
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/rlab

.PHONY: assets
assets: build ## Get the control plane into the per-user cache: the release binaries (seconds), else a build from source (minutes); instant once there
	$(BIN) assets get

.PHONY: kind-image
kind-image: ## Build the offline kind node image for --backend kind (root and Docker needed; minutes the first time)
	bash scripts/build-kind-node.sh

##@ Test

.PHONY: test
test: test-unit test-long ## Every test: the fast tier, then the long one (what CI runs)

.PHONY: test-unit
# GORACE: the race detector's runtime sleeps a second before each process
# exits (atexit_sleep_ms, for late reports), and this tier starts dozens.
test-unit: ## The fast tier: every test that needs no control plane, under the race detector; no assets, no Docker
	GORACE=atexit_sleep_ms=0 $(GO) test -short -race $(TESTFLAGS) ./...

.PHONY: test-long
test-long: assets ## The long tier: the packages with tests against the real control plane (and kind, where Docker runs; and both as an existing, shared cluster)
	bash scripts/build-kind-node.sh --if-able
	GO=$(GO) bash scripts/test-all.sh $(TESTFLAGS)

# Platforms rlab must also build on (laptops): `make cross` vets (which
# compiles the tests too) and builds every package for each, with no cgo.
CROSS ?= darwin/arm64 darwin/amd64 linux/arm64

.PHONY: cross
cross: ## go vet and go build for macOS (arm64, amd64) and Linux arm64
	@set -e; for p in $(CROSS); do \
		echo "cross: $$p"; \
		GOOS=$${p%/*} GOARCH=$${p#*/} CGO_ENABLED=0 $(GO) vet ./...; \
		GOOS=$${p%/*} GOARCH=$${p#*/} CGO_ENABLED=0 $(GO) build ./...; \
	done

.PHONY: lint
lint: cross ## gofmt and go vet, here and for the cross platforms
	@out=$$(gofmt -l . scripts); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	@# ./... skips testdata: the operators the long tier builds and grades are vetted (so compiled) here
	$(GO) vet ./testdata/operators/book ./testdata/operators/fragile ./testdata/operators/kubebuilder/...
	cd scripts/controlplane && $(GO) vet ./etcd

.PHONY: bench
bench: assets ## Measure start-up, GC, per style (convergence, drift repair, API cost, failover), the screen and lesson checks
	$(GO) test -run '^$$' -bench . -benchtime 5x -count 1 ./sim/cluster/
	$(GO) test -run '^$$' -bench . -benchtime 1x -count 1 -timeout 20m ./sim/sandbox/
	$(GO) test -run '^$$' -bench . -benchmem -count 1 ./tui/ ./lessons/ ./sim/world/

.PHONY: bench-rlab
bench-rlab: build assets ## rlab bench: every figure of docs/reference.md's speed table, start-up alternated with kwokctl (built first)
	$(BIN) bench --rounds 5 --kwokctl "$$(bash scripts/build-kwokctl.sh)"

.PHONY: bench-backends
bench-backends: assets ## The same measurements on envtest and on kind, alternated, in one table (needs make kind-image)
	bash scripts/bench-backends.sh
