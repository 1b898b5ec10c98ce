package manifests

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/gangboost/gangboost/internal/steps/launch"
	launchkube "github.com/gangboost/gangboost/internal/steps/launch/kube"
	"github.com/gangboost/gangboost/test/crdschema"
)

const trainerRuntimeFile = "trainer/clustertrainingruntime.yaml"

// The ClusterTrainingRuntime is one Trainer v2.2's API server accepts as written (its CRD's
// schema and CEL rules, no unknown field), decodes strictly into Trainer's Go types, and is what
// launch's TrainJobs need: the name they reference, mlPolicy.xgboost, Volcano gang scheduling, and
// a "node" replicated job and container (where Trainer's XGBoost plugin injects DMLC_*).
func TestClusterTrainingRuntime(t *testing.T) {
	data, err := os.ReadFile(trainerRuntimeFile)
	if err != nil {
		t.Fatal(err)
	}
	s, err := crdschema.FromModule("github.com/kubeflow/trainer/v2", "manifests/base/crds/trainer.kubeflow.org_clustertrainingruntimes.yaml", "v1alpha1")
	if err != nil {
		t.Fatal(err)
	}
	var obj map[string]any
	if err := yaml.Unmarshal(data, &obj); err != nil {
		t.Fatal(err)
	}
	if problems := s.Check(obj); len(problems) > 0 {
		t.Fatalf("Trainer v2's ClusterTrainingRuntime CRD refuses %s:\n%s", trainerRuntimeFile, strings.Join(problems, "\n"))
	}
	js, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		t.Fatal(err)
	}
	var rt trainer.ClusterTrainingRuntime
	if strict, err := sigsjson.UnmarshalStrict(js, &rt, sigsjson.DisallowUnknownFields); err != nil || len(strict) > 0 {
		t.Fatalf("%s: %v %v", trainerRuntimeFile, err, strict)
	}
	if rt.Name != launch.DefaultTrainingRuntime {
		t.Errorf("runtime %q, launch's training_runtime defaults to %q", rt.Name, launch.DefaultTrainingRuntime)
	}
	if rt.Spec.MLPolicy == nil || rt.Spec.MLPolicy.XGBoost == nil {
		t.Error("no mlPolicy.xgboost: Trainer would inject no DMLC_* and every rank would train alone")
	}
	if rt.Spec.PodGroupPolicy == nil || rt.Spec.PodGroupPolicy.Volcano == nil {
		t.Error("no podGroupPolicy.volcano: the nodes would not be gang-scheduled")
	}
	var node bool
	for _, rj := range rt.Spec.Template.Spec.ReplicatedJobs {
		if rj.Name != launchkube.TrainerNode {
			continue
		}
		pod := rj.Template.Spec.Template
		if pod.Annotations[launchkube.IstioInjectAnnotation] != "false" {
			t.Errorf("pods without %s: \"false\": an Istio sidecar never exits", launchkube.IstioInjectAnnotation)
		}
		if pod.Spec.SchedulerName != "volcano" {
			t.Errorf("pods' schedulerName %q: Trainer's Volcano plugin makes the PodGroup but does not set it; without volcano no gang scheduling", pod.Spec.SchedulerName)
		}
		if sc := pod.Spec.SecurityContext; sc == nil || sc.FSGroup == nil || *sc.FSGroup != launch.DefaultFSGroup {
			t.Errorf("pod securityContext %+v, want fsGroup %d as launch's fs_group default", sc, launch.DefaultFSGroup)
		}
		for _, c := range pod.Spec.Containers {
			node = node || c.Name == launchkube.TrainerNode
		}
	}
	if !node {
		t.Errorf("no replicated job and container %q: the TrainJob's patches and Trainer's DMLC_* would land nowhere", launchkube.TrainerNode)
	}
}

// Trainer's namespace is a choice: manifests/trainer binds the PriorityClass reader to Trainer's
// controller manager in kubeflow-system (Trainer's own install), manifests/trainer-kubeflow in
// kubeflow (Kubeflow's platform install); both render the same runtime.
func TestTrainerNamespaceOverlays(t *testing.T) {
	if _, err := exec.LookPath("kubectl"); err != nil {
		t.Skip("kubectl (its built-in kustomize renders the manifests) is not installed")
	}
	for dir, want := range map[string]string{"trainer": "kubeflow-system", "trainer-kubeflow": "kubeflow"} {
		out, err := exec.Command("kubectl", "kustomize", dir).Output()
		if err != nil {
			t.Fatalf("kubectl kustomize %s: %v", dir, err)
		}
		var sawBinding, sawRuntime bool
		for _, doc := range strings.Split(string(out), "\n---\n") {
			var o struct {
				Kind     string `json:"kind"`
				Subjects []struct {
					Name, Namespace string
				} `json:"subjects"`
			}
			if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
				t.Fatal(err)
			}
			switch o.Kind {
			case "ClusterRoleBinding":
				sawBinding = true
				if len(o.Subjects) != 1 || o.Subjects[0].Name != "kubeflow-trainer-controller-manager" || o.Subjects[0].Namespace != want {
					t.Errorf("%s binds %+v, want kubeflow-trainer-controller-manager in %s", dir, o.Subjects, want)
				}
			case "ClusterTrainingRuntime":
				sawRuntime = true
			}
		}
		if !sawBinding || !sawRuntime {
			t.Errorf("%s renders binding %v, runtime %v", dir, sawBinding, sawRuntime)
		}
	}
}
