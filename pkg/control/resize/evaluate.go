package resize

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/control/bounds"
	"github.com/ballastk8s/ballast/pkg/control/hpa"
	"github.com/ballastk8s/ballast/pkg/resizeplan"
	"github.com/ballastk8s/ballast/pkg/sizing"
)

// proposal is one pod's resize as the calculator decided it, waiting for its node's plan.
type proposal struct {
	pc      *profileCtx
	pod     *corev1.Pod
	changes []sizing.ContainerChanges
	clamps  []sizing.Clamp
	donor   bool
	// podLevel is the pod-level spec.resources to send with changes (podLevel: size).
	podLevel *sizing.PodPlan
	// why is logged with the patch: "interval", "donor", "oom", "cap".
	why string
	// rescaled are the HPA metrics whose averageUtilization follows the resize
	// (behaviors.hpa: scale-target), patched once the resize is accepted.
	rescaled []sizing.HPATarget
}

func (p proposal) key() string { return p.pod.Namespace + "/" + p.pod.Name }

// evaluate runs the per-pod chain of SPEC §8.2 (sizing.EvaluateResize: gate, calculator,
// QoS, dry-run) and counts and logs the skips. A dry-run decision is still planned, so the
// would-be patch logged at send time is the one the planner would send.
func (c *Controller) evaluate(ctx context.Context, pc *profileCtx, pod *corev1.Pod) (proposal, bool) {
	log := ctrl.LoggerFrom(ctx).WithValues("namespace", pod.Namespace, "pod", pod.Name, "profile", pc.profile.Name,
		"policy", pc.policyLabel(), "action", "resize")
	// The same bounds as admission: the namespace's LimitRanges and quota headroom, the
	// largest node's allocatable. Unreadable bounds resize nothing.
	src := bounds.New(c.client)
	if c.state != nil {
		src.Admin = bounds.FromState(c.state) // BallastConfig spec.bounds
	}
	objs, err := src.Read(ctx, pod.Namespace)
	if err != nil {
		log.Error(err, "reading bounds; not resizing")
		return proposal{}, false
	}
	recs, guard, ok := c.guardHPA(ctx, pc, pod)
	if !ok {
		return proposal{}, false
	}
	params := objs.Params(pc.params)
	params.PodLevelInPlace = c.podLevelInPlace(ctx, pod, params)
	d := sizing.EvaluateResize(sizing.ResizeInput{Pod: pod, Recommendations: recs, Params: params,
		Interval: pc.interval, Now: pc.now, DryRun: c.opts.DryRun})
	if len(d.Plan.Bounded) > 0 {
		log.Info("resize targets bounded", "bounded", sizing.Summary(d.Plan.Bounded))
	}
	if len(d.RestartOnly) > 0 {
		// A jvm's memory shrink waits for a restart; cpu (and memory growth) still resize.
		log.Info("memory shrink held until restart", "reason", sizing.ReasonRestartOnly, "held", d.RestartOnly)
		c.events.Publish(restartOnlyEvent(pod, d.RestartOnly))
		if d.Reason == "" || d.Reason == sizing.ReasonDryRun {
			c.metrics.Skipped.WithLabelValues(sizing.ReasonRestartOnly, pc.policyLabel(), pod.Namespace, pc.profile.Name).Inc()
		}
	}
	switch d.Reason {
	case "", sizing.ReasonDryRun:
		return proposal{pc: pc, pod: pod, changes: d.Changes, clamps: d.Clamps, podLevel: d.Pod, why: "interval", rescaled: guard.Rescaled}, true
	case sizing.ReasonQoSPinned:
		log.Info("resize would change the QoS class, skipped", "reason", d.Reason, "qos_current", d.QoSBefore, "qos_after", d.QoSAfter)
	default:
		log.V(1).Info("no resize", "reason", d.Reason, "message", d.Message)
	}
	c.metrics.Skipped.WithLabelValues(d.Reason, pc.policyLabel(), pod.Namespace, pc.profile.Name).Inc()
	return proposal{}, false
}

// guardHPA applies the policy's behaviors.hpa to the profile's recommendations for pod
// (sizing.GuardHPA). When it preserves a request, the pod is annotated preserved-by-hpa and
// gets an HPAConflict event, once per change of what is preserved; the annotation goes when
// nothing is preserved any more. ok is false when the HPAs cannot be read: nothing resizes.
func (c *Controller) guardHPA(ctx context.Context, pc *profileCtx, pod *corev1.Pod) (sizing.Recommendations, sizing.HPAGuard, bool) {
	if c.hpa.Reader == nil || pc.policy == nil {
		return pc.recs, sizing.HPAGuard{}, true
	}
	log := ctrl.LoggerFrom(ctx).WithValues("namespace", pod.Namespace, "pod", pod.Name)
	w := c.resolver.Workload(ctx, pod)
	recs, g, err := c.hpa.Guard(ctx, pc.policy.HPA, pod.Namespace, sizing.OwnersOf(pod, w.Kind, w.Name), pc.recs)
	if err != nil {
		log.Error(err, "reading horizontalpodautoscalers; not resizing")
		return nil, g, false
	}
	v := g.PreservedAnnotationValue()
	if pod.Annotations[ballastv1.PreservedByHPAAnnotation] == v {
		return recs, g, true
	}
	a := Annotations{ballastv1.PreservedByHPAAnnotation: nil}
	if v != "" {
		a[ballastv1.PreservedByHPAAnnotation] = str(v)
		c.events.Publish(hpaConflictEvent(pod, hpa.ConflictMessage(g)))
		log.Info("requests left as written for an HPA", "preserved", v)
	}
	if !c.opts.DryRun {
		if err := c.annotate(ctx, pod, a); err != nil {
			log.Error(err, "annotating preserved-by-hpa")
		}
	}
	return recs, g, true
}

// SetHPA turns on the behaviors.hpa guard of the resize path (the app sets the same lookup
// as the webhook's, and the scaler that patches HPAs under scale-target).
func (c *Controller) SetHPA(l hpa.Lookup, s *hpa.Scaler) {
	c.hpa, c.scaler = l, s
	if c.predicted != nil {
		c.predicted.hpa = l
	}
}

// profileOf loads the evaluation context of the profile a pod is bound to (for donors and
// fast raises); ok is false when the profile cannot resize now.
func (c *Controller) profileOf(ctx context.Context, pod *corev1.Pod) (*profileCtx, bool) {
	name := pod.Annotations[ballastv1.ProfileRefAnnotation]
	if name == "" {
		return nil, false
	}
	wp := &ballastv1.WorkloadProfile{}
	if err := c.client.Get(ctx, ctrlKey(name), wp); err != nil || !wp.Status.MeetsThreshold {
		return nil, false
	}
	pol, reason, err := c.loadPolicy(ctx, wp.Status.PolicyRef)
	if err != nil || reason != "" {
		return nil, false
	}
	recs, _ := sizing.ParseRecommendations(wp.Status.Containers)
	return &profileCtx{profile: wp, policy: pol, recs: recs, params: sizing.ParamsFor(pol),
		interval: pol.Resize.Interval, now: c.clock.Now()}, true
}

// targets are the full proposed resources per changed container.
func (p proposal) targets() []resizeplan.ContainerTarget {
	return resizeplan.TargetsOf(p.pod, p.changes)
}
