# gangboost: `make test` runs every test tier; `make help` lists every target.
SHELL := /bin/bash
GO ?= go
BIN := $(CURDIR)/bin
# pipelinespec and the model registry v0.3.0 are not in the checksum database.
export GONOSUMDB := github.com/kubeflow/pipelines,github.com/kubeflow/model-registry
export GANGBOOST_BIN_DIR := $(BIN)

# The pipeline components: each bin/<name> is a link to gangboost-components, which runs the
# component its name says (one binary, not four copies of the Kubernetes client libraries).
COMPONENTS := launch-xgboostjob deploy-inferenceservice evaluate prepare-data promote-model
BINARIES := gangboost-train gangboost-runtime gangboost-storage-initializer gangboost-components $(COMPONENTS) gangboost
# The one version every image tag, manifest and component spec carries (a test checks).
VERSION := $(shell cat VERSION)
REGISTRY ?= ghcr.io/gangboost
export VERSION REGISTRY

.PHONY: all help deps deps-build build images push cluster-tools s3-server cluster-up test test-e2e bench bench-load fuzz load-test load-test-kit load-test-batching load-profile pgo-profile proto clean \
	install-volcano verify-volcano configure-training-operator deploy-runtime deploy-example \
	status logs describe-job port-forward clean-app clean-all

# Cluster targets: the namespace, InferenceService and XGBoostJob they act on.
NAMESPACE ?= gangboost
ISVC ?= iris
JOB ?=
VOLCANO_VERSION ?= v1.15.1
# Where Kubeflow Trainer's controller manager runs: kubeflow-system (its own manifests) or kubeflow
# (Kubeflow's platform install).
TRAINER_NAMESPACE ?= kubeflow-system
KUBECTL ?= kubectl

all: build

# libxgboost 3.0 from Debian 13 (trixie): gangboost-train and every test binary that links
# libxgboost are linked against a sysroot of trixie's .debs under the tool cache, made by
# scripts/xgboost-sysroot.sh (downloaded once, ~55 MB; nothing installed into /). The flags are
# exported to every go command below, so make build, make test, make demo and the tests' own builds
# of the trainer link the same library (scripts/xgboost-flags.sh says why each flag). Outside make:
#   eval "$$(scripts/xgboost-flags.sh env)"; go test ./internal/training/...
XGBOOST_SYSROOT := $(shell scripts/xgboost-sysroot.sh --path)
CGO_CFLAGS := $(shell scripts/xgboost-flags.sh cflags)
CGO_LDFLAGS := $(shell scripts/xgboost-flags.sh ldflags)
# Every go command builds with -trimpath (the binaries, go vet, go test, the fuzzing and the
# binaries tests build): the packages then compile once for all of them, where a package built
# with and without it is two compilations, and they compile to the same objects in any checkout,
# so a second clone's make test reuses the first's instead of compiling every package of the
# module again (its folder is otherwise part of each one's build). The build tags netgo and
# osusergo likewise let the cgo builds (gangboost-train, the tests) and the CGO_ENABLED=0 ones
# compile the same packages (scripts/xgboost-flags.sh says what they change), and the compiler
# writes no DWARF, which nothing reads (scripts/xgboost-flags.sh gcflags says why).
# scripts/xgboost-flags.sh goflags is all four: -trimpath, the tags, -gcflags and the linker's -r.
GOFLAGS := $(strip $(GOFLAGS) $(shell scripts/xgboost-flags.sh goflags))
export CGO_CFLAGS CGO_LDFLAGS GOFLAGS
# go test's -ldflags in make test and fuzz: GOFLAGS' -r, and no DWARF (scripts/xgboost-flags.sh).
TEST_LDFLAGS := $(shell scripts/xgboost-flags.sh testldflags)
.PHONY: xgboost-sysroot
## xgboost-sysroot: download Debian 13's libxgboost 3.0 .debs and unpack them into the tool cache (once)
xgboost-sysroot: $(XGBOOST_SYSROOT)/.complete
$(XGBOOST_SYSROOT)/.complete:
	@scripts/xgboost-sysroot.sh >/dev/null

## help: list the targets with what each does
help:
	@awk -F': ' '/^## /{sub(/^## /, ""); split($$0, a, ": "); printf "  %-28s %s\n", a[1], substr($$0, length(a[1]) + 3)}' $(MAKEFILE_LIST)

# Each target installs only what it needs: the build (and make demo) libxgboost alone, the tests
# everything else too (scripts/deps.sh lists both sets).
## deps-build: install the Debian packages the build and make demo need (gcc for cgo), and the libxgboost sysroot
deps-build: xgboost-sysroot
	@scripts/deps.sh build

## deps: install every Debian package the tests, images and benchmarks need (as root), and the libxgboost sysroot
deps: xgboost-sysroot
	@scripts/deps.sh test

# gangboost-components is built with -s -w (no symbol table or DWARF; stack traces stay): it is
# in the image every step and trainer pod pulls. REGISTRY is linked into every binary
# (launch-xgboostjob's default trainer image, gangboost pipeline compile's default --registry).
REGISTRY_LDFLAGS = -X github.com/gangboost/gangboost/internal/contract/version.Registry=$(REGISTRY)
## build: build every binary into bin/ (REGISTRY=R: the binaries name R's images)
# The builds run one after another: each reuses the packages the one before compiled (separate go
# builds side by side would compile the same Kubernetes libraries twice over). gangboost-train is
# built with -trimpath as the others are, so the standard library compiles once for all of them.
build: deps-build
	@mkdir -p $(BIN)
	$(GO) build -trimpath -ldflags='$(REGISTRY_LDFLAGS)' -o $(BIN)/gangboost-train ./components/xgboost-trainer
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags='$(REGISTRY_LDFLAGS)' -o $(BIN)/gangboost-runtime ./runtime/cmd/gangboost-runtime
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags='-s -w' -o $(BIN)/gangboost-storage-initializer ./runtime/cmd/gangboost-storage-initializer
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags='$(REGISTRY_LDFLAGS)' -o $(BIN)/gangboost ./cmd/gangboost
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags='-s -w $(REGISTRY_LDFLAGS)' -o $(BIN)/gangboost-components ./cmd/gangboost-components
	for c in $(COMPONENTS); do ln -sfn gangboost-components $(BIN)/$$c; done

# The pipeline package: pipelines/xgboost-volcano.yaml is what the Go code in pipelines/ builds
# (go test ./pipelines fails when they differ).
.PHONY: compile-pipeline upload-pipeline
KFP_HOST ?=
# REGISTRY=R writes every image reference of the package and of components/*/component.yaml in R
# (the committed files name the default, ghcr.io/gangboost).
## compile-pipeline: regenerate pipelines/xgboost-volcano.yaml and the component specs with bin/gangboost (REGISTRY=R: images in R)
compile-pipeline:
	@mkdir -p $(BIN)
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags='$(REGISTRY_LDFLAGS)' -o $(BIN)/gangboost ./cmd/gangboost
	$(BIN)/gangboost pipeline compile --registry $(REGISTRY) -o pipelines/xgboost-volcano.yaml --components-dir components

## upload-pipeline: KFP_HOST=<url> [KFP_TOKEN=...] [KFP_NAMESPACE=<profile>] [REGISTRY=r]: upload the package to Kubeflow Pipelines (a new version when it exists; into a profile with KFP_NAMESPACE); the tracked package is never rewritten: the upload is compiled into bin/ for REGISTRY's images
upload-pipeline: build
	$(BIN)/gangboost pipeline compile --registry $(REGISTRY) -o $(BIN)/xgboost-volcano.yaml --components-dir components
	$(BIN)/gangboost pipeline upload $(if $(KFP_HOST),--host $(KFP_HOST)) $(if $(KFP_NAMESPACE),--namespace $(KFP_NAMESPACE)) $(if $(KFP_TOKEN),--token $(KFP_TOKEN)) $(BIN)/xgboost-volcano.yaml

# Container images without a Docker daemon or a base image pull: gangboost-runtime (FROM scratch)
# and gangboost (trainer + components on a root of Debian packages), one OCI archive per
# architecture in dist/ and a manifest list of them each. The other architecture's binaries are
# cross-compiled: pure Go, and gangboost-train with Debian's cross gcc against that architecture's
# libxgboost .debs (make deps installs the compiler). IMAGE_ARCHES=<the host's> builds one.
IMAGE_ARCHES ?= amd64 arm64
export IMAGE_ARCHES
## images: build the gangboost-runtime and gangboost images for IMAGE_ARCHES (amd64 arm64) into dist/ (no Docker daemon)
images: deps build
	ARCHES="$(IMAGE_ARCHES)" scripts/build-images.sh

# Push the images to REGISTRY (make push REGISTRY=registry.example.com/ml): they are built with the
# same REGISTRY, so launch-xgboostjob's default trainer image is the pushed one. Each name is an
# OCI image index of IMAGE_ARCHES: every node pulls its own architecture.
## push: push the images to REGISTRY, each a multi-architecture index of IMAGE_ARCHES
push: images
	scripts/push-images.sh

# The test control plane's binaries (Kubernetes, KWOK, Volcano, the Training Operator, Trainer
# v2 and JobSet, two KServe releases, the Model Registry), built from the module proxy into a
# cache keyed by version: about 23 minutes cold on an idle 2-core machine after make build, a
# no-op when current.
## cluster-tools: build the test control plane's binaries into the cache
cluster-tools: deps
	$(GO) run ./test/cluster/cmd/build-tools

## s3-server: build the object storage tests' MinIO server into ~/.cache/gangboost/s3server (once)
s3-server: deps
	$(GO) run ./test/s3server/cmd/build-minio

# The test control plane with gangboost installed (namespace, claim, RBAC, ClusterServingRuntimes),
# its pods run as local processes: watch XGBoostJobs, PodGroups and InferenceServices with kubectl.
## cluster-up: start the test control plane with gangboost installed, until Ctrl-C
cluster-up: build cluster-tools
	$(GO) run ./test/cluster/cmd/gangboost-cluster --kubeconfig $(CURDIR)/.gangboost-cluster.kubeconfig

# CI=true: a control plane that cannot start fails the e2e tests instead of skipping them.
## test: run every test tier (installs what it needs)
# scripts/run-tests.sh: the packages without a control plane, then those with one as four
# streams at once, the serving tier a second time on Kubeflow 1.11's KServe (v0.15.2), the KServe
# type tests and the fuzzing.
test: deps build cluster-tools s3-server
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); \
	if [ -n "$$unformatted" ]; then echo "not gofmt-formatted (gofmt -w them): $$unformatted" >&2; exit 1; fi
	$(GO) vet ./...
	GO='$(GO)' MAKE='$(MAKE)' TEST_LDFLAGS='$(TEST_LDFLAGS)' FUZZTIME=10000x scripts/run-tests.sh

# Only the tests against the control plane, verbosely.
## test-e2e: only the tests against the control plane, verbosely
test-e2e: deps build cluster-tools
	CI=$${CI:-true} $(GO) test -count=1 -v -timeout 45m ./test/cluster/...

## bench: run the Go benchmarks, then the data load benchmark (bench-load)
bench: deps
	$(GO) test -run '^$$' -bench . -benchtime 2s ./internal/... ./runtime/...
	$(MAKE) bench-load

## bench-load: 1M x 28 HIGGS-like rows as CSV and Parquet parts, local and from MinIO, ranks 1 and 3, against pandas + xgboost.DMatrix
bench-load: deps
	$(GO) test -run '^$$' -bench BenchmarkLoad -benchtime 1x -timeout 30m -v ./test/loadbench/

# Every fuzz target, FUZZTIME each (go test runs one target of one package at a time). A count
# (10000x) rather than a duration in `make test`: Go 1.26's fuzz coordinator can report a
# spurious "context deadline exceeded" when a duration runs out (golang/go#75804). -vet=off: a
# fuzzing build instruments every package of the target's closure, and go test's vet would then
# analyse each of them again (their vet facts are cached per compilation); go vet ./... vets them.
FUZZTIME ?= 10s
FUZZ_TARGETS := ./runtime/v2:FuzzDecodeJSONData ./runtime/v2:FuzzDecodeBinaryData ./runtime/v2:FuzzParseInferRequest \
	./runtime/v2:FuzzSanitizeNonFinite ./runtime/rest:FuzzInferBody ./runtime/forest:FuzzParse \
	./internal/training/dataset:FuzzLoadCSV ./internal/training/dataset:FuzzLoadLibSVM
FUZZ_TARGETS += ./runtime/v2:FuzzDecodeInferResponse
FUZZ_TARGETS += ./internal/contract/claim:FuzzParseURI
FUZZ_TARGETS += ./internal/training/dataset:FuzzFastRow ./internal/training/dataset:FuzzParallelCSV
## fuzz: run every fuzz target for FUZZTIME
fuzz: deps
	@for t in $(FUZZ_TARGETS); do \
	  echo "fuzz $$t for $(FUZZTIME)"; \
	  $(GO) test -vet=off -ldflags='$(TEST_LDFLAGS)' -run '^$$' -fuzz "^$${t#*:}$$" -fuzztime $(FUZZTIME) "$${t%%:*}" || exit 1; \
	done

## load-test: the runtime (REST JSON, REST binary, gRPC) against an HTTP floor, a gRPC floor and a Python V2 server, server and load generator on disjoint cores
load-test: deps build
	scripts/load-test.sh

## load-test-kit: pack make load-test for a machine without Go, wrk, curl, jq or a network (a lent 16-core host) into bin/load-test-kit.tgz; there, in the checkout: tar -xzf bin/load-test-kit.tgz -C /tmp && /tmp/kit/run.sh
load-test-kit: deps build
	scripts/load-test-kit.sh

## load-test-batching: when --enable_batching pays: the runtime with and without it on models of 100 to 2000 trees (trained here by gangboost-train), under 1, 32 and 256 concurrent one-row requests
load-test-batching: deps build
	scripts/batching-test.sh

## load-profile: CPU and allocation profiles of the runtime under the load test's load, one per protocol, into profiles/
load-profile: deps build
	scripts/load-profile.sh

## pgo-profile: renew runtime/cmd/gangboost-runtime/default.pgo, the CPU profile under load that go build optimizes the runtime for
pgo-profile: deps build
	DURATION=20s PGO_OUT=runtime/cmd/gangboost-runtime/default.pgo scripts/load-profile.sh

## proto: regenerate the V2 gRPC code
proto:
	scripts/gen-proto.sh

## clean: remove bin/ and dist/
clean:
	rm -rf $(BIN) dist

# The pipeline package run on this machine (gangboost pipeline run --local; README "Quick start"):
# prepare-data on the built-in Iris, launch-xgboostjob's gang of 1 Master + DEMO_WORKERS Workers as
# local processes, deploy-inferenceservice's gangboost-runtime on localhost, evaluate against it.
# DEMO_FLAGS=--keep-serving keeps the endpoint up until Ctrl-C.
DEMO_WORKDIR ?= $(CURDIR)/.demo
DEMO_WORKERS ?= 2
DEMO_ROUNDS ?= 30
DEMO_FLAGS ?=
.PHONY: demo
## demo: run the pipeline package locally on Iris (1 Master + 2 Workers) and print accuracy, confusion matrix, endpoint, report
demo: build
	$(BIN)/gangboost pipeline run --local pipelines/xgboost-volcano.yaml --workdir $(DEMO_WORKDIR) \
		--param workers=$(DEMO_WORKERS) --param num_round=$(DEMO_ROUNDS) $(DEMO_FLAGS)

# The same package through the test control plane (make cluster-up's), run as KFP runs it: each step
# a pod in namespace gangboost under the run's service account gangboost-pipeline-runner (as root;
# otherwise local processes with the admin kubeconfig). launch-xgboostjob creates an XGBoostJob that
# the Training Operator and Volcano gang-schedule, deploy-inferenceservice an InferenceService that
# KServe's controller rolls out, evaluate calls it by its Service name. Where the machine allows a
# real node (root, containerd, overlayfs, cgroups; DEMO_REAL_NODE=off to skip it), the gang and the
# predictor run there as containers of the images built from bin/ (make images' script), and so do
# the steps (uid 65532, the kubelet's service account token); elsewhere every pod is a local
# process. It says which.
DEMO_CLUSTER_DIR ?= $(CURDIR)/.demo-cluster
DEMO_REAL_NODE ?= auto
.PHONY: demo-cluster
## demo-cluster: the demo's pipeline package through the test control plane, every step a pod (XGBoostJob + Volcano + KServe; steps, gang and predictor on a real node where possible)
demo-cluster: build cluster-tools
	$(GO) run ./test/cluster/cmd/gangboost-cluster --pvc-dir $(DEMO_CLUSTER_DIR)/pvc/gangboost-models \
		--real-node=$(DEMO_REAL_NODE) --pipeline pipelines/xgboost-volcano.yaml --workdir $(DEMO_CLUSTER_DIR) \
		--param namespace=gangboost --param workers=$(DEMO_WORKERS) --param num_round=$(DEMO_ROUNDS)

# --- On a cluster: each target prints the commands it runs. -------------------------------

# For a cluster that already runs Volcano and the Training Operator (a Kubeflow platform, Helm
# charts), install-volcano and configure-training-operator add only what gangboost needs, from this
# repository's files: nothing is downloaded and no component of theirs is replaced. The -full
# targets install both from upstream on a fresh cluster.
.PHONY: install-volcano-full configure-training-operator-full
TRAINING_OPERATOR_NAMESPACE ?= kubeflow
TRAINING_OPERATOR_DEPLOYMENT ?= training-operator
export TRAINING_OPERATOR_NAMESPACE TRAINING_OPERATOR_DEPLOYMENT KUBECTL

## install-volcano: on a cluster running Volcano: add gangboost's queue ml-training and priority classes (Volcano's own config untouched)
install-volcano:
	@$(KUBECTL) get crd queues.scheduling.volcano.sh -o name >/dev/null || { \
	  echo "install-volcano: Volcano is not installed (no CRD queues.scheduling.volcano.sh); on a fresh cluster: make install-volcano-full" >&2; exit 1; }
	$(KUBECTL) apply --server-side -k operator-config/volcano

## install-volcano-full: FRESH CLUSTER ONLY: installs Volcano VOLCANO_VERSION from GitHub over any existing one and REPLACES its scheduler ConfigMap cluster-wide
install-volcano-full:
	$(KUBECTL) apply --server-side -f https://raw.githubusercontent.com/volcano-sh/volcano/$(VOLCANO_VERSION)/installer/volcano-development.yaml
	$(KUBECTL) -n volcano-system rollout status deploy/volcano-scheduler --timeout=5m
	$(KUBECTL) apply --server-side -k operator-config/volcano-full

## verify-volcano: check Volcano's scheduler, the ml-training queue and the priority classes
verify-volcano:
	$(KUBECTL) -n volcano-system rollout status deploy/volcano-scheduler --timeout=1m
	$(KUBECTL) get queue ml-training -o jsonpath='{.metadata.name}: {.status.state}{"\n"}'
	$(KUBECTL) get priorityclass gangboost-training gangboost-serving

## configure-training-operator: on a cluster running the Training Operator: add --gang-scheduler-name=volcano to its Deployment's args (once, others kept) and the podgroups RBAC
configure-training-operator:
	$(KUBECTL) apply --server-side -k operator-config/training-operator
	scripts/configure-training-operator.sh
	$(KUBECTL) -n $(TRAINING_OPERATOR_NAMESPACE) rollout status deploy/$(TRAINING_OPERATOR_DEPLOYMENT) --timeout=5m
	$(KUBECTL) -n $(TRAINING_OPERATOR_NAMESPACE) get deploy $(TRAINING_OPERATOR_DEPLOYMENT) -o jsonpath='{.spec.template.spec.containers[*].args}{"\n"}'

## configure-training-operator-full: FRESH CLUSTER ONLY: installs Training Operator v1.9.4 from GitHub, REPLACING an existing operator's Deployment, CRDs and RBAC
configure-training-operator-full:
	$(KUBECTL) apply --server-side -k operator-config/training-operator-full
	$(KUBECTL) -n kubeflow rollout status deploy/training-operator --timeout=5m
	$(KUBECTL) -n kubeflow get deploy training-operator -o jsonpath='{.spec.template.spec.containers[0].args}{"\n"}'

# manifests/kustomization.yaml rendered with both runtimes' image in REGISTRY (scripts/with-registry.sh).
# Nothing in manifests/ names a namespace: the claim goes to NAMESPACE (your Kubeflow profile's, or
# kubeflow for standalone KFP), the components' own accounts are rendered into it, and the ClusterRoles
# of manifests/kubeflow let KFP's run account (default-editor, pipeline-runner) run the steps.
## deploy-runtime: in NAMESPACE the model PVC and the components' RBAC; gangboost's ClusterServingRuntimes (image in REGISTRY) and Kubeflow ClusterRoles
deploy-runtime:
	$(KUBECTL) get namespace $(NAMESPACE) >/dev/null 2>&1 || $(KUBECTL) create namespace $(NAMESPACE)
	KUBECTL=$(KUBECTL) scripts/with-registry.sh $(REGISTRY) | $(KUBECTL) apply -n $(NAMESPACE) -f -
	KUBECTL=$(KUBECTL) scripts/in-namespace.sh $(NAMESPACE) manifests/rbac | $(KUBECTL) apply -f -
	$(KUBECTL) apply -k manifests/kubeflow

## deploy-trainer-runtime: the Kubeflow Trainer v2 ClusterTrainingRuntime gangboost-xgboost (job_api trainjob; image in REGISTRY; needs Trainer v2.2+; TRAINER_NAMESPACE=kubeflow-system (Trainer's own install) or kubeflow (Kubeflow's platform overlay))
deploy-trainer-runtime:
	@case "$(TRAINER_NAMESPACE)" in kubeflow-system) dir=manifests/trainer ;; kubeflow) dir=manifests/trainer-kubeflow ;; \
	  *) echo "TRAINER_NAMESPACE=$(TRAINER_NAMESPACE): want kubeflow-system (Trainer's manager overlay) or kubeflow (Kubeflow's platform install)" >&2; exit 2 ;; esac; \
	KUBECTL=$(KUBECTL) scripts/with-registry.sh $(REGISTRY) $$dir | $(KUBECTL) apply -f -

# The model the example serves: a pipeline run writes it (model_name iris, model_version v1).
EXAMPLE_MODEL_URI := $(shell sed -n 's/^ *storageUri: *//p' manifests/inferenceservice.yaml)
EXAMPLE_RUNTIME := $(shell sed -n 's/^ *runtime: *//p' manifests/inferenceservice.yaml)
# scripts/check-model.sh first loads the model on the claim with gangboost-runtime --check in a
# short-lived pod, and stops with what to do when no pipeline run wrote it.
## deploy-example: the iris InferenceService, waited for until Ready; checks first that a pipeline run wrote its model (run one first)
deploy-example:
	@echo "deploy-example serves $(EXAMPLE_MODEL_URI): a pipeline run with model_name=iris model_version=v1 must have written it (README \"From the Kubeflow Pipelines UI\")"
	KUBECTL=$(KUBECTL) scripts/check-model.sh $(NAMESPACE) $(EXAMPLE_MODEL_URI) $(ISVC) $(EXAMPLE_RUNTIME)
	$(KUBECTL) -n $(NAMESPACE) apply -f manifests/inferenceservice.yaml
	$(KUBECTL) -n $(NAMESPACE) wait --for=condition=Ready inferenceservice/$(ISVC) --timeout=5m || { \
	  echo "InferenceService $(ISVC) not Ready after 5m. Is the model at $(EXAMPLE_MODEL_URI)? Run the pipeline first; the predictor says:" >&2; \
	  $(KUBECTL) -n $(NAMESPACE) logs -l serving.kserve.io/inferenceservice=$(ISVC) --tail=20 --prefix >&2; exit 1; }

## status: XGBoostJobs, PodGroups, pods and InferenceServices in NAMESPACE
status:
	$(KUBECTL) -n $(NAMESPACE) get xgboostjobs,podgroups,pods -o wide
	$(KUBECTL) -n $(NAMESPACE) get inferenceservices

## logs: the serving pods' logs (ISVC), and with JOB=<name> the training pods'
logs:
	$(KUBECTL) -n $(NAMESPACE) logs -l serving.kserve.io/inferenceservice=$(ISVC) --tail=100 --prefix
	$(if $(JOB),$(KUBECTL) -n $(NAMESPACE) logs -l training.kubeflow.org/job-name=$(JOB) --tail=100 --prefix)

## describe-job: JOB=<name>: the XGBoostJob, its PodGroup (why a gang waits) and its pods' placement
describe-job:
	@test -n "$(JOB)" || { echo "usage: make describe-job JOB=<xgboostjob name>" >&2; exit 2; }
	$(KUBECTL) -n $(NAMESPACE) describe xgboostjob $(JOB)
	$(KUBECTL) -n $(NAMESPACE) get podgroup $(JOB) -o jsonpath='{.spec.minMember} {.spec.queue} {.status.phase}{"\n"}{range .status.conditions[*]}{.type}: {.reason}: {.message}{"\n"}{end}'
	$(KUBECTL) -n $(NAMESPACE) get pods -l training.kubeflow.org/job-name=$(JOB) -o wide

## port-forward: the InferenceService's predictor on localhost:8080 (V2 REST)
port-forward:
	$(KUBECTL) -n $(NAMESPACE) port-forward service/$(ISVC)-predictor 8080:80

# Only the XGBoostJobs launch-xgboostjob created (its label), not other jobs sharing NAMESPACE.
GANGBOOST_JOB_SELECTOR := app.kubernetes.io/managed-by=gangboost-launch-xgboostjob
## clean-app: remove the example InferenceService and gangboost's XGBoostJobs in NAMESPACE (by label; other jobs stay)
clean-app:
	$(KUBECTL) -n $(NAMESPACE) delete --ignore-not-found -f manifests/inferenceservice.yaml
	$(KUBECTL) -n $(NAMESPACE) delete xgboostjobs -l $(GANGBOOST_JOB_SELECTOR) --ignore-not-found

## clean-all: clean-app, then the runtimes, RBAC and the PVC in NAMESPACE (its data goes with it; the namespace stays)
clean-all: clean-app
	KUBECTL=$(KUBECTL) scripts/in-namespace.sh $(NAMESPACE) manifests/rbac | $(KUBECTL) delete --ignore-not-found -f -
	$(KUBECTL) delete --ignore-not-found -k manifests/kubeflow
	$(KUBECTL) delete --ignore-not-found -f manifests/clusterservingruntime.yaml
	$(KUBECTL) -n $(NAMESPACE) delete --ignore-not-found -f manifests/pvc.yaml
