// Package webhook is Ballast's mutating admission webhook for pods (SPEC §7): it validates
// the mode label, stamps profile-ref and policy-ref on every enrolled pod, and in apply and
// resize mode writes the profile's recommendations through pkg/sizing. It answers from the
// manager's informer caches only: no store access and no API call on the admission path.
// It never denies for any reason but an invalid mode; every internal error admits the pod
// unchanged.
package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/go-logr/logr"
	"gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/control/bounds"
	"github.com/ballastk8s/ballast/pkg/control/config"
	"github.com/ballastk8s/ballast/pkg/control/events"
	"github.com/ballastk8s/ballast/pkg/control/hpa"
	"github.com/ballastk8s/ballast/pkg/control/metrics"
	"github.com/ballastk8s/ballast/pkg/control/resolve"
	"github.com/ballastk8s/ballast/pkg/sizing"
)

// Results of ballast_webhook_mutations_total (SPEC §7.2).
const (
	ResultKillSwitch   = "kill_switch"
	ResultDenied       = "denied"
	ResultSkipped      = "skipped"
	ResultNotAvailable = "not_available"
	ResultDryRun       = "dry_run"
	ResultMutated      = "mutated"
)

// Handler decides one admission.
type Handler struct {
	reader   client.Reader // the manager's cache
	state    *config.State
	resolver *resolve.Resolver
	bounds   *bounds.Source
	metrics  *Metrics
	decoder  admission.Decoder
	dryRun   bool // --dry-run apply or all
	log      logr.Logger
	// hpa finds the HPAs of a pod's owner (behaviors.hpa); a nil Reader skips the guard.
	hpa    hpa.Lookup
	scaler *hpa.Scaler
	events *events.Recorder
	// render is sizing.JSONPatch (a seam for the fail-open test of a rendering failure).
	render func(*corev1.Pod, sizing.Result, map[string]string) ([]sizing.Operation, error)
}

// New returns the handler. dryRun is true for --dry-run apply and all.
func New(reader client.Reader, scheme *runtime.Scheme, state *config.State, r *resolve.Resolver,
	m *Metrics, dryRun bool, log logr.Logger) *Handler {
	b := bounds.New(reader)
	if state != nil {
		b.Admin = bounds.FromState(state) // BallastConfig spec.bounds
	}
	return &Handler{reader: reader, state: state, resolver: r, metrics: m, bounds: b,
		decoder: admission.NewDecoder(scheme), dryRun: dryRun, log: log, render: sizing.JSONPatch}
}

// SetHPA turns on the behaviors.hpa guard: l reads the HPAs (from the cache), s patches
// them under scale-target off the admission path, ev reports HPAConflict on the profile.
func (h *Handler) SetHPA(l hpa.Lookup, s *hpa.Scaler, ev *events.Recorder) {
	h.hpa, h.scaler, h.events = l, s, ev
}

// Bounds is the handler's bounds source (the app lets it watch the Node informer).
func (h *Handler) Bounds() *bounds.Source { return h.bounds }

// Handle implements admission.Handler.
//
// Metric attributes are bounded whoever the caller is (SPEC §11.1): `namespace` is the
// request's namespace only when it exists (metrics.KnownNamespace; a forged AdmissionReview
// can name any), and `profile` only names a profile that exists in the cache, never the
// name computed from the labels of a pod no profile was made for (a dry-run create, a
// forged review, the first pod of a new identity).
func (h *Handler) Handle(ctx context.Context, req admission.Request) (resp admission.Response) {
	log := h.log.WithValues("namespace", req.Namespace, "pod", podName(req))
	nsLabel := ""
	defer func() {
		if r := recover(); r != nil { // a bug must never block a pod
			log.Error(fmt.Errorf("panic: %v", r), "admission handler panicked; admitting the pod unchanged")
			h.count(ResultNotAvailable, nsLabel)
			resp = admission.Allowed("ballast: internal error")
		}
	}()
	if req.Operation != admissionv1.Create {
		return admission.Allowed("")
	}
	pod := &corev1.Pod{}
	if err := h.decoder.Decode(req, pod); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	ns := req.Namespace
	nsLabel = metrics.KnownNamespace(ctx, h.reader, ns)
	// 2. The mode label must be on the ladder; this runs even under the kill switch.
	mode := pod.Labels[ballastv1.ModeLabel]
	if !ballastv1.ValidMode(mode) {
		h.count(ResultDenied, nsLabel)
		return admission.Denied(fmt.Sprintf("invalid Ballast %s label %q: must be one of measure, apply, resize",
			ballastv1.ModeLabel, mode))
	}
	snap := h.state.Get()
	// 3. Kill switch: admit unchanged, no annotation either.
	if snap.Active() {
		h.count(ResultKillSwitch, nsLabel)
		h.state.Suppress(log, snap, config.ActionAdmission, "kill switch active, admitting pod unchanged")
		return admission.Allowed("ballast: kill switch active")
	}
	// 5. Without BallastConfig no identity exists.
	if snap.Config == nil {
		h.count(ResultNotAvailable, nsLabel)
		return admission.Allowed("ballast: no BallastConfig")
	}
	b, err := h.resolver.Resolve(ctx, pod, ns, snap.Config.IdentityLabels)
	if err != nil {
		log.Error(err, "resolving pod; admitting unchanged")
		h.count(ResultNotAvailable, nsLabel)
		return admission.Allowed("ballast: caches unavailable")
	}
	log = log.WithValues("profile", b.ProfileName, "policy", b.PolicyRefAnnotation())
	bookkeeping := map[string]string{ballastv1.ProfileRefAnnotation: b.ProfileName}
	if ref := b.PolicyRefAnnotation(); ref != "" {
		bookkeeping[ballastv1.PolicyRefAnnotation] = ref
	}
	stampOnly := func(result string) admission.Response {
		return h.patch(pod, sizing.Result{}, bookkeeping, result, nsLabel, log)
	}
	// 4. measure: bookkeeping only.
	if mode == ballastv1.ModeMeasure {
		return stampOnly(ResultSkipped)
	}
	policyName := b.PolicyRefAnnotation()
	boost := b.Policy != nil && b.Policy.StartupBoost != nil
	// 6, 7. A profile that exists and is Sufficient. Without one nothing is sized, but a
	// policy's startup boost still applies to the pod's own requests.
	wp := &ballastv1.WorkloadProfile{}
	sized := false
	if err := h.reader.Get(ctx, client.ObjectKey{Name: b.ProfileName}, wp); err != nil {
		if !apierrors.IsNotFound(err) {
			log.Error(err, "reading profile from cache; admitting with bookkeeping only")
			return stampOnly(ResultNotAvailable)
		}
		// No profile: b.ProfileName is only what the caller's labels compute to.
		h.metrics.ApplySkipped.WithLabelValues("no_profile", "", nsLabel, "").Inc()
		if !boost {
			return stampOnly(ResultSkipped)
		}
	} else if wp.Status.State != ballastv1.StateSufficient || b.Policy == nil {
		h.metrics.ApplySkipped.WithLabelValues("not_ready", "", nsLabel, b.ProfileName).Inc()
		log.V(1).Info("profile not ready")
		if !boost {
			return stampOnly(ResultSkipped)
		}
	} else {
		sized = true
	}
	// The namespace's LimitRanges and quotas and the nodes bound the patch, so the API
	// server admits every pod it would have admitted unchanged (SPEC §7.5, bounds).
	objs, err := h.bounds.Read(ctx, ns)
	if err != nil {
		log.Error(err, "reading bounds from cache; admitting with bookkeeping only")
		return stampOnly(ResultNotAvailable)
	}
	params := objs.Params(sizing.ParamsFor(b.Policy))
	var result sizing.Result
	var guard sizing.HPAGuard
	// 8. Compute the changes.
	var recs sizing.Recommendations
	if sized {
		var problems []sizing.Problem
		recs, problems = sizing.ParseRecommendations(wp.Status.Containers)
		for _, p := range problems {
			log.V(1).Info("ignoring unparsable recommendation", "problem", fmt.Sprint(p))
		}
	}
	// behaviors.hpa: leave the requests an HPA scales on by utilization as written
	// (preserve), or size them and rescale the HPA (scale-target). Looked up for a boost
	// too: no boost moves a request an HPA reads.
	if h.hpa.Reader != nil && (sized || boost) {
		owners := sizing.OwnersOf(pod, b.Workload.Kind, b.Workload.Name)
		if recs, guard, err = h.hpa.Guard(ctx, b.Policy.HPA, ns, owners, recs); err != nil {
			log.Error(err, "reading horizontalpodautoscalers from cache; admitting with bookkeeping only")
			return stampOnly(ResultNotAvailable)
		}
		if v := guard.PreservedAnnotationValue(); v != "" {
			bookkeeping[ballastv1.PreservedByHPAAnnotation] = v
			log.Info("requests left as written for an HPA", "preserved", v)
			if wp.Name != "" { // no profile yet (a boost only): nothing to hang the event on
				h.events.Publish(events.Event{Object: wp, Type: corev1.EventTypeNormal, Reason: sizing.ReasonHPAConflict,
					Message: hpa.ConflictMessage(guard)})
			}
		}
	}
	if sized {
		result = sizing.Admission(pod, recs, params)
		for _, n := range result.Bounded {
			h.metrics.Bounded.WithLabelValues(n.Reason, string(n.Resource), policyName, nsLabel, b.ProfileName).Inc()
			log.Info("recommendation bounded", "reason", n.Reason, "container", n.Container, "resource", n.Resource,
				"field", n.Field, "from", n.From.String(n.Resource), "to", n.To.String(n.Resource), "held", n.Held, "bound", n.Why)
		}
		for _, n := range result.Runtimes {
			log.V(1).Info("runtime memory profile", "container", n.Container, "runtime", n.Floor.Runtime, "detail", n.String())
		}
		if result.Pod != nil {
			log.Info("sizing pod-level resources", "pod_resources", result.Pod.String(), "derived", strings.Join(result.Pod.Notes, "; "))
		}
		for _, c := range result.Clamps {
			h.metrics.Clamped.WithLabelValues(c.Container, string(c.Resource), policyName, nsLabel, metrics.PhaseAdmission, b.ProfileName).Inc()
			log.Info("recommended request clamped to its limit", "container", c.Container, "resource", c.Resource,
				"recommended", c.Recommended.String(c.Resource), "limit", c.Limit.String(c.Resource), "written", c.Written.String(c.Resource))
		}
	}
	if boost && guard.ScalesOn(corev1.ResourceCPU) {
		// An HPA reads cpu utilization: a boost would move its scale point for the
		// pod's start (and a scale-target rescale would follow the boosted request).
		h.metrics.StartupBoost.WithLabelValues(sizing.BoostHeld).Inc()
		log.Info("startup boost not applied", "outcome", sizing.BoostHeld, "message", "an HPA scales the owner on cpu utilization")
	} else if boost {
		result = h.startupBoost(pod, result, b.Policy.StartupBoost, params, objs, log)
	}
	if len(result.Changes) == 0 {
		if sized {
			reason := result.SkipReason
			if reason == "" {
				reason = sizing.ReasonNoChange
			}
			h.metrics.ApplySkipped.WithLabelValues(reason, policyName, nsLabel, b.ProfileName).Inc()
		}
		return stampOnly(ResultSkipped)
	}
	// 9. Dry run: log the would-be patch; bookkeeping is never dry-run.
	if h.dryRun {
		// The admission is a dry run whether or not the would-be patch renders: counted as
		// dry_run either way, and a failure to render it is logged instead of a blank patch.
		h.metrics.ApplySkipped.WithLabelValues("dry_run", policyName, nsLabel, b.ProfileName).Inc()
		would, err := h.wouldBe(pod, result)
		if err != nil {
			log.Error(err, "dry run: rendering the would-be patch; admitting with bookkeeping only",
				"dry_run", true, "action", "apply")
			return stampOnly(ResultDryRun)
		}
		log.Info("dry run: would size pod at admission", "dry_run", true, "action", "apply", "patch", would)
		return stampOnly(ResultDryRun)
	}
	// 10. Mutate.
	out := h.patch(pod, result, bookkeeping, ResultMutated, nsLabel, log)
	if len(out.Patches) > 0 && (req.DryRun == nil || !*req.DryRun) {
		// behaviors.hpa: scale-target: queue the HPA patch for the requests just written;
		// the scaler sends it off the admission path (never for a dry-run request).
		for _, t := range guard.Rescaled {
			if before, after, ok := sizing.RequestSum(pod, result.Changes, t); ok && before != after {
				h.scaler.Enqueue(hpa.Rescale{Namespace: ns, Target: t, Before: before, After: after})
			}
		}
	}
	if len(out.Patches) > 0 {
		log.Info("sized pod at admission", "profile", b.ProfileName, "applied", applied(result.Annotations))
		h.metrics.ApplyApplied.WithLabelValues(policyName, nsLabel, b.ProfileName).Inc()
	}
	return out
}

// patch renders the sizing result plus bookkeeping as the admission response and counts
// result under nsLabel; a rendering failure admits the pod unchanged and counts
// not_available.
func (h *Handler) patch(pod *corev1.Pod, result sizing.Result, bookkeeping map[string]string,
	counted, nsLabel string, log logr.Logger) admission.Response {
	ops, err := h.render(pod, result, bookkeeping)
	if err != nil {
		log.Error(err, "rendering patch; admitting unchanged")
		h.count(ResultNotAvailable, nsLabel)
		return admission.Allowed("ballast: internal error")
	}
	h.count(counted, nsLabel)
	if len(ops) == 0 {
		return admission.Allowed("")
	}
	out := make([]jsonpatch.JsonPatchOperation, len(ops))
	for i, o := range ops {
		out[i] = jsonpatch.JsonPatchOperation{Operation: o.Op, Path: o.Path, Value: o.Value}
	}
	return admission.Patched("", out...)
}

// wouldBe renders the sizing patch a dry run logs, without the bookkeeping.
func (h *Handler) wouldBe(pod *corev1.Pod, result sizing.Result) (string, error) {
	ops, err := h.render(pod, result, nil)
	if err != nil {
		return "", fmt.Errorf("rendering patch: %w", err)
	}
	would, err := json.Marshal(ops)
	if err != nil {
		return "", fmt.Errorf("encoding patch: %w", err)
	}
	return string(would), nil
}

func (h *Handler) count(result, namespace string) {
	h.metrics.WebhookMutations.WithLabelValues(result, namespace).Inc()
}

// applied renders the applied-* and clamped-* annotations of a sizing result in a fixed
// order: "cpu request 300m, memory limit 231Mi".
func applied(ann map[string]string) string {
	var parts []string
	for _, r := range []string{"cpu", "memory", "ephemeral-storage"} {
		for _, f := range []string{"request", "limit"} {
			if v, ok := ann[ballastv1.AppliedAnnotation(r, f)]; ok {
				parts = append(parts, r+" "+f+" "+v)
			}
		}
		if v, ok := ann[ballastv1.ClampedAnnotation(r)]; ok {
			parts = append(parts, "clamped-"+r+"-request "+v)
		}
	}
	return strings.Join(parts, ", ")
}

func podName(req admission.Request) string {
	if req.Name != "" {
		return req.Name
	}
	return "(generated)"
}
