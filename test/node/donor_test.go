package node

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/test/harness"
)

// seen is a time-stamped log of what the watches saw, shared by their goroutines.
type seen struct {
	mu     sync.Mutex
	first  map[string]time.Time
	states []string
}

func (s *seen) mark(what string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.first[what]; !ok {
		s.first[what] = time.Now()
	}
}

func (s *seen) at(what string) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.first[what]
	return t, ok
}

// testResizeDonor: a growth that does not fit on the full node. The node is filled with a
// non-enrolled pod; the donor (its own profile, under an hourly policy so only the grower's
// plan can pull its shrink forward) has a pending shrink; the grower (profile loadapp/worker)
// needs cpu. Ballast holds its guard key on the Node, sends the donor's shrink and the
// growth after it; the real kubelet defers the growth until the donor's shrink is actuated
// (the donor's containerd shim is stopped meanwhile, so the shrink cannot win the race),
// Ballast records the Deferred state, and the kubelet then completes the growth itself: nothing is preempted.
func testResizeDonor(t *testing.T, ctx context.Context) {
	createNamespace(t, ctx, "donor")
	createNamespace(t, ctx, "grow")
	pol := &ballastv1.ResourcePolicy{ObjectMeta: metav1.ObjectMeta{Name: "hourly", Namespace: "donor"},
		Spec: ballastv1.ResourcePolicySpec{
			Metrics: []ballastv1.MetricSpec{
				{Resource: "cpu", Field: "request", Source: "kubernetes-metrics", Aggregation: "avg", Headroom: "1.25"},
				{Resource: "memory", Field: "request", Source: "kubernetes-metrics", Aggregation: "p75", Headroom: "1.0"},
				{Resource: "memory", Field: "limit", Source: "kubernetes-metrics", Aggregation: "p99", Headroom: "1.2"},
			},
			Readiness: ballastv1.Readiness{MinDataPoints: 5, MinTimeSpan: "20s", MaxCV: "2.0"},
			Behaviors: ballastv1.Behaviors{Resize: ballastv1.ResizeBehavior{Interval: "1h"}},
		}}
	if err := n.Client.Create(ctx, pol); err != nil {
		t.Fatal(err)
	}
	// Measure mode first: the donor's profile turns Sufficient (its one evaluation) with no
	// resize-mode pod, so the donor's drift stays pending until the relabel below.
	var donor *corev1.Pod
	harness.Eventually(t, 30*time.Second, "donor bound to the hourly policy", func() error {
		_ = n.Client.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "donor", Namespace: "donor"}}, client.GracePeriodSeconds(0))
		harness.Eventually(t, 10*time.Second, "old donor gone", func() error {
			return client.IgnoreNotFound(n.Client.Get(ctx, client.ObjectKey{Namespace: "donor", Name: "donor"}, &corev1.Pod{}))
		})
		donor = loadPod("donor", "donor", "donor", "measure", []string{"-cpu-millis", "20", "-memory-mib", "16"},
			res("400m", "64Mi"), res("", "128Mi"))
		if err := n.Client.Create(ctx, donor); err != nil {
			return err
		}
		if got := donor.Annotations[ballastv1.PolicyRefAnnotation]; got != "donor/hourly" {
			return fmt.Errorf("policy-ref %q", got)
		}
		return nil
	})
	donor = waitRunning(t, ctx, donor)
	grower := runningPod(t, ctx, loadPod("grow", "grower", "worker", "measure",
		[]string{"-cpu-millis", fmt.Sprint(loadMilliCPU), "-memory-mib", fmt.Sprint(loadMiB)},
		res("50m", "160Mi"), res("", "200Mi")))
	// The donor's profile must be Sufficient before the node is filled (its policy needs 5
	// samples over 20 s; the agent samples every second): a profile still Accruing after
	// 3 min fails the step with its status.
	var dwp *ballastv1.WorkloadProfile
	harness.Eventually(t, 3*time.Minute, "profile loadapp/donor Sufficient", func() error {
		var err error
		if dwp, err = profileOf(ctx, "donor"); err != nil {
			return err
		}
		if dwp.Status.State != ballastv1.StateSufficient {
			return fmt.Errorf("state %q, conditions %+v, containers %+v", dwp.Status.State, dwp.Status.Conditions, dwp.Status.Containers)
		}
		return nil
	})
	r := recommendation(dwp, "cpu").Request
	if r == "" {
		t.Fatalf("donor has no cpu recommendation: %+v", dwp.Status.Containers)
	}
	if q := quantity(t, "donor cpu recommendation", r); q.MilliValue() >= 300 {
		t.Fatalf("donor cpu recommendation %q: want well under its 400m request, so it has a shrink to give", r)
	}

	// Fill the node: all but 40m of cpu is requested, so the grower's step (50m → ≈150m)
	// does not fit until the donor's shrink (400m → ≈210m) is actuated.
	free := freeCPU(t, ctx)
	filler := loadPod("grow", "filler", "filler", "", []string{"-cpu-millis", "0", "-memory-mib", "0"},
		res(fmt.Sprintf("%dm", free-40), "16Mi"), nil)
	delete(filler.Labels, modeLabel)
	filler = runningPod(t, ctx, filler)
	t.Logf("node full: filler requests %dm, %dm left", free-40, freeCPU(t, ctx))
	deferredBefore := kubeletCounter(t, ctx, "kubelet_pod_deferred_accepted_resizes_total")

	s := &seen{first: map[string]time.Time{}}
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	watchPod(t, wctx, &wg, s, "donor", donor)
	watchPod(t, wctx, &wg, s, "grower", grower)
	watchGuard(t, wctx, &wg, s)

	// Deferred is required. Left alone it is a race: the growth is sent right after the
	// donor's shrink, and a kubelet that has actuated the shrink (≈ 25 ms) before the
	// growth arrives admits it at once. So the donor's containerd shim is stopped
	// (SIGSTOP) while both pods are relabelled: the kubelet accepts the donor's shrink but
	// its UpdateContainerResources waits on the shim, and it counts room only once a
	// shrink is actuated, so the growth is deferred. containerd, the other pods and the
	// donor's own processes keep running: the kubelet publishes PodResizePending/Deferred
	// and Ballast records it; the shim is continued once both are seen.
	shim := podShim(t, donor)
	if err := shim.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	continued := false
	cont := func() {
		if !continued {
			continued = true
			if err := shim.Signal(syscall.SIGCONT); err != nil {
				t.Errorf("SIGCONT the donor's shim: %v", err)
			}
			t.Logf("the donor's shim stopped for %s", time.Since(stopped).Round(time.Millisecond))
		}
	}
	defer cont()
	for _, p := range []*corev1.Pod{donor, grower} {
		if err := n.Client.Patch(ctx, p, client.RawPatch(types.MergePatchType,
			[]byte(`{"metadata":{"labels":{"`+modeLabel+`":"resize"}}}`))); err != nil {
			t.Fatal(err)
		}
	}
	harness.Eventually(t, 45*time.Second, "the growth Deferred by the kubelet and recorded by Ballast", func() error {
		_, kubelet := s.at("grower kubelet Deferred")
		_, ballast := s.at("grower state Deferred")
		if !kubelet || !ballast {
			s.mu.Lock()
			defer s.mu.Unlock()
			return fmt.Errorf("kubelet condition seen %v, Ballast's resize-state seen %v; %v", kubelet, ballast, s.states)
		}
		return nil
	})
	if _, ok := s.at("grower actuated"); ok {
		t.Errorf("the growth was actuated while the donor's shrink could not be")
	}
	// The stop held the donor's shrink: its cgroup still has the 400m shares.
	held, _ := containerCgroup(t, donor)
	if held != milliToShares(400) {
		t.Errorf("donor cpu.shares %d while its shim was stopped, want %d (400m): the shrink was actuated during the stop", held, milliToShares(400))
	}
	cont()
	harness.Eventually(t, 45*time.Second, "grower Completed", func() error {
		if _, ok := s.at("grower state Completed"); !ok {
			s.mu.Lock()
			defer s.mu.Unlock()
			return fmt.Errorf("seen %v", s.states)
		}
		return nil
	})
	stop()
	wg.Wait()
	for _, l := range s.states {
		t.Log(l)
	}
	// The growth went, after the donor's shrink; both were actuated by the kubelet.
	if err := n.Client.Get(ctx, client.ObjectKeyFromObject(grower), grower); err != nil {
		t.Fatal(err)
	}
	if err := n.Client.Get(ctx, client.ObjectKeyFromObject(donor), donor); err != nil {
		t.Fatal(err)
	}
	gcpu, dcpu := grower.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU], donor.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]
	if gcpu.MilliValue() <= 50 || dcpu.MilliValue() >= 400 {
		t.Errorf("grower cpu %s (want > 50m), donor cpu %s (want < 400m)", gcpu.String(), dcpu.String())
	}
	if _, ok := s.at("guard held"); !ok {
		t.Errorf("Ballast's guard key %s never seen on the node", ballastv1.ResizeGuardKey)
	}
	// Nothing preempted: the filler and the donor are the same pods, not restarted.
	for _, p := range []*corev1.Pod{filler, donor, grower} {
		cur := &corev1.Pod{}
		if err := n.Client.Get(ctx, client.ObjectKeyFromObject(p), cur); err != nil {
			t.Errorf("pod %s: %v", p.Name, err)
			continue
		}
		if cur.UID != p.UID || cur.DeletionTimestamp != nil || cur.Status.ContainerStatuses[0].RestartCount != 0 {
			t.Errorf("pod %s preempted or restarted: uid %s → %s, deleting %v, restarts %d", p.Name, p.UID, cur.UID,
				cur.DeletionTimestamp, cur.Status.ContainerStatuses[0].RestartCount)
		}
	}
	after, _ := containerCgroup(t, donor)
	t.Logf("donor cpu.shares: %d while its shim was stopped, %d after (400m is %d, %s is %d)", held, after,
		milliToShares(400), dcpu.String(), milliToShares(dcpu.MilliValue()))
	deferredAfter := kubeletCounter(t, ctx, "kubelet_pod_deferred_accepted_resizes_total")
	t.Logf("kubelet_pod_deferred_accepted_resizes_total %v → %v", deferredBefore, deferredAfter)
	// Events are recorded asynchronously (client-go's broadcaster): poll for the ladder's.
	var ev []string
	for end := time.Now().Add(15 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		ev = podEvents(t, ctx, grower)
		if slices.ContainsFunc(ev, func(e string) bool { return strings.HasPrefix(e, "ResizeLadder donors:") }) {
			t.Logf("grower events: %v", ev)
			break
		}
		if time.Now().After(end) {
			t.Errorf("no ResizeLadder donors event on the grower within 15 s: %v", ev)
			break
		}
	}
	// The kubelet deferred the growth and accepted it on a retry once the donor's shrink was
	// actuated.
	if deferredAfter <= deferredBefore {
		t.Errorf("kubelet_pod_deferred_accepted_resizes_total %v → %v: the deferred growth was not accepted on a retry", deferredBefore, deferredAfter)
	}
	kd, _ := s.at("grower kubelet Deferred")
	done, seenDone := s.at("grower actuated")
	if !seenDone {
		t.Errorf("the kubelet's completion of the growth was not seen by the watch")
	}
	t.Logf("kubelet Deferred (condition seen) → growth actuated (status = spec): %s (the shim was stopped for part of it)", done.Sub(kd).Round(time.Millisecond))
	if d, ok := s.at("donor patch"); ok {
		done, _ := s.at("grower actuated")
		t.Logf("donor patch seen → growth actuated: %s", done.Sub(d).Round(time.Millisecond))
	}
	deferred := controlCounter(t, ctx, "ballast_resize_outcome_total", `outcome="deferred"`, `namespace="grow"`)
	t.Logf("Ballast metrics: ladder donors %v, guard %v; outcomes in grow: deferred %v, completed %v",
		controlCounter(t, ctx, "ballast_resize_ladder_total", `rung="donors"`),
		controlCounter(t, ctx, "ballast_resize_ladder_total", `rung="guard"`), deferred,
		controlCounter(t, ctx, "ballast_resize_outcome_total", `outcome="completed"`, `namespace="grow"`))
	// Ballast's record of the Deferred state: the pod annotation (seen above), its event and
	// its metric.
	if deferred < 1 {
		t.Errorf("resize-state Deferred recorded but ballast_resize_outcome_total{outcome=deferred,namespace=grow} is %v", deferred)
	}
	harness.Eventually(t, 15*time.Second, "Ballast's ResizeDeferred event on the grower", func() error {
		if ev := podEvents(t, ctx, grower); !slices.ContainsFunc(ev, func(e string) bool {
			return strings.HasPrefix(e, "ResizeDeferred in-place resize deferred by the kubelet")
		}) {
			return fmt.Errorf("grower events %v", ev)
		}
		return nil
	})
	d, _ := s.at("grower state Deferred")
	c, _ := s.at("grower state Completed")
	t.Logf("resize-state Deferred → Completed (Ballast's annotations, as watched): %s", c.Sub(d).Round(time.Millisecond))
	for _, p := range []*corev1.Pod{filler, donor, grower} {
		if err := n.Client.Delete(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
}

// watchPod records p's spec changes, the kubelet's resize conditions, its actuation (status
// resources = spec after a change) and Ballast's resize-state values, each the first time.
func watchPod(t *testing.T, ctx context.Context, wg *sync.WaitGroup, s *seen, who string, p *corev1.Pod) {
	t.Helper()
	w, err := n.Clientset.CoreV1().Pods(p.Namespace).Watch(ctx, metav1.ListOptions{
		FieldSelector: "metadata.name=" + p.Name, ResourceVersion: p.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	spec0 := p.Spec.Containers[0].Resources
	lastState := p.Annotations[ballastv1.ResizeStateAnnotation] // a new value is a transition
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer w.Stop()
		for ev := range w.ResultChan() {
			if ev.Type != watch.Modified {
				continue
			}
			cur, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			spec := cur.Spec.Containers[0].Resources
			changed := !equalResources(spec, spec0)
			if changed {
				s.mark(who + " patch")
			}
			resizing := false
			for _, c := range cur.Status.Conditions {
				if (c.Type == corev1.PodResizePending || c.Type == corev1.PodResizeInProgress) && c.Status == corev1.ConditionTrue {
					resizing = true
					s.mark(who + " kubelet " + c.Reason)
					if c.Type == corev1.PodResizeInProgress {
						s.mark(who + " kubelet InProgress")
					}
				}
			}
			// The kubelet is done with the generation: observed, no resize condition left.
			if changed && !resizing && cur.Status.ObservedGeneration >= cur.Generation {
				s.mark(who + " actuated")
			}
			if state := cur.Annotations[ballastv1.ResizeStateAnnotation]; state != "" && state != lastState {
				lastState = state
				s.mark(who + " state " + state)
				s.mu.Lock()
				var actual corev1.ResourceList
				if st := cur.Status.ContainerStatuses; len(st) > 0 && st[0].Resources != nil {
					actual = st[0].Resources.Requests
				}
				s.states = append(s.states, fmt.Sprintf("%s %s: resize-state %s, spec cpu %s, status requests %v, generation %d observed %d",
					time.Now().Format("15:04:05.000"), who, state, spec.Requests.Cpu().String(), actual, cur.Generation, cur.Status.ObservedGeneration))
				s.mu.Unlock()
			}
		}
	}()
}

// watchGuard records when Ballast's key first appears in the node's disableResizePreemption.
func watchGuard(t *testing.T, ctx context.Context, wg *sync.WaitGroup, s *seen) {
	t.Helper()
	w, err := n.Clientset.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + NodeName})
	if err != nil {
		t.Fatal(err)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer w.Stop()
		for ev := range w.ResultChan() {
			node, ok := ev.Object.(*corev1.Node)
			if !ok || node.Spec.PodPreemptionPolicy == nil {
				continue
			}
			if slices.Contains(node.Spec.PodPreemptionPolicy.DisableResizePreemption, ballastv1.ResizeGuardKey) {
				s.mark("guard held")
				s.mu.Lock()
				s.states = append(s.states, time.Now().Format("15:04:05.000")+" node: guard key held")
				s.mu.Unlock()
			}
		}
	}()
}

// podShim is the containerd shim of p's sandbox: the parent of its app container's first
// process (runc's shim is the subreaper of the containers it starts).
func podShim(t *testing.T, p *corev1.Pod) *os.Process {
	t.Helper()
	dir, err := podCgroup("cpu", *p)
	if err != nil {
		t.Fatal(err)
	}
	_, id, _ := strings.Cut(p.Status.ContainerStatuses[0].ContainerID, "://")
	procs, err := os.ReadFile(filepath.Join(dir, id, "cgroup.procs"))
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(strings.TrimSpace(string(procs)), "\n")
	stat, err := os.ReadFile(filepath.Join("/proc", first, "stat"))
	if err != nil {
		t.Fatal(err)
	}
	// pid (comm) state ppid ...: comm may hold spaces, so the fields after the last ')'.
	f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	ppid, err := strconv.Atoi(f[1])
	if err != nil {
		t.Fatalf("/proc/%s/stat: %v", first, err)
	}
	comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", ppid))
	if err != nil || !strings.HasPrefix(string(comm), "containerd-shim") {
		t.Fatalf("parent %d of %s's process %s is %q (%v), not a containerd shim", ppid, p.Name, first, comm, err)
	}
	proc, err := os.FindProcess(ppid)
	if err != nil {
		t.Fatal(err)
	}
	return proc
}
