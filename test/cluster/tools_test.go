package cluster

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A tool's packages are compiled once for it and the product's build or tests only where every
// module below them is at the same version in both: one module a version apart (x/sys, say)
// makes every package above it two compilations, some minutes of a cold make test. These tool
// modules keep the versions of the module they share most packages with; each names the modules
// it must keep at versions of its own (what its upstream code needs).
func TestToolModulesShareTheProductsVersions(t *testing.T) {
	toolsDir, err := ToolsModuleDir()
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(toolsDir, "..", "..", "..")
	// The modules of a Kubernetes release other than the product's, which a tool built on one
	// keeps.
	kubernetes := []string{"k8s.io/", "sigs.k8s.io/"}
	// The control plane (v1.32.2) and its real node: its CEL environment, kube-openapi and
	// tracing filters need the CEL, gnostic and OpenTelemetry instrumentation releases of
	// Kubernetes v1.32.
	kubernetes132 := append([]string{"github.com/google/cel-go", "github.com/google/gnostic-models",
		"go.opentelemetry.io/contrib/instrumentation/"}, kubernetes...)
	for _, c := range []struct {
		tool, peer string   // go.mod folders, relative to the checkout
		own        []string // modules the tool keeps at versions of its own; "path/" names all below it
	}{
		// Trainer v2.2.0 builds on the product's Kubernetes and controller-runtime.
		{tool: "test/cluster/tools/trainer", peer: "."},
		// JobSet v0.11.1's webhooks need controller-runtime v0.22 (the product has v0.23).
		{tool: "test/cluster/tools/jobset", peer: ".", own: []string{"sigs.k8s.io/controller-runtime"}},
		// Volcano v1.15.1 builds on the product's Kubernetes (its copy of volcano.sh/apis is
		// patched, so the packages above that are its own); its Prometheus client reads
		// query results as client_golang v1.23 returns them (v1.25's Query has four results).
		{tool: "test/cluster/tools/volcano", peer: ".", own: []string{"github.com/prometheus/client_golang"}},
		// KServe's manager and test/kservetypes build KServe v0.20.0 on Kubernetes v0.34.
		{tool: "test/cluster/tools/kserve", peer: "test/kservetypes"},
		// The object storage tests' MinIO server (test/s3server) builds on the product's gRPC,
		// protobuf, cloud SDKs and minio-go.
		{tool: "test/s3server/tools/minio", peer: "."},
		// The tools below build on Kubernetes releases of their own, and share the rest: gRPC,
		// protobuf, OpenTelemetry, Prometheus, x/...
		{tool: "test/cluster/tools/kube", peer: ".", own: kubernetes132},
		{tool: "test/cluster/tools/node", peer: ".", own: kubernetes132},
		// KWOK v0.6.1 (Kubernetes v0.30): its easycel needs cel-go v0.17's type provider.
		{tool: "test/cluster/tools/kwok", peer: ".", own: append([]string{"github.com/google/cel-go", "github.com/google/gnostic-models"}, kubernetes...)},
		// KServe v0.15.2 (Kubernetes v0.32) and the Model Registry, whose storage initializer
		// is built on KServe v0.15's storage package; KEDA v2.18 would raise KServe v0.15's
		// Kubernetes.
		{tool: "test/cluster/tools/kserve015", peer: ".", own: append([]string{"github.com/kserve/kserve", "knative.dev/",
			"github.com/google/gnostic-models", "github.com/kedacore/keda/v2"}, kubernetes...)},
		{tool: "test/cluster/tools/modelregistry", peer: ".", own: append([]string{"github.com/kserve/kserve", "knative.dev/"}, kubernetes...)},
		// The Training Operator v1.9.4 requires Kubernetes v0.36 and controller-runtime v0.24,
		// ahead of the product, and the releases below them that those require.
		{tool: "test/cluster/tools/trainingop", peer: ".", own: append([]string{"github.com/kubeflow/training-operator", "volcano.sh/apis",
			"github.com/go-openapi/", "github.com/google/gnostic-models", "github.com/fsnotify/fsnotify", "github.com/fxamacker/cbor/v2",
			"github.com/go-logr/logr"}, kubernetes...)},
	} {
		tool := readModuleVersions(t, filepath.Join(root, c.tool, "go.mod"))
		peer := readModuleVersions(t, filepath.Join(root, c.peer, "go.mod"))
		for mod, v := range tool {
			if pv, ok := peer[mod]; ok && pv != v && !ownModule(c.own, mod) {
				t.Errorf("%s/go.mod requires %s %s, %s/go.mod %s: give the tool the same version (GOWORK=off GOFLAGS=-mod=mod go get %s@%s in %s), or name the module as its own here",
					c.tool, mod, v, c.peer, pv, mod, pv, c.tool)
			}
		}
	}
}

// ownModule says whether own names module mod: as itself, or as a path ending in / above it.
func ownModule(own []string, mod string) bool {
	return slices.ContainsFunc(own, func(o string) bool {
		return o == mod || strings.HasSuffix(o, "/") && strings.HasPrefix(mod, o)
	})
}

// readModuleVersions is the version of each module a go.mod requires, as its replace
// directives change it (a replacement by another module's version; one by a folder is "dir"),
// read by go mod edit -json, Go's own reader of the file.
func readModuleVersions(t *testing.T, path string) map[string]string {
	t.Helper()
	out, err := exec.Command("go", "mod", "edit", "-json", path).Output()
	if err != nil {
		t.Fatalf("go mod edit -json %s: %v", path, err)
	}
	type module struct{ Path, Version string }
	var f struct {
		Require []module
		Replace []struct{ Old, New module }
	}
	if err := json.Unmarshal(out, &f); err != nil {
		t.Fatalf("go mod edit -json %s: %v", path, err)
	}
	required := map[string]string{}
	for _, r := range f.Require {
		required[r.Path] = r.Version
	}
	for _, r := range f.Replace {
		if _, ok := required[r.Old.Path]; !ok {
			continue
		}
		if r.New.Version == "" {
			r.New.Version = "dir"
		}
		required[r.Old.Path] = r.New.Version
	}
	return required
}
