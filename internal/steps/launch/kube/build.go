// Package kube is the launcher's Kubernetes backend: it runs a launch.Job as a Kubeflow Training
// Operator v1 XGBoostJob or a Kubeflow Trainer v2 TrainJob (the job's API), gang-scheduled by
// Volcano, adopts the job an earlier attempt of the same step created, and follows the job, its
// PodGroup and its pods through informers.
package kube

import (
	"fmt"
	"maps"

	kubeflowv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gangboost/gangboost/internal/steps/launch"
)

// Labels and annotations the backend puts on its jobs.
const (
	// RunIDAnnotation and TaskNameAnnotation name the step that created a job: a job is adopted
	// only when both match.
	RunIDAnnotation    = "gangboost.dev/run-id"
	TaskNameAnnotation = "gangboost.dev/task-name"
	ManagedByLabel     = "app.kubernetes.io/managed-by"
	ManagedBy          = "gangboost-launch-xgboostjob"
	// JobNameLabel is the label the Training Operator puts on a job's pods.
	JobNameLabel = "training.kubeflow.org/job-name"
	// GPUResource is the extended resource of NVIDIA's device plugin.
	GPUResource corev1.ResourceName = "nvidia.com/gpu"
	// IstioInjectAnnotation is Istio's per-pod sidecar switch. Kubeflow's profile namespaces inject
	// a sidecar into every pod; a sidecar never exits, so a trainer pod with one never completes
	// (its XGBoostJob never succeeds), and it holds the rank's port while the collective starts.
	IstioInjectAnnotation = "sidecar.istio.io/inject"
	// TrainerCommand is the trainer's executable in the image.
	TrainerCommand = "gangboost-train"
	volumeName     = "model-store"
)

// XGBoostJob builds the kubeflow.org/v1 XGBoostJob of a job: a Master and j.Workers Workers running
// gangboost-train with the claim mounted, gang-scheduled by runPolicy.schedulingPolicy.
func XGBoostJob(j *launch.Job) (*kubeflowv1.XGBoostJob, error) {
	res, args, err := trainerSpec(j)
	if err != nil {
		return nil, err
	}
	labels := map[string]string{ManagedByLabel: ManagedBy}
	template := func() corev1.PodTemplateSpec {
		return corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: map[string]string{IstioInjectAnnotation: "false"}},
			Spec: corev1.PodSpec{
				ServiceAccountName: j.ServiceAccount,
				SecurityContext:    podSecurityContext(j.Security),
				PriorityClassName:  j.Gang.PriorityClass,
				Tolerations:        tolerations(j.Placement),
				NodeSelector:       nodeSelector(j.Placement),
				Affinity:           j.Placement.Affinity.DeepCopy(),
				Containers: []corev1.Container{{
					// The operator finds the container by this name (and the port by its name).
					Name:    kubeflowv1.XGBoostJobDefaultContainerName,
					Image:   j.Image,
					Command: []string{TrainerCommand},
					Args:    args,
					Ports: []corev1.ContainerPort{{
						Name: kubeflowv1.XGBoostJobDefaultPortName, ContainerPort: j.Port, Protocol: corev1.ProtocolTCP,
					}},
					Env:          objectStoreEnv(j),
					Resources:    corev1.ResourceRequirements{Requests: res.DeepCopy(), Limits: res.DeepCopy()},
					VolumeMounts: []corev1.VolumeMount{{Name: volumeName, MountPath: j.MountPath}},
					// A failing rank's last lines become the container's termination
					// message, which the launcher prints even when logs are gone.
					TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
				}},
				Volumes: []corev1.Volume{claimVolume(j)},
			},
		}
	}
	// A rank that dies takes the collective with it: restarting one pod cannot rejoin it. With
	// Never the job fails; with OnFailure every rank fails (the survivors exit when the gang
	// watch names the lost rank), the kubelet restarts each container in place, and the new
	// gang resumes from the newest checkpoint on the claim.
	restart := kubeflowv1.RestartPolicyNever
	if j.RestartPolicy == launch.RestartOnFailure {
		restart = kubeflowv1.RestartPolicyOnFailure
	}
	one := int32(1)
	specs := map[kubeflowv1.ReplicaType]*kubeflowv1.ReplicaSpec{
		kubeflowv1.XGBoostJobReplicaTypeMaster: {Replicas: &one, RestartPolicy: restart, Template: template()},
	}
	if j.Workers > 0 {
		w := j.Workers
		specs[kubeflowv1.XGBoostJobReplicaTypeWorker] = &kubeflowv1.ReplicaSpec{Replicas: &w, RestartPolicy: restart, Template: template()}
	}
	minAvailable := j.MinAvailable()
	sp := &kubeflowv1.SchedulingPolicy{
		MinAvailable:  &minAvailable,
		Queue:         j.Gang.Queue,
		PriorityClass: j.Gang.PriorityClass,
	}
	if j.Gang.ScheduleTimeout > 0 {
		s := int32(j.Gang.ScheduleTimeout.Seconds())
		sp.ScheduleTimeoutSeconds = &s
	}
	rp := kubeflowv1.RunPolicy{
		SchedulingPolicy:        sp,
		BackoffLimit:            j.BackoffLimit,
		ActiveDeadlineSeconds:   j.ActiveDeadlineSeconds,
		TTLSecondsAfterFinished: j.TTLSecondsAfterFinished,
	}
	if j.CleanPodPolicy != "" {
		p := kubeflowv1.CleanPodPolicy(j.CleanPodPolicy)
		rp.CleanPodPolicy = &p
	}
	return &kubeflowv1.XGBoostJob{
		TypeMeta:   metav1.TypeMeta{APIVersion: kubeflowv1.SchemeGroupVersion.String(), Kind: kubeflowv1.XGBoostJobKind},
		ObjectMeta: jobMeta(j, nil),
		Spec:       kubeflowv1.XGBoostJobSpec{RunPolicy: rp, XGBReplicaSpecs: specs},
	}, nil
}

// trainerSpec is what every rank runs, whatever the job's API: its resources (requests = limits)
// and gangboost-train's arguments.
func trainerSpec(j *launch.Job) (corev1.ResourceList, []string, error) {
	res := corev1.ResourceList{}
	if j.Resources.CPU != "" {
		q, err := resource.ParseQuantity(j.Resources.CPU)
		if err != nil {
			return nil, nil, fmt.Errorf("cpu %q: %w", j.Resources.CPU, err)
		}
		res[corev1.ResourceCPU] = q
	}
	if j.Resources.Memory != "" {
		q, err := resource.ParseQuantity(j.Resources.Memory)
		if err != nil {
			return nil, nil, fmt.Errorf("memory %q: %w", j.Resources.Memory, err)
		}
		res[corev1.ResourceMemory] = q
	}
	if j.Resources.GPUs < 0 {
		return nil, nil, fmt.Errorf("gpus = %d, want >= 0", j.Resources.GPUs)
	}
	if j.Resources.GPUs > 0 {
		res[GPUResource] = *resource.NewQuantity(j.Resources.GPUs, resource.DecimalSI)
	}
	args, err := j.TrainerArgs(j.MountPath)
	if err != nil {
		return nil, nil, err
	}
	return res, args, nil
}

// jobMeta is the metadata of the job object: the step's identity (adoption goes by it) and the
// label make clean-app selects by.
func jobMeta(j *launch.Job, annotations map[string]string) metav1.ObjectMeta {
	a := map[string]string{RunIDAnnotation: j.Identity.RunID, TaskNameAnnotation: j.Identity.TaskName}
	for k, v := range annotations {
		a[k] = v
	}
	return metav1.ObjectMeta{Name: j.Name, Namespace: j.Namespace, Labels: map[string]string{ManagedByLabel: ManagedBy}, Annotations: a}
}

// claimVolume is the model claim as the trainer pods' volume.
func claimVolume(j *launch.Job) corev1.Volume {
	return corev1.Volume{Name: volumeName, VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: j.Claim},
	}}
}

// tolerations are every replica's tolerations, a copy of the job's.
func tolerations(p launch.Placement) []corev1.Toleration {
	var out []corev1.Toleration
	for _, t := range p.Tolerations {
		out = append(out, *t.DeepCopy())
	}
	return out
}

// nodeSelector is every replica's node selector, a copy of the job's (nil when empty).
func nodeSelector(p launch.Placement) map[string]string {
	if len(p.NodeSelector) == 0 {
		return nil
	}
	return maps.Clone(p.NodeSelector)
}

// podSecurityContext is the trainer pods' security context, nil when nothing is set.
func podSecurityContext(s launch.PodSecurity) *corev1.PodSecurityContext {
	if s.FSGroup == nil && s.RunAsUser == nil && s.RunAsGroup == nil {
		return nil
	}
	return &corev1.PodSecurityContext{FSGroup: copyID(s.FSGroup), RunAsUser: copyID(s.RunAsUser), RunAsGroup: copyID(s.RunAsGroup)}
}

func copyID(p *int64) *int64 {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// objectStoreEnv gives the trainer the object store's credentials from the Secret, as
// secretKeyRef env variables (the values never appear in the job object), when the trainer
// reaches a store: its data or its model is there. A job whose data and model are on the claim
// does not depend on the Secret (the pipeline names Kubeflow's per-namespace Secret by default,
// which a cluster without Kubeflow lacks).
func objectStoreEnv(j *launch.Job) []corev1.EnvVar {
	o := j.Data.ObjectStore
	if o.Secret == "" || !j.UsesObjectStore() {
		return nil
	}
	ref := func(key string) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: o.Secret}, Key: key}}
	}
	return []corev1.EnvVar{
		{Name: "AWS_ACCESS_KEY_ID", ValueFrom: ref(o.AccessKeyKey)},
		{Name: "AWS_SECRET_ACCESS_KEY", ValueFrom: ref(o.SecretKeyKey)},
	}
}
