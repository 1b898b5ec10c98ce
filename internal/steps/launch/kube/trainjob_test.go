package kube

import (
	"context"
	"errors"
	"strings"
	"testing"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/gangboost/gangboost/internal/steps/launch"
	"github.com/gangboost/gangboost/test/crdschema"
)

// trainJobSchema is Trainer v2's TrainJob CRD, from the trainer module go.mod requires.
func trainJobSchema(t *testing.T) *crdschema.Schema {
	t.Helper()
	s, err := crdschema.FromModule("github.com/kubeflow/trainer/v2", "manifests/base/crds/trainer.kubeflow.org_trainjobs.yaml", "v1alpha1")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func trainJobOf(t *testing.T) (*launch.Job, *trainer.TrainJob) {
	t.Helper()
	id := launch.Identity{RunID: "run-1", TaskName: "launch-xgboostjob"}
	deadline, fs, uid := int64(3600), int64(65532), int64(1000)
	j := &launch.Job{
		API: launch.APITrainJob, TrainingRuntime: launch.DefaultTrainingRuntime,
		Name: launch.JobName(id), Namespace: "ml", Identity: id, Image: "ghcr.io/gangboost/gangboost-trainer:0.1.0", Workers: 2,
		Data: launch.Data{Dataset: "iris"}, Resources: launch.Resources{CPU: "500m", Memory: "1Gi"},
		Claim: "gangboost-models", MountPath: "/mnt/pvc", ModelName: "iris", ModelVersion: "v1", Port: 9999,
		Gang: launch.Gang{Queue: "ml-training"}, ActiveDeadlineSeconds: &deadline, ServiceAccount: "trainer",
		Security:  launch.PodSecurity{FSGroup: &fs, RunAsUser: &uid, RunAsGroup: &uid},
		Placement: testPlacement(),
	}
	tj, err := TrainJob(j)
	if err != nil {
		t.Fatal(err)
	}
	return j, tj
}

// The TrainJob launch creates is one Trainer v2.2's API server accepts as it is: no field its
// CRD does not know (the server would drop it silently), every schema and CEL rule kept.
func TestTrainJobAgainstTrainerCRD(t *testing.T) {
	s := trainJobSchema(t)
	_, tj := trainJobOf(t)
	if problems := s.Check(tj); len(problems) > 0 {
		t.Fatalf("Trainer v2's TrainJob CRD refuses the TrainJob:\n%s", strings.Join(problems, "\n"))
	}
	// The check itself sees a misspelt field and a broken rule.
	bad := map[string]any{
		"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
		"metadata": map[string]any{"name": "x", "namespace": "ml"},
		"spec":     map[string]any{"runtimeRef": map[string]any{"name": "gangboost-xgboost"}, "trainer": map[string]any{"numNode": int64(3)}},
	}
	if got := strings.Join(s.Check(bad), "\n"); !strings.Contains(got, "spec.trainer.numNode") {
		t.Errorf("a misspelt field is not reported: %q", got)
	}
}

// What the TrainJob asks of Trainer: the gang's size, our trainer with the claim mounted, the
// queue, the step's identity and the pods' security context, and no DMLC_* of its own (Trainer's
// XGBoost plugin rejects those).
func TestTrainJob(t *testing.T) {
	j, tj := trainJobOf(t)
	if tj.Name != j.Name || tj.Annotations[RunIDAnnotation] != "run-1" || tj.Annotations[TaskNameAnnotation] != "launch-xgboostjob" ||
		tj.Labels[ManagedByLabel] != ManagedBy || tj.Annotations[VolcanoQueueAnnotation] != "ml-training" {
		t.Errorf("metadata = %+v", tj.ObjectMeta)
	}
	if r := tj.Spec.RuntimeRef; r.Name != "gangboost-xgboost" || *r.Kind != "ClusterTrainingRuntime" || *r.APIGroup != "trainer.kubeflow.org" {
		t.Errorf("runtimeRef = %+v", r)
	}
	tr := tj.Spec.Trainer
	if *tr.NumNodes != 3 || *tr.Image != j.Image || tr.Command[0] != TrainerCommand || tr.ResourcesPerNode.Limits.Cpu().String() != "500m" {
		t.Errorf("trainer = %+v", tr)
	}
	if len(tr.Env) != 0 {
		t.Errorf("trainer env %v: Trainer sets DMLC_* itself and rejects them in the TrainJob", tr.Env)
	}
	if tj.Spec.ActiveDeadlineSeconds != 3600 {
		t.Errorf("activeDeadlineSeconds = %d", tj.Spec.ActiveDeadlineSeconds)
	}
	// Trainer's webhook checks the patch's manager with this function (its JobSet plugin).
	manager := field.NewPath("spec", "runtimePatches").Index(0).Child("manager")
	if errs := validation.IsDomainPrefixedPath(manager, tj.Spec.RuntimePatches[0].Manager); len(errs) > 0 {
		t.Errorf("Trainer's webhook refuses the runtime patch: %v", errs.ToAggregate())
	}
	// Trainer's Volcano plugin takes the queue from the JobSet template's annotations, which the
	// runtime patch's metadata overrides; it ignores the TrainJob's own.
	if md := tj.Spec.RuntimePatches[0].TrainingRuntimeSpec.Template.Metadata; md == nil || md.Annotations[VolcanoQueueAnnotation] != "ml-training" {
		t.Errorf("runtime patch's JobSet metadata %+v, want the queue annotation ml-training", md)
	}
	rj := tj.Spec.RuntimePatches[0].TrainingRuntimeSpec.Template.Spec.ReplicatedJobs[0]
	pt := rj.Template.Spec.Template
	if rj.Name != TrainerNode || pt.Metadata.Annotations[IstioInjectAnnotation] != "false" {
		t.Errorf("replicated job %s, pod metadata %+v", rj.Name, pt.Metadata)
	}
	ps := pt.Spec
	if *ps.ServiceAccountName != "trainer" || *ps.SecurityContext.FSGroup != 65532 || *ps.SecurityContext.RunAsUser != 1000 || *ps.SecurityContext.RunAsGroup != 1000 {
		t.Errorf("pod spec patch = %+v", ps)
	}
	if ps.Volumes[0].PersistentVolumeClaim.ClaimName != "gangboost-models" || ps.Containers[0].Name != TrainerNode ||
		ps.Containers[0].VolumeMounts[0] != (corev1.VolumeMount{Name: volumeName, MountPath: "/mnt/pvc"}) {
		t.Errorf("claim: volumes %+v, containers %+v", ps.Volumes, ps.Containers)
	}
}

// A retry of the step adopts the TrainJob its earlier attempt created (same run and task); a
// TrainJob of that name from anything else is refused, not adopted.
func TestTrainJobAdoption(t *testing.T) {
	s, err := Scheme()
	if err != nil {
		t.Fatal(err)
	}
	j, tj := trainJobOf(t)
	other := tj.DeepCopy()
	other.Name, other.Annotations[RunIDAnnotation] = "other", "someone-else"
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(tj, other,
		&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: "gangboost-models"},
			Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}}}).Build()
	b := &Backend{api: trainJobAPI{}, client: c}
	started, err := b.Start(context.Background(), j)
	if err != nil || !started.Adopted {
		t.Fatalf("retry: %+v, %v; want the TrainJob adopted", started, err)
	}
	j.Name = "other"
	if _, err := b.Start(context.Background(), j); err == nil || !strings.Contains(err.Error(), "TrainJob ml/other exists but was not created by") {
		t.Errorf("foreign TrainJob: %v, want it refused", err)
	}
}

// The watcher reads a TrainJob's status as Trainer writes it: Complete ends the step, Failed
// fails it with the failing pod's termination message (its pods found by JobSet's label).
func TestTrainJobWatch(t *testing.T) {
	s, err := Scheme()
	if err != nil {
		t.Fatal(err)
	}
	j, tj := trainJobOf(t)
	failed := tj.DeepCopy()
	failed.Status.Conditions = []metav1.Condition{{Type: trainer.TrainJobFailed, Status: metav1.ConditionTrue, Reason: "JobFailed", Message: "jobset failed"}}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: j.Name + "-node-0-1-x", Labels: map[string]string{JobSetNameLabel: j.Name}},
		Spec:       corev1.PodSpec{NodeName: "n1"},
		Status: corev1.PodStatus{Phase: corev1.PodFailed, ContainerStatuses: []corev1.ContainerStatus{{Name: TrainerNode,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", Message: "train: label column y not found"}}}}},
	}
	r := fake.NewClientBuilder().WithScheme(s).WithObjects(failed, pod).Build()
	b := &Backend{api: trainJobAPI{}, client: r, core: k8sfake.NewClientset().CoreV1()}
	var lines []string
	w := &watcher{b: b, j: j, r: r, progress: func(p launch.Progress) { lines = append(lines, p.Line) }, failures: map[string]string{}}
	done, err := w.observe(context.Background())
	var fe *launch.FailedError
	if !done || !errors.As(err, &fe) || fe.Reason != "JobFailed: jobset failed" || len(fe.Pods) != 1 ||
		!strings.Contains(fe.Pods[0], "container node exited 1 (Error): train: label column y not found") {
		t.Fatalf("failed TrainJob: done %v, %v (%+v); lines %q", done, err, fe, lines)
	}
	complete := tj.DeepCopy()
	complete.Status.Conditions = []metav1.Condition{{Type: trainer.TrainJobComplete, Status: metav1.ConditionTrue, Reason: "JobsCompleted", Message: "done"}}
	r = fake.NewClientBuilder().WithScheme(s).WithObjects(complete).Build()
	w = &watcher{b: b, j: j, r: r, progress: func(launch.Progress) {}, failures: map[string]string{}}
	if done, err := w.observe(context.Background()); !done || err != nil {
		t.Errorf("complete TrainJob: done %v, %v", done, err)
	}
}

// A TrainJob whose child Job is active but not ready has pods that Volcano has not placed (a
// Job's pods count as active while Pending): the gang does not run yet. A ready child Job (every
// pod ready or completed) is a running gang.
func TestTrainJobRunningState(t *testing.T) {
	for _, tc := range []struct {
		active, ready int32
		running       bool
	}{{1, 0, false}, {1, 1, true}, {0, 0, false}} {
		tj := &trainer.TrainJob{Status: trainer.TrainJobStatus{JobsStatus: []trainer.JobStatus{{
			Name: TrainerNode, Active: &tc.active, Ready: &tc.ready}}}}
		if got := (trainJobAPI{}).state(tj).running; got != tc.running {
			t.Errorf("child Job active %d, ready %d: running %v, want %v", tc.active, tc.ready, got, tc.running)
		}
	}
}
