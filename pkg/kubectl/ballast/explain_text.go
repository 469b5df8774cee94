package ballast

import (
	"fmt"
	"io"
	"sort"
	"strings"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
)

// writeExplanation renders an explanation for a person: one section per question.
func writeExplanation(w io.Writer, ex *explanation) error {
	p := &printer{w: w}
	what := ex.Target
	if !strings.HasPrefix(what, "pod/") {
		what = "the next pod of " + what
	}
	p.f("%s in namespace %s", what, ex.Namespace)
	mode := ex.Mode
	if mode == "" {
		mode = "(none)"
	}
	p.f("  mode:      %s", mode)
	p.f("  workload:  %s %s%s", ex.Workload.Kind, ex.Workload.Name, controllerText(ex.Workload))
	if ex.Problem != "" {
		p.f("")
		p.f("%s.", ex.Problem)
		if len(ex.Identity) == 0 {
			return p.err
		}
	}
	p.f("")
	p.f("Identity")
	for _, t := range ex.Identity {
		if t.Missing {
			p.f("  %s is missing: the tuple uses the placeholder %s", t.Key, t.Value)
		} else {
			p.f("  %s = %s", t.Key, t.Value)
		}
	}
	p.f("  profile:   %s", ex.Profile.Name)
	p.f("  hash:      %s", ex.Profile.MeasurementHash)
	if ex.Profile.StampedRef != "" {
		p.f("  note:      the pod is stamped profile-ref=%s; the enrollment controller re-stamps it to %s", ex.Profile.StampedRef, ex.Profile.Name)
	}
	p.f("")
	p.f("Policy")
	if ex.Policy.Winner != "" {
		p.f("  %s governs it (policy-ref %s): %s.", ex.Policy.Winner, ex.Policy.RefValue, ex.Policy.Why)
	} else {
		p.f("  %s.", capitalize(ex.Policy.Why))
	}
	for _, c := range ex.Policy.Candidates {
		if c.Outcome == "won" {
			continue
		}
		p.f("  - %s (priority %d): %s", c.Policy, c.Priority, c.Detail)
	}
	p.f("")
	p.f("Profile")
	if !ex.Profile.Exists {
		p.f("  %s does not exist yet: Ballast creates it when it binds the first pod.", ex.Profile.Name)
	} else {
		p.f("  state %s, %d pod(s) of %d workload(s) bound", orDefault(ex.Profile.State, ballastv1.StateAccruing),
			ex.Profile.ActivePods, ex.Profile.ActiveWorkloads)
		for _, l := range ex.Profile.Fallback.lines() {
			p.f("%s", l)
		}
	}
	for _, c := range ex.Containers {
		p.f("")
		p.f("Container %s", c.Name)
		if c.NoData {
			p.f("  no statistics in the profile for this container yet")
			continue
		}
		for _, r := range c.Resources {
			p.f("  %s: %s", r.Resource, r.Readiness)
			if r.Mean != "" {
				p.f("    observed mean %s", r.Mean)
			}
			for _, rec := range r.Recommendations {
				line := fmt.Sprintf("    %s = %s %s x headroom %s = %s", rec.Field, rec.Aggregation, rec.Statistic, rec.Headroom, rec.Computed)
				if rec.Recorded != "" && rec.Recorded != rec.Computed {
					line += fmt.Sprintf("; the profile records %s", rec.Recorded)
				}
				if rec.Note != "" {
					line += "; " + rec.Note
				}
				p.f("%s", line)
			}
		}
	}
	writeAdmission(p, ex.Admission)
	writeBoost(p, ex.StartupBoost)
	if len(ex.Annotations) > 0 {
		p.f("")
		p.f("Annotations on the pod")
		keys := make([]string, 0, len(ex.Annotations))
		for k := range ex.Annotations {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			p.f("  %s: %s", strings.TrimPrefix(k, ballastv1.Prefix), ex.Annotations[k])
		}
	}
	writeResize(p, ex)
	return p.err
}

func writeAdmission(p *printer, a admissionExplain) {
	p.f("")
	src := "the controller's pod template, as the webhook saw it"
	if !a.FromTemplate {
		src = "the pod's current spec: no controller template was found"
	}
	p.f("Admission (replayed on %s)", src)
	if a.Reason != "" {
		p.f("  %s.", capitalize(a.Reason))
	}
	for _, f := range a.Fields {
		what := fmt.Sprintf("  %s %s %s:", f.Container, f.Resource, f.Field)
		switch {
		case f.Pinned:
			p.f("%s %s -> %s dropped: this container's changes alone would change the pod's QoS class (pinned)", what, f.Current, f.Written)
		case f.Clamped && f.StepDown:
			p.f("%s recommendation %s is above the limit %s; written as %s, one unit below the limit, so the pod stays Burstable", what, orDefault(f.Recommended, f.Current), f.Bound, f.Written)
		case f.Clamped:
			p.f("%s recommendation %s is above the limit %s, so the request is clamped to %s%s", what, orDefault(f.Recommended, f.Current), f.Bound, f.Written, unchanged(f))
		case f.Changed && len(f.Guards) > 0:
			p.f("%s %s -> %s (the recommendation, shaped by the guard below)", what, f.Current, f.Written)
		case f.Changed:
			p.f("%s %s -> %s (the recommendation)", what, f.Current, f.Written)
		default:
			p.f("%s %s, already at the recommendation %s", what, f.Current, orDefault(f.Recommended, f.Written))
		}
		for _, g := range f.Guards {
			p.f("    guard: %s", g)
		}
	}
	for _, h := range a.HPA {
		what := h.Resource
		if h.Container != "" {
			what = h.Container + " " + h.Resource
		}
		switch h.Action {
		case ballastv1.HPAPreserve:
			p.f("  %s request left as written: HorizontalPodAutoscaler %s scales on %s (guard HPAConflict, behaviors.hpa: preserve)", what, h.HPA, h.Metric)
		case ballastv1.HPAScaleTarget:
			exact := ""
			if !h.Exact {
				exact = ", rounded up"
			}
			if h.Utilization == 0 {
				p.f("  %s: HorizontalPodAutoscaler %s scales on %s; its target stays (no request to rescale) (behaviors.hpa: scale-target)", what, h.HPA, h.Metric)
			} else {
				p.f("  %s request sized; HorizontalPodAutoscaler %s target %s becomes %d%% so request × utilization stays (guard HPAConflict, behaviors.hpa: scale-target%s; needs the chart value hpa.scaleTarget, else preserved)", what, h.HPA, h.Metric, h.Utilization, exact)
			}
		default:
			p.f("  %s request sized as if no HPA existed: HorizontalPodAutoscaler %s scales on %s (behaviors.hpa: ignore)", what, h.HPA, h.Metric)
		}
	}
	if a.HPAError != "" {
		p.f("  HorizontalPodAutoscalers not read (%s): the behaviors.hpa guard is not shown.", a.HPAError)
	}
	writeRuntime(p, a.Runtime)
	writePodLevel(p, a.PodLevel)
	if a.QoSBefore != "" {
		if a.QoSBefore == a.QoSAfter {
			p.f("  QoS class %s is kept.", a.QoSBefore)
		} else {
			p.f("  QoS class %s becomes %s (a BestEffort pod carries no class intent).", a.QoSBefore, a.QoSAfter)
		}
	}
}

func unchanged(f fieldChange) string {
	if f.Changed {
		return ""
	}
	return " (= what it already requests: nothing written)"
}

func writeResize(p *printer, ex *explanation) {
	r := ex.Resize
	if r.State == "" && r.LastResize == "" && r.Blocked == "" && len(r.Events) == 0 && r.DeferredPods == 0 && r.InfeasiblePods == 0 {
		if ex.Mode == ballastv1.ModeResize && ex.Target != "" && strings.HasPrefix(ex.Target, "pod/") {
			p.f("")
			p.f("Resize")
			p.f("  never resized in place yet")
			writeBudget(p, r.Budget)
		}
		return
	}
	p.f("")
	p.f("Resize")
	if r.State != "" {
		p.f("  state %s since %s", r.State, r.StateSince)
	}
	if r.LastResize != "" {
		p.f("  last resize at %s", r.LastResize)
	}
	if r.Blocked != "" {
		p.f("  blocked at %s: %s", r.BlockedAt, r.Blocked)
	}
	if r.DeferredPods > 0 || r.InfeasiblePods > 0 {
		p.f("  in the profile: %d pod(s) Deferred, %d Infeasible", r.DeferredPods, r.InfeasiblePods)
	}
	writeBudget(p, r.Budget)
	for _, e := range r.Events {
		p.f("  event %s (%s, x%d): %s", e.Reason, e.Type, e.Count, e.Message)
	}
}

func controllerText(w workloadInfo) string {
	if w.ControllerKind == "" || w.ControllerKind == w.Kind {
		return ""
	}
	return " (through a " + w.ControllerKind + ")"
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

type printer struct {
	w   io.Writer
	err error
}

func (p *printer) f(format string, args ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format+"\n", args...)
	}
}

func writeRuntime(p *printer, r *runtimeExplain) {
	if r == nil {
		return
	}
	p.f("  Runtime %s (floor margin %s):", r.Type, r.Margin)
	for _, c := range r.Containers {
		switch {
		case c.Floor != "":
			p.f("    %s: %s, memory floor %s = %s [%s]", c.Container, c.Runtime, c.Floor, c.Why, c.Source)
		case c.Note != "":
			p.f("    %s: %s, %s", c.Container, c.Runtime, c.Note)
		default:
			p.f("    %s: %s, no floor", c.Container, c.Runtime)
		}
	}
	if r.RestartOnly {
		p.f("    jvm memory is never shrunk in place: resize holds memory shrinks (restart_only) and they apply at the next restart")
	}
}

func writePodLevel(p *printer, pl *podLevelExplain) {
	if pl == nil {
		return
	}
	switch {
	case pl.Written != "":
		p.f("  Pod-level resources (podLevel %s): %s -> %s", pl.Mode, pl.Current, pl.Written)
	case pl.Held != "":
		p.f("  Pod-level resources (podLevel %s): %s kept (%s)", pl.Mode, pl.Current, pl.Held)
	case pl.Mode == "size":
		p.f("  Pod-level resources (podLevel size): %s, unchanged", pl.Current)
	default:
		p.f("  Pod-level resources (podLevel keep): %s kept as written; container changes are held within them", pl.Current)
	}
	for _, n := range pl.Notes {
		p.f("    %s", n)
	}
}
