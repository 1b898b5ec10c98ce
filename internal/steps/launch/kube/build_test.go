package kube

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	kubeflowv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/gangboost/gangboost/internal/steps/launch"
)

func TestXGBoostJob(t *testing.T) {
	deadline := int64(3600)
	backoff := int32(0)
	id := launch.Identity{RunID: "4b0c5a34-2f0e-4c55-9a39-0d8a2c1b7e11", TaskName: "launch-xgboostjob"}
	j := &launch.Job{
		Name: launch.JobName(id), Namespace: "ml", Identity: id, Image: "gangboost:0.1.0", Workers: 2,
		Data: launch.Data{Train: "datasets/iris/train.csv"}, TrainerFlags: []string{"--num-round", "20"},
		Resources: launch.Resources{CPU: "2", Memory: "4Gi", GPUs: 1},
		Claim:     "gangboost-models", MountPath: "/mnt/pvc", ModelName: "iris", ModelVersion: "v1", Port: 9999,
		Gang:           launch.Gang{Queue: "ml-training", PriorityClass: "gangboost-training", ScheduleTimeout: 10 * time.Minute},
		CleanPodPolicy: "Running", BackoffLimit: &backoff, ActiveDeadlineSeconds: &deadline,
	}
	xj, err := XGBoostJob(j)
	if err != nil {
		t.Fatal(err)
	}
	if xj.Annotations[RunIDAnnotation] != id.RunID || xj.Annotations[TaskNameAnnotation] != id.TaskName {
		t.Errorf("annotations = %v", xj.Annotations)
	}
	sp := xj.Spec.RunPolicy.SchedulingPolicy
	if *sp.MinAvailable != 3 || sp.Queue != "ml-training" || sp.PriorityClass != "gangboost-training" || *sp.ScheduleTimeoutSeconds != 600 {
		t.Errorf("schedulingPolicy = %+v", sp)
	}
	rp := xj.Spec.RunPolicy
	if *rp.CleanPodPolicy != kubeflowv1.CleanPodPolicyRunning || *rp.BackoffLimit != 0 || *rp.ActiveDeadlineSeconds != 3600 || rp.TTLSecondsAfterFinished != nil {
		t.Errorf("runPolicy = %+v", rp)
	}
	master, worker := xj.Spec.XGBReplicaSpecs[kubeflowv1.XGBoostJobReplicaTypeMaster], xj.Spec.XGBReplicaSpecs[kubeflowv1.XGBoostJobReplicaTypeWorker]
	if *master.Replicas != 1 || *worker.Replicas != 2 {
		t.Fatalf("replicas: master %d, worker %d", *master.Replicas, *worker.Replicas)
	}
	c := worker.Template.Spec.Containers[0]
	if c.Name != "xgboost" || c.Ports[0].Name != "xgboostjob-port" || c.Ports[0].ContainerPort != 9999 {
		t.Errorf("container %s, port %+v", c.Name, c.Ports)
	}
	if got := strings.Join(append(c.Command, c.Args...), " "); got != "gangboost-train --train /mnt/pvc/datasets/iris/train.csv --num-round 20 --gpus 1 --checkpoint-dir /mnt/pvc/checkpoints/iris/v1 --model-dir /mnt/pvc/models/iris/v1 --producer "+xj.Name {
		t.Errorf("command = %q", got)
	}
	if g := c.Resources.Limits[GPUResource]; g.Value() != 1 {
		t.Errorf("gpu limit = %v", g)
	}
	if cpu := c.Resources.Requests[corev1.ResourceCPU]; cpu.String() != "2" {
		t.Errorf("cpu request = %v", cpu)
	}
	if v := worker.Template.Spec.Volumes[0]; v.PersistentVolumeClaim.ClaimName != "gangboost-models" || c.VolumeMounts[0].MountPath != "/mnt/pvc" {
		t.Errorf("volume %+v mount %+v", v, c.VolumeMounts)
	}
	for name, r := range xj.Spec.XGBReplicaSpecs {
		if got := r.Template.Annotations[IstioInjectAnnotation]; got != "false" {
			t.Errorf("%s pods: %s = %q, want \"false\" (a sidecar never exits, so the pod never completes)", name, IstioInjectAnnotation, got)
		}
	}
	if sc := worker.Template.Spec.SecurityContext; sc != nil {
		t.Errorf("no security inputs: pod securityContext %+v, want none", sc)
	}
	if worker.Template.Spec.PriorityClassName != "gangboost-training" {
		t.Errorf("pod priority class = %q", worker.Template.Spec.PriorityClassName)
	}

	for _, r := range xj.Spec.XGBReplicaSpecs {
		if r.RestartPolicy != kubeflowv1.RestartPolicyNever {
			t.Errorf("restart policy %q, want Never by default", r.RestartPolicy)
		}
	}
	// With OnFailure every replica restarts in place, so a gang that lost a rank starts again.
	j.RestartPolicy = launch.RestartOnFailure
	if xj, err = XGBoostJob(j); err != nil {
		t.Fatal(err)
	}
	for name, r := range xj.Spec.XGBReplicaSpecs {
		if r.RestartPolicy != kubeflowv1.RestartPolicyOnFailure {
			t.Errorf("%s: restart policy %q, want OnFailure", name, r.RestartPolicy)
		}
	}

	j.Resources.Memory = "lots"
	if _, err := XGBoostJob(j); err == nil || !strings.Contains(err.Error(), "memory") {
		t.Errorf("bad memory: %v", err)
	}
}

// make clean-app deletes the XGBoostJobs matching GANGBOOST_JOB_SELECTOR, only those this backend
// created: the selector in the Makefile must be the label every job (and its pods) carries.
func TestJobsCarryCleanAppSelector(t *testing.T) {
	mk, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^GANGBOOST_JOB_SELECTOR\s*:?=\s*(\S+)$`).FindSubmatch(mk)
	if m == nil {
		t.Fatal("Makefile: no GANGBOOST_JOB_SELECTOR (the label selector make clean-app deletes XGBoostJobs by)")
	}
	sel, err := labels.Parse(string(m[1]))
	if err != nil {
		t.Fatalf("GANGBOOST_JOB_SELECTOR %q: %v", m[1], err)
	}
	if sel.Empty() {
		t.Fatal("GANGBOOST_JOB_SELECTOR is empty: clean-app would delete every XGBoostJob")
	}
	id := launch.Identity{RunID: "r", TaskName: "launch-xgboostjob"}
	xj, err := XGBoostJob(&launch.Job{Name: launch.JobName(id), Namespace: "ml", Identity: id, Workers: 1,
		Data: launch.Data{Train: "t.csv"}, ModelName: "iris", ModelVersion: "v1", MountPath: "/mnt/pvc"})
	if err != nil {
		t.Fatal(err)
	}
	if !sel.Matches(labels.Set(xj.Labels)) {
		t.Errorf("job labels %v do not match clean-app's selector %s", xj.Labels, sel)
	}
	for rt, spec := range xj.Spec.XGBReplicaSpecs {
		if !sel.Matches(labels.Set(spec.Template.Labels)) {
			t.Errorf("%s pod labels %v do not match clean-app's selector %s", rt, spec.Template.Labels, sel)
		}
	}
	// A job someone else created in the same namespace is not selected.
	if sel.Matches(labels.Set{"app": "other-team"}) {
		t.Errorf("selector %s matches a job without gangboost's label", sel)
	}
}

func TestWaitReason(t *testing.T) {
	nodes := "0/2 nodes are unavailable: 2 Insufficient nvidia.com/gpu"
	gang := "1/1 tasks in gang unschedulable: pod group is not ready, 1 Pending, 1 minAvailable; Pending: 1 Unschedulable. Origin reason is x-master-0: " + nodes + "."
	quota := corev1.Event{InvolvedObject: corev1.ObjectReference{Kind: "PodGroup"}, Reason: "Unschedulable", Message: "queue resource quota insufficient"}
	pg := func(phase schedulingv1beta1.PodGroupPhase, msgs ...string) *schedulingv1beta1.PodGroup {
		p := &schedulingv1beta1.PodGroup{Status: schedulingv1beta1.PodGroupStatus{Phase: phase}}
		for i, m := range msgs {
			p.Status.Conditions = append(p.Status.Conditions, schedulingv1beta1.PodGroupCondition{
				Type: schedulingv1beta1.PodGroupUnschedulableType, Status: corev1.ConditionTrue, Message: m,
				LastTransitionTime: metav1.NewTime(time.Unix(int64(100+i), 0))})
		}
		return p
	}
	tests := []struct {
		name   string
		pg     *schedulingv1beta1.PodGroup
		events []corev1.Event
		pods   int
		podWhy []string
		want   string
	}{
		{"pods only", nil, nil, 1, []string{nodes}, nodes},
		{"newest condition, pod message not repeated", pg(schedulingv1beta1.PodGroupInqueue, "1/0 tasks in gang unschedulable", gang), nil, 1, []string{nodes}, strings.TrimSuffix(gang, ".")},
		{"queue quota event", pg(schedulingv1beta1.PodGroupPending), []corev1.Event{quota}, 0, nil, "queue resource quota insufficient"},
		{"queue quota event with the gang's needs", func() *schedulingv1beta1.PodGroup {
			p := pg(schedulingv1beta1.PodGroupPending)
			p.Spec = schedulingv1beta1.PodGroupSpec{MinMember: 3, Queue: "ml-training", MinResources: &corev1.ResourceList{
				GPUResource: resource.MustParse("3"), corev1.ResourceCPU: resource.MustParse("3")}}
			return p
		}(), []corev1.Event{quota}, 0, nil, "queue resource quota insufficient (the gang of 3 needs cpu 3, nvidia.com/gpu 3 in queue ml-training)"},
		// A TrainJob's pods exist before enqueue admits its PodGroup: the gang plugin's condition
		// says only that the group is not ready; enqueue's event and the gang's needs say why.
		{"pending with pods: the enqueue event and the gang's needs over the condition", func() *schedulingv1beta1.PodGroup {
			p := pg(schedulingv1beta1.PodGroupPending, "3/3 tasks in gang unschedulable: pod group is not ready, 3 Pending, 3 minAvailable; Pending: 3 Unschedulable")
			p.Spec = schedulingv1beta1.PodGroupSpec{MinMember: 3, Queue: "ml-training", MinResources: &corev1.ResourceList{GPUResource: resource.MustParse("3")}}
			return p
		}(), []corev1.Event{quota}, 3, nil, "queue resource quota insufficient (the gang of 3 needs nvidia.com/gpu 3 in queue ml-training)"},
		{"pending with pods, no event yet: the condition and the gang's needs", func() *schedulingv1beta1.PodGroup {
			p := pg(schedulingv1beta1.PodGroupPending, "3/3 tasks in gang unschedulable: pod group is not ready, 3 Pending, 3 minAvailable")
			p.Spec = schedulingv1beta1.PodGroupSpec{MinMember: 3, Queue: "ml-training", MinResources: &corev1.ResourceList{GPUResource: resource.MustParse("3")}}
			return p
		}(), nil, 3, nil, "3/3 tasks in gang unschedulable: pod group is not ready, 3 Pending, 3 minAvailable (the gang of 3 needs nvidia.com/gpu 3 in queue ml-training)"},
		{"admitted, pods not created yet", pg(schedulingv1beta1.PodGroupInqueue, "2/0 tasks in gang unschedulable"), nil, 0, nil, ""},
		{"event from before the pods", pg(schedulingv1beta1.PodGroupInqueue), []corev1.Event{{InvolvedObject: corev1.ObjectReference{Kind: "PodGroup"}, Reason: "Unschedulable", Message: "0/0 tasks in gang unschedulable: pod group is not ready, 1 minAvailable"}}, 1, nil, ""},
		{"condition from before the pods", pg(schedulingv1beta1.PodGroupInqueue, "2/0 tasks in gang unschedulable: pod group is not ready, 2 minAvailable"), nil, 2, nil, ""},
	}
	for _, tc := range tests {
		got := waitReason(tc.pg, tc.pg != nil, tc.events, tc.pods, tc.podWhy)
		if got != tc.want {
			t.Errorf("%s: waitReason = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestQueueRoom(t *testing.T) {
	q := &schedulingv1beta1.Queue{
		ObjectMeta: metav1.ObjectMeta{Name: "ml-training"},
		Spec: schedulingv1beta1.QueueSpec{Capability: corev1.ResourceList{
			GPUResource: resource.MustParse("8"), corev1.ResourceCPU: resource.MustParse("4")}},
		Status: schedulingv1beta1.QueueStatus{State: schedulingv1beta1.QueueStateOpen, Allocated: corev1.ResourceList{
			GPUResource: resource.MustParse("1"), corev1.ResourceCPU: resource.MustParse("3500m")}},
	}
	need := corev1.ResourceList{GPUResource: resource.MustParse("3"), corev1.ResourceCPU: resource.MustParse("3"), corev1.ResourceMemory: resource.MustParse("3Gi")}
	cluster := corev1.ResourceList{GPUResource: resource.MustParse("2"), corev1.ResourceCPU: resource.MustParse("16"), corev1.ResourceMemory: resource.MustParse("64Gi")}
	want := "queue ml-training has cpu 500m free (capability 4, cluster 16, allocated 3500m), " +
		"memory 64Gi free (capability none, cluster 64Gi, allocated 0), " +
		"nvidia.com/gpu 1 free (capability 8, cluster 2, allocated 1)"
	if got := queueRoom(q, need, cluster); got != want {
		t.Errorf("queueRoom =\n%q, want\n%q", got, want)
	}
	q.Status.State = schedulingv1beta1.QueueStateClosed
	q.Status.Allocated[GPUResource] = resource.MustParse("5")
	if got := queueRoom(q, corev1.ResourceList{GPUResource: resource.MustParse("1")}, cluster); got != "queue ml-training (Closed) has nvidia.com/gpu 0 free (capability 8, cluster 2, allocated 5)" {
		t.Errorf("closed, over-allocated queue: %q", got)
	}
}

// TestQueueRoomUnreadable: without the queue reader ClusterRole the first wait reason says the
// room is unknown and why, and the queue is not asked again.
func TestQueueRoomUnreadable(t *testing.T) {
	s, err := Scheme()
	if err != nil {
		t.Fatal(err)
	}
	gets := 0
	c := fake.NewClientBuilder().WithScheme(s).WithInterceptorFuncs(interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			gets++
			return apierrors.NewForbidden(schema.GroupResource{Group: "scheduling.volcano.sh", Resource: "queues"}, key.Name, errors.New("no RBAC"))
		},
	}).Build()
	w := &watcher{b: &Backend{client: c}}
	pg := &schedulingv1beta1.PodGroup{Spec: schedulingv1beta1.PodGroupSpec{Queue: "ml-training", MinResources: &corev1.ResourceList{GPUResource: resource.MustParse("1")}}}
	if got := w.queueRoom(context.Background(), pg); !strings.Contains(got, "queue ml-training's room unknown") || !strings.Contains(got, "forbidden") {
		t.Errorf("first reason part %q", got)
	}
	if got := w.queueRoom(context.Background(), pg); got != "" || gets != 1 {
		t.Errorf("second call %q after %d reads, want nothing and one read", got, gets)
	}
}

// TestXGBoostJobSecurityContext: the fs_group, run_as_user and run_as_group inputs reach every
// trainer pod.
func TestXGBoostJobSecurityContext(t *testing.T) {
	id := launch.Identity{RunID: "r", TaskName: "t"}
	fs, uid := int64(65532), int64(1000)
	j := &launch.Job{
		Name: launch.JobName(id), Namespace: "ml", Identity: id, Image: "gangboost:0.1.0", Workers: 1,
		Data: launch.Data{Dataset: "iris"}, Claim: "c", MountPath: "/mnt/pvc", ModelName: "iris", ModelVersion: "v1", Port: 9999,
		Security: launch.PodSecurity{FSGroup: &fs, RunAsUser: &uid},
	}
	xj, err := XGBoostJob(j)
	if err != nil {
		t.Fatal(err)
	}
	for name, r := range xj.Spec.XGBReplicaSpecs {
		sc := r.Template.Spec.SecurityContext
		if sc == nil || sc.FSGroup == nil || *sc.FSGroup != 65532 || sc.RunAsUser == nil || *sc.RunAsUser != 1000 || sc.RunAsGroup != nil {
			t.Errorf("%s pods: securityContext %+v, want fsGroup 65532, runAsUser 1000, no runAsGroup", name, sc)
		}
	}
}

// TestStartChecksClaimAccess: a gang of several pods is not created on a claim only one node
// can mount; a single pod is, and a ReadWriteMany claim takes any gang.
func TestStartChecksClaimAccess(t *testing.T) {
	s, err := Scheme()
	if err != nil {
		t.Fatal(err)
	}
	claim := func(name string, spec []corev1.PersistentVolumeAccessMode, bound ...corev1.PersistentVolumeAccessMode) *corev1.PersistentVolumeClaim {
		c := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: name}, Spec: corev1.PersistentVolumeClaimSpec{AccessModes: spec}}
		if bound != nil {
			c.Status = corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound, AccessModes: bound}
		}
		return c
	}
	rwo, rwx := []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(
		claim("rwo", rwo), claim("rwx", rwx), claim("rwx-bound-rwo", rwx, corev1.ReadWriteOnce), claim("rwo-bound-rwx", rwo, corev1.ReadWriteMany),
	).Build()
	for _, api := range []jobAPI{xgboostJobAPI{}, trainJobAPI{}} {
		b := &Backend{api: api, client: c}
		tests := []struct {
			claim   string
			workers int32
			want    string
		}{
			{"rwo", 2, "claim rwo is ReadWriteOnce: the gang's 3 pods on different nodes cannot all mount it for writing; use a ReadWriteMany storage class"},
			{"rwo", 0, ""},
			{"rwx", 2, ""},
			{"rwx-bound-rwo", 1, "claim rwx-bound-rwo is ReadWriteOnce: the gang's 2 pods"},
			{"rwo-bound-rwx", 1, ""},
			{"missing", 1, "claim missing not found in namespace ml: create it (manifests/pvc.yaml, ReadWriteMany)"},
		}
		for _, tc := range tests {
			id := launch.Identity{RunID: "r-" + tc.claim, TaskName: fmt.Sprint(tc.workers)}
			j := &launch.Job{
				Name: launch.JobName(id), Namespace: "ml", Identity: id, Image: "gangboost:0.1.0", Workers: tc.workers,
				Data: launch.Data{Dataset: "iris"}, Claim: tc.claim, MountPath: "/mnt/pvc", ModelName: "iris", ModelVersion: "v1", Port: 9999,
				TrainingRuntime: launch.DefaultTrainingRuntime,
			}
			_, err := b.Start(context.Background(), j)
			created := c.Get(context.Background(), client.ObjectKey{Namespace: "ml", Name: j.Name}, api.object("ml", j.Name)) == nil
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("%s: claim %s, %d workers: %v, want the job created", api.kind(), tc.claim, tc.workers, err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("%s: claim %s, %d workers: error %v, want %q", api.kind(), tc.claim, tc.workers, err, tc.want)
			case tc.want != "" && created:
				t.Errorf("%s: claim %s, %d workers: the job was created despite %v", api.kind(), tc.claim, tc.workers, err)
			}
		}
	}
}

// TestXGBoostJobObjectStoreSecret: the trainer pods take the object store's credentials from the
// Secret by reference, as KFP's own pods take mlpipeline-minio-artifact's.
func TestXGBoostJobObjectStoreSecret(t *testing.T) {
	id := launch.Identity{RunID: "r", TaskName: "t"}
	j := &launch.Job{
		Name: launch.JobName(id), Namespace: "ml", Identity: id, Image: "gangboost:0.1.0", Workers: 1,
		Data: launch.Data{Train: "s3://data/higgs/", ObjectStore: launch.ObjectStore{Secret: "mlpipeline-minio-artifact",
			AccessKeyKey: launch.DefaultAccessKeyKey, SecretKeyKey: launch.DefaultSecretKeyKey}},
		TrainerFlags: []string{"--label", "label"},
		Claim:        "c", MountPath: "/mnt/pvc", ModelName: "higgs", ModelVersion: "v1", Port: 9999,
	}
	xj, err := XGBoostJob(j)
	if err != nil {
		t.Fatal(err)
	}
	for name, r := range xj.Spec.XGBReplicaSpecs {
		env := r.Template.Spec.Containers[0].Env
		if len(env) != 2 || env[0].Name != "AWS_ACCESS_KEY_ID" || env[0].ValueFrom == nil || env[0].ValueFrom.SecretKeyRef.Name != "mlpipeline-minio-artifact" ||
			env[0].ValueFrom.SecretKeyRef.Key != "accesskey" || env[1].Name != "AWS_SECRET_ACCESS_KEY" || env[1].ValueFrom.SecretKeyRef.Key != "secretkey" {
			t.Errorf("%s pods: env %+v, want AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY from the secret's accesskey and secretkey", name, env)
		}
		if args := strings.Join(r.Template.Spec.Containers[0].Args, " "); !strings.Contains(args, "--train s3://data/higgs/") {
			t.Errorf("%s pods: args %q", name, args)
		}
	}
}

// TestRestartsAreReported: each restart of a trainer container (restartPolicy OnFailure) is a
// progress line with the exit code that caused it, once.
func TestRestartsAreReported(t *testing.T) {
	var lines []string
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := &watcher{b: &Backend{core: k8sfake.NewSimpleClientset().CoreV1()}, j: &launch.Job{}, restarts: map[string]int32{},
		progress: func(p launch.Progress) { lines = append(lines, p.Line) }, stepCtx: ctx}
	pod := func(name, role string, restarts int32) corev1.Pod {
		return corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ml", Labels: map[string]string{kubeflowv1.ReplicaTypeLabel: role}},
			Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "xgboost", RestartCount: restarts,
				LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "Error"}}}}},
		}
	}
	w.noteRestarts([]corev1.Pod{pod("j-master-0", "master", 0), pod("j-worker-1", "worker", 0)})
	w.noteRestarts([]corev1.Pod{pod("j-master-0", "master", 0), pod("j-worker-1", "worker", 1)})
	w.noteRestarts([]corev1.Pod{pod("j-master-0", "master", 0), pod("j-worker-1", "worker", 1)})
	w.mu.Lock()
	got := strings.Join(lines, "\n")
	w.mu.Unlock()
	if got != "pod j-worker-1: trainer restarted (restart 1) after exit code 137 (Error)" {
		t.Errorf("progress lines:\n%s", got)
	}
	if !resumeLine.MatchString(`time=x level=INFO msg="resumed from checkpoint at round 120" rank=0 round=120`) {
		t.Error("resumeLine does not match the trainer's line")
	}
}
