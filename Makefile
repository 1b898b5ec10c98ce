# gangboost: `make test` runs every test tier; `make demo` runs the pipeline on the local default.
SHELL := /bin/bash
GO ?= go
BIN := $(CURDIR)/bin
# pipelinespec is not in the checksum database.
export GONOSUMDB := github.com/kubeflow/pipelines
export GANGBOOST_BIN_DIR := $(BIN)

BINARIES := gangboost-train gangboost-runtime launch-xgboostjob
# The one version every image tag, manifest and component spec carries (a test checks).
VERSION := $(shell cat VERSION)
REGISTRY ?= ghcr.io/gangboost
export VERSION REGISTRY

.PHONY: all deps build images push cluster-tools test test-e2e bench fuzz load-test proto clean

all: build

deps:
	@scripts/deps.sh

build: deps
	@mkdir -p $(BIN)
	$(GO) build -o $(BIN)/gangboost-train ./components/xgboost-trainer
	CGO_ENABLED=0 $(GO) build -trimpath -o $(BIN)/gangboost-runtime ./runtime/cmd/gangboost-runtime
	CGO_ENABLED=0 $(GO) build -trimpath -o $(BIN)/launch-xgboostjob ./components/launch-xgboostjob

# Container images without a Docker daemon or a base image pull: gangboost-runtime (FROM scratch)
# and gangboost (trainer + components on a root of Debian packages), as OCI archives in dist/.
images: build
	scripts/build-images.sh

# Push the images to REGISTRY (make push REGISTRY=registry.example.com/ml).
push: images
	@for name in gangboost-runtime gangboost; do \
	  echo "buildah push $(REGISTRY)/$$name:$(VERSION)"; \
	  buildah push $(REGISTRY)/$$name:$(VERSION) docker://$(REGISTRY)/$$name:$(VERSION) || exit 1; \
	done

# The test control plane's binaries (kube-apiserver, controller-manager, KWOK, Volcano
# scheduler, training operator), built from the module proxy into a cache keyed by version:
# about 15-35 minutes cold on 2 cores, a no-op when current.
cluster-tools: deps
	$(GO) run ./test/cluster/cmd/build-tools

# CI=true: a control plane that cannot start fails the e2e tests instead of skipping them.
test: build cluster-tools
	$(GO) vet ./...
	CI=$${CI:-true} $(GO) test -count=1 -timeout 45m ./...
	$(MAKE) --no-print-directory fuzz FUZZTIME=10000x

# Only the tests against the control plane, verbosely.
test-e2e: build cluster-tools
	CI=$${CI:-true} $(GO) test -count=1 -v -timeout 45m ./test/cluster/...

bench: deps
	$(GO) test -run '^$$' -bench . -benchtime 2s ./internal/... ./runtime/...

# Every fuzz target, FUZZTIME each (go test runs one target of one package at a time). A count
# (10000x) rather than a duration in `make test`: Go 1.26's fuzz coordinator can report a
# spurious "context deadline exceeded" when a duration runs out (golang/go#75804).
FUZZTIME ?= 10s
FUZZ_TARGETS := ./runtime/v2:FuzzDecodeJSONData ./runtime/v2:FuzzDecodeBinaryData ./runtime/v2:FuzzParseInferRequest \
	./runtime/v2:FuzzSanitizeNonFinite ./runtime/rest:FuzzInferBody ./internal/forest:FuzzParse \
	./internal/dataset:FuzzLoadCSV ./internal/dataset:FuzzLoadLibSVM ./internal/tracker:FuzzReadHello
fuzz: deps
	@for t in $(FUZZ_TARGETS); do \
	  echo "fuzz $$t for $(FUZZTIME)"; \
	  $(GO) test -run '^$$' -fuzz "^$${t#*:}$$" -fuzztime $(FUZZTIME) "$${t%%:*}" || exit 1; \
	done

load-test: build
	scripts/load-test.sh

proto:
	scripts/gen-proto.sh

clean:
	rm -rf $(BIN) dist
