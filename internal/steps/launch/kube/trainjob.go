package kube

import (
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gangboost/gangboost/internal/steps/launch"
)

// Kubeflow Trainer v2's names the TrainJob path relies on.
const (
	// TrainerNode is the replicated job and the container of a ClusterTrainingRuntime's trainer
	// (Trainer's constants.Node): its XGBoost plugin injects DMLC_* into the container of this name.
	TrainerNode = "node"
	// JobSetNameLabel is the label JobSet puts on a TrainJob's pods (the JobSet is named after the
	// TrainJob).
	JobSetNameLabel = "jobset.sigs.k8s.io/jobset-name"
	// VolcanoQueueAnnotation names the queue of the PodGroup Trainer's Volcano plugin creates (named
	// after the TrainJob, minMember every pod). Trainer v2.2 reads it from the JobSet template's
	// annotations (the runtime's, overridden by a runtime patch's), not from the TrainJob's own:
	// TrainJob sets it in its runtime patch and, for people reading the TrainJob, on itself.
	VolcanoQueueAnnotation = "scheduling.volcano.sh/queue-name"
	// TrainerTrackerPort is where Trainer v2's XGBoost plugin says rank 0's tracker listens
	// (DMLC_TRACKER_PORT, Trainer's constants.ContainerTrainerPort).
	TrainerTrackerPort int32 = 29500
	// RuntimePatchManager names the TrainJob's runtime patch: Trainer's admission webhook wants a
	// domain-prefixed path (IsDomainPrefixedPath, "acme.io/foo") and refuses the TrainJob otherwise.
	RuntimePatchManager = "gangboost.dev/launch-xgboostjob"
)

// TrainJob builds the trainer.kubeflow.org/v1alpha1 TrainJob of a job: j.Replicas() nodes of
// j.TrainingRuntime running gangboost-train with the claim mounted. The runtime's mlPolicy.xgboost
// makes Trainer inject DMLC_TRACKER_URI, DMLC_TRACKER_PORT, DMLC_TASK_ID and DMLC_NUM_WORKER (rank
// 0's gangboost-train starts the tracker), and its podGroupPolicy.volcano gang-schedules the pods
// in the queue the annotation names. Trainer v2 has no per-job priority class, backoff limit,
// clean-pod or TTL policy: those come from the runtime.
func TrainJob(j *launch.Job) (*trainer.TrainJob, error) {
	res, args, err := trainerSpec(j)
	if err != nil {
		return nil, err
	}
	nodes := j.Replicas()
	group, kind := trainer.GroupVersion.Group, trainer.ClusterTrainingRuntimeKind
	image := j.Image
	pod := &trainer.PodSpecPatch{
		Volumes: []corev1.Volume{claimVolume(j)},
		Containers: []trainer.ContainerPatch{{
			Name:         TrainerNode,
			VolumeMounts: []corev1.VolumeMount{{Name: volumeName, MountPath: j.MountPath}},
		}},
		SecurityContext: podSecurityContext(j.Security),
		Tolerations:     tolerations(j.Placement),
		NodeSelector:    nodeSelector(j.Placement),
		Affinity:        j.Placement.Affinity.DeepCopy(),
	}
	if j.ServiceAccount != "" {
		sa := j.ServiceAccount
		pod.ServiceAccountName = &sa
	}
	var jobSetMetadata *metav1.ObjectMeta
	if j.Gang.Queue != "" {
		jobSetMetadata = &metav1.ObjectMeta{Annotations: map[string]string{VolcanoQueueAnnotation: j.Gang.Queue}}
	}
	tj := &trainer.TrainJob{
		TypeMeta:   metav1.TypeMeta{APIVersion: trainer.GroupVersion.String(), Kind: trainer.TrainJobKind},
		ObjectMeta: jobMeta(j, map[string]string{VolcanoQueueAnnotation: j.Gang.Queue}),
		Spec: trainer.TrainJobSpec{
			RuntimeRef: trainer.RuntimeRef{Name: j.TrainingRuntime, APIGroup: &group, Kind: &kind},
			Trainer: &trainer.Trainer{
				Image:            &image,
				Command:          []string{TrainerCommand},
				Args:             args,
				NumNodes:         &nodes,
				ResourcesPerNode: &corev1.ResourceRequirements{Requests: res.DeepCopy(), Limits: res.DeepCopy()},
			},
			RuntimePatches: []trainer.RuntimePatch{{
				Manager: RuntimePatchManager,
				TrainingRuntimeSpec: &trainer.TrainingRuntimeSpecPatch{Template: &trainer.JobSetTemplatePatch{
					Metadata: jobSetMetadata,
					Spec: &trainer.JobSetSpecPatch{ReplicatedJobs: []trainer.ReplicatedJobPatch{{
						Name: TrainerNode,
						Template: &trainer.JobTemplatePatch{Spec: &trainer.JobSpecPatch{Template: &trainer.PodTemplatePatch{
							Metadata: &metav1.ObjectMeta{
								Labels: map[string]string{ManagedByLabel: ManagedBy},
								// Whatever the runtime says: a sidecar never exits, so the job would
								// never complete.
								Annotations: map[string]string{IstioInjectAnnotation: "false"},
							},
							Spec: pod,
						}}},
					}}},
				}},
			}},
		},
	}
	if j.Gang.Queue == "" {
		delete(tj.Annotations, VolcanoQueueAnnotation)
	}
	if j.ActiveDeadlineSeconds != nil {
		tj.Spec.ActiveDeadlineSeconds = *j.ActiveDeadlineSeconds
	}
	return tj, nil
}
