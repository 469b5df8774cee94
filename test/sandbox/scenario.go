package sandbox

import (
	"context"
	"fmt"
	"io"
	"k8s.io/apimachinery/pkg/api/meta"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"sigs.k8s.io/controller-runtime/pkg/client"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/recommend"
	"github.com/ballastk8s/ballast/test/harness"
)

// Scenario is the measure → profile → apply story the demo tells and the e2e test checks.
type Scenario struct {
	// Namespaces run Shop in measure mode first; NewNamespace receives it in apply mode later.
	Namespaces   []string
	NewNamespace string
	// ResizeNamespace receives Shop in measure mode at the end; one of its pods is then
	// switched to resize mode and stepped in place. Empty skips the rung.
	ResizeNamespace string
	Shop, OOM       App
	// Wait bounds every step.
	Wait time.Duration
}

// Row is one line of the final table.
type Row struct {
	Namespace                  string
	CPUBefore, CPUAfter        string
	MemBefore, MemAfter        string
	MemLimitBefore, MemLimitAf string
	UsageCPU, UsageMem         string
}

// Report is what the scenario observed.
type Report struct {
	ShopProfile     string
	SharedPods      int // shop pods bound to ShopProfile across the measure namespaces
	SharedWorkloads int32
	Samples         int64
	Recommendation  map[string]ballastv1.Recommendation
	NewPodsSized    bool // every pod of NewNamespace was sized at its first admission
	Rows            []Row
	OOMProfile      string
	OOMLimitBefore  string
	OOMLimitAfter   string
	// Resize is the pod switched to resize mode and stepped in place.
	Resize ResizeReport
}

// ResizeReport is the resize rung: one running pod stepped in place toward the profile.
type ResizeReport struct {
	Pod                    string
	CPUBefore, CPUAfter    string
	State                  string
	SamePod                bool // same UID, no container restart
	MemLimBefore, MemLimAf string
}

// Run plays the scenario, printing progress to w.
func (sc Scenario) Run(ctx context.Context, s *Sandbox, rec *Recorder, w io.Writer) (*Report, error) {
	say := func(f string, a ...any) {
		fmt.Fprintf(w, "%s  "+f+"\n", append([]any{time.Now().Format("15:04:05")}, a...)...)
	}
	rep := &Report{}
	before := map[string]corev1.ResourceRequirements{}

	rec.Mark("measure")
	for _, ns := range sc.Namespaces {
		say("deploying %s (%d replicas, requests cpu %s memory %s) into %s in measure mode", sc.Shop.Name, sc.Shop.Replicas, sc.Shop.CPU, sc.Shop.Memory, ns)
		if err := s.Deploy(ctx, ns, sc.Shop, ballastv1.ModeMeasure); err != nil {
			return nil, err
		}
	}
	say("deploying %s (memory limit %s, leaks into OOM kills) into %s in measure mode", sc.OOM.Name, sc.OOM.MemLimit, sc.Namespaces[0])
	if err := s.Deploy(ctx, sc.Namespaces[0], sc.OOM, ballastv1.ModeMeasure); err != nil {
		return nil, err
	}
	for _, ns := range sc.Namespaces {
		if err := harness.Poll(ctx, sc.Wait, "rollout", func() error { return s.Rolled(ctx, ns, sc.Shop.Name) }); err != nil {
			return nil, err
		}
		pods, _ := s.AppPods(ctx, ns, sc.Shop.Name)
		before[ns] = pods[0].Spec.Containers[0].Resources
	}

	// One profile for all namespaces, accruing until ready.
	var wp *ballastv1.WorkloadProfile
	lastSay := time.Time{}
	err := harness.Poll(ctx, sc.Wait, "shop profile Sufficient", func() error {
		var err error
		if wp, err = s.Profile(ctx, sc.Namespaces[0], sc.Shop.Name); err != nil {
			return err
		}
		samples, span := profileSamples(wp)
		if time.Since(lastSay) > 5*time.Second {
			say("profile %s: %s, %d pods from %d workloads, %d cpu samples over %s; %s", wp.Name, state(wp), wp.Status.ActivePods, wp.Status.ActiveWorkloads, samples, span, sufficiency(wp))
			lastSay = time.Now()
		}
		if wp.Status.State != ballastv1.StateSufficient {
			return fmt.Errorf("profile %s is %s", wp.Name, state(wp))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	rep.ShopProfile, rep.SharedWorkloads = wp.Name, wp.Status.ActiveWorkloads
	rep.Samples, _ = profileSamples(wp)
	rep.Recommendation = wp.Status.Containers[0].Recommendations
	for _, ns := range sc.Namespaces {
		pods, _ := s.AppPods(ctx, ns, sc.Shop.Name)
		for _, p := range pods {
			if p.Annotations[ballastv1.ProfileRefAnnotation] == wp.Name {
				rep.SharedPods++
			}
		}
	}
	say("profile %s is Sufficient: one profile for %d pods in %d namespaces; recommends %s", wp.Name, rep.SharedPods, len(sc.Namespaces), recString(rep.Recommendation))

	rec.Mark("apply")
	for _, ns := range sc.Namespaces {
		say("switching %s/%s to apply mode (rolling update; admission sizes the new pods)", ns, sc.Shop.Name)
		if err := s.SetMode(ctx, ns, sc.Shop.Name, ballastv1.ModeApply); err != nil {
			return nil, err
		}
	}
	for _, ns := range sc.Namespaces {
		if err := harness.Poll(ctx, sc.Wait, "rollout", func() error { return s.Rolled(ctx, ns, sc.Shop.Name) }); err != nil {
			return nil, err
		}
	}

	rec.Mark("new namespace")
	say("deploying %s into the brand-new namespace %s in apply mode", sc.Shop.Name, sc.NewNamespace)
	if err := s.Deploy(ctx, sc.NewNamespace, sc.Shop, ballastv1.ModeApply); err != nil {
		return nil, err
	}
	if err := harness.Poll(ctx, sc.Wait, "rollout", func() error { return s.Rolled(ctx, sc.NewNamespace, sc.Shop.Name) }); err != nil {
		return nil, err
	}
	pods, _ := s.AppPods(ctx, sc.NewNamespace, sc.Shop.Name)
	rep.NewPodsSized = len(pods) > 0
	for _, p := range pods {
		// Sized by admission: the request is what the webhook wrote (the recommendation of
		// that moment; it may have moved by a millicore since the report captured it).
		got := p.Spec.Containers[0].Resources.Requests.Cpu().String()
		if applied := p.Annotations[ballastv1.AppliedAnnotation("cpu", "request")]; applied == "" || got != applied {
			rep.NewPodsSized = false
		}
	}
	say("%s/%s admitted right-sized at first admission: %v", sc.NewNamespace, sc.Shop.Name, rep.NewPodsSized)

	// The OOM-ing app: its memory recommendation jumps once the agent reports a kill.
	seen := false
	err = harness.Poll(ctx, sc.Wait, "OOM bump", func() error {
		oom, err := s.Profile(ctx, sc.Namespaces[0], sc.OOM.Name)
		if err != nil {
			return err
		}
		rep.OOMProfile = oom.Name
		if oom.Status.State != ballastv1.StateSufficient || len(oom.Status.Containers) == 0 {
			return fmt.Errorf("%s is %s", oom.Name, state(oom))
		}
		rec := oom.Status.Containers[0].Recommendations["memory"]
		lim, bumped := rec.Limit, strings.HasPrefix(rec.LimitBasis, recommend.BasisOOM)
		if !seen {
			seen = true
			if bumped {
				// The kill came before the profile's first Sufficient reading (a busy
				// machine): there is no history-only value to show.
				rep.OOMLimitBefore = "(raised before the first reading)"
				say("profile %s: memory limit recommendation %s, already raised by an OOM kill", oom.Name, lim)
			} else {
				rep.OOMLimitBefore = lim
				say("profile %s: memory limit recommendation %s; waiting for an OOM kill", oom.Name, lim)
			}
		}
		if !bumped {
			return fmt.Errorf("memory limit recommendation %s (%s) not raised by an OOM kill yet", lim, rec.LimitBasis)
		}
		// An OOM bump raises the recommendation to max(peak × 1.2, peak + 100Mi), peak being
		// about the container's limit: history alone never gets there.
		bump := resource.MustParse(sc.OOM.MemLimit)
		bump.Add(resource.MustParse("100Mi"))
		got, err := resource.ParseQuantity(lim)
		if err != nil || got.Cmp(bump) < 0 {
			return fmt.Errorf("memory limit recommendation %s, below the OOM bump %s", lim, bump.String())
		}
		rep.OOMLimitAfter = lim
		return nil
	})
	if err != nil {
		return rep, err
	}
	rec.Mark("OOM bump")
	say("OOM kill seen: %s memory limit recommendation %s → %s", rep.OOMProfile, rep.OOMLimitBefore, rep.OOMLimitAfter)

	if sc.ResizeNamespace != "" {
		rec.Mark("resize")
		if rep.Resize, err = sc.resizeRung(ctx, s, say); err != nil {
			return rep, err
		}
	}

	for _, ns := range append(slices.Clone(sc.Namespaces), sc.NewNamespace) {
		pods, _ := s.AppPods(ctx, ns, sc.Shop.Name)
		if len(pods) == 0 {
			continue
		}
		after := pods[0].Spec.Containers[0].Resources
		b, ok := before[ns]
		row := Row{Namespace: ns, CPUAfter: after.Requests.Cpu().String(), MemAfter: qty(after.Requests.Memory()),
			MemLimitAf: qty(after.Limits.Memory())}
		if ok {
			row.CPUBefore, row.MemBefore, row.MemLimitBefore = b.Requests.Cpu().String(), qty(b.Requests.Memory()), qty(b.Limits.Memory())
		} else {
			row.CPUBefore, row.MemBefore, row.MemLimitBefore = "(new)", "(new)", "(new)"
		}
		if st := statOf(wp, "cpu"); st != nil {
			row.UsageCPU = st.Mean
		}
		if st := statOf(wp, "memory"); st != nil {
			row.UsageMem = st.P75
		}
		rep.Rows = append(rep.Rows, row)
	}
	return rep, nil
}

// resizeRung switches one running measure-mode pod to resize mode and waits until Ballast
// has stepped it in place (the kubelet's side of pods/resize is simulated by the sandbox).
func (sc Scenario) resizeRung(ctx context.Context, s *Sandbox, say func(string, ...any)) (ResizeReport, error) {
	say("deploying %s into %s in measure mode (admitted at the author's values)", sc.Shop.Name, sc.ResizeNamespace)
	if err := s.Deploy(ctx, sc.ResizeNamespace, sc.Shop, ballastv1.ModeMeasure); err != nil {
		return ResizeReport{}, err
	}
	if err := harness.Poll(ctx, sc.Wait, "rollout", func() error { return s.Rolled(ctx, sc.ResizeNamespace, sc.Shop.Name) }); err != nil {
		return ResizeReport{}, err
	}
	pods, err := s.AppPods(ctx, sc.ResizeNamespace, sc.Shop.Name)
	if err != nil || len(pods) == 0 {
		return ResizeReport{}, fmt.Errorf("no %s pod to resize: %v", sc.Shop.Name, err)
	}
	p := pods[0]
	r := ResizeReport{Pod: p.Namespace + "/" + p.Name, CPUBefore: p.Spec.Containers[0].Resources.Requests.Cpu().String(),
		MemLimBefore: qty(p.Spec.Containers[0].Resources.Limits.Memory())}
	say("labelling pod %s %s=resize: Ballast resizes it in place (kubelet side SIMULATED by the sandbox: statuses report the spec as actuated)",
		r.Pod, ballastv1.ModeLabel)
	if err := s.SetPodMode(ctx, &p, ballastv1.ModeResize); err != nil {
		return r, err
	}
	err = harness.Poll(ctx, sc.Wait, "in-place resize", func() error {
		cur := &corev1.Pod{}
		if err := s.Client.Get(ctx, client.ObjectKeyFromObject(&p), cur); err != nil {
			return err
		}
		r.CPUAfter = cur.Spec.Containers[0].Resources.Requests.Cpu().String()
		r.MemLimAf = qty(cur.Spec.Containers[0].Resources.Limits.Memory())
		r.State = cur.Annotations[ballastv1.ResizeStateAnnotation]
		restarts := int32(0)
		for _, cs := range cur.Status.ContainerStatuses {
			restarts += cs.RestartCount
		}
		r.SamePod = cur.UID == p.UID && restarts == 0
		if r.CPUAfter == r.CPUBefore || r.State != ballastv1.ResizeStateCompleted {
			return fmt.Errorf("cpu %s, resize-state %q", r.CPUAfter, r.State)
		}
		return nil
	})
	if err != nil {
		return r, err
	}
	say("%s resized in place: cpu request %s → %s, memory limit %s → %s (one step, 50%% of the gap), resize-state %s, same pod and no restart: %v",
		r.Pod, r.CPUBefore, r.CPUAfter, r.MemLimBefore, r.MemLimAf, r.State, r.SamePod)
	return r, nil
}

// PrintTable writes the final table.
func (r *Report) PrintTable(w io.Writer) {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAMESPACE\tCPU REQUEST before → after\tMEMORY REQUEST before → after\tMEMORY LIMIT before → after\tOBSERVED cpu mean / memory p75")
	for _, row := range r.Rows {
		fmt.Fprintf(tw, "%s\t%s → %s\t%s → %s\t%s → %s\t%s / %s\n", row.Namespace, row.CPUBefore, row.CPUAfter,
			row.MemBefore, row.MemAfter, row.MemLimitBefore, row.MemLimitAf, row.UsageCPU, row.UsageMem)
	}
	tw.Flush()
}

func profileSamples(wp *ballastv1.WorkloadProfile) (int64, string) {
	if st := statOf(wp, "cpu"); st != nil {
		return st.Samples, st.TimeSpan
	}
	return 0, "0s"
}

func statOf(wp *ballastv1.WorkloadProfile, res string) *ballastv1.UsageStats {
	for _, c := range wp.Status.Containers {
		for i := range c.UsageStats {
			if c.UsageStats[i].Resource == res {
				return &c.UsageStats[i]
			}
		}
	}
	return nil
}

func state(wp *ballastv1.WorkloadProfile) string {
	if wp.Status.State == "" {
		return ballastv1.StateAccruing
	}
	return wp.Status.State
}

// sufficiency is the Sufficient condition's one-line message: what is still missing.
func sufficiency(wp *ballastv1.WorkloadProfile) string {
	if c := meta.FindStatusCondition(wp.Status.Conditions, ballastv1.ConditionSufficient); c != nil {
		return c.Message
	}
	return "not computed yet"
}

func recString(r map[string]ballastv1.Recommendation) string {
	var parts []string
	for _, res := range []string{"cpu", "memory", "ephemeral-storage"} {
		if v, ok := r[res]; ok {
			s := res + " request " + v.Request
			if v.RequestBasis != "" {
				s += " (" + v.RequestBasis + ")"
			}
			if v.Limit != "" {
				s += " limit " + v.Limit
				if v.LimitBasis != "" {
					s += " (" + v.LimitBasis + ")"
				}
			}
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, ", ")
}

func qty(q *resource.Quantity) string {
	if q == nil || q.IsZero() {
		return "-"
	}
	return q.String()
}
