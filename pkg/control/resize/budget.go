package resize

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/control/enrollment"
	"github.com/ballastk8s/ballast/pkg/control/events"
	"github.com/ballastk8s/ballast/pkg/resizeplan"
	"github.com/ballastk8s/ballast/pkg/sizing"
)

// The disruption budget and rate limits (resizeplan.CheckBudget; docs/resize.md
// "Disruption budget"). Interval resizes (and the ladder's donor shrinks) ask the budget
// before they are sent; a hold is an event (ResizeHeld), a count
// (ballast_resize_held_total{reason}) and a retry on the next pass. Fast raises, raise-backs
// and the ladder's caps repair a pod that runs short and are not held, but they are
// recorded: the workload's history (status.resizeHistory of its profile, cached here) is
// what the cooldown and the shrink rate read, and it survives a leader change.

// EventResizeHeld records a resize the budget held back, with the reason.
const EventResizeHeld = "ResizeHeld"

// budgeted are the proposal kinds the budget checks.
func budgeted(why string) bool { return why == "interval" || why == "donor" }

// historyKind is the history entry kind of a sent resize.
func historyKind(why string, shrink bool) string {
	switch why {
	case "revert":
		return ballastv1.ResizeHistoryRaiseBack
	case "oom":
		return ballastv1.ResizeHistoryOOM
	case "pressure":
		return ballastv1.ResizeHistoryPressure
	}
	if shrink {
		return ballastv1.ResizeHistoryShrink
	}
	return ballastv1.ResizeHistoryRaise
}

// historyBook caches each profile's resize history (profile name → entries); the
// profile's status is the durable copy.
type historyBook struct {
	mu        sync.Mutex
	byProfile map[string][]ballastv1.ResizeHistoryEntry
}

func newHistoryBook() *historyBook {
	return &historyBook{byProfile: map[string][]ballastv1.ResizeHistoryEntry{}}
}

// of merges the status copy with the cache: a new leader starts from the status.
func (b *historyBook) of(wp *ballastv1.WorkloadProfile) []ballastv1.ResizeHistoryEntry {
	b.mu.Lock()
	defer b.mu.Unlock()
	h := resizeplan.AddHistory(wp.Status.ResizeHistory, b.byProfile[wp.Name]...)
	b.byProfile[wp.Name] = h
	return h
}

func (b *historyBook) add(profile string, status []ballastv1.ResizeHistoryEntry, e ballastv1.ResizeHistoryEntry) []ballastv1.ResizeHistoryEntry {
	b.mu.Lock()
	defer b.mu.Unlock()
	h := resizeplan.AddHistory(append(status, b.byProfile[profile]...), e)
	b.byProfile[profile] = h
	return h
}

// passBudget is one profile pass's budget state: the in-flight baseline read once, before
// the pass sends anything, plus what the pass sent.
type passBudget struct {
	pods     map[string]int // workload → resize-mode pods of the profile
	inFlight map[string]int // workload → resizes in flight, this pass's included
	pdbSent  map[types.NamespacedName]int
	shrunk   map[string]bool // workloads this pass shrank
}

// inFlight is a resize sent and not yet actuated.
func resizeInFlight(pod *corev1.Pod) bool {
	s := pod.Annotations[ballastv1.ResizeStateAnnotation]
	return s == ballastv1.ResizeStatePending || s == ballastv1.ResizeStateInProgress
}

// budgetOf returns the pass's budget state, reading the profile's pods on first use.
func (c *Controller) budgetOf(ctx context.Context, pc *profileCtx) (*passBudget, error) {
	if pc.budget != nil {
		return pc.budget, nil
	}
	list := &corev1.PodList{}
	if err := c.client.List(ctx, list, client.MatchingFields{enrollment.ProfileRefIndex: pc.profile.Name}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing the pods of profile %s: %w", pc.profile.Name, err)
	}
	b := &passBudget{pods: map[string]int{}, inFlight: map[string]int{}, pdbSent: map[types.NamespacedName]int{}, shrunk: map[string]bool{}}
	for i := range list.Items {
		p := &list.Items[i]
		if !p.DeletionTimestamp.IsZero() || p.Labels[ballastv1.ModeLabel] != ballastv1.ModeResize {
			continue
		}
		w := resizeplan.WorkloadOf(p)
		b.pods[w]++
		if resizeInFlight(p) {
			b.inFlight[w]++
		}
	}
	pc.budget = b
	return b, nil
}

// pdbsOf are the PodDisruptionBudgets in the pod's namespace whose selector matches it.
func (c *Controller) pdbsOf(ctx context.Context, pod *corev1.Pod) ([]policyv1.PodDisruptionBudget, error) {
	pdbs, err := c.pdbsIn(ctx, pod.Namespace)
	if err != nil {
		return nil, err
	}
	var out []policyv1.PodDisruptionBudget
	for _, b := range pdbs {
		if b.sel.Matches(labels.Set(pod.Labels)) {
			out = append(out, b.pdb)
		}
	}
	return out, nil
}

// nodeBudget counts the resizes in flight on one node during one node pass.
type nodeBudget struct{ inFlight int }

func newNodeBudget(v *nodeView) *nodeBudget {
	n := &nodeBudget{}
	for _, p := range v.pods {
		if resizeInFlight(p) {
			n.inFlight++
		}
	}
	return n
}

// hold asks the budget about one proposal; ok is true when it may be sent, and then
// commit must be called once it was.
func (c *Controller) hold(ctx context.Context, p proposal, nb *nodeBudget) (held bool, commit func(), err error) {
	if !budgeted(p.why) || p.pc == nil || p.pc.policy == nil {
		return false, func() {}, nil
	}
	pc, pod := p.pc, p.pod
	b, err := c.budgetOf(ctx, pc)
	if err != nil {
		return false, nil, err
	}
	w := resizeplan.WorkloadOf(pod)
	in := resizeplan.BudgetInput{Now: c.clock.Now(), ShrunkThisPass: b.shrunk[w], Workload: w, WorkloadPods: b.pods[w],
		Shrink: len(resizeplan.ShrunkContainers(pod, p.changes)) > 0, Disruptive: resizeplan.Disruptive(pod, p.changes, c.opts.RestartsFor),
		History: c.history.of(pc.profile), Resize: pc.policy.Resize, InFlightWorkload: b.inFlight[w], InFlightNode: nb.inFlight}
	var pdbs []policyv1.PodDisruptionBudget
	if in.Disruptive {
		if pdbs, err = c.pdbsOf(ctx, pod); err != nil {
			return false, nil, err
		}
		for _, pdb := range pdbs {
			in.PDBs = append(in.PDBs, pdb.Status.DisruptionsAllowed-int32(b.pdbSent[types.NamespacedName{Namespace: pdb.Namespace, Name: pdb.Name}]))
		}
	}
	h := resizeplan.CheckBudget(in)
	if h.Held() {
		c.metrics.Held.WithLabelValues(h.Reason, pc.policyLabel(), pod.Namespace, pc.profile.Name).Inc()
		ctrl.LoggerFrom(ctx).Info("resize held by the disruption budget", "namespace", pod.Namespace, "pod", pod.Name,
			"profile", pc.profile.Name, "reason", h.Reason, "message", h.Message, "workload", w)
		if !c.opts.DryRun && !c.state.Get().Active() {
			c.events.Publish(events.Event{Object: pod, Type: corev1.EventTypeNormal, Reason: EventResizeHeld, Message: h.Reason + ": " + h.Message})
		}
		return true, nil, nil
	}
	return false, func() {
		if in.Shrink {
			b.shrunk[w] = true
		}
		if !in.Disruptive {
			return
		}
		b.inFlight[w]++
		nb.inFlight++
		for _, pdb := range pdbs {
			b.pdbSent[types.NamespacedName{Namespace: pdb.Namespace, Name: pdb.Name}]++
		}
	}, nil
}

// remember records a sent resize in its profile's history and persists it on the
// profile's status (status.resizeHistory, owned by this controller: the profiles
// controller's merge patches leave it alone).
func (c *Controller) remember(ctx context.Context, pod *corev1.Pod, why string, changes []sizing.ContainerChanges, shrink bool) {
	name := pod.Annotations[ballastv1.ProfileRefAnnotation]
	if name == "" {
		return
	}
	e := ballastv1.ResizeHistoryEntry{Time: metav1.NewTime(c.clock.Now()), Kind: historyKind(why, shrink),
		Workload: resizeplan.WorkloadOf(pod), Pod: pod.Name}
	if len(changes) == 1 {
		e.Container = changes[0].Name
	}
	if err := c.persistHistory(ctx, name, e); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "persisting resize history; kept in memory", "profile", name)
	}
}

func (c *Controller) persistHistory(ctx context.Context, profile string, e ballastv1.ResizeHistoryEntry) error {
	wp := &ballastv1.WorkloadProfile{}
	if err := c.client.Get(ctx, client.ObjectKey{Name: profile}, wp); err != nil {
		return client.IgnoreNotFound(err)
	}
	h := c.history.add(profile, wp.Status.ResizeHistory, e)
	body, err := json.Marshal(map[string]any{"status": map[string]any{"resizeHistory": h}})
	if err != nil {
		return err
	}
	if err := c.client.Status().Patch(ctx, wp, client.RawPatch(types.MergePatchType, body)); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("patching status.resizeHistory of WorkloadProfile %s: %w", profile, err)
	}
	return nil
}
