# Grantry. `make help` lists the targets.

GO       ?= go
# The race detector needs cgo; a machine without a C compiler runs the tests without it.
RACE     := $(if $(filter 1,$(shell $(GO) env CGO_ENABLED)),-race,)
FILTER   ?= .
FUZZTIME ?= 30s
BIN      := bin/grantry

.DEFAULT_GOAL := help

.PHONY: help
help: ## List the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  %-8s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: run
run: ## Start the service on the embedded store (data in ./data)
	$(GO) run ./cmd/grantry serve

.PHONY: test
test: ## Run every test: Go, Rego, both stores (FILTER=regexp runs a subset)
	$(GO) test $(RACE) -count=1 -run '$(FILTER)' ./...

.PHONY: bench
bench: ## Run the Go benchmarks
	$(GO) test -run '^$$' -bench '$(FILTER)' -benchmem ./...

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
build: ## Build bin/grantry
	CGO_ENABLED=0 $(GO) build -trimpath -o $(BIN) ./cmd/grantry

.PHONY: clean
clean: ## Remove the built binary and the test cache (not ./data)
	rm -rf bin
	$(GO) clean -testcache
