# Grantry. `make help` lists the targets.

GO       ?= go
# The race detector needs cgo; a machine without a C compiler runs the tests without it.
# With it comes checkptr, which checks every unsafe pointer conversion: the pure-Go SQLite under
# the tests' in-process FerretDB (in MongoDB's place) is made of them and is built without it.
# (Built without the race detector's instrumentation too, it was faster still, but the detector
# then reported races in Grantry's own goroutines that a fully instrumented build never showed.)
RACE     := $(if $(filter 1,$(shell $(GO) env CGO_ENABLED)),-race -gcflags=modernc.org/...=-d=checkptr=0,)
FILTER   ?= .
FUZZTIME ?= 30s
# How many times `make stress` runs the whole suite.
STRESS_RUNS ?= 5
# The measured time of each run of `make bench` and `make bench-large`.
BENCH_DURATION ?= 10s
# The rows `make bench` runs: all, or some of them, comma-separated (docs/benchmarks.md).
BENCH_SYSTEMS ?= all
BIN      := bin/grantry

.DEFAULT_GOAL := help

.PHONY: help
help: ## List the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  %-12s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: run
run: ## Start the service on the embedded store (data in ./data)
	$(GO) run ./cmd/grantry serve

# Tests build without cmd/grantry/default.pgo: a profile changes how the code is optimized, not
# what it does, and with it cmd/grantry's test binary would compile every dependency again.
.PHONY: test
test: ## Run every test: Go, Rego, both stores (FILTER=regexp runs a subset)
	$(GO) test $(RACE) -pgo=off -count=1 -run '$(FILTER)' ./...

.PHONY: stress
stress: ## Run make test STRESS_RUNS times (default 5) on a loaded machine; list every failed test
	STRESS_RUNS=$(STRESS_RUNS) GO=$(GO) MAKE=$(MAKE) .ci/stress

.PHONY: bench
bench: build ## Go benchmarks, then Grantry (HTTP, gateways, ABAC, MongoDB, replicas) vs OPA vs bare net/http; results in bench/results/
	$(GO) test -run '^$$' -bench '$(FILTER)' -benchmem ./...
	$(GO) build -o bin/grantry-bench ./cmd/grantry-bench
	$(GO) build -o bin/opa github.com/open-policy-agent/opa
	bin/grantry-bench run -grantry $(BIN) -opa bin/opa -duration $(BENCH_DURATION) -systems '$(BENCH_SYSTEMS)'

.PHONY: bench-large
bench-large: build ## Grantry's checks and memory with 1,000,000 users × 20 grants; results in bench/results/
	$(GO) build -o bin/grantry-bench ./cmd/grantry-bench
	bin/grantry-bench scale -grantry $(BIN) -duration $(BENCH_DURATION)

.PHONY: pgo
pgo: ## Record Grantry's CPU profile under make bench's load into cmd/grantry/default.pgo (go build's PGO)
	CGO_ENABLED=0 $(GO) build -trimpath -tags cpuprofile -o bin/grantry-cpuprofile ./cmd/grantry
	$(GO) build -o bin/grantry-bench ./cmd/grantry-bench
	bin/grantry-bench profile -grantry bin/grantry-cpuprofile -out cmd/grantry/default.pgo -duration $(BENCH_DURATION)

.PHONY: fuzz
fuzz: ## Run every fuzz target for FUZZTIME each (default 30s)
	@set -e; for pkg in $$($(GO) list ./...); do \
		for target in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
			echo "fuzz $$pkg $$target"; \
			$(GO) test -run '^$$' -fuzz "^$$target$$" -fuzztime $(FUZZTIME) $$pkg; \
		done; \
	done

.PHONY: lint
lint: ## gofmt, go vet, and the Rego formatter check
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo "gofmt needed"; exit 1; }
	$(GO) vet ./...
	$(GO) test -count=1 -run TestEmbeddedPolicyIsFormatted ./policy/

.PHONY: build
# -buildvcs=auto stamps the revision that grantry version and grantry_build_info show, even
# where GOFLAGS turns stamping off; a tree that is not a git checkout builds unstamped.
build: ## Build bin/grantry
	CGO_ENABLED=0 $(GO) build -buildvcs=auto -trimpath -o $(BIN) ./cmd/grantry

.PHONY: clean
clean: ## Remove the built binary and the test cache (not ./data)
	rm -rf bin
	$(GO) clean -testcache
