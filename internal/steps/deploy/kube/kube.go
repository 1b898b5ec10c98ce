package kube

import (
	"context"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gangboost/gangboost/internal/kube/kserveapi"
	"github.com/gangboost/gangboost/internal/kube/kubecfg"
	"github.com/gangboost/gangboost/internal/kube/kubewatch"
	"github.com/gangboost/gangboost/internal/steps/deploy"
)

// Backend serves models as InferenceServices on a cluster.
type Backend struct {
	config *rest.Config
	scheme *runtime.Scheme
	client client.Client
	// EventLimit is how many recent events Describe shows.
	EventLimit int
	// HTTPClient makes the V1/V2 REST calls that check the Service answers; nil is
	// http.DefaultClient (which follows HTTP_PROXY).
	HTTPClient *http.Client
	// PromotionDrain is how long a promotion keeps the replaced champion answering at its old
	// address after KServe moved the service's address to the promoted model (see Promote).
	PromotionDrain time.Duration

	mu sync.Mutex
	// applied is the resourceVersion an Apply left each service at, and what it changed.
	applied map[string]appliedVersion
}

type appliedVersion struct {
	resourceVersion string
	changed         bool
	// specChanged: the apply changed the spec (metadata.generation), not only metadata.
	specChanged bool
	// servingSpec is the ServingSpecAnnotation the pods of the applied version carry.
	servingSpec string
	// previous is the model the service served before, "" for a new service; previousSHA its
	// sha256 as recorded on the service.
	previous, previousSHA string
}

var _ deploy.Backend = (*Backend)(nil)

// Scheme knows the types the backend reads and writes.
func Scheme() (*runtime.Scheme, error) {
	return kubecfg.Scheme(kserveapi.AddToScheme)
}

// New returns a backend talking to the cluster of cfg.
func New(cfg *rest.Config) (*Backend, error) {
	s, err := Scheme()
	if err != nil {
		return nil, err
	}
	c, err := kubecfg.Client(cfg, s)
	if err != nil {
		return nil, err
	}
	return &Backend{config: cfg, scheme: s, client: c, EventLimit: 10, PromotionDrain: DefaultPromotionDrain}, nil
}

func key(s *deploy.Service) string { return s.Namespace + "/" + s.Name }

// predictorServiceName is KServe's name of a predictor's Deployment and Service:
// {isvc}-predictor, or {isvc}-{predictor}-predictor for a named one (a canary, or a promoted
// canary).
func predictorServiceName(isvc, predictor string) string {
	if predictor == "" {
		return isvc + "-predictor"
	}
	return isvc + "-" + predictor + "-predictor"
}

// Apply creates the InferenceService or updates the one of that name by server-side apply with
// the component's field manager: a new model_uri rolls the predictor out to the new model.
// KServe copies the InferenceService's annotations into the predictor's pod template, so an
// annotation that changed would restart the pods: the run annotation keeps naming the run that
// deployed the model while the model (its URI and its bytes' sha256) stays the same. New bytes
// under the same URI (a version overwritten on purpose) change the sha256 annotation, and the
// pods roll onto them.
func (b *Backend) Apply(ctx context.Context, s *deploy.Service) error {
	var before kserveapi.InferenceService
	previous, previousSHA, beforeGen := "", "", int64(0)
	desired := *s
	switch err := b.client.Get(ctx, client.ObjectKey{Namespace: s.Namespace, Name: s.Name}, &before); {
	case err == nil:
		previous, beforeGen = storageURI(&before), before.Generation
		pa := before.Spec.Predictor.Annotations
		previousSHA = pa[ModelSHA256Annotation]
		if run, ok := pa[RunIDAnnotation]; ok && pa[ModelURIAnnotation] == s.ModelURI && previousSHA == s.ModelSHA256 {
			desired.RunID = run
		}
	case apierrors.IsNotFound(err):
	case meta.IsNoMatchError(err):
		return fmt.Errorf("read InferenceService %s/%s: the cluster does not know serving.kserve.io/v1beta1 InferenceService (is KServe installed?): %w", s.Namespace, s.Name, err)
	default:
		return fmt.Errorf("read InferenceService %s/%s: %w", s.Namespace, s.Name, err)
	}
	isvc, err := InferenceService(&desired)
	if err != nil {
		return fmt.Errorf("build InferenceService %s: %w", s.Name, err)
	}
	isvc.Spec.Predictor.Name = stablePredictorName(s, &before)
	u, err := ApplyConfiguration(isvc)
	if err != nil {
		return fmt.Errorf("build InferenceService %s: %w", s.Name, err)
	}
	err = b.client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(FieldManager), client.ForceOwnership)
	if err != nil && isvc.Spec.Predictor.Name != "" && predictorNameUnknown(err) {
		// KServe before v0.20 (Kubeflow 1.11 ships v0.15) has no named predictors: its schema
		// refuses the field. The predictor stays unnamed ({isvc}-predictor), which there moves
		// with no promotion (it has no canaries to promote).
		isvc.Spec.Predictor.Name = ""
		if u, err = ApplyConfiguration(isvc); err != nil {
			return fmt.Errorf("build InferenceService %s: %w", s.Name, err)
		}
		err = b.client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(FieldManager), client.ForceOwnership)
	}
	if err != nil {
		return fmt.Errorf("apply InferenceService %s/%s: %w", s.Namespace, s.Name, err)
	}
	b.mu.Lock()
	if b.applied == nil {
		b.applied = map[string]appliedVersion{}
	}
	b.applied[key(s)] = appliedVersion{resourceVersion: u.GetResourceVersion(), changed: applyChanged(&before, u),
		specChanged: u.GetGeneration() != beforeGen, previous: previous, previousSHA: previousSHA, servingSpec: isvc.Spec.Predictor.Annotations[ServingSpecAnnotation]}
	b.mu.Unlock()
	return nil
}

// applyChanged reports whether an apply changed the service it read before as before into
// after: its spec (metadata.generation), labels or annotations, or created it. Not whether its
// resourceVersion moved: KServe writes the service's status whenever a condition changes, a
// write that may fall between the read and the apply, and an apply that changed nothing then
// returns the newer resourceVersion.
func applyChanged(before *kserveapi.InferenceService, after metav1.Object) bool {
	return before.ResourceVersion == "" || after.GetGeneration() != before.Generation ||
		!maps.Equal(after.GetLabels(), before.Labels) || !maps.Equal(after.GetAnnotations(), before.Annotations)
}

// predictorNameUnknown reports whether the API server refused an apply because its
// InferenceService schema has no spec.predictor.name (KServe before v0.20).
func predictorNameUnknown(err error) bool {
	return strings.Contains(err.Error(), ".spec.predictor.name: field not declared in schema")
}

// stablePredictorName is the name of s's stable predictor: the one it has (a promotion gave
// it the promoted challenger's), or for a new service its model's challenger name, as a
// promotion would have named it. A named stable predictor is what lets a promotion keep the
// replaced champion answering at its address until the service's address moved (Promote):
// KServe's canaries must be named. A service name too long for a named predictor leaves it
// unnamed ({isvc}-predictor).
func stablePredictorName(s *deploy.Service, existing *kserveapi.InferenceService) string {
	if existing.ResourceVersion != "" {
		return existing.Spec.Predictor.Name
	}
	if len(s.Name) > deploy.MaxChallengedName {
		return ""
	}
	return deploy.ChallengerName(s.Name, s.ModelURI)
}

// Wait follows the InferenceService, its predictor pods and the namespace's events through
// informers until the service is Ready and serves the applied model: at least minReplicas
// predictor pods with its storageUri and resources are ready, and no pod of an earlier version
// is left. Then it waits until the model answers ready through the predictor Service, the
// address it returns (waitAnswers). It gives up at once when KServe reports the new spec invalid,
// its model failing to load or its Serverless mode impossible here, or a pod of it crash-looping.
func (b *Backend) Wait(ctx context.Context, s *deploy.Service, progress func(string)) (*deploy.Endpoint, error) {
	var w *watcher
	var ep *deploy.Endpoint
	err := kubewatch.Follow(ctx, b.config, b.scheme, kubewatch.Informers{
		Namespace: s.Namespace,
		ByObject: map[client.Object]cache.ByObject{
			&kserveapi.InferenceService{}: {Field: fields.OneTermEqualSelector("metadata.name", s.Name)},
			&corev1.Pod{}:                 {Label: labels.SelectorFromSet(labels.Set{PodLabel: s.Name})},
			&corev1.Event{}:               {},
		},
		What:  fmt.Sprintf("InferenceService %s/%s", s.Namespace, s.Name),
		Needs: "inferenceservices, pods and events",
	}, func(ctx context.Context, r client.Reader) (bool, error) {
		if w == nil {
			w = b.newWatcher(s, r, progress)
		}
		ready, err := w.observe(ctx)
		if err != nil || !ready {
			return false, err
		}
		ep, err = b.endpoint(ctx, w.isvc)
		return true, err
	})
	if err != nil {
		return nil, err
	}
	if err := b.waitAnswers(ctx, s, ep, progress); err != nil {
		return nil, err
	}
	return ep, nil
}

// newWatcher says what the apply did, once the informers have synced, and starts following
// the service from there.
func (b *Backend) newWatcher(s *deploy.Service, r client.Reader, progress func(string)) *watcher {
	b.mu.Lock()
	applied := b.applied[key(s)]
	b.mu.Unlock()
	switch {
	case applied.previous == "":
		progress(fmt.Sprintf("created InferenceService %s/%s", s.Namespace, s.Name))
	case applied.previous != s.ModelURI:
		progress(fmt.Sprintf("rolling InferenceService %s/%s out from %s to %s", s.Namespace, s.Name, applied.previous, s.ModelURI))
	case applied.previousSHA != s.ModelSHA256 && s.ModelSHA256 != "":
		progress(fmt.Sprintf("rolling InferenceService %s/%s out to the new bytes of %s (model sha256 %.12s, was %.12s)", s.Namespace, s.Name, s.ModelURI, s.ModelSHA256, orNone(applied.previousSHA)))
	case applied.changed:
		progress(fmt.Sprintf("updated InferenceService %s/%s", s.Namespace, s.Name))
	default:
		progress(fmt.Sprintf("InferenceService %s/%s already has this spec", s.Namespace, s.Name))
	}
	return &watcher{s: s, r: r, progress: progress, applied: applied, since: time.Now().Add(-5 * time.Second),
		conditions: map[string]string{}, seenEvents: map[string]bool{}}
}

// watcher turns what the informers hold into progress lines, once per change.
type watcher struct {
	s        *deploy.Service
	r        client.Reader
	progress func(string)
	applied  appliedVersion
	since    time.Time

	seen bool
	// reconciled is set once KServe has written the service's status after an apply that
	// changed its spec (at once when it did not): only then may a failure in the status be
	// taken as the applied spec's. KServe writes its status only when it changes, so being
	// done does not wait for this: it rests on the pods.
	reconciled bool
	isvc       *kserveapi.InferenceService
	conditions map[string]string
	lastModel  string
	lastPods   string
	seenEvents map[string]bool
}

func (w *watcher) observe(ctx context.Context) (bool, error) {
	s := w.s
	var isvc kserveapi.InferenceService
	switch err := w.r.Get(ctx, client.ObjectKey{Namespace: s.Namespace, Name: s.Name}, &isvc); {
	case apierrors.IsNotFound(err):
		if w.seen {
			return false, fmt.Errorf("InferenceService %s/%s was deleted while the step waited for it", s.Namespace, s.Name)
		}
		return false, nil
	case err != nil:
		return false, nil
	}
	w.seen, w.isvc = true, &isvc
	if !w.applied.specChanged || isvc.ResourceVersion != w.applied.resourceVersion {
		w.reconciled = true
	}

	// Conditions, as they change.
	conds := append([]kserveapi.Condition(nil), isvc.Status.Conditions...)
	sort.Slice(conds, func(i, j int) bool { return conds[i].Type < conds[j].Type })
	for _, c := range conds {
		line := conditionLine(c.Type, c.Status, c.Reason, c.Message)
		if w.conditions[c.Type] != line {
			w.conditions[c.Type] = line
			w.progress("condition " + line)
		}
	}
	if m := modelStatus(&isvc.Status.ModelStatus); m != w.lastModel {
		w.lastModel = m
		if m != "" {
			w.progress("model " + m)
		}
	}

	// Pods of the applied model, and of earlier versions.
	var pods corev1.PodList
	_ = w.r.List(ctx, &pods, client.InNamespace(s.Namespace), client.MatchingLabels{PodLabel: s.Name})
	current, ready, older := 0, 0, 0
	var crash string
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		if !w.servesApplied(p) {
			older++
			continue
		}
		current++
		if podReady(p) {
			ready++
		}
		if why := crashLooping(p); why != "" && crash == "" {
			crash = fmt.Sprintf("pod %s: %s", p.Name, why)
		}
	}
	line := fmt.Sprintf("pods ready %d/%d", ready, s.MinReplicas)
	if current > int(s.MinReplicas) {
		line += fmt.Sprintf(" (%d created)", current)
	}
	if older > 0 {
		line += fmt.Sprintf(", %d of the previous version still running", older)
	}
	if line != w.lastPods {
		w.lastPods = line
		w.progress(line)
	}

	// Warnings about the service, its Deployment and pods, once each.
	var events corev1.EventList
	_ = w.r.List(ctx, &events, client.InNamespace(s.Namespace))
	var rejected error
	for _, ev := range relevantEvents(events.Items, s.Name) {
		if ev.Type != corev1.EventTypeWarning || kubewatch.EventTime(&ev).Before(w.since) {
			continue
		}
		if err := serverlessRejection(&ev, &isvc); err != nil && rejected == nil {
			rejected = err
		}
		k := string(ev.UID) + "/" + strconv.Itoa(int(ev.Count))
		if w.seenEvents[k] {
			continue
		}
		w.seenEvents[k] = true
		w.progress(fmt.Sprintf("event %s %s/%s: %s", ev.Reason, ev.InvolvedObject.Kind, ev.InvolvedObject.Name, strings.TrimSpace(ev.Message)))
	}
	if rejected != nil {
		return false, rejected
	}

	if w.reconciled {
		switch ms := isvc.Status.ModelStatus; ms.TransitionStatus {
		case kserveapi.InvalidSpec:
			return false, fmt.Errorf("KServe rejects the predictor: %s", failureInfo(ms.LastFailureInfo))
		case kserveapi.BlockedByFailedLoad:
			if current > 0 && older == 0 {
				return false, fmt.Errorf("the model failed to load: %s", failureInfo(ms.LastFailureInfo))
			}
		}
	}
	if crash != "" {
		return false, fmt.Errorf("the runtime keeps failing: %s", crash)
	}
	// A Ready condition left from the previous spec does not end the wait: the pods must be the
	// applied version's, and the previous version's gone.
	done := isvc.Status.IsReady() && isvc.Status.Address != nil && isvc.Status.Address.URL != "" &&
		ready >= int(s.MinReplicas) && older == 0
	return done, nil
}

// serverlessModeRejected is the reason of KServe's warning that an InferenceService's deployment
// mode resolved to Serverless (Knative) on a cluster without Knative Serving.
const serverlessModeRejected = "ServerlessModeRejected"

// serverlessRejection is the step's error for KServe's ServerlessModeRejected warning about isvc
// (this object, not an earlier one of its name), or nil for any other event. KServe ends that
// reconcile as a terminal error and does not retry it, so nothing would change however long the
// step waited: it says what to change instead.
func serverlessRejection(ev *corev1.Event, isvc *kserveapi.InferenceService) error {
	if ev.Reason != serverlessModeRejected || ev.InvolvedObject.Kind != "InferenceService" || ev.InvolvedObject.UID != isvc.UID {
		return nil
	}
	return fmt.Errorf("KServe will not deploy InferenceService %s/%s: its deployment mode is Serverless (Knative) and this cluster has no Knative Serving (event %s: %s); set deployment_mode to RawDeployment (Standard on KServe 0.19 and later), or install Knative Serving",
		isvc.Namespace, isvc.Name, ev.Reason, strings.TrimSpace(ev.Message))
}

// servesApplied reports whether a predictor pod is of the applied version: KServe copied the
// InferenceService's ServingSpecAnnotation into its template.
func (w *watcher) servesApplied(p *corev1.Pod) bool {
	return p.Annotations[ServingSpecAnnotation] == w.applied.servingSpec
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// crashLooping describes a serving container in CrashLoopBackOff: the runtime exits at start
// (the last line of its termination message says why), which no waiting will mend.
func crashLooping(p *corev1.Pod) string {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name != ContainerName || cs.State.Waiting == nil || cs.State.Waiting.Reason != "CrashLoopBackOff" {
			continue
		}
		msg := fmt.Sprintf("container %s restarting with back-off (CrashLoopBackOff, %d restarts)", cs.Name, cs.RestartCount)
		if t := cs.LastTerminationState.Terminated; t != nil {
			msg += fmt.Sprintf(", last exit %d (%s)", t.ExitCode, t.Reason)
			if last := lastLine(t.Message); last != "" {
				msg += ": " + last
			}
		}
		return msg
	}
	return ""
}

// lastLine is the last non-empty line of a termination message (with FallbackToLogsOnError, the
// log's tail, whose last line is the runtime's reason for exiting).
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// modelStatus is KServe's status.modelStatus in one line.
func modelStatus(ms *kserveapi.ModelStatus) string {
	var parts []string
	if ms.TransitionStatus != "" {
		parts = append(parts, "transitionStatus "+string(ms.TransitionStatus))
	}
	if st := ms.ModelRevisionStates; st != nil {
		parts = append(parts, fmt.Sprintf("activeModelState %s, targetModelState %s", orNone(string(st.ActiveModelState)), orNone(string(st.TargetModelState))))
	}
	if cp := ms.ModelCopies; cp != nil {
		parts = append(parts, fmt.Sprintf("copies %d (failed %d)", cp.TotalCopies, cp.FailedCopies))
	}
	if ms.LastFailureInfo != nil {
		parts = append(parts, "lastFailureInfo "+failureInfo(ms.LastFailureInfo))
	}
	return strings.Join(parts, ", ")
}

// failureInfo is KServe's lastFailureInfo: for a runtime that exited, its termination message.
func failureInfo(fi *kserveapi.FailureInfo) string {
	if fi == nil {
		return "no failure reported"
	}
	msg := string(fi.Reason)
	if fi.Location != "" {
		msg += " at " + fi.Location
	}
	if fi.ExitCode != 0 {
		msg += fmt.Sprintf(" (exit code %d)", fi.ExitCode)
	}
	if fi.Message != "" {
		msg += ": " + strings.TrimSpace(fi.Message)
	}
	return msg
}

// endpoint is a Ready service's address: the in-cluster URL (status.address.url), the external
// one (status.url), and the predictor Service's gRPC port when the runtime declares one (KServe
// marks a port named grpc or h2c with appProtocol kubernetes.io/h2c).
func (b *Backend) endpoint(ctx context.Context, isvc *kserveapi.InferenceService) (*deploy.Endpoint, error) {
	ep := &deploy.Endpoint{URL: isvc.Status.Address.URL, ExternalURL: isvc.Status.URL, ModelName: isvc.Name}
	addr, err := url.Parse(ep.URL)
	if err != nil {
		return nil, fmt.Errorf("InferenceService %s is Ready but its status.address.url %q is not a URL: %w", isvc.Name, ep.URL, err)
	}
	var svc corev1.Service
	name := predictorServiceName(isvc.Name, isvc.Spec.Predictor.Name)
	if err := b.client.Get(ctx, client.ObjectKey{Namespace: isvc.Namespace, Name: name}, &svc); err != nil {
		return nil, fmt.Errorf("InferenceService %s is Ready but its predictor Service %s cannot be read (may the step's service account get services?): %w", isvc.Name, name, err)
	}
	host := addr.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	ep.GRPCAddress = grpcAddress(&svc, host)
	return ep, nil
}

// grpcAddress is host with the Service's gRPC port (appProtocol kubernetes.io/h2c, or a port
// named grpc or h2c), "" when it has none.
func grpcAddress(svc *corev1.Service, host string) string {
	for _, p := range svc.Spec.Ports {
		if (p.AppProtocol != nil && *p.AppProtocol == "kubernetes.io/h2c") || strings.Contains(p.Name, "grpc") || strings.Contains(p.Name, "h2c") {
			return net.JoinHostPort(host, strconv.Itoa(int(p.Port)))
		}
	}
	return ""
}

// Describe reads the service afresh and says why it is not ready: its conditions, KServe's model
// status (with the runtime's termination message), its pods' conditions and container states,
// and the recent events about them.
func (b *Backend) Describe(ctx context.Context, s *deploy.Service) string {
	var out strings.Builder
	var isvc kserveapi.InferenceService
	if err := b.client.Get(ctx, client.ObjectKey{Namespace: s.Namespace, Name: s.Name}, &isvc); err != nil {
		fmt.Fprintf(&out, "InferenceService %s/%s: %v\n", s.Namespace, s.Name, err)
	} else {
		fmt.Fprintf(&out, "InferenceService %s/%s (storageUri %s):\n", s.Namespace, s.Name, storageURI(&isvc))
		for _, c := range isvc.Status.Conditions {
			fmt.Fprintf(&out, "  condition %s\n", conditionLine(c.Type, c.Status, c.Reason, c.Message))
		}
		if m := modelStatus(&isvc.Status.ModelStatus); m != "" {
			fmt.Fprintf(&out, "  modelStatus: %s\n", m)
		}
	}
	var pods corev1.PodList
	if err := b.client.List(ctx, &pods, client.InNamespace(s.Namespace), client.MatchingLabels{PodLabel: s.Name}); err != nil {
		fmt.Fprintf(&out, "pods: %v\n", err)
	}
	if len(pods.Items) == 0 {
		out.WriteString("no predictor pods\n")
	}
	for i := range pods.Items {
		describePod(&out, &pods.Items[i])
	}
	var events corev1.EventList
	if err := b.client.List(ctx, &events, client.InNamespace(s.Namespace)); err != nil {
		fmt.Fprintf(&out, "events: %v\n", err)
	}
	rel := relevantEvents(events.Items, s.Name)
	if n := b.EventLimit; n > 0 && len(rel) > n {
		rel = rel[len(rel)-n:]
	}
	if len(rel) > 0 {
		out.WriteString("recent events:\n")
	}
	for _, ev := range rel {
		fmt.Fprintf(&out, "  %s %s %s %s/%s: %s", kubewatch.EventTime(&ev).UTC().Format("15:04:05"), ev.Type, ev.Reason,
			ev.InvolvedObject.Kind, ev.InvolvedObject.Name, strings.TrimSpace(ev.Message))
		if ev.Count > 1 {
			fmt.Fprintf(&out, " (x%d)", ev.Count)
		}
		out.WriteString("\n")
	}
	return out.String()
}

func storageURI(isvc *kserveapi.InferenceService) string {
	if u := modelURI(isvc.Spec.Predictor); u != "" {
		return u
	}
	return "-"
}

func describePod(out *strings.Builder, p *corev1.Pod) {
	fmt.Fprintf(out, "pod %s (model %s): phase %s, node %s\n", p.Name, orNone(p.Annotations[SourceURIAnnotation]), p.Status.Phase, orNone(p.Spec.NodeName))
	for _, c := range p.Status.Conditions {
		if c.Status == corev1.ConditionTrue {
			continue
		}
		fmt.Fprintf(out, "  %s\n", conditionLine(c.Type, c.Status, c.Reason, c.Message))
	}
	for _, cs := range append(append([]corev1.ContainerStatus(nil), p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		st := "running"
		switch {
		case cs.State.Waiting != nil:
			st = "waiting " + cs.State.Waiting.Reason
			if cs.State.Waiting.Message != "" {
				st += ": " + cs.State.Waiting.Message
			}
		case cs.State.Terminated != nil:
			st = fmt.Sprintf("terminated %s, exit %d", cs.State.Terminated.Reason, cs.State.Terminated.ExitCode)
			if cs.State.Terminated.Message != "" {
				st += ": " + strings.TrimSpace(cs.State.Terminated.Message)
			}
		}
		fmt.Fprintf(out, "  container %s: %s, ready %v, restarts %d", cs.Name, st, cs.Ready, cs.RestartCount)
		if t := cs.LastTerminationState.Terminated; t != nil {
			fmt.Fprintf(out, "; last exit %d (%s)", t.ExitCode, t.Reason)
			if t.Message != "" {
				fmt.Fprintf(out, ": %s", strings.TrimSpace(t.Message))
			}
		}
		out.WriteString("\n")
	}
}

// relevantEvents are the events that can say why the service is not ready, oldest first: every
// event of its predictor pods (scheduling, image, probes, restarts), and the warnings about the
// InferenceService and its predictor Deployment and ReplicaSets (all named <name>-predictor...).
// Left out: the Service, its endpoints and the autoscaler, and KServe's status writes that lost
// an optimistic-concurrency race (it retries them).
func relevantEvents(events []corev1.Event, name string) []corev1.Event {
	var rel []corev1.Event
	for _, ev := range events {
		n := ev.InvolvedObject.Name
		if n != name && !strings.HasPrefix(n, name+"-predictor") {
			continue
		}
		switch ev.InvolvedObject.Kind {
		case "Pod":
		case "InferenceService", "Deployment", "ReplicaSet":
			if ev.Type != corev1.EventTypeWarning || strings.Contains(ev.Message, "the object has been modified") {
				continue
			}
		default:
			continue
		}
		rel = append(rel, ev)
	}
	sort.SliceStable(rel, func(i, j int) bool { return kubewatch.EventTime(&rel[i]).Before(kubewatch.EventTime(&rel[j])) })
	return rel
}

// conditionLine is "Type=Status Reason: message", leaving out what is empty.
func conditionLine[T ~string, S ~string](t T, status S, reason, message string) string {
	line := fmt.Sprintf("%s=%s", t, status)
	reason, message = strings.TrimSpace(reason), strings.TrimSpace(message)
	switch {
	case reason != "" && message != "":
		line += " " + reason + ": " + message
	case reason != "" || message != "":
		line += " " + reason + message
	}
	return line
}

func orNone(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
