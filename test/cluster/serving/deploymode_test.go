package serving

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/gangboost/gangboost/internal/kube/kserveapi"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gangboost/gangboost/internal/steps/deploy/kube"
	"github.com/gangboost/gangboost/test/cluster"
)

// setDefaultDeploymentMode sets KServe's cluster-wide defaultDeploymentMode in its
// inferenceservice-config (which the controller and its webhook read on every request) and
// puts the old value back when the test ends.
func setDefaultDeploymentMode(t *testing.T, c *cluster.Cluster, mode string) {
	t.Helper()
	ctx := context.Background()
	cms := c.Kube.CoreV1().ConfigMaps(cluster.KServeNamespace)
	cm, err := cms.Get(ctx, "inferenceservice-config", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	old := cm.Data["deploy"]
	var deploy map[string]any
	if err := json.Unmarshal([]byte(old), &deploy); err != nil {
		t.Fatalf("inferenceservice-config data.deploy: %v", err)
	}
	deploy["defaultDeploymentMode"] = mode
	b, err := json.Marshal(deploy)
	if err != nil {
		t.Fatal(err)
	}
	cm.Data["deploy"] = string(b)
	if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cm, err := cms.Get(ctx, "inferenceservice-config", metav1.GetOptions{})
		if err == nil {
			cm.Data["deploy"] = old
			_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
		}
		if err != nil {
			t.Errorf("restore KServe's defaultDeploymentMode: %v", err)
		}
	})
}

// TestDeployWhenClusterDefaultIsServerless: Kubeflow installs KServe with defaultDeploymentMode
// Serverless (Knative). An InferenceService that leaves the mode to the cluster then gets no
// Deployment (there is no Knative here, and the gRPC port and port-forward would not work with
// one); the component's InferenceService asks for RawDeployment itself and is served by a
// Deployment and Ready all the same.
func TestDeployWhenClusterDefaultIsServerless(t *testing.T) {
	e := newDeployEnv(t)
	e.train("v1", 5)
	setDefaultDeploymentMode(t, e.c, "Serverless")
	params := func(mode string, timeout int) map[string]any {
		p := map[string]any{
			"name": "iris", "model_uri": "pvc://" + claim + "/models/iris/v1", "timeout_seconds": timeout,
			"runtime": "gangboost-xgboost", "protocol_version": "v2", "cpu": "500m", "memory": "256Mi",
			"pvc_name": claim, "pvc_mount_path": "/mnt/pvc",
		}
		if mode != "none" {
			p["deployment_mode"] = mode
		}
		return p
	}
	deployment := func() error {
		var d appsv1.Deployment
		return e.c.Client.Get(context.Background(), client.ObjectKey{Namespace: e.ns, Name: predictorObject(e.c, "iris", "v1")}, &d)
	}

	t.Run("ClusterDefault", func(t *testing.T) {
		e := *e
		e.t = t
		// KServe gives the service up for good (a terminal error, no retry), so the step must
		// fail on its event, long before its own 10 minutes, saying what to change.
		r := e.runDeploy(params("", 600), 2*time.Minute)
		if r.exitCode == 0 {
			t.Fatalf("with the cluster's Serverless default the service became ready:\n%s", r.log)
		}
		if !strings.Contains(r.log, "ServerlessModeRejected") {
			t.Error("the failure does not carry KServe's ServerlessModeRejected event")
		}
		if !strings.Contains(r.log, "set deployment_mode to RawDeployment") || strings.Contains(r.log, "(timeout_seconds) passed") {
			t.Error("the step did not fail on KServe's rejection saying what to change")
		}
		if err := deployment(); !apierrors.IsNotFound(err) {
			t.Errorf("Deployment %s under the Serverless default: %v, want none", predictorObject(e.c, "iris", "v1"), err)
		}
		e.removeServices()
	})

	t.Run("RawDeployment", func(t *testing.T) {
		e := *e
		e.t = t
		start := time.Now()
		r := e.runDeploy(params("none", 120), 3*time.Minute)
		e.checkOutputs(r, "iris")
		t.Logf("ready after %s with the cluster's default Serverless", time.Since(start).Round(time.Millisecond))
		if err := deployment(); err != nil {
			t.Errorf("Deployment %s: %v", predictorObject(e.c, "iris", "v1"), err)
		}
		var isvc kserveapi.InferenceService
		if err := e.c.Client.Get(context.Background(), client.ObjectKey{Namespace: e.ns, Name: "iris"}, &isvc); err != nil {
			t.Fatal(err)
		}
		// KServe 0.19's defaulting webhook renames the legacy RawDeployment to Standard.
		if got := isvc.Annotations[kube.DeploymentModeAnnotation]; got != "RawDeployment" && got != "Standard" {
			t.Errorf("annotation %s = %q, want RawDeployment (KServe 0.19: Standard)", kube.DeploymentModeAnnotation, got)
		}
		if m := isvc.Status.DeploymentMode; m != "RawDeployment" && m != "Standard" {
			t.Errorf("status.deploymentMode = %q, want RawDeployment (KServe 0.19: Standard)", m)
		}
		if !strings.Contains(r.log, "condition Ready=True") {
			t.Error("progress does not reach Ready=True")
		}
	})
}
