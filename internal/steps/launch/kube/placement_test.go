package kube

import (
	"reflect"
	"testing"

	kubeflowv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/gangboost/gangboost/internal/steps/launch"
)

// testPlacement is a GPU node pool's placement: its taint tolerated, its label selected, and the
// replicas spread over hosts.
func testPlacement() launch.Placement {
	return launch.Placement{
		Tolerations:  []corev1.Toleration{{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
		NodeSelector: map[string]string{"nvidia.com/gpu.present": "true"},
		Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{Weight: 1, PodAffinityTerm: corev1.PodAffinityTerm{
				TopologyKey: "kubernetes.io/hostname"}}},
		}},
	}
}

// Tolerations, node selector and affinity reach every replica of both job APIs: the XGBoostJob's
// Master and Workers, and the TrainJob's one pod template (every node of the gang).
func TestPlacementReachesEveryReplica(t *testing.T) {
	want := testPlacement()
	check := func(what string, tol []corev1.Toleration, sel map[string]string, aff *corev1.Affinity) {
		t.Helper()
		if !reflect.DeepEqual(tol, want.Tolerations) || !reflect.DeepEqual(sel, want.NodeSelector) || !reflect.DeepEqual(aff, want.Affinity) {
			t.Errorf("%s: tolerations %v, node selector %v, affinity %v; want %v, %v, %v", what, tol, sel, aff, want.Tolerations, want.NodeSelector, want.Affinity)
		}
	}
	j, tj := trainJobOf(t)
	pod := tj.Spec.RuntimePatches[0].TrainingRuntimeSpec.Template.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec
	check("TrainJob", pod.Tolerations, pod.NodeSelector, pod.Affinity)

	j.API = launch.APIXGBoostJob
	xj, err := XGBoostJob(j)
	if err != nil {
		t.Fatal(err)
	}
	for _, rt := range []kubeflowv1.ReplicaType{kubeflowv1.XGBoostJobReplicaTypeMaster, kubeflowv1.XGBoostJobReplicaTypeWorker} {
		spec := xj.Spec.XGBReplicaSpecs[rt].Template.Spec
		check("XGBoostJob "+string(rt), spec.Tolerations, spec.NodeSelector, spec.Affinity)
	}
	// Each replica holds its own copy: a change to one cannot reach the others or the job.
	xj.Spec.XGBReplicaSpecs[kubeflowv1.XGBoostJobReplicaTypeMaster].Template.Spec.NodeSelector["x"] = "y"
	if _, ok := xj.Spec.XGBReplicaSpecs[kubeflowv1.XGBoostJobReplicaTypeWorker].Template.Spec.NodeSelector["x"]; ok || j.Placement.NodeSelector["x"] != "" {
		t.Error("the replicas share one node selector map")
	}
}
