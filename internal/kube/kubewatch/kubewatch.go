// Package kubewatch follows a few objects of one namespace through informers and hands their
// cache to a step function on every change: what the components' Kubernetes backends do while
// they wait for a job or an InferenceService, without polling.
package kubewatch

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Informers are what to follow.
type Informers struct {
	// Namespace holds every object followed.
	Namespace string
	// ByObject selects the objects of each type followed (by field or label); each type in it
	// gets an informer.
	ByObject map[client.Object]cache.ByObject
	// What names the followed object in errors: "XGBoostJob ns/name".
	What string
	// Needs is the RBAC a sync failure hints at: "xgboostjobs, pods and events".
	Needs string
}

// syncTimeout bounds the informers' first list: longer means they cannot list or watch.
const syncTimeout = time.Minute

// Follow starts the informers, waits for their first sync, then calls step with their cache at
// once and after each change (changes arriving while step runs are folded into one call), until
// step reports done or fails, ctx ends (its cause is returned) or the informers stop.
func Follow(ctx context.Context, cfg *rest.Config, scheme *runtime.Scheme, in Informers,
	step func(ctx context.Context, r client.Reader) (done bool, err error)) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	c, err := cache.New(cfg, cache.Options{
		Scheme:            scheme,
		DefaultNamespaces: map[string]cache.Config{in.Namespace: {}},
		ByObject:          in.ByObject,
	})
	if err != nil {
		return fmt.Errorf("watch %s: %w", in.What, err)
	}
	changed := make(chan struct{}, 1)
	poke := func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	handler := toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { poke() },
		UpdateFunc: func(any, any) { poke() },
		DeleteFunc: func(any) { poke() },
	}
	for obj := range in.ByObject {
		inf, err := c.GetInformer(ctx, obj)
		if err != nil {
			return fmt.Errorf("watch %T of %s: %w", obj, in.What, err)
		}
		if _, err := inf.AddEventHandler(handler); err != nil {
			return err
		}
	}
	cacheErr := make(chan error, 1)
	go func() { cacheErr <- c.Start(ctx) }()
	syncCtx, syncCancel := context.WithTimeout(ctx, syncTimeout)
	synced := c.WaitForCacheSync(syncCtx)
	syncCancel()
	if !synced {
		select {
		case err := <-cacheErr:
			return fmt.Errorf("watch %s: %w", in.What, err)
		default:
		}
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		return fmt.Errorf("watch %s: informers did not sync within a minute (may the step's service account list and watch %s?)", in.What, in.Needs)
	}
	poke()
	for {
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case err := <-cacheErr:
			if err == nil {
				err = errors.New("informers stopped")
			}
			return fmt.Errorf("watch %s: %w", in.What, err)
		case <-changed:
			if done, err := step(ctx, c); done || err != nil {
				return err
			}
		}
	}
}

// EventTime is when ev last happened: its last timestamp (events recorded through core/v1),
// else its event time (events.k8s.io), else its creation.
func EventTime(ev *corev1.Event) time.Time {
	switch {
	case !ev.LastTimestamp.IsZero():
		return ev.LastTimestamp.Time
	case !ev.EventTime.IsZero():
		return ev.EventTime.Time
	default:
		return ev.CreationTimestamp.Time
	}
}
