package cluster

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
)

// VolcanoConfig is operator-config/volcano-full (the fresh-cluster settings:
// operator-config/volcano plus the scheduler ConfigMap) rendered with
// `kubectl kustomize`.
type VolcanoConfig struct {
	// Objects are applied to the cluster as they are (Namespace, ConfigMap,
	// Queue, PriorityClasses).
	Objects []*unstructured.Unstructured
	// SchedulerConf is the volcano-scheduler.conf of the ConfigMap, which
	// the scheduler reads from a file.
	SchedulerConf string
}

// Where Volcano's install keeps its scheduler configuration: namespace,
// ConfigMap and key.
const (
	VolcanoNamespace   = "volcano-system"
	SchedulerConfigMap = "volcano-scheduler-configmap"
	SchedulerConfKey   = "volcano-scheduler.conf"
)

// RenderVolcanoConfig renders operator-config/volcano-full of repoRoot.
func RenderVolcanoConfig(ctx context.Context, repoRoot string) (*VolcanoConfig, error) {
	dir := filepath.Join(repoRoot, "operator-config", "volcano-full")
	objs, err := Kustomize(ctx, dir)
	if err != nil {
		return nil, err
	}
	out := &VolcanoConfig{Objects: objs}
	for _, o := range objs {
		if o.GetKind() != "ConfigMap" || o.GetName() != SchedulerConfigMap {
			continue
		}
		var cm corev1.ConfigMap
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &cm); err != nil {
			return nil, err
		}
		out.SchedulerConf = cm.Data[SchedulerConfKey]
	}
	if out.SchedulerConf == "" {
		return nil, fmt.Errorf("%s: no ConfigMap %s with key %s", dir, SchedulerConfigMap, SchedulerConfKey)
	}
	return out, nil
}

// startVolcano applies operator-config/volcano-full and runs the scheduler with
// its configuration file.
func (c *Cluster) startVolcano(ctx context.Context) error {
	vc, err := RenderVolcanoConfig(ctx, c.opts.RepoRoot)
	if err != nil {
		return err
	}
	if err := Apply(ctx, c.Client, vc.Objects...); err != nil {
		return err
	}
	confPath := filepath.Join(c.Dir, SchedulerConfKey)
	if err := os.WriteFile(confPath, []byte(vc.SchedulerConf), 0o644); err != nil {
		return err
	}
	ps, err := FreePorts(2)
	if err != nil {
		return err
	}
	metricsPort, healthPort := ps[0], ps[1]
	proc, err := c.start("vc-scheduler", c.Binaries["vc-scheduler"], []string{
		"--kubeconfig=" + c.Kubeconfig,
		"--scheduler-conf=" + confPath,
		"--scheduler-name=volcano",
		"--leader-elect=false",
		fmt.Sprintf("--schedule-period=%s", c.opts.SchedulePeriod),
		fmt.Sprintf("--listen-address=127.0.0.1:%d", metricsPort),
		fmt.Sprintf("--healthz-address=127.0.0.1:%d", healthPort),
		"--enable-healthz=true",
		"--cache-dumper=false",
		"--v=3",
	}, nil)
	if err != nil {
		return err
	}
	if err := waitReady(ctx, proc, 60*time.Second, func(ctx context.Context) error {
		return httpGetOK(ctx, http.DefaultClient, fmt.Sprintf("http://127.0.0.1:%d/healthz", healthPort))
	}); err != nil {
		return err
	}
	return c.startVolcanoQueueController(ctx, vc)
}

// startVolcanoQueueController runs Volcano's controller manager with only
// its queue controller: since v1.15 the scheduler's enqueue action rejects
// PodGroups of a queue whose status.state is not Open, and that controller
// is what opens queues (operator-config's ml-training, those tests create).
// The other controllers stay off: the training operator and Trainer v2
// create their PodGroups themselves.
//
// Ready means every Queue of operator-config is Open.
func (c *Cluster) startVolcanoQueueController(ctx context.Context, vc *VolcanoConfig) error {
	ps, err := FreePorts(2)
	if err != nil {
		return err
	}
	healthPort, listenPort := ps[0], ps[1]
	proc, err := c.start("vc-controller-manager", c.Binaries["vc-controller-manager"], []string{
		"--kubeconfig=" + c.Kubeconfig,
		"--controllers=queue-controller",
		"--leader-elect=false",
		"--enable-healthz=true",
		fmt.Sprintf("--healthz-address=127.0.0.1:%d", healthPort),
		"--enable-metrics=false",
		// Not the default :8080, which the runtime pods of serving/ use.
		fmt.Sprintf("--listen-address=127.0.0.1:%d", listenPort),
		"--v=2",
	}, nil)
	if err != nil {
		return err
	}
	var queues []string
	for _, o := range vc.Objects {
		if o.GetKind() == "Queue" {
			queues = append(queues, o.GetName())
		}
	}
	return waitReady(ctx, proc, 60*time.Second, func(ctx context.Context) error {
		for _, name := range queues {
			var q schedulingv1beta1.Queue
			if err := c.Client.Get(ctx, client.ObjectKey{Name: name}, &q); err != nil {
				return err
			}
			if q.Status.State != schedulingv1beta1.QueueStateOpen {
				return fmt.Errorf("queue %s: state %q, want Open", name, q.Status.State)
			}
		}
		return nil
	})
}
