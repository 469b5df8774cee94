package node

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/test/harness"
)

// The filler of the hand-over step keeps running for fillerStop after it is deleted (a
// preStop sleep), so the preempted victim holds its cpu that long and the growth stays
// Deferred long enough to be seen on the profile: the "victim with a grace period" case of
// research/resize-preemption.md §2.1 (20 s there).
const fillerStop = 15

// testResizeHandOver: a growth on a node filled by a non-enrolled pod of lower priority
// (PriorityClass value -100; the grower and Ballast's own pods have priority 0, so the
// filler is the only pod scheduler preemption could pick), with nothing to shrink.
//
// (a) The filler is covered by a PodDisruptionBudget that allows no disruption: Ballast
// refuses the hand-over (rung 2) — the scheduler deletes victims without honouring PDBs —
// keeps its guard key on the Node, caps the growth at the room left, and the filler is
// untouched.
//
// (b) The PDB is deleted: at the next interval Ballast sends the growth, which the kubelet
// defers, and releases its key; the scheduler preempts the filler, and once the filler has
// stopped the kubelet completes the growth in place. While it is Deferred, the profile's
// status.resize.deferredPods and oldestDeferredSince say so.
func testResizeHandOver(t *testing.T, ctx context.Context) {
	createNamespace(t, ctx, "handover")
	low := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "node-tier-low"}, Value: -100,
		PreemptionPolicy: ptr.To(corev1.PreemptNever), Description: "the real-node tier's preemptible filler"}
	if err := n.Client.Create(ctx, low); client.IgnoreAlreadyExists(err) != nil {
		t.Fatal(err)
	}
	// The earlier steps' pods must be gone: a terminating pod's cpu would be counted as
	// taken now and be free room once it ends.
	harness.Eventually(t, 60*time.Second, "no pod terminating on the node", func() error {
		pods := &corev1.PodList{}
		if err := n.Client.List(ctx, pods); err != nil {
			return err
		}
		for _, p := range pods.Items {
			if p.DeletionTimestamp != nil {
				return fmt.Errorf("pod %s/%s terminating", p.Namespace, p.Name)
			}
		}
		return nil
	})
	grower := runningPod(t, ctx, loadPod("handover", "grower", "worker", "measure",
		[]string{"-cpu-millis", fmt.Sprint(loadMilliCPU), "-memory-mib", fmt.Sprint(loadMiB)},
		res("50m", "160Mi"), res("", "200Mi")))
	free := freeCPU(t, ctx)
	filler := loadPod("handover", "filler", "filler", "", []string{"-cpu-millis", "0", "-memory-mib", "0"},
		res(fmt.Sprintf("%dm", free-20), "16Mi"), nil)
	delete(filler.Labels, modeLabel)
	filler.Spec.PriorityClassName = low.Name
	filler.Spec.TerminationGracePeriodSeconds = ptr.To[int64](fillerStop + 5)
	filler.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: fillerStop}}}
	filler = runningPod(t, ctx, filler)
	defer func() { _ = n.Client.Delete(ctx, filler, client.GracePeriodSeconds(0)) }()
	defer func() { _ = n.Client.Delete(ctx, grower) }()
	if filler.Spec.Priority == nil || *filler.Spec.Priority != -100 {
		t.Fatalf("filler priority %v, want -100", filler.Spec.Priority)
	}
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "filler", Namespace: "handover"},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(1)),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/component": "filler"}}}}
	if err := n.Client.Create(ctx, pdb); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, 30*time.Second, "PDB computed by the disruption controller", func() error {
		if err := n.Client.Get(ctx, client.ObjectKeyFromObject(pdb), pdb); err != nil {
			return err
		}
		if pdb.Status.ObservedGeneration < pdb.Generation || pdb.Status.CurrentHealthy != 1 || pdb.Status.DisruptionsAllowed != 0 {
			return fmt.Errorf("status %+v", pdb.Status)
		}
		return nil
	})
	t.Logf("node full: filler (priority -100, PDB minAvailable 1, disruptionsAllowed 0) requests %dm, %dm left", free-20, freeCPU(t, ctx))

	// (a) PDB-protected: no hand-over.
	refused := func() float64 {
		return controlCounter(t, ctx, "ballast_resize_ladder_total", `rung="hand_over"`, `result="refused"`)
	}
	released := func() float64 {
		return controlCounter(t, ctx, "ballast_resize_ladder_total", `rung="hand_over"`, `result="released"`)
	}
	refusedBefore, releasedBefore := refused(), released()
	sa := &seen{first: map[string]time.Time{}}
	wctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	watchPod(t, wctx, &wg, sa, "grower", grower)
	watchVictim(t, wctx, &wg, sa, "filler", filler)
	watchGuardBoth(t, wctx, &wg, sa)
	if err := n.Client.Patch(ctx, grower, client.RawPatch(types.MergePatchType,
		[]byte(`{"metadata":{"labels":{"`+modeLabel+`":"resize"}}}`))); err != nil {
		t.Fatal(err)
	}
	relabelled := time.Now()
	harness.Eventually(t, 60*time.Second, "two hand-overs refused", func() error {
		if got := refused(); got < max(refusedBefore, 0)+2 {
			return fmt.Errorf("ballast_resize_ladder_total{rung=hand_over,result=refused} %v (before %v)", got, refusedBefore)
		}
		return nil
	})
	t.Logf("relabel → second refusal counted: %s", time.Since(relabelled).Round(100*time.Millisecond))
	harness.Eventually(t, 15*time.Second, "guard key held after the refusals", func() error {
		node := &corev1.Node{}
		if err := n.Client.Get(ctx, client.ObjectKey{Name: NodeName}, node); err != nil {
			return err
		}
		if p := node.Spec.PodPreemptionPolicy; p == nil || !slices.Contains(p.DisableResizePreemption, ballastv1.ResizeGuardKey) {
			return fmt.Errorf("podPreemptionPolicy %+v", p)
		}
		return nil
	})
	if got := released(); got != releasedBefore {
		t.Errorf("ballast_resize_ladder_total{rung=hand_over,result=released} %v → %v with the PDB in place", releasedBefore, got)
	}
	if !slices.ContainsFunc(podEvents(t, ctx, grower), func(e string) bool {
		return strings.HasPrefix(e, "ResizeLadder cap:") && strings.Contains(e, "PodDisruptionBudget allows no disruption")
	}) {
		t.Errorf("no ResizeLadder cap event naming the PDB on the grower: %v", podEvents(t, ctx, grower))
	}
	untouched(t, ctx, filler)
	for _, what := range []string{"filler DisruptionTarget", "filler deleting"} {
		if _, ok := sa.at(what); ok {
			t.Errorf("%s with the PDB in place", what)
		}
	}
	stop()
	wg.Wait()
	for _, l := range sa.states {
		t.Log(l)
	}
	cur := &corev1.Pod{}
	if err := n.Client.Get(ctx, client.ObjectKeyFromObject(grower), cur); err != nil {
		t.Fatal(err)
	}
	cappedCPU := cur.Spec.Containers[0].Resources.Requests.Cpu().MilliValue()
	t.Logf("(a) grower capped at cpu %dm (room left %dm); filler untouched; guard held", cappedCPU, freeCPU(t, ctx))

	// (b) No PDB: handed over, preempted, completed; (d) Deferred on the profile meanwhile.
	sb := &seen{first: map[string]time.Time{}}
	wctx, stop = context.WithCancel(ctx)
	defer stop()
	watchPod(t, wctx, &wg, sb, "grower", cur)
	watchVictim(t, wctx, &wg, sb, "filler", filler)
	watchGuardBoth(t, wctx, &wg, sb)
	deferredBefore := controlCounter(t, ctx, "ballast_resize_outcome_total", `outcome="deferred"`, `namespace="handover"`)
	if err := n.Client.Delete(ctx, pdb); err != nil {
		t.Fatal(err)
	}
	pdbGone := time.Now()
	var onProfile time.Time
	var summary ballastv1.ResizeSummary
	harness.Eventually(t, 60*time.Second, "profile counts the Deferred grower", func() error {
		wp, err := profileOf(ctx, "worker")
		if err != nil {
			return err
		}
		if wp.Status.Resize.DeferredPods < 1 || wp.Status.Resize.OldestDeferredSince == nil {
			return fmt.Errorf("status.resize %+v", wp.Status.Resize)
		}
		onProfile, summary = time.Now(), wp.Status.Resize
		return nil
	})
	harness.Eventually(t, 60*time.Second, "grower Completed after the hand-over", func() error {
		if _, ok := sb.at("grower state Completed"); !ok {
			sb.mu.Lock()
			defer sb.mu.Unlock()
			return fmt.Errorf("seen %v", sb.states)
		}
		if _, ok := sb.at("grower actuated"); !ok {
			return fmt.Errorf("Completed before the kubelet actuated the growth")
		}
		return nil
	})
	harness.Eventually(t, 30*time.Second, "profile no longer counts it", func() error {
		wp, err := profileOf(ctx, "worker")
		if err != nil {
			return err
		}
		if wp.Status.Resize.DeferredPods != 0 || wp.Status.Resize.OldestDeferredSince != nil {
			return fmt.Errorf("status.resize %+v", wp.Status.Resize)
		}
		return nil
	})
	stop()
	wg.Wait()
	for _, l := range sb.states {
		t.Log(l)
	}
	t.Logf("(d) profile status.resize while Deferred: deferredPods %d, oldestDeferredSince %s", summary.DeferredPods, summary.OldestDeferredSince)
	if err := n.Client.Get(ctx, client.ObjectKeyFromObject(grower), cur); err != nil {
		t.Fatal(err)
	}
	st := cur.Status.ContainerStatuses[0]
	if cur.UID != grower.UID || st.RestartCount != 0 {
		t.Errorf("grower replaced or restarted: uid %s → %s, restarts %d", grower.UID, cur.UID, st.RestartCount)
	}
	if got := cur.Spec.Containers[0].Resources.Requests.Cpu().MilliValue(); got <= cappedCPU {
		t.Errorf("grower cpu %dm after the hand-over, want > %dm", got, cappedCPU)
	}
	if st.Resources == nil || !equalResources(*st.Resources, cur.Spec.Containers[0].Resources) {
		t.Errorf("grower status resources %v, spec %v", st.Resources, cur.Spec.Containers[0].Resources)
	}
	if _, ok := sb.at("filler DisruptionTarget"); !ok {
		t.Errorf("the filler was not preempted by the scheduler (no DisruptionTarget seen)")
	}
	if got := released(); got < max(releasedBefore, 0)+1 {
		t.Errorf("ballast_resize_ladder_total{rung=hand_over,result=released} %v, want > %v", got, releasedBefore)
	}
	if got := controlCounter(t, ctx, "ballast_resize_outcome_total", `outcome="deferred"`, `namespace="handover"`); got < max(deferredBefore, 0)+1 {
		t.Errorf("ballast_resize_outcome_total{outcome=deferred,namespace=handover} %v, want > %v", got, deferredBefore)
	}
	var ev []string
	for end := time.Now().Add(15 * time.Second); ; time.Sleep(200 * time.Millisecond) { // events are asynchronous
		ev = podEvents(t, ctx, cur)
		if slices.ContainsFunc(ev, func(e string) bool { return strings.HasPrefix(e, "ResizeLadder hand_over: guard released") }) &&
			slices.ContainsFunc(ev, func(e string) bool {
				return strings.HasPrefix(e, "ResizeDeferred in-place resize deferred by the kubelet")
			}) {
			break
		}
		if time.Now().After(end) {
			t.Errorf("grower events lack the hand-over or Ballast's ResizeDeferred: %v", ev)
			break
		}
	}
	// The figures.
	span := func(from, to string) string {
		a, ok1 := sb.at(from)
		b, ok2 := sb.at(to)
		if !ok1 || !ok2 {
			return "not seen"
		}
		return b.Sub(a).Round(time.Millisecond).String()
	}
	t.Logf("Ballast's growth patch seen → kubelet Deferred %s; hand-over (guard released) → filler DisruptionTarget %s; → growth actuated %s; → resize-state Completed %s",
		span("grower patch", "grower kubelet Deferred"), span("guard released", "filler DisruptionTarget"),
		span("guard released", "grower actuated"), span("guard released", "grower state Completed"))
	if _, released := sb.at("guard released"); !released {
		t.Errorf("the filler was preempted, but Ballast's key was never seen released before")
	}
	t.Logf("kubelet Deferred → actuated %s (filler preStop %ds); resize-state Deferred → Completed %s; Deferred seen on the profile %s after the PDB's deletion",
		span("grower kubelet Deferred", "grower actuated"), fillerStop, span("grower state Deferred", "grower state Completed"),
		onProfile.Sub(pdbGone).Round(time.Millisecond))
}

// untouched fails the test when p was deleted, replaced, marked for disruption or restarted.
func untouched(t *testing.T, ctx context.Context, p *corev1.Pod) {
	t.Helper()
	cur := &corev1.Pod{}
	if err := n.Client.Get(ctx, client.ObjectKeyFromObject(p), cur); err != nil {
		t.Errorf("pod %s: %v", p.Name, err)
		return
	}
	if cur.UID != p.UID || cur.DeletionTimestamp != nil || cur.Status.ContainerStatuses[0].RestartCount != 0 {
		t.Errorf("pod %s touched: uid %s → %s, deleting %v, restarts %d", p.Name, p.UID, cur.UID, cur.DeletionTimestamp,
			cur.Status.ContainerStatuses[0].RestartCount)
	}
	for _, c := range cur.Status.Conditions {
		if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue {
			t.Errorf("pod %s marked DisruptionTarget: %s %s", p.Name, c.Reason, c.Message)
		}
	}
}

// watchVictim records when p is marked DisruptionTarget (and by whom) and when its
// deletion starts.
func watchVictim(t *testing.T, ctx context.Context, wg *sync.WaitGroup, s *seen, who string, p *corev1.Pod) {
	t.Helper()
	w, err := n.Clientset.CoreV1().Pods(p.Namespace).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + p.Name})
	if err != nil {
		t.Fatal(err)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer w.Stop()
		for ev := range w.ResultChan() {
			cur, ok := ev.Object.(*corev1.Pod)
			if !ok || cur.UID != p.UID {
				continue
			}
			for _, c := range cur.Status.Conditions {
				if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue {
					if _, done := s.at(who + " DisruptionTarget"); !done {
						s.mark(who + " DisruptionTarget")
						s.log(fmt.Sprintf("%s: DisruptionTarget %s (%s)", who, c.Reason, c.Message))
					}
				}
			}
			if cur.DeletionTimestamp != nil {
				s.mark(who + " deleting")
			}
			if ev.Type == watch.Deleted {
				s.mark(who + " gone")
			}
		}
	}()
}

// watchGuardBoth records when Ballast's key is first seen held on the node and when it was
// last seen released after being held ("pdb" is marked at the start, the reference point).
func watchGuardBoth(t *testing.T, ctx context.Context, wg *sync.WaitGroup, s *seen) {
	t.Helper()
	w, err := n.Clientset.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + NodeName})
	if err != nil {
		t.Fatal(err)
	}
	s.mark("pdb")
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer w.Stop()
		held := false
		for ev := range w.ResultChan() {
			node, ok := ev.Object.(*corev1.Node)
			if !ok {
				continue
			}
			now := node.Spec.PodPreemptionPolicy != nil && slices.Contains(node.Spec.PodPreemptionPolicy.DisableResizePreemption, ballastv1.ResizeGuardKey)
			switch {
			case now && !held:
				s.mark("guard held")
				s.log("node: guard key held")
			case !now && held:
				// Ballast also releases an idle key between evaluations; the release that
				// hands over is the last one before the preemption.
				if _, preempted := s.at("filler DisruptionTarget"); !preempted {
					s.markLast("guard released")
				}
				s.log("node: guard key released")
			}
			held = now
		}
	}()
}

// markLast records what at now, replacing an earlier time.
func (s *seen) markLast(what string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.first[what] = time.Now()
}

// log appends a time-stamped line to the watch log.
func (s *seen) log(line string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.states = append(s.states, time.Now().Format("15:04:05.000")+" "+line)
}
