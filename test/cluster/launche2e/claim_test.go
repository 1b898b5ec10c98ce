package launche2e

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestLaunchRefusesReadWriteOnceClaim: a gang of two pods on a ReadWriteOnce claim (what the
// default storage class of EKS or GKE gives) is refused before any job is created, with the
// claim's name, its access mode and what to use instead; the component reads the claim under its
// own service account (the Role's persistentvolumeclaims get).
func TestLaunchRefusesReadWriteOnceClaim(t *testing.T) {
	e := newEnv(t, "rwo")
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "rwo-models", Namespace: e.ns},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
	if _, err := e.c.Kube.CoreV1().PersistentVolumeClaims(e.ns).Create(context.Background(), pvc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	s := e.newStep(uuid.NewString(), "train-iris", map[string]any{"model_name": "iris", "workers": 1, "pvc_name": "rwo-models"})
	r := e.runComponent(s, time.Minute)
	if r.exitCode == 0 || r.output != nil {
		t.Fatalf("component exit %d, output %v: want a failure without outputs", r.exitCode, r.output)
	}
	l, ok := r.firstLine("claim rwo-models is ReadWriteOnce: the gang's 2 pods on different nodes cannot all mount it", "ReadWriteMany")
	if !ok {
		t.Errorf("no line names the claim, its access mode and ReadWriteMany:\n%s", r.text())
	} else {
		t.Logf("refused %.2fs after the component started", l.at.Sub(r.started).Seconds())
	}
	if jobs := e.jobs(); len(jobs) != 0 {
		t.Errorf("%d XGBoostJobs created on a ReadWriteOnce claim", len(jobs))
	}
}
