package kube

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gangboost/gangboost/internal/kube/kserveapi"
	"github.com/gangboost/gangboost/internal/kube/kubewatch"
	"github.com/gangboost/gangboost/internal/steps/deploy"
)

// The backend deploys a challenger as a KServe v0.20 canary of the InferenceService
// (spec.canary[], its own Deployment and Service {isvc}-{challenger}-predictor, 0 % of the traffic
// by default) and promotes it the way KServe documents for a restart-free promotion: the stable
// predictor becomes the canary's spec, its name included, and the entry goes. Every change is a
// JSON merge patch that carries the resourceVersion it read (optimistic locking, the patch verb
// the step's Role grants), so two runs changing one service never overwrite each other: the
// second reads again and decides again.
var _ deploy.Promoter = (*Backend)(nil)

// Serving reads the InferenceService: the stable predictor's model, the model recorded before it,
// and the challengers beside it.
func (b *Backend) Serving(ctx context.Context, s *deploy.Service) (*deploy.Serving, error) {
	var isvc kserveapi.InferenceService
	err := b.client.Get(ctx, client.ObjectKey{Namespace: s.Namespace, Name: s.Name}, &isvc)
	if apierrors.IsNotFound(err) {
		return &deploy.Serving{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read InferenceService %s/%s: %w", s.Namespace, s.Name, err)
	}
	out := &deploy.Serving{ModelURI: modelURI(isvc.Spec.Predictor), PreviousModelURI: isvc.Spec.Predictor.Annotations[PreviousModelURIAnnotation], StableName: isvc.Spec.Predictor.Name}
	for _, c := range isvc.Spec.Canary {
		out.Challengers = append(out.Challengers, c.Predictor.Name)
	}
	return out, nil
}

func modelURI(p kserveapi.PredictorSpec) string {
	if p.Model != nil && p.Model.StorageURI != nil {
		return *p.Model.StorageURI
	}
	return ""
}

// challengerPredictor is s's predictor as challenger c: the spec a stable predictor of s would
// have (so that promoting it changes nothing its pods see), named c.Name, one replica of its own
// (a dark canary's share of the stable replicas would be none), and the champion it challenges.
func challengerPredictor(s *deploy.Service, c deploy.Challenger) (kserveapi.PredictorSpec, error) {
	built, err := InferenceService(s)
	if err != nil {
		return kserveapi.PredictorSpec{}, err
	}
	p := built.Spec.Predictor
	one := int32(1)
	p.Name, p.MinReplicas, p.MaxReplicas = c.Name, &one, 0
	p.Annotations[PreviousModelURIAnnotation] = c.Champion
	return p, nil
}

// patchService changes the InferenceService with change and patches it, with the
// resourceVersion it read as a precondition; on a conflict it reads and changes it again. An
// error from change ends it. It returns the InferenceService as the API server stored it.
func (b *Backend) patchService(ctx context.Context, s *deploy.Service, change func(*kserveapi.InferenceService) error) (*kserveapi.InferenceService, error) {
	var isvc kserveapi.InferenceService
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		isvc = kserveapi.InferenceService{}
		if err := b.client.Get(ctx, client.ObjectKey{Namespace: s.Namespace, Name: s.Name}, &isvc); err != nil {
			return fmt.Errorf("read InferenceService %s/%s: %w", s.Namespace, s.Name, err)
		}
		before := isvc.DeepCopy()
		if err := change(&isvc); err != nil {
			return err
		}
		// Patch leaves the server's answer in isvc.
		return b.client.Patch(ctx, &isvc, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}), client.FieldOwner(FieldManager))
	})
	if err != nil {
		return nil, err
	}
	return &isvc, nil
}

// ApplyChallenger adds challenger c to the InferenceService's canaries (or replaces the entry of
// that name: a retried step), as long as c.Champion is still its model.
func (b *Backend) ApplyChallenger(ctx context.Context, s *deploy.Service, c deploy.Challenger) error {
	p, err := challengerPredictor(s, c)
	if err != nil {
		return fmt.Errorf("build challenger %s: %w", c.Name, err)
	}
	return b.addCanary(ctx, s, c, p)
}

// addCanary adds predictor p as canary c, as long as c.Champion is still the service's model.
func (b *Backend) addCanary(ctx context.Context, s *deploy.Service, c deploy.Challenger, p kserveapi.PredictorSpec) error {
	stored, err := b.patchService(ctx, s, func(isvc *kserveapi.InferenceService) error {
		if now := modelURI(isvc.Spec.Predictor); now != c.Champion {
			return &deploy.ChampionChangedError{Service: s.Name, Compared: c.Champion, Serving: now}
		}
		if mode := deploymentMode(isvc); mode == "Serverless" || mode == "Knative" {
			return fmt.Errorf("InferenceService %s/%s is deployed %s: KServe runs a challenger beside the champion (a canary) only in RawDeployment (Standard) mode; set deployment_mode RawDeployment, or promotion replace to roll out without a comparison", s.Namespace, s.Name, mode)
		}
		entry := kserveapi.CanarySpec{Predictor: p, TrafficPercent: c.TrafficPercent}
		total := c.TrafficPercent
		replaced := false
		for i, e := range isvc.Spec.Canary {
			if e.Predictor.Name == c.Name {
				isvc.Spec.Canary[i], replaced = entry, true
				continue
			}
			total += e.TrafficPercent
		}
		if total > 100 {
			return fmt.Errorf("InferenceService %s/%s: the challengers beside the champion would get %d%% of the traffic; KServe allows 100%% in all: lower challenger_traffic_percent, or remove a challenger (%s)", s.Namespace, s.Name, total, strings.Join(canaryNames(isvc), ", "))
		}
		if !replaced {
			isvc.Spec.Canary = append(isvc.Spec.Canary, entry)
		}
		return nil
	})
	if err != nil {
		return err
	}
	// An API server whose InferenceService schema has no spec.canary (KServe before v0.20)
	// prunes the entry and answers success: nothing would ever come up beside the champion.
	if !slices.ContainsFunc(stored.Spec.Canary, func(e kserveapi.CanarySpec) bool { return e.Predictor.Name == c.Name }) {
		return fmt.Errorf("InferenceService %s/%s kept no spec.canary entry %s: this cluster's KServe has no canary predictors (they came with KServe v0.20; Kubeflow 1.11 ships v0.15), so no challenger can run beside the champion; set promotion=replace to roll the service out to the new model without a comparison, or upgrade KServe", s.Namespace, s.Name, c.Name)
	}
	b.mu.Lock()
	if b.applied == nil {
		b.applied = map[string]appliedVersion{}
	}
	b.applied[key(s)+"/"+c.Name] = appliedVersion{servingSpec: p.Annotations[ServingSpecAnnotation], previous: c.Champion}
	b.mu.Unlock()
	return nil
}

func deploymentMode(isvc *kserveapi.InferenceService) string {
	if isvc.Status.DeploymentMode != "" {
		return isvc.Status.DeploymentMode
	}
	return isvc.Annotations[DeploymentModeAnnotation]
}

func canaryNames(isvc *kserveapi.InferenceService) []string {
	var names []string
	for _, c := range isvc.Spec.Canary {
		names = append(names, c.Predictor.Name)
	}
	return names
}

// WaitChallenger follows the challenger's pods until one of them is ready and KServe reports the
// canary ready, then waits until the model answers through the challenger's Service. A
// challenger whose runtime keeps failing (a model it cannot load, say) is removed and its
// failure returned: the champion is not touched.
func (b *Backend) WaitChallenger(ctx context.Context, s *deploy.Service, c deploy.Challenger, progress func(string)) (*deploy.Endpoint, *deploy.Endpoint, error) {
	b.mu.Lock()
	digest := b.applied[key(s)+"/"+c.Name].servingSpec
	b.mu.Unlock()
	var champion *deploy.Endpoint
	lastPods := ""
	err := kubewatch.Follow(ctx, b.config, b.scheme, kubewatch.Informers{
		Namespace: s.Namespace,
		ByObject: map[client.Object]cache.ByObject{
			&kserveapi.InferenceService{}: {Field: fields.OneTermEqualSelector("metadata.name", s.Name)},
			&corev1.Pod{}:                 {Label: labels.SelectorFromSet(labels.Set{PodLabel: s.Name})},
		},
		What:  fmt.Sprintf("challenger %s of InferenceService %s/%s", c.Name, s.Namespace, s.Name),
		Needs: "inferenceservices and pods",
	}, func(ctx context.Context, r client.Reader) (bool, error) {
		var isvc kserveapi.InferenceService
		if err := r.Get(ctx, client.ObjectKey{Namespace: s.Namespace, Name: s.Name}, &isvc); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		var pods corev1.PodList
		_ = r.List(ctx, &pods, client.InNamespace(s.Namespace), client.MatchingLabels{PodLabel: s.Name})
		ready, current := 0, 0
		for i := range pods.Items {
			p := &pods.Items[i]
			if p.DeletionTimestamp != nil || p.Annotations[ServingSpecAnnotation] != digest {
				continue
			}
			current++
			if podReady(p) {
				ready++
			}
			if why := crashLooping(p); why != "" {
				return false, fmt.Errorf("the challenger's runtime keeps failing: pod %s: %s", p.Name, why)
			}
		}
		canaryReady := slices.ContainsFunc(isvc.Status.CanaryStatuses, func(cs kserveapi.CanaryStatus) bool { return cs.Name == c.Name && cs.Ready })
		if line := fmt.Sprintf("challenger %s: pods ready %d/1 (%d created), canary ready %v", c.Name, ready, current, canaryReady); line != lastPods {
			lastPods = line
			progress(line)
		}
		if ready < 1 || !canaryReady || isvc.Status.Address == nil {
			return false, nil
		}
		var err error
		champion, err = b.endpoint(ctx, &isvc)
		return true, err
	})
	if err != nil {
		return nil, nil, b.removeFailed(ctx, s, c, err)
	}
	ep, err := b.challengerEndpoint(ctx, s, c, champion)
	if err != nil {
		return nil, nil, b.removeFailed(ctx, s, c, err)
	}
	if err := b.waitAnswers(ctx, s, ep, progress); err != nil {
		return nil, nil, b.removeFailed(ctx, s, c, err)
	}
	return ep, champion, nil
}

// removeFailed removes a challenger that did not come up and returns why, with what removing
// it did.
func (b *Backend) removeFailed(ctx context.Context, s *deploy.Service, c deploy.Challenger, cause error) error {
	rmCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := b.Reject(rmCtx, s, c); err != nil {
		return fmt.Errorf("%w (and removing challenger %s failed: %v)", cause, c.Name, err)
	}
	return fmt.Errorf("%w; challenger %s removed, the champion %s serves on", cause, c.Name, c.Champion)
}

// challengerEndpoint is where the challenger answers: its own predictor Service, in the form of
// the champion's address (KServe's cluster-local host, no port: the Service's port 80).
func (b *Backend) challengerEndpoint(ctx context.Context, s *deploy.Service, c deploy.Challenger, champion *deploy.Endpoint) (*deploy.Endpoint, error) {
	name := predictorServiceName(s.Name, c.Name)
	var svc corev1.Service
	if err := b.client.Get(ctx, client.ObjectKey{Namespace: s.Namespace, Name: name}, &svc); err != nil {
		return nil, fmt.Errorf("the challenger's Service %s cannot be read: %w", name, err)
	}
	host := name + "." + s.Namespace + ".svc.cluster.local"
	return &deploy.Endpoint{URL: "http://" + host, ModelName: s.Name, ExternalURL: champion.ExternalURL, GRPCAddress: grpcAddress(&svc, host)}, nil
}

// DefaultPromotionDrain is how long a promotion keeps the replaced champion answering at its
// old address by default: time for a client that read the service's address just before the
// promotion, and for an ingress that routes to it, to move to the new one.
const DefaultPromotionDrain = 30 * time.Second

// Promote makes challenger c the stable predictor: spec.predictor becomes the canary's spec (its
// name, so KServe keeps its Deployment and pods; the stable replica bounds), the entry goes, and
// the champion stays recorded on it (PreviousModelURIAnnotation). When c.Champion no longer
// serves, the challenger is removed instead and the error says what serves. It returns once the
// service is Ready on the promoted predictor and the replaced champion has drained.
//
// The service's address is its stable predictor's Service ({isvc}-{name}-predictor), so it moves
// with the promotion, and KServe v0.20 deletes the replaced predictor's Deployment and Service
// in the same reconcile, before it moves status.address: a client calling the address it read
// just before would fail. So the same patch keeps the replaced champion as a canary of its own
// name with no traffic (its Deployment and Service stay, one replica), and once the address
// moved and PromotionDrain passed, that entry goes. A service whose champion has no name (one
// deployed before stable predictors were named) cannot keep it: its old address goes at once.
func (b *Backend) Promote(ctx context.Context, s *deploy.Service, c deploy.Challenger) error {
	var changed *deploy.ChampionChangedError
	var drained *kserveapi.PredictorSpec
	_, err := b.patchService(ctx, s, func(isvc *kserveapi.InferenceService) error {
		drained = nil
		if now := modelURI(isvc.Spec.Predictor); now != c.Champion {
			changed = &deploy.ChampionChangedError{Service: s.Name, Compared: c.Champion, Serving: now}
			return changed
		}
		i := slices.IndexFunc(isvc.Spec.Canary, func(e kserveapi.CanarySpec) bool { return e.Predictor.Name == c.Name })
		if i < 0 {
			return fmt.Errorf("InferenceService %s/%s has no challenger %s (canaries: %v): was it removed by another step?", s.Namespace, s.Name, c.Name, canaryNames(isvc))
		}
		champion := isvc.Spec.Predictor
		stable := isvc.Spec.Canary[i].Predictor.DeepCopy()
		stable.MinReplicas, stable.MaxReplicas = champion.MinReplicas, champion.MaxReplicas
		isvc.Spec.Predictor = stable
		isvc.Spec.Canary = slices.Delete(isvc.Spec.Canary, i, i+1)
		// A champion still draining after an earlier promotion whose step did not finish
		// (the model recorded before this champion) goes now.
		if before := champion.Annotations[PreviousModelURIAnnotation]; before != "" {
			isvc.Spec.Canary = slices.DeleteFunc(isvc.Spec.Canary, func(e kserveapi.CanarySpec) bool {
				return e.TrafficPercent == 0 && modelURI(e.Predictor) == before
			})
		}
		if champion.Name != "" {
			d := champion.DeepCopy()
			one := int32(1)
			d.MinReplicas, d.MaxReplicas = &one, 0
			isvc.Spec.Canary = append(isvc.Spec.Canary, kserveapi.CanarySpec{Predictor: d})
			drained = &d
		}
		return nil
	})
	if errors.As(err, &changed) {
		if rerr := b.Reject(ctx, s, c); rerr != nil {
			return fmt.Errorf("%w (and removing the challenger failed: %v)", err, rerr)
		}
		return err
	}
	if err != nil {
		return err
	}
	if err := b.waitPromoted(ctx, s, c); err != nil {
		return err
	}
	if drained == nil {
		return nil
	}
	select {
	case <-ctx.Done():
	case <-time.After(b.PromotionDrain):
	}
	// The drained champion goes even when the step is being stopped: nothing else would
	// remove it.
	rmCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := b.removeDrained(rmCtx, s, drained); err != nil {
		return fmt.Errorf("promoted %s, but the replaced champion %s still answers at its old address: %w", c.Name, modelURI(*drained), err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("promoted %s; stopped during the drain, the replaced champion %s removed early: %w", c.Name, modelURI(*drained), err)
	}
	return nil
}

// removeDrained removes the canary entry that kept champion d answering at its old address,
// if it is still that champion's (a rollback may have made it its challenger since).
func (b *Backend) removeDrained(ctx context.Context, s *deploy.Service, d *kserveapi.PredictorSpec) error {
	_, err := b.patchService(ctx, s, func(isvc *kserveapi.InferenceService) error {
		isvc.Spec.Canary = slices.DeleteFunc(isvc.Spec.Canary, func(e kserveapi.CanarySpec) bool {
			return e.Predictor.Name == d.Name && e.TrafficPercent == 0 && modelURI(e.Predictor) == modelURI(*d) &&
				e.Predictor.Annotations[ServingSpecAnnotation] == d.Annotations[ServingSpecAnnotation]
		})
		return nil
	})
	return err
}

// waitPromoted waits until KServe serves the service from the promoted predictor: Ready, its
// address on the challenger's Service.
func (b *Backend) waitPromoted(ctx context.Context, s *deploy.Service, c deploy.Challenger) error {
	want := predictorServiceName(s.Name, c.Name) + "."
	return kubewatch.Follow(ctx, b.config, b.scheme, kubewatch.Informers{
		Namespace: s.Namespace,
		ByObject: map[client.Object]cache.ByObject{
			&kserveapi.InferenceService{}: {Field: fields.OneTermEqualSelector("metadata.name", s.Name)},
		},
		What:  fmt.Sprintf("InferenceService %s/%s", s.Namespace, s.Name),
		Needs: "inferenceservices",
	}, func(ctx context.Context, r client.Reader) (bool, error) {
		var isvc kserveapi.InferenceService
		if err := r.Get(ctx, client.ObjectKey{Namespace: s.Namespace, Name: s.Name}, &isvc); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		a := isvc.Status.Address
		return isvc.Status.IsReady() && a != nil && strings.Contains(a.URL, want), nil
	})
}

// Reject removes challenger c from the InferenceService's canaries (KServe deletes its
// Deployment and Service); nothing else changes. A challenger already gone is not an error.
func (b *Backend) Reject(ctx context.Context, s *deploy.Service, c deploy.Challenger) error {
	errGone := errors.New("gone")
	_, err := b.patchService(ctx, s, func(isvc *kserveapi.InferenceService) error {
		i := slices.IndexFunc(isvc.Spec.Canary, func(e kserveapi.CanarySpec) bool { return e.Predictor.Name == c.Name })
		if i < 0 {
			return errGone
		}
		isvc.Spec.Canary = slices.Delete(isvc.Spec.Canary, i, i+1)
		return nil
	})
	if errors.Is(err, errGone) {
		return nil
	}
	return err
}

// Rollback serves the model the InferenceService's last promotion replaced (its predictor's
// PreviousModelURIAnnotation) again, by the same way a challenger is promoted: the previous model
// is deployed beside the current one as a canary with the stable predictor's spec, waited for
// until it answers, and promoted, so the service answers throughout. The model it replaces
// becomes the previous one in turn (a second rollback undoes the first).
func (b *Backend) Rollback(ctx context.Context, namespace, name string, progress func(string)) (*deploy.Endpoint, string, error) {
	var isvc kserveapi.InferenceService
	if err := b.client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &isvc); err != nil {
		return nil, "", fmt.Errorf("read InferenceService %s/%s: %w", namespace, name, err)
	}
	current := modelURI(isvc.Spec.Predictor)
	previous := isvc.Spec.Predictor.Annotations[PreviousModelURIAnnotation]
	if previous == "" {
		return nil, "", fmt.Errorf("InferenceService %s/%s records no previous model (annotation %s on spec.predictor): no promotion replaced one", namespace, name, PreviousModelURIAnnotation)
	}
	if previous == current {
		return nil, "", fmt.Errorf("InferenceService %s/%s already serves %s", namespace, name, previous)
	}
	s := &deploy.Service{Name: name, Namespace: namespace, ModelURI: previous}
	if m := isvc.Spec.Predictor.Model; m != nil && m.ProtocolVersion != nil {
		s.ProtocolVersion = *m.ProtocolVersion
	}
	c := deploy.Challenger{Name: deploy.ChallengerName(name, previous, isvc.Spec.Predictor.Name), Champion: current}
	p := isvc.Spec.Predictor.DeepCopy()
	one := int32(1)
	p.Name, p.MinReplicas, p.MaxReplicas = c.Name, &one, 0
	p.Model.StorageURI = &previous
	for _, k := range []string{ModelSHA256Annotation, RunIDAnnotation} {
		delete(p.Annotations, k)
	}
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	p.Annotations[ModelURIAnnotation], p.Annotations[PreviousModelURIAnnotation] = previous, current
	// A digest of its own, by which its pods are told from the current ones.
	delete(p.Annotations, ServingSpecAnnotation)
	js, err := json.Marshal(p)
	if err != nil {
		return nil, "", err
	}
	sum := sha256.Sum256(js)
	p.Annotations[ServingSpecAnnotation] = hex.EncodeToString(sum[:8])
	progress(fmt.Sprintf("rolling %s/%s back from %s to %s: deploying it beside as %s", namespace, name, current, previous, c.Name))
	if err := b.addCanary(ctx, s, c, p); err != nil {
		return nil, "", err
	}
	ep, _, err := b.WaitChallenger(ctx, s, c, progress)
	if err != nil {
		return nil, "", err
	}
	if err := b.Promote(ctx, s, c); err != nil {
		return nil, "", err
	}
	progress(fmt.Sprintf("%s/%s serves %s again; %s is recorded as the previous model", namespace, name, previous, current))
	return ep, previous, nil
}

// kserveConfigNamespaces are where KServe's inferenceservice-config lives: KServe's own install,
// and Kubeflow's manifests.
var kserveConfigNamespaces = []string{"kserve", "kubeflow"}

// SplitsTraffic reads KServe's ingress configuration: a raw deployment's canary gets its share
// of the traffic only through Gateway API routes (ingress.enableGatewayApi); KServe's Services
// send none to it.
func (b *Backend) SplitsTraffic(ctx context.Context, s *deploy.Service) (bool, string) {
	var errs []string
	for _, ns := range kserveConfigNamespaces {
		var cm corev1.ConfigMap
		err := b.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "inferenceservice-config"}, &cm)
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s/inferenceservice-config: %v", ns, err))
			continue
		}
		var ingress struct {
			EnableGatewayAPI bool `json:"enableGatewayApi"`
		}
		if err := json.Unmarshal([]byte(cm.Data["ingress"]), &ingress); err != nil {
			return false, fmt.Sprintf("KServe's %s/inferenceservice-config has no readable ingress settings (%v)", ns, err)
		}
		if !ingress.EnableGatewayAPI {
			return false, fmt.Sprintf("KServe's ingress (%s/inferenceservice-config) does not use the Gateway API (enableGatewayApi false), and without HTTPRoute weights a canary gets no traffic", ns)
		}
		return true, ""
	}
	return false, "KServe's configuration could not be read to tell whether it splits traffic (" + strings.Join(errs, "; ") + ")"
}
