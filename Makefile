# gangboost: `make test` runs every test tier; `make demo` runs the pipeline on the local default.
SHELL := /bin/bash
GO ?= go
BIN := $(CURDIR)/bin
# pipelinespec is not in the checksum database.
export GONOSUMDB := github.com/kubeflow/pipelines
export GANGBOOST_BIN_DIR := $(BIN)

BINARIES := gangboost-train gangboost-runtime

.PHONY: all deps build test test-unit bench clean

all: build

deps:
	@scripts/deps.sh

build: deps
	@mkdir -p $(BIN)
	$(GO) build -o $(BIN)/gangboost-train ./components/xgboost-trainer
	CGO_ENABLED=0 $(GO) build -trimpath -o $(BIN)/gangboost-runtime ./runtime/cmd/gangboost-runtime

test: build
	$(GO) vet ./...
	$(GO) test -count=1 -timeout 30m ./...

bench: deps
	$(GO) test -run '^$$' -bench . -benchtime 2s ./internal/... ./runtime/...

clean:
	rm -rf $(BIN)
