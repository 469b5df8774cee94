package ballast

import (
	"context"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/policy"
	"github.com/ballastk8s/ballast/pkg/resizeplan"
	"github.com/ballastk8s/ballast/pkg/sizing"
)

// boostExplain is the startup boost (policy behaviors.startupBoost) as admission would
// apply it now, and, on a pod, the boost it carries and when it ends.
type boostExplain struct {
	// Policy is the policy's boost: "cpu 2x until Ready for 1m0s".
	Policy string `json:"policy"`
	// Outcome and Why replay admission's boost (sizing.Boost* outcomes): which guard
	// shaped it (the largest node's allocatable, the bounds, the QoS class).
	Outcome string `json:"outcome,omitempty"`
	Why     string `json:"why,omitempty"`
	// State is the pod's boost: active, ended, or none (not boosted at admission).
	State      string           `json:"state,omitempty"`
	Containers []boostContainer `json:"containers,omitempty"`
	// Ends is when the un-boost is due (Ready since + readyFor), or when it ended.
	Ends string `json:"ends,omitempty"`
}

type boostContainer struct {
	Name string `json:"name"`
	From string `json:"from"` // the un-boosted request/limit the boost is taken back to
	To   string `json:"to"`   // the boosted request/limit
}

// explainBoost replays the policy's startup boost on the admission pod with the
// namespace's bounds and the largest node's allocatable cpu, and reads the boost the live
// pod carries. nil when the policy has no boost.
func explainBoost(ctx context.Context, c client.Client, admission *corev1.Pod, live *corev1.Pod, mode string,
	wp *ballastv1.WorkloadProfile, p *policy.Compiled, now time.Time) *boostExplain {
	if p == nil || p.StartupBoost == nil {
		return nil
	}
	b := p.StartupBoost
	be := &boostExplain{Policy: fmt.Sprintf("cpu %s until Ready for %s", b, b.ReadyFor)}
	if live != nil {
		// Replayed on the pod's own spec, a boost it still carries is taken out first: the
		// webhook saw the un-boosted values.
		if rec, _, err := sizing.ParseBoostRecord(live.Annotations[ballastv1.StartupBoostAnnotation]); err == nil {
			admission = sizing.WithChanges(admission, sizing.Unboost(admission, rec))
		}
	}
	if mode == ballastv1.ModeApply || mode == ballastv1.ModeResize {
		params := sizing.ParamsFor(p)
		sized := sizing.Result{}
		if wp != nil && wp.Status.State == ballastv1.StateSufficient {
			recs, _ := sizing.ParseRecommendations(wp.Status.Containers)
			sized = sizing.Admission(admission, recs, params)
		}
		in := sizing.BoostInput{Pod: admission, Sized: sized, Boost: *b}
		var notes []string
		if node, ok, err := largestNodeCPU(ctx, c); err != nil {
			notes = append(notes, "nodes unreadable ("+err.Error()+"), so the node cap is not replayed")
		} else if ok {
			in.NodeCPU, in.HasNodeCPU = node, true
			params = params.WithBounds(nil, nil, map[corev1.ResourceName]sizing.Range{
				corev1.ResourceCPU: {Max: node, HasMax: true, MaxFrom: "largest node allocatable " + node.String(corev1.ResourceCPU)}})
		}
		lrs, qs := &corev1.LimitRangeList{}, &corev1.ResourceQuotaList{}
		if err := c.List(ctx, lrs, client.InNamespace(admission.Namespace)); err == nil {
			params.Bounds.LimitRanges = lrs.Items
		} else {
			notes = append(notes, "LimitRanges unreadable")
		}
		if err := c.List(ctx, qs, client.InNamespace(admission.Namespace)); err == nil {
			params.Bounds.Quotas = qs.Items
		} else {
			notes = append(notes, "ResourceQuotas unreadable")
		}
		in.Params = params
		d := sizing.StartupBoost(in)
		be.Outcome, be.Why = d.Outcome, d.Message
		for _, n := range notes {
			be.Why += "; " + n
		}
	} else {
		be.Outcome, be.Why = "", "mode "+orDefault(mode, "none")+": only apply and resize pods are boosted"
	}
	if live == nil {
		return be
	}
	v, ok := live.Annotations[ballastv1.StartupBoostAnnotation]
	if !ok {
		be.State = "none"
		return be
	}
	rec, readyFor, err := sizing.ParseBoostRecord(v)
	if err != nil {
		be.State = "unreadable: " + err.Error()
		return be
	}
	names := make([]string, 0, len(rec.Containers))
	for n := range rec.Containers {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		bc := rec.Containers[n]
		be.Containers = append(be.Containers, boostContainer{Name: n, From: pair(bc.Request, bc.Limit), To: pair(bc.BoostedRequest, bc.BoostedLimit)})
	}
	switch d := resizeplan.Unboost(live, rec, readyFor, now); {
	case rec.Ended != "":
		be.State, be.Ends = "ended", rec.Ended
	case d.Step == resizeplan.UnboostWaitReady:
		be.State, be.Ends = "active", fmt.Sprintf("%s after the pod turns Ready", readyFor)
	default:
		be.State, be.Ends = "active", d.Due.UTC().Format(time.RFC3339)
	}
	return be
}

func pair(req, lim string) string {
	if lim == "" {
		return "request " + req
	}
	return "request " + req + ", limit " + lim
}

// largestNodeCPU is the largest allocatable cpu over the cluster's nodes; ok is false
// without nodes.
func largestNodeCPU(ctx context.Context, c client.Client) (sizing.Units, bool, error) {
	nodes := &corev1.NodeList{}
	if err := c.List(ctx, nodes); err != nil {
		return 0, false, err
	}
	var best sizing.Units
	for _, n := range nodes.Items {
		if q, ok := n.Status.Allocatable[corev1.ResourceCPU]; ok {
			best = max(best, sizing.UnitsOf(corev1.ResourceCPU, q))
		}
	}
	return best, best > 0, nil
}

func writeBoost(p *printer, b *boostExplain) {
	if b == nil {
		return
	}
	p.f("")
	p.f("Startup boost (%s)", b.Policy)
	if b.Outcome != "" {
		p.f("  At admission: %s (%s).", b.Why, b.Outcome)
	} else {
		p.f("  %s.", capitalize(b.Why))
	}
	switch b.State {
	case "":
	case "none":
		p.f("  This pod was not boosted at admission.")
	case "active":
		for _, c := range b.Containers {
			p.f("  %s cpu boosted to %s; taken back to %s", c.Name, c.To, c.From)
		}
		p.f("  Active: taken back in place at %s.", b.Ends)
	case "ended":
		for _, c := range b.Containers {
			p.f("  %s cpu was boosted to %s and taken back to %s", c.Name, c.To, c.From)
		}
		p.f("  Ended at %s.", b.Ends)
	default:
		p.f("  Annotation %s.", b.State)
	}
}
