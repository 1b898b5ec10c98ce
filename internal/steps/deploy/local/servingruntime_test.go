package local

import (
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/gangboost/gangboost/manifests"
	"github.com/gangboost/gangboost/runtime/cmdline"
)

// TestServingRuntimeFlagsAreTheClusters holds the flags the local backend runs every model with
// to those of the ClusterServingRuntimes a cluster serves it with, less what names the model, its
// folder and ports (cmdline.ServingRuntimeFlags, the backend's own) and --exit_on_load_failure
// (see servingRuntimeFlags), so a model behaves here, batching included, as it will there.
func TestServingRuntimeFlagsAreTheClusters(t *testing.T) {
	b, err := manifests.Files.ReadFile("clusterservingruntime.yaml")
	if err != nil {
		t.Fatal(err)
	}
	docs, err := manifests.YAMLDocs(b)
	if err != nil {
		t.Fatal(err)
	}
	runtimes := 0
	for _, doc := range docs {
		var obj struct {
			Kind     string
			Metadata struct{ Name string }
			Spec     struct {
				Containers []struct{ Args []string }
			}
		}
		if err := yaml.Unmarshal(doc, &obj); err != nil {
			t.Fatal(err)
		}
		if obj.Kind != "ClusterServingRuntime" {
			continue
		}
		runtimes++
		if len(obj.Spec.Containers) != 1 {
			t.Fatalf("%s: %d containers, want 1", obj.Metadata.Name, len(obj.Spec.Containers))
		}
		var flags []string
		for _, a := range obj.Spec.Containers[0].Args {
			name, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
			if !slices.Contains(cmdline.ServingRuntimeFlags, name) && name != "exit_on_load_failure" {
				flags = append(flags, a)
			}
		}
		if !slices.Equal(flags, servingRuntimeFlags) {
			t.Errorf("ClusterServingRuntime %s runs models with %q, the local backend with %q", obj.Metadata.Name, flags, servingRuntimeFlags)
		}
	}
	if runtimes == 0 {
		t.Fatal("clusterservingruntime.yaml holds no ClusterServingRuntime")
	}
}
