package ballast

import (
	"context"
	"fmt"
	"slices"
	"sort"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/policy"
	"github.com/ballastk8s/ballast/pkg/recommend"
	"github.com/ballastk8s/ballast/pkg/sizing"
)

// explainContainers reports readiness and the recommendation arithmetic per long-running
// container of pod, from the profile's statistics and the policy it is computed under.
func explainContainers(pod *corev1.Pod, wp *ballastv1.WorkloadProfile, p *policy.Compiled) []containerExplain {
	var out []containerExplain
	profiles := map[string]*ballastv1.ContainerProfile{}
	if wp != nil {
		for i := range wp.Status.Containers {
			profiles[wp.Status.Containers[i].Name] = &wp.Status.Containers[i]
		}
	}
	for _, ctr := range longRunning(&pod.Spec) {
		ce := containerExplain{Name: ctr.Name}
		cp := profiles[ctr.Name]
		if cp == nil {
			ce.NoData = true
			out = append(out, ce)
			continue
		}
		for _, us := range cp.UsageStats {
			if p != nil && !managesResource(p, us.Resource) {
				continue
			}
			ce.Resources = append(ce.Resources, explainResource(us, cp.Recommendations[us.Resource], p))
		}
		out = append(out, ce)
	}
	return out
}

func managesResource(p *policy.Compiled, res string) bool {
	for _, m := range p.Metrics {
		if m.Resource == res {
			return true
		}
	}
	return false
}

// statsOf rebuilds the statistics of one series from its displayed usageStats.
func statsOf(us ballastv1.UsageStats) recommend.Stats {
	res := corev1.ResourceName(us.Resource)
	v := func(s string) float64 { u, _ := parseStat(res, s); return float64(u) }
	s := recommend.Stats{Samples: us.Samples, TimeSpan: durationOrZero(us.TimeSpan),
		P50: v(us.P50), P75: v(us.P75), P90: v(us.P90), P95: v(us.P95), P99: v(us.P99), Max: v(us.Max),
		Mean: v(us.Mean), StdDev: v(us.StdDev), CV: parseFloat(us.CV)}
	s.Sum = s.Mean * float64(s.Samples)
	return s
}

func explainResource(us ballastv1.UsageStats, rec ballastv1.Recommendation, p *policy.Compiled) resourceExplain {
	s := statsOf(us)
	re := resourceExplain{Resource: us.Resource, Samples: us.Samples, TimeSpan: recommend.FormatTimeSpan(s.TimeSpan),
		Mean: us.Mean, CV: us.CV}
	if p == nil {
		re.Readiness = "no policy: readiness is not evaluated"
		return re
	}
	rd := p.Readiness
	reason, msg, ready := recommend.CheckReady(us.Resource, s, rd)
	re.Ready = ready
	gates := fmt.Sprintf("%d samples (need %d), span %s (need %s)", s.Samples, rd.MinDataPoints, re.TimeSpan, rd.MinTimeSpan)
	floor, hasFloor := rd.CVMeanFloor[us.Resource]
	cvPart := fmt.Sprintf("cv %s (max %g)", recommend.FormatCV(s.CV), rd.MaxCV.Float64())
	if hasFloor && floor > 0 && s.Mean < float64(floor) {
		cvPart = fmt.Sprintf("mean %s is below the cvMeanFloor %s, so the cv gate does not apply", us.Mean, recommend.FormatStat(us.Resource, float64(floor)))
	}
	if ready {
		re.Readiness = "ready: " + gates + ", " + cvPart
	} else {
		re.Readiness = fmt.Sprintf("not ready (%s: %s): %s, %s", reason, msg, gates, cvPart)
	}
	for _, m := range p.Metrics {
		if m.Resource != us.Resource {
			continue
		}
		stat := statFor(us, m.Aggregation)
		computed, err := recommend.RecommendedValue(s, m.Aggregation, m.Headroom)
		r := recExplain{Field: m.Field, Aggregation: m.Aggregation, Statistic: stat, Headroom: headroomText(m.Headroom)}
		if err != nil {
			r.Computed = "error: " + err.Error()
		} else {
			r.Computed = recommend.FormatValue(us.Resource, computed)
		}
		r.Recorded = rec.Request
		if m.Field == policy.FieldLimit {
			r.Recorded = rec.Limit
		}
		r.Note = recNote(us.Resource, r, computed, ready)
		re.Recommendations = append(re.Recommendations, r)
	}
	return re
}

func recNote(res string, r recExplain, computed int64, ready bool) string {
	switch {
	case r.Recorded == "" && ready:
		return "not written yet; the profile is recomputed every sampling interval"
	case r.Recorded == "":
		return "no recommendation until this series is ready"
	case r.Recorded == r.Computed:
		return ""
	}
	recU, err := sizing.ParseRecommendationValue(corev1.ResourceName(res), sizing.Field(r.Field), r.Recorded)
	if err != nil {
		return "the recorded value does not parse: " + err.Error()
	}
	if res == policy.ResourceMemory && int64(recU) > computed+(computed/100)+(1<<20) {
		return "above statistic x headroom, so an OOM bump raised it after a recent OOM kill of this container"
	}
	return "differs slightly because the profile computes from exact statistics, shown here rounded"
}

func statFor(us ballastv1.UsageStats, agg string) string {
	switch agg {
	case "p50":
		return us.P50
	case "p75":
		return us.P75
	case "p90":
		return us.P90
	case "p95":
		return us.P95
	case "p99":
		return us.P99
	case "max":
		return us.Max
	}
	return us.Mean
}

func headroomText(d policy.Decimal) string {
	if d.Sign() == 0 {
		return "1"
	}
	return d.Rat().FloatString(2)
}

// explainAdmission replays admission on pod with the calculator the webhook uses
// (sizing.Calculate at once, rendered by sizing.AdmissionResult).
func explainAdmission(pod *corev1.Pod, fromTemplate bool, mode string, wp *ballastv1.WorkloadProfile, p *policy.Compiled,
	hpaTargets []sizing.HPATarget) admissionExplain {
	ae := admissionExplain{FromTemplate: fromTemplate}
	switch {
	case !ballastv1.ValidMode(mode):
		ae.Reason = "not enrolled: admission leaves it unchanged"
		return ae
	case mode == ballastv1.ModeMeasure:
		ae.Reason = "mode measure: admission only stamps profile-ref and policy-ref; requests and limits are left as written"
		return ae
	case wp == nil:
		ae.Reason = "the profile does not exist yet (created when the first pod is bound): admission leaves requests and limits as written"
		return ae
	case wp.Status.State != ballastv1.StateSufficient:
		ae.Reason = "the profile is " + orDefault(wp.Status.State, ballastv1.StateAccruing) + ", not Sufficient: admission leaves requests and limits as written until every series is ready"
		return ae
	case p == nil:
		ae.Reason = "no policy: admission leaves requests and limits as written"
		return ae
	}
	recs, _ := sizing.ParseRecommendations(wp.Status.Containers)
	// behaviors.hpa, as the webhook applies it (sizing.GuardHPA).
	recs, guard := sizing.GuardHPA(p.HPA, hpaTargets, recs)
	plan := sizing.Calculate(pod, recs, sizing.ParamsFor(p), sizing.AtOnce)
	res := sizing.AdmissionResult(plan)
	ae.HPA = hpaLines(pod, res.Changes, p.HPA, hpaTargets, guard)
	ae.QoSBefore, ae.QoSAfter, ae.StepDown = string(plan.QoSBefore), string(plan.QoSAfter), plan.StepDown
	ae.Runtime, ae.PodLevel = runtimeOf(p, plan), podLevelOf(pod, p, plan)
	ae.Pinned = res.Pinned
	ae.Annotations = res.Annotations
	ae.Sized = len(res.Changes) > 0
	if !ae.Sized {
		ae.Reason = "nothing to write: every recommendation equals what the pod already requests"
		if res.SkipReason == sizing.ReasonQoSPinned {
			ae.Reason = "every change would change the pod's QoS class, so nothing is written (qos_pinned)"
		}
	}
	for _, cp := range plan.Containers {
		for _, rp := range cp.Resources {
			for _, f := range []struct {
				name string
				fp   sizing.FieldPlan
			}{{"limit", rp.Limit}, {"request", rp.Request}} {
				if !f.fp.Managed && !f.fp.Clamped {
					continue
				}
				fc := fieldChange{Container: cp.Name, Resource: string(rp.Resource), Field: f.name,
					Current: unitsText(rp.Resource, f.fp.Current, f.fp.HasCurrent), Written: f.fp.Target.String(rp.Resource),
					Changed: f.fp.Changed && !cp.Pinned, Clamped: f.fp.Clamped, Pinned: cp.Pinned}
				if f.fp.HasRecommended {
					fc.Recommended = f.fp.Recommended.String(rp.Resource)
				}
				if f.fp.Clamped {
					fc.Bound = f.fp.Bound.String(rp.Resource)
					fc.StepDown = f.fp.Target < f.fp.Bound
				}
				fc.Guards = guardsOf(plan, cp.Name, rp.Resource, sizing.Field(f.name))
				ae.Fields = append(ae.Fields, fc)
			}
		}
	}
	return ae
}

func unitsText(res corev1.ResourceName, u sizing.Units, has bool) string {
	if !has {
		return "unset"
	}
	return u.String(res)
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// explainResize reads the resize annotations and Ballast's events on the pod.
func explainResize(ctx context.Context, c client.Client, pod *corev1.Pod, re resizeExplain) resizeExplain {
	a := pod.Annotations
	re.State, re.StateSince = a[ballastv1.ResizeStateAnnotation], a[ballastv1.ResizeStateSinceAnnotation]
	re.LastResize = a[ballastv1.LastResizeAnnotation]
	re.Blocked, re.BlockedAt = a[ballastv1.ResizeBlockedAnnotation], a[ballastv1.ResizeBlockedAtAnnotation]
	evs := &corev1.EventList{}
	sel := fields.AndSelectors(fields.OneTermEqualSelector("involvedObject.name", pod.Name),
		fields.OneTermEqualSelector("involvedObject.uid", string(pod.UID)))
	if err := c.List(ctx, evs, client.InNamespace(pod.Namespace), client.MatchingFieldsSelector{Selector: sel}); err == nil {
		sort.SliceStable(evs.Items, func(i, j int) bool { ti, tj := eventTime(evs.Items[i]), eventTime(evs.Items[j]); return ti.Before(&tj) })
		for _, e := range evs.Items {
			if e.Source.Component != ballastv1.EventComponent && e.ReportingController != ballastv1.EventComponent {
				continue
			}
			re.Events = append(re.Events, eventRecord{Reason: e.Reason, Type: e.Type, Count: max(e.Count, 1), Message: e.Message})
		}
	}
	return re
}

func eventTime(e corev1.Event) metav1.Time {
	if !e.LastTimestamp.IsZero() {
		return e.LastTimestamp
	}
	return metav1.Time{Time: e.EventTime.Time}
}

func labelSelectorText(ls *metav1.LabelSelector) string {
	s, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil {
		return "(invalid)"
	}
	if str := s.String(); str != "" {
		return str
	}
	return "(everything)"
}

// hpaLines says, per HPA utilization metric on the pod's owner, what behaviors.hpa does.
func hpaLines(pod *corev1.Pod, changes []sizing.ContainerChanges, mode string, targets []sizing.HPATarget, g sizing.HPAGuard) []hpaGuardLine {
	var out []hpaGuardLine
	for _, t := range targets {
		l := hpaGuardLine{HPA: t.HPA, Metric: t.Metric(), Resource: string(t.Resource), Container: t.Container, Action: mode}
		switch {
		case mode == ballastv1.HPAPreserve && !slices.Contains(g.Preserved, t):
			continue // nothing recommended for that resource: nothing to guard
		case mode == ballastv1.HPAScaleTarget:
			before, after, ok := sizing.RequestSum(pod, changes, t)
			if ok {
				l.Utilization, l.Exact = sizing.ScaleTargetUtilization(sizing.HPABase{Utilization: t.Utilization, Request: before}, after)
			}
		}
		out = append(out, l)
	}
	return out
}

// hpaTargets lists the HPA utilization metrics on the subject's owner chain: the pod's
// controller and its top-level workload.
func hpaTargets(ctx context.Context, c client.Client, s *subject, pod *corev1.Pod) ([]sizing.HPATarget, error) {
	var list autoscalingv2.HorizontalPodAutoscalerList
	if err := c.List(ctx, &list, client.InNamespace(s.Namespace)); err != nil {
		return nil, fmt.Errorf("listing horizontalpodautoscalers: %w", err)
	}
	owners := sizing.OwnersOf(pod, s.Facts.Kind, s.Workload)
	if s.Pod != nil && s.Pod != pod {
		owners = append(owners, sizing.OwnersOf(s.Pod, "", "")...)
	}
	return sizing.HPATargets(list.Items, owners), nil
}
