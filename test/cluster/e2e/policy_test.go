package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/gangboost/gangboost/internal/plumbing/repodir"
	"github.com/gangboost/gangboost/test/cluster"
)

// manifests/policy/queue-pinning.yaml on the control plane's API server: a namespace labelled
// gangboost.dev/queue=ml-training may create XGBoostJobs and PodGroups in that queue only; another
// queue is refused with the policy's message, naming the queue to use; an unlabelled namespace is
// not affected.
func TestQueuePinningPolicy(t *testing.T) {
	e := newEnv(t, "pinned")
	ctx := context.Background()
	root, err := repodir.Root()
	if err != nil {
		t.Fatal(err)
	}
	objs, err := cluster.DecodeFiles(filepath.Join(root, "manifests", "policy", "queue-pinning.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := cluster.Apply(ctx, e.c.Client, objs...); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, o := range objs {
			_ = e.c.Client.Delete(context.Background(), o)
		}
	})
	var ns corev1.Namespace
	if err := e.c.Client.Get(ctx, client.ObjectKey{Name: e.ns}, &ns); err != nil {
		t.Fatal(err)
	}
	ns.Labels = map[string]string{"gangboost.dev/queue": mlQueue}
	if err := e.c.Client.Update(ctx, &ns); err != nil {
		t.Fatal(err)
	}
	// The API server compiles the policy and watches its binding: an object in another queue is
	// refused once it does (the first creations may race that).
	wrong := func(name string) error {
		j := e.xgboostJob(jobSpec{name: name, queue: "other-queue", command: []string{"true"}})
		return e.c.Client.Create(ctx, j)
	}
	var refused error
	n := 0
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		n++
		refused = wrong(fmt.Sprintf("wrong-%d", n))
		return refused != nil, nil
	}); err != nil {
		t.Fatalf("an XGBoostJob in another queue was never refused: %v", err)
	}
	for _, want := range []string{"gangboost-queue-pinning", "namespace " + e.ns + " may use only the Volcano queue " + mlQueue, "not other-queue", "queue=" + mlQueue} {
		if !strings.Contains(refused.Error(), want) {
			t.Errorf("refusal %q does not say %q", refused, want)
		}
	}
	// Its own queue passes (and the default queue, named or not, does not).
	e.create(e.xgboostJob(jobSpec{name: "right", command: []string{"true"}}))
	pg := &schedulingv1beta1.PodGroup{}
	pg.Name, pg.Namespace, pg.Spec.MinMember = "raw", e.ns, 1
	if err := e.c.Client.Create(ctx, pg); err == nil || !strings.Contains(err.Error(), "not default") {
		t.Errorf("a PodGroup in the default queue: %v, want a refusal", err)
	}
	pg = &schedulingv1beta1.PodGroup{}
	pg.Name, pg.Namespace, pg.Spec.MinMember, pg.Spec.Queue = "raw-ok", e.ns, 1, mlQueue
	if err := e.c.Client.Create(ctx, pg); err != nil {
		t.Errorf("a PodGroup in the namespace's queue: %v", err)
	}
	// A namespace without the label is not affected.
	free := newEnv(t, "unpinned")
	if err := free.c.Client.Create(ctx, free.xgboostJob(jobSpec{name: "anywhere", queue: "other-queue", command: []string{"true"}})); err != nil {
		t.Errorf("an unlabelled namespace's job in another queue: %v", err)
	}
}
