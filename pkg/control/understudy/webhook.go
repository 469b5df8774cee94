package understudy

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/control/config"
	"github.com/ballastk8s/ballast/pkg/control/events"
	"github.com/ballastk8s/ballast/pkg/control/understudy/doom"
)

// Evictions is the validating webhook on pods/eviction CREATE (SPEC §15.4 step 2). Every
// replica serves it from its own caches.
type Evictions struct {
	clock   clock.PassiveClock
	reader  client.Reader // the Understudy cache
	client  client.Client // writes status.blockedSince once per surge
	index   *Index
	state   *config.State
	metrics *Metrics
	events  *events.Recorder
	log     logr.Logger
	opts    Options
	seen    firstSeen // when this replica first held each pod's eviction
}

// NewEvictions returns the eviction webhook handler.
func NewEvictions(clk clock.PassiveClock, reader client.Reader, c client.Client, idx *Index, state *config.State, m *Metrics,
	ev *events.Recorder, log logr.Logger, o Options) *Evictions {
	return &Evictions{clock: clk, reader: reader, client: c, index: idx, state: state, metrics: m, events: ev,
		log: log.WithValues("webhook", "eviction"), opts: o}
}

// Decision is the answer for one eviction.
type Decision struct {
	Held       bool
	Understudy types.NamespacedName // zero for unprotected pods
	Reason     string               // what the hold waits for
	first      bool                 // the first hold of this surge: record blockedSince
}

// Handle implements admission.Handler. The review's body is not authenticated (anyone who
// reaches the port can send one), so it only ever answers and, for a plausible eviction,
// records blockedSince; what that may start is bounded in the controller (bounds.go).
func (e *Evictions) Handle(ctx context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Create || req.SubResource != "eviction" || req.Resource.Resource != "pods" || req.Resource.Group != "" {
		e.log.V(1).Info("not a pod eviction review: allowed without effect", "operation", req.Operation,
			"resource", req.Resource.Resource, "subResource", req.SubResource)
		return admission.Allowed("")
	}
	// A dry-run eviction gets the real answer but is no doom signal; nor is a review
	// without the requesting user the API server always fills in.
	record := (req.DryRun == nil || !*req.DryRun) && req.UserInfo.Username != ""
	d, err := e.decide(ctx, req.Namespace, req.Name, record)
	if err != nil {
		e.log.Error(err, "deciding an eviction: allowing it", "pod", req.Namespace+"/"+req.Name)
		return admission.Allowed("")
	}
	if !d.Held {
		return admission.Allowed("")
	}
	return admission.Response{AdmissionResponse: admissionResponse(d)}
}

// Message is the 429 text (SPEC §15.4 step 2).
func (d Decision) Message() string {
	return fmt.Sprintf("held by Understudy %s/%s: waiting for a ready stand-in (%s)", d.Understudy.Namespace, d.Understudy.Name, d.Reason)
}

// Decide answers the eviction of pod ns/name. For a pod no Understudy covers it reads
// only in-memory maps and the pod cache.
func (e *Evictions) Decide(ctx context.Context, ns, name string) (Decision, error) {
	return e.decide(ctx, ns, name, true)
}

// decide is Decide; record false (a dry-run eviction) skips the blockedSince write.
func (e *Evictions) decide(ctx context.Context, ns, name string, record bool) (Decision, error) {
	if ns == e.opts.OperatorNamespace || !e.index.Guards(ns) {
		return Decision{}, nil
	}
	pod := &corev1.Pod{}
	if err := e.reader.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, pod); err != nil {
		if apierrors.IsNotFound(err) {
			return Decision{}, nil
		}
		return Decision{}, err
	}
	dep := DeploymentOf(pod)
	if dep == "" {
		return Decision{}, nil
	}
	key, ok := e.index.Owner(types.NamespacedName{Namespace: ns, Name: dep})
	if !ok {
		return Decision{}, nil
	}
	e.metrics.Attempts.WithLabelValues(key.Namespace, key.Name).Inc()
	d, err := e.decideProtected(ctx, key, pod)
	if err != nil || !d.Held {
		return d, err
	}
	e.metrics.EvictionsHeld.WithLabelValues(key.Namespace, key.Name).Inc()
	if d.first && record {
		e.markBlocked(ctx, key, pod.Name, d.Reason)
	}
	return d, nil
}

func (e *Evictions) decideProtected(ctx context.Context, key types.NamespacedName, pod *corev1.Pod) (Decision, error) {
	allow := Decision{Understudy: key}
	if e.state.Get().Active() || pod.DeletionTimestamp != nil {
		return allow, nil
	}
	u := &ballastv1.Understudy{}
	if err := e.reader.Get(ctx, key, u); err != nil {
		if apierrors.IsNotFound(err) {
			return allow, nil
		}
		return allow, err
	}
	st := u.Status
	switch st.Phase {
	case ballastv1.UnderstudyIdle, ballastv1.UnderstudySurging:
	default: // not yet reconciled, Unsupported, Releasing, Relaxed
		return allow, nil
	}
	if ready := findCond(st.Conditions, ballastv1.ConditionReady); st.Phase == ballastv1.UnderstudyIdle && ready != nil && ready.Reason == ReasonRollingOut {
		return allow, nil
	}
	class, nodeDoomed := doom.Voluntary, false
	n := &corev1.Node{}
	if err := e.reader.Get(ctx, types.NamespacedName{Name: pod.Spec.NodeName}, n); err == nil {
		if s, ok := doom.Merge(doom.FromNode(n, e.opts.Keys)); ok {
			class, nodeDoomed = s.Class, true
		}
	}
	if !doom.Held(ballastv1.UnderstudyHoldMode(u.Spec), class) {
		return allow, nil
	}
	now := e.clock.Now()
	// An eviction alone (no doom signal on the node) may start one surge per
	// EvictionSurgeInterval; the ones in between are not held (nothing would replace the pod).
	if !nodeDoomed && st.OriginalReplicas == nil && st.BlockedSince == nil && evictionSurgeLimited(&st, now) {
		return allow, nil
	}
	// Bounded without the leader: a hold never outlives readinessDeadlineSeconds clamped
	// to --understudy-max-hold, counted from the surge, the first recorded hold, and the
	// first hold this replica saw (which needs no status write and no leader).
	limit := e.opts.holdLimit(u.Spec)
	first, ok := e.seen.since(pod.Namespace+"/"+pod.Name+"/"+string(pod.UID), now, limit)
	if !ok || now.Sub(first) >= limit {
		return allow, nil
	}
	for _, t := range []*metav1.Time{st.BlockedSince, st.LastSurgeTime} {
		if t != nil && st.Phase == ballastv1.UnderstudySurging && now.Sub(t.Time) >= limit {
			return allow, nil
		}
	}
	if st.BlockedSince != nil && now.Sub(st.BlockedSince.Time) >= limit {
		return allow, nil
	}
	reason := "surge not started yet"
	if st.Phase == ballastv1.UnderstudySurging {
		reason = "stand-in not Ready yet"
	}
	if st.DoomedPod != "" && st.DoomedPod != pod.Name {
		reason = "pod " + st.DoomedPod + " is being replaced first"
	}
	return Decision{Held: true, Understudy: key, Reason: reason, first: st.BlockedSince == nil}, nil
}

// markBlocked records the first held eviction of a surge in status.blockedSince (which
// also tells the leader that an eviction is a doom signal) and emits EvictionHeld.
func (e *Evictions) markBlocked(ctx context.Context, key types.NamespacedName, pod, reason string) {
	u := &ballastv1.Understudy{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
	patch := fmt.Sprintf(`{"status":{"blockedSince":%q}}`, e.clock.Now().UTC().Format(time.RFC3339))
	if err := e.client.Status().Patch(ctx, u, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		e.log.Error(err, "recording blockedSince", "understudy", key.String())
		return
	}
	e.log.Info("eviction held", "understudy", key.String(), "pod", pod, "reason", reason)
	e.events.Publish(heldEvent(u, pod, reason))
}

func findCond(cs []metav1.Condition, typ string) *metav1.Condition {
	for i := range cs {
		if cs[i].Type == typ {
			return &cs[i]
		}
	}
	return nil
}

// admissionResponse is a 429 denial the eviction API passes on to the evictor.
func admissionResponse(d Decision) admissionv1.AdmissionResponse {
	return admissionv1.AdmissionResponse{Allowed: false, Result: &metav1.Status{Status: metav1.StatusFailure,
		Code: http.StatusTooManyRequests, Reason: metav1.StatusReasonTooManyRequests, Message: d.Message()}}
}
