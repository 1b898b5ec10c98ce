package kube

import (
	"fmt"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	kubeflowv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gangboost/gangboost/internal/steps/launch"
)

// jobAPI is what differs between the job kinds the backend runs a gang as; creating, adopting,
// deleting and following the job (its Volcano PodGroup, named after it, its pods and events) are
// the backend's, the same for each.
type jobAPI interface {
	// kind names the job kind in messages.
	kind() string
	build(j *launch.Job) (client.Object, error)
	// object is an empty job of the kind, named, to read or delete.
	object(namespace, name string) client.Object
	// podLabel is the label whose value is the job's name on its pods.
	podLabel() string
	// container is the trainer's container in the pods.
	container() string
	// state reads what the job's status says.
	state(obj client.Object) jobState
	// resources names the RBAC resources following the job needs, for error messages.
	resources() string
}

// jobState is a job's status as the watcher reads it.
type jobState struct {
	// conditions are the True conditions, "Type: Reason: Message".
	conditions []string
	running    bool
	succeeded  bool
	// failed is the failure's "Reason: Message", "" unless the job failed.
	failed string
}

// apiFor is the job API the job_api input names.
func apiFor(name string) (jobAPI, error) {
	switch name {
	case launch.APIXGBoostJob, "":
		return xgboostJobAPI{}, nil
	case launch.APITrainJob:
		return trainJobAPI{}, nil
	}
	return nil, fmt.Errorf("job API %q: want %s or %s", name, launch.APIXGBoostJob, launch.APITrainJob)
}

// xgboostJobAPI runs the gang as a Training Operator v1 XGBoostJob.
type xgboostJobAPI struct{}

func (xgboostJobAPI) kind() string { return kubeflowv1.XGBoostJobKind }
func (xgboostJobAPI) build(j *launch.Job) (client.Object, error) {
	return XGBoostJob(j)
}
func (xgboostJobAPI) object(ns, name string) client.Object {
	return &kubeflowv1.XGBoostJob{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
}
func (xgboostJobAPI) podLabel() string  { return JobNameLabel }
func (xgboostJobAPI) container() string { return kubeflowv1.XGBoostJobDefaultContainerName }
func (xgboostJobAPI) resources() string { return "xgboostjobs, podgroups, pods and events" }
func (xgboostJobAPI) state(obj client.Object) jobState {
	xj := obj.(*kubeflowv1.XGBoostJob)
	conds := make([]condition, len(xj.Status.Conditions))
	for i, c := range xj.Status.Conditions {
		conds[i] = condition{string(c.Type), c.Reason, c.Message, c.Status == corev1.ConditionTrue}
	}
	return stateOf(conds, string(kubeflowv1.JobRunning), string(kubeflowv1.JobSucceeded), string(kubeflowv1.JobFailed))
}

// condition is a job condition of either API.
type condition struct {
	typ, reason, message string
	isTrue               bool
}

// stateOf reads the True conditions: the types that mean running, succeeded and failed ("" for
// none).
func stateOf(conds []condition, running, succeeded, failed string) jobState {
	var s jobState
	for _, c := range conds {
		if !c.isTrue {
			continue
		}
		s.conditions = append(s.conditions, fmt.Sprintf("%s: %s: %s", c.typ, c.reason, c.message))
		switch c.typ {
		case running:
			s.running = true
		case succeeded:
			s.succeeded = true
		case failed:
			s.failed = c.reason + ": " + c.message
		}
	}
	return s
}

// trainJobAPI runs the gang as a Kubeflow Trainer v2 TrainJob.
type trainJobAPI struct{}

func (trainJobAPI) kind() string { return trainer.TrainJobKind }
func (trainJobAPI) build(j *launch.Job) (client.Object, error) {
	return TrainJob(j)
}
func (trainJobAPI) object(ns, name string) client.Object {
	return &trainer.TrainJob{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
}
func (trainJobAPI) podLabel() string  { return JobSetNameLabel }
func (trainJobAPI) container() string { return TrainerNode }
func (trainJobAPI) resources() string { return "trainjobs, podgroups, pods and events" }
func (trainJobAPI) state(obj client.Object) jobState {
	tj := obj.(*trainer.TrainJob)
	conds := make([]condition, len(tj.Status.Conditions))
	for i, c := range tj.Status.Conditions {
		conds[i] = condition{c.Type, c.Reason, c.Message, c.Status == metav1.ConditionTrue}
	}
	// A TrainJob has no Running condition: its JobSet's replicated jobs say whether pods run. A
	// child Job counts as active while its pods are still Pending (Volcano has placed none), so
	// only a Ready one (every pod ready or completed) means the gang runs.
	s := stateOf(conds, "", trainer.TrainJobComplete, trainer.TrainJobFailed)
	for _, js := range tj.Status.JobsStatus {
		if js.Ready != nil && *js.Ready > 0 {
			s.running = true
		}
	}
	return s
}
