package resizeplan

import (
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/policy"
	"github.com/ballastk8s/ballast/pkg/sizing"
)

// The disruption budget and rate limits of resizes (issue 30; docs/resize.md "Disruption
// budget"). Before the resize controller sends an interval resize it asks CheckBudget;
// a hold is retried on the next pass. Reasons, in the order they are checked, are
// exported: they become the ResizeHeld event's message and the reason attribute of
// ballast_resize_held_total.
const (
	// HoldRaiseCooldown: a shrink within the cooldown after an OOM kill, a pressure raise
	// or a raise-back of the workload.
	HoldRaiseCooldown = "raise_cooldown"
	// HoldShrinkRate: the workload was already shrunk by an earlier pass within the interval.
	HoldShrinkRate = "shrink_rate"
	// HoldConcurrency: the workload already has maxConcurrentResizes.perWorkload resizes in
	// flight (disruptive resizes only).
	HoldConcurrency = "concurrency"
	// HoldNodeConcurrency: the node already has maxConcurrentResizes.perNode resizes in
	// flight (disruptive resizes only).
	HoldNodeConcurrency = "node_concurrency"
	// HoldBudget: a PodDisruptionBudget covering the pod allows no disruption now
	// (disruptive resizes only).
	HoldBudget = "budget"
)

// MaxHistory bounds WorkloadProfile status.resizeHistory; the oldest entries are dropped.
const MaxHistory = 256

// BudgetInput is what one resize's budget check reads.
type BudgetInput struct {
	// Now is the decision time.
	Now time.Time
	// ShrunkThisPass is true when this planning pass already shrank a pod of the workload:
	// the shrinks of one pass are one shrink of the workload and do not rate-limit each other.
	ShrunkThisPass bool
	// Shrink is true when the resize lowers any cpu or memory value; Disruptive when it
	// restarts a container (Disruptive).
	Shrink, Disruptive bool
	// Workload is the pod's workload (WorkloadOf) and WorkloadPods the number of the
	// profile's resize-mode pods in it (the base of a percentage cap).
	Workload     string
	WorkloadPods int
	// History is the profile's resize history (any workload; filtered here).
	History []ballastv1.ResizeHistoryEntry
	// Resize are the policy's settings: interval, cooldown, the concurrency caps.
	Resize policy.Resize
	// InFlightWorkload and InFlightNode count the resizes in flight (sent, not yet
	// actuated) in the workload and on the pod's node, including this pass's.
	InFlightWorkload, InFlightNode int
	// PDBs are the disruptionsAllowed of the PodDisruptionBudgets covering the pod, less
	// the disruptions this pass already sent under each; none means no PDB.
	PDBs []int32
}

// Hold is a budget decision: Reason "" lets the resize go. Until is when the hold lifts
// by itself (zero when it depends on other pods: concurrency, node_concurrency, budget).
type Hold struct {
	Reason  string
	Message string
	Until   time.Time
}

// Held reports whether the resize waits.
func (h Hold) Held() bool { return h.Reason != "" }

// CheckBudget is the ordered chain of budget checks; the first that holds decides.
func CheckBudget(in BudgetInput) Hold {
	if in.Shrink {
		// 1. raise_cooldown: never shrink within the cooldown after the workload was raised
		// because it ran short (OOM kill, memory pressure, raise-back).
		if e, ok := lastOf(in.History, in.Workload, ballastv1.ResizeHistoryOOM,
			ballastv1.ResizeHistoryPressure, ballastv1.ResizeHistoryRaiseBack); ok && in.Now.Before(e.Time.Add(in.Resize.Cooldown)) {
			until := e.Time.Add(in.Resize.Cooldown)
			return Hold{Reason: HoldRaiseCooldown, Until: until, Message: fmt.Sprintf(
				"shrink held: %s of the workload at %s, cooldown %s until %s", e.Kind, stamp(e.Time.Time), in.Resize.Cooldown, stamp(until))}
		}
		// 2. shrink_rate: at most one shrink pass per workload per interval.
		if e, ok := lastOf(in.History, in.Workload, ballastv1.ResizeHistoryShrink); ok && !in.ShrunkThisPass &&
			in.Now.Before(e.Time.Add(in.Resize.Interval)) {
			until := e.Time.Add(in.Resize.Interval)
			return Hold{Reason: HoldShrinkRate, Until: until, Message: fmt.Sprintf(
				"shrink held: the workload was shrunk at %s, next shrink after %s (interval %s)", stamp(e.Time.Time), stamp(until), in.Resize.Interval)}
		}
	}
	if !in.Disruptive {
		return Hold{}
	}
	// 3. concurrency: the workload's disruptive resizes in flight.
	if lim := in.Resize.PerWorkload.Of(in.WorkloadPods); in.InFlightWorkload >= lim {
		return Hold{Reason: HoldConcurrency, Message: fmt.Sprintf(
			"restarting resize held: %d resizes in flight in the workload, maxConcurrentResizes.perWorkload %s of %d pods allows %d",
			in.InFlightWorkload, in.Resize.PerWorkload, in.WorkloadPods, lim)}
	}
	// 4. node_concurrency: the node's resizes in flight.
	if in.Resize.PerNode > 0 && in.InFlightNode >= int(in.Resize.PerNode) {
		return Hold{Reason: HoldNodeConcurrency, Message: fmt.Sprintf(
			"restarting resize held: %d resizes in flight on the node, maxConcurrentResizes.perNode is %d", in.InFlightNode, in.Resize.PerNode)}
	}
	// 5. budget: every PodDisruptionBudget covering the pod must allow one more disruption.
	for _, allowed := range in.PDBs {
		if allowed <= 0 {
			return Hold{Reason: HoldBudget, Message: "restarting resize held: a PodDisruptionBudget covering the pod allows no disruption now"}
		}
	}
	return Hold{}
}

// lastOf is the workload's latest history entry of one of kinds.
func lastOf(h []ballastv1.ResizeHistoryEntry, workload string, kinds ...string) (ballastv1.ResizeHistoryEntry, bool) {
	var best ballastv1.ResizeHistoryEntry
	found := false
	for _, e := range h {
		if e.Workload != workload {
			continue
		}
		for _, k := range kinds {
			if e.Kind == k && (!found || !e.Time.Before(&best.Time)) {
				best, found = e, true
			}
		}
	}
	return best, found
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// RestartHook reports whether changing resource of container needs a container restart
// beyond what its resizePolicy says (for example a runtime that cannot shrink its heap in
// place: a memory cut, lowered true, restarts it). nil means the resizePolicy alone decides.
type RestartHook func(container string, resource corev1.ResourceName, lowered bool) bool

// Disruptive reports whether the changes restart a container of pod: a changed cpu or
// memory value of a container whose resizePolicy for that resource is RestartContainer,
// or one restartsFor says restarts.
func Disruptive(pod *corev1.Pod, changes []sizing.ContainerChanges, restartsFor RestartHook) bool {
	for _, ch := range changes {
		next, ok := ch.Applied(pod)
		if !ok {
			continue
		}
		cur := ch.Container(pod)
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			changed, lowered := compare(cur.Resources.Requests, next.Requests, r)
			lc, ll := compare(cur.Resources.Limits, next.Limits, r)
			changed, lowered = changed || lc, lowered || ll
			if !changed {
				continue
			}
			if sizing.RestartsOnResize(cur, r) {
				return true
			}
			if restartsFor != nil && restartsFor(ch.Name, r, lowered) {
				return true
			}
		}
	}
	return false
}

// compare reports whether r differs between before and after, and whether it is lowered.
func compare(before, after corev1.ResourceList, r corev1.ResourceName) (changed, lowered bool) {
	b, okB := before[r]
	a, okA := after[r]
	if okB != okA {
		return true, okB && !okA
	}
	if !okB {
		return false, false
	}
	c := a.Cmp(b)
	return c != 0, c < 0
}

// WorkloadOf is the pod's workload for the budget: <namespace>/<Kind>/<name> of its
// controller, with a Deployment's ReplicaSet folded into the Deployment (the ReplicaSet's
// name less the pod-template-hash suffix), so a rollout does not reset the workload's
// history; a pod without a controller is its own workload.
func WorkloadOf(pod *corev1.Pod) string {
	for _, ref := range pod.OwnerReferences {
		if ref.Controller == nil || !*ref.Controller {
			continue
		}
		kind, name := ref.Kind, ref.Name
		if h := pod.Labels["pod-template-hash"]; kind == "ReplicaSet" && h != "" && strings.HasSuffix(name, "-"+h) {
			kind, name = "Deployment", strings.TrimSuffix(name, "-"+h)
		}
		return pod.Namespace + "/" + kind + "/" + name
	}
	return pod.Namespace + "/Pod/" + pod.Name
}

// AddHistory returns h with entries added, ordered by time (stable for equal times),
// exact duplicates removed and only the newest MaxHistory kept.
func AddHistory(h []ballastv1.ResizeHistoryEntry, entries ...ballastv1.ResizeHistoryEntry) []ballastv1.ResizeHistoryEntry {
	all := make([]ballastv1.ResizeHistoryEntry, 0, len(h)+len(entries))
	all = append(all, h...)
	all = append(all, entries...)
	sort.SliceStable(all, func(i, j int) bool { return all[i].Time.Before(&all[j].Time) })
	out := all[:0]
	seen := map[ballastv1.ResizeHistoryEntry]bool{}
	for _, e := range all {
		e.Time.Time = e.Time.UTC().Truncate(time.Second) // as the API server stores it
		if seen[e] {
			continue
		}
		seen[e] = true
		out = append(out, e)
	}
	if len(out) > MaxHistory {
		out = out[len(out)-MaxHistory:]
	}
	return out
}
