package profiles

import (
	"math"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/recommend"
)

// writtenStatus is a Sufficient profile as last written at at.
func writtenStatus(at time.Time) *ballastv1.WorkloadProfileStatus {
	t := metav1.NewTime(at)
	return &ballastv1.WorkloadProfileStatus{
		State: ballastv1.StateSufficient, MeetsThreshold: true, ActivePods: 3, ActiveWorkloads: 2,
		Summary: "app: cpu 300m, mem 192Mi/231Mi",
		Containers: []ballastv1.ContainerProfile{{Name: "app", LastSeen: &t,
			UsageStats: []ballastv1.UsageStats{
				{Resource: "cpu", Source: "kubernetes-metrics", Samples: 300, TimeSpan: "1h0m0s", Mean: "240m", P99: "400m", LastUpdated: &t},
				{Resource: "memory", Source: "kubernetes-metrics", Samples: 300, TimeSpan: "1h0m0s", P75: "192.00Mi", LastUpdated: &t},
			},
			Recommendations: map[string]ballastv1.Recommendation{
				"cpu":    {Request: "300m", RequestBasis: "avg 240m × 1.25 = 300m"},
				"memory": {Request: "192Mi", Limit: "231Mi", RequestBasis: "p75 192.00Mi", LimitBasis: "p99 192.00Mi × 1.2"},
			},
			Readiness: []ballastv1.ResourceReadiness{
				{Resource: "cpu", Ready: true, Samples: "300/12", TimeSpan: "1h0m0s/2m0s", CV: "0.100/2.000"},
				{Resource: "memory", Ready: true, Samples: "300/12", TimeSpan: "1h0m0s/2m0s", CV: "0.000/2.000"},
			},
		}},
		Conditions: []metav1.Condition{
			{Type: ballastv1.ConditionReady, Status: metav1.ConditionTrue, Reason: ballastv1.ReasonSamplesCollected, Message: "collected", LastTransitionTime: t},
			{Type: ballastv1.ConditionSufficient, Status: metav1.ConditionTrue, Reason: ballastv1.ReasonReadinessMet, Message: "every container meets readiness", LastTransitionTime: t},
		},
	}
}

// nextStats is st computed again at at with one more sample: every statistic moved.
func nextStats(st *ballastv1.WorkloadProfileStatus, at time.Time) *ballastv1.WorkloadProfileStatus {
	n := st.DeepCopy()
	t := metav1.NewTime(at)
	c := &n.Containers[0]
	c.LastSeen = &t
	for i := range c.UsageStats {
		u := &c.UsageStats[i]
		u.Samples++
		u.TimeSpan = "1h0m10s"
		u.LastUpdated = &t
	}
	c.UsageStats[0].Mean = "241m"
	c.Readiness[0].Samples = "301/12"
	return n
}

func TestShouldWriteStatus(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	now := t0.Add(10 * time.Second)
	const refresh = time.Minute
	old := writtenStatus(t0)
	stats := nextStats(old, now)
	with := func(f func(*ballastv1.WorkloadProfileStatus)) *ballastv1.WorkloadProfileStatus {
		n := nextStats(old, now)
		f(n)
		return n
	}
	rec := func(n *ballastv1.WorkloadProfileStatus, res string, f func(*ballastv1.Recommendation)) {
		r := n.Containers[0].Recommendations[res]
		f(&r)
		n.Containers[0].Recommendations[res] = r
	}
	cond := func(n *ballastv1.WorkloadProfileStatus, typ string, f func(*metav1.Condition)) {
		for i := range n.Conditions {
			if n.Conditions[i].Type == typ {
				f(&n.Conditions[i])
			}
		}
	}
	accruing := writtenStatus(t0)
	accruing.State, accruing.MeetsThreshold = ballastv1.StateAccruing, false
	cond(accruing, ballastv1.ConditionSufficient, func(c *metav1.Condition) {
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, ballastv1.ReasonAccruing, "app: cpu samples 300/400"
	})
	stale := writtenStatus(t0)
	stale.Conditions = append(stale.Conditions, metav1.Condition{Type: ballastv1.ConditionStale, Status: metav1.ConditionTrue,
		Reason: ballastv1.ReasonStoreReset, Message: "kept until the history re-accrues (10 samples so far)"})

	cases := map[string]struct {
		old, next *ballastv1.WorkloadProfileStatus
		lastWrite time.Time
		now       time.Time
		refresh   time.Duration
		write     bool
		why       string
	}{
		// Nothing but lastUpdated: never written, whatever the interval.
		"only lastUpdated moved": {old: old, next: with(func(n *ballastv1.WorkloadProfileStatus) {
			n.Containers[0] = *old.Containers[0].DeepCopy()
			t := metav1.NewTime(now)
			n.Containers[0].UsageStats[0].LastUpdated, n.Containers[0].UsageStats[1].LastUpdated = &t, &t
		}), lastWrite: t0, refresh: refresh, now: t0.Add(time.Hour), why: WriteUnchanged},

		// Statistics alone: held within the interval, written once it has passed.
		"statistics held":                   {old: old, next: stats, lastWrite: t0, refresh: refresh, why: WriteHeld},
		"statistics written after interval": {old: old, next: stats, lastWrite: t0, refresh: refresh, now: t0.Add(refresh), write: true, why: WriteRefresh},
		"interval 0 writes every change":    {old: old, next: stats, lastWrite: t0, why: WriteEveryTime, write: true},
		"never written writes":              {old: old, next: stats, refresh: refresh, write: true, why: WriteFirst},
		"a recommendation within 1% is held": {old: old, next: with(func(n *ballastv1.WorkloadProfileStatus) {
			rec(n, "cpu", func(r *ballastv1.Recommendation) { r.Request, r.RequestBasis = "302m", "avg 241m × 1.25 = 302m" })
			rec(n, "memory", func(r *ballastv1.Recommendation) { r.Limit = "233Mi" }) // +0.87 %
			n.Summary = "app: cpu 302m, mem 192Mi/233Mi"
		}), lastWrite: t0, refresh: refresh, why: WriteHeld},
		"the same quantity spelt otherwise is held": {old: old, next: with(func(n *ballastv1.WorkloadProfileStatus) {
			rec(n, "cpu", func(r *ballastv1.Recommendation) { r.Request = "0.3" })
		}), lastWrite: t0, refresh: refresh, why: WriteHeld},
		"the Accruing message's counts are held": {old: accruing, next: with(func(n *ballastv1.WorkloadProfileStatus) {
			*n = *nextStats(accruing, now)
			cond(n, ballastv1.ConditionSufficient, func(c *metav1.Condition) { c.Message = "app: cpu samples 301/400" })
		}), lastWrite: t0, refresh: refresh, why: WriteHeld},
		"Stale's sample count is held": {old: stale, next: with(func(n *ballastv1.WorkloadProfileStatus) {
			*n = *stale.DeepCopy()
			cond(n, ballastv1.ConditionStale, func(c *metav1.Condition) { c.Message = "kept until the history re-accrues (11 samples so far)" })
		}), lastWrite: t0, refresh: refresh, why: WriteHeld},
		"a fallback's sample count and share are held": {old: func() *ballastv1.WorkloadProfileStatus {
			o := writtenStatus(t0)
			o.Fallback = &ballastv1.FallbackStatus{Samples: 10, Share: "10.0%", UncoveredPods: 1}
			return o
		}(), next: with(func(n *ballastv1.WorkloadProfileStatus) {
			n.Fallback = &ballastv1.FallbackStatus{Samples: 11, Share: "10.9%", UncoveredPods: 1}
		}), lastWrite: t0, refresh: refresh, why: WriteHeld},

		// Written at once, inside the interval.
		"state": {old: accruing, next: with(func(n *ballastv1.WorkloadProfileStatus) {}), lastWrite: t0, refresh: refresh, write: true, why: "state"},
		"meetsThreshold": {old: old, next: with(func(n *ballastv1.WorkloadProfileStatus) { n.MeetsThreshold = false }),
			lastWrite: t0, refresh: refresh, write: true, why: "meetsThreshold"},
		"activePods": {old: old, next: with(func(n *ballastv1.WorkloadProfileStatus) { n.ActivePods = 4 }),
			lastWrite: t0, refresh: refresh, write: true, why: "activePods"},
		"activeWorkloads": {old: old, next: with(func(n *ballastv1.WorkloadProfileStatus) { n.ActiveWorkloads = 1 }),
			lastWrite: t0, refresh: refresh, write: true, why: "activeWorkloads"},
		"resize": {old: old, next: with(func(n *ballastv1.WorkloadProfileStatus) { n.Resize.DeferredPods = 1 }),
			lastWrite: t0, refresh: refresh, write: true, why: "resize"},
		"fallback appears": {old: old, next: with(func(n *ballastv1.WorkloadProfileStatus) {
			n.Fallback = &ballastv1.FallbackStatus{Samples: 1, Share: "0.3%"}
		}), lastWrite: t0, refresh: refresh, write: true, why: "fallback"},
		"fallback coverage": {old: func() *ballastv1.WorkloadProfileStatus {
			o := writtenStatus(t0)
			o.Fallback = &ballastv1.FallbackStatus{Samples: 10, UncoveredPods: 1}
			return o
		}(), next: with(func(n *ballastv1.WorkloadProfileStatus) {
			n.Fallback = &ballastv1.FallbackStatus{Samples: 10, UncoveredPods: 2}
		}), lastWrite: t0, refresh: refresh, write: true, why: "fallback"},
		"a condition's status": {old: old, next: with(func(n *ballastv1.WorkloadProfileStatus) {
			cond(n, ballastv1.ConditionReady, func(c *metav1.Condition) {
				c.Status, c.Reason, c.Message = metav1.ConditionFalse, ballastv1.ReasonMissingSamples, "missing: cpu"
			})
		}), lastWrite: t0, refresh: refresh, write: true, why: "condition Ready"},
		"a condition's reason": {old: old, next: with(func(n *ballastv1.WorkloadProfileStatus) {
			cond(n, ballastv1.ConditionReady, func(c *metav1.Condition) { c.Reason = ballastv1.ReasonPolicyInvalid })
		}), lastWrite: t0, refresh: refresh, write: true, why: "condition Ready"},
		"a condition's message": {old: old, next: with(func(n *ballastv1.WorkloadProfileStatus) {
			cond(n, ballastv1.ConditionReady, func(c *metav1.Condition) { c.Message = "other" })
		}), lastWrite: t0, refresh: refresh, write: true, why: "condition Ready"},
		"a condition appears": {old: old, next: with(func(n *ballastv1.WorkloadProfileStatus) {
			n.Conditions = append(n.Conditions, metav1.Condition{Type: ballastv1.ConditionOrphaned, Status: metav1.ConditionTrue})
		}), lastWrite: t0, refresh: refresh, write: true, why: "conditions"},
		"a container appears": {old: old, next: with(func(n *ballastv1.WorkloadProfileStatus) {
			n.Containers = append(n.Containers, ballastv1.ContainerProfile{Name: "side"})
		}), lastWrite: t0, refresh: refresh, write: true, why: "containers"},
		"a container is replaced": {old: old, next: with(func(n *ballastv1.WorkloadProfileStatus) { n.Containers[0].Name = "web" }),
			lastWrite: t0, refresh: refresh, write: true, why: "containers"},
		"a series appears": {old: old, next: with(func(n *ballastv1.WorkloadProfileStatus) {
			n.Containers[0].UsageStats = append(n.Containers[0].UsageStats, ballastv1.UsageStats{Resource: "ephemeral-storage", Source: "kubelet-summary"})
		}), lastWrite: t0, refresh: refresh, write: true, why: "series of app"},
		"a pod series appears": {old: old, next: with(func(n *ballastv1.WorkloadProfileStatus) {
			n.PodUsageStats = []ballastv1.UsageStats{{Resource: "ephemeral-storage", Source: "kubelet-summary"}}
		}), lastWrite: t0, refresh: refresh, write: true, why: "podUsageStats"},
		"a readiness gate flips": {old: old, next: with(func(n *ballastv1.WorkloadProfileStatus) { n.Containers[0].Readiness[1].Ready = false }),
			lastWrite: t0, refresh: refresh, write: true, why: "readiness of app"},
		"a source error": {old: old, next: with(func(n *ballastv1.WorkloadProfileStatus) {
			n.Containers[0].Readiness[1].SourceError = "connection refused"
		}), lastWrite: t0, refresh: refresh, write: true, why: "readiness of app"},
		"a request beyond 1%": {old: old, next: with(func(n *ballastv1.WorkloadProfileStatus) {
			rec(n, "cpu", func(r *ballastv1.Recommendation) { r.Request = "304m" })
		}), lastWrite: t0, refresh: refresh, write: true, why: "recommendation app cpu request"},
		"a limit beyond 1% down": {old: old, next: with(func(n *ballastv1.WorkloadProfileStatus) {
			rec(n, "memory", func(r *ballastv1.Recommendation) { r.Limit = "228Mi" })
		}), lastWrite: t0, refresh: refresh, write: true, why: "recommendation app memory limit"},
		"a limit appears": {old: old, next: with(func(n *ballastv1.WorkloadProfileStatus) {
			rec(n, "cpu", func(r *ballastv1.Recommendation) { r.Limit = "600m" })
		}), lastWrite: t0, refresh: refresh, write: true, why: "recommendation app cpu limit"},
		"a recommendation disappears": {old: old, next: with(func(n *ballastv1.WorkloadProfileStatus) {
			delete(n.Containers[0].Recommendations, "cpu")
		}), lastWrite: t0, refresh: refresh, write: true, why: "recommendation app set"},
		"an OOM raise within 1%": {old: old, next: with(func(n *ballastv1.WorkloadProfileStatus) {
			rec(n, "memory", func(r *ballastv1.Recommendation) { r.Limit, r.LimitBasis = "232Mi", recommend.BasisOOM+" to 232Mi" })
		}), lastWrite: t0, refresh: refresh, write: true, why: "recommendation app memory OOM raise"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			at := tc.now
			if at.IsZero() {
				at = now
			}
			write, why := ShouldWriteStatus(tc.old, tc.next, tc.lastWrite, at, tc.refresh)
			if write != tc.write || why != tc.why {
				t.Errorf("ShouldWriteStatus = %v, %q; want %v, %q", write, why, tc.write, tc.why)
			}
		})
	}
}

// TestHeldDriftIsBounded: a recommendation creeping up by 0.5 % a cycle is written each
// time it gets more than 1 % away from the stored value, so what is stored never lags the
// computation by more than that; statistics alone are written once per interval.
func TestHeldDriftIsBounded(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	run := func(creep float64) (writes []string, worstLag float64) {
		stored := writtenStatus(t0)
		lastWrite, cpu := t0, 300.0
		for i := 1; i <= 30; i++ {
			now := t0.Add(time.Duration(i) * 10 * time.Second)
			next := nextStats(stored, now)
			cpu *= 1 + creep
			r := next.Containers[0].Recommendations["cpu"]
			r.Request = formatMilli(cpu)
			next.Containers[0].Recommendations["cpu"] = r
			if write, why := ShouldWriteStatus(stored, next, lastWrite, now, time.Minute); write {
				writes = append(writes, why)
				stored, lastWrite = next, now
				continue
			}
			have := stored.Containers[0].Recommendations["cpu"].Request
			worstLag = max(worstLag, lag(t, have, r.Request))
		}
		return writes, worstLag
	}
	writes, worst := run(0.005)
	if len(writes) < 9 || len(writes) > 12 {
		t.Errorf("0.5 %% creep: %d writes %v, want one every second or third cycle", len(writes), writes)
	}
	for _, w := range writes {
		if w != "recommendation app cpu request" {
			t.Errorf("0.5 %% creep: write because %q, want the drift", w)
		}
	}
	if worst > RecommendationTolerance {
		t.Errorf("0.5 %% creep: the stored request lagged by %.2f %%, more than the tolerance", 100*worst)
	}
	writes, _ = run(0)
	if want := []string{WriteRefresh, WriteRefresh, WriteRefresh, WriteRefresh, WriteRefresh}; !slices.Equal(writes, want) {
		t.Errorf("statistics only: writes %v, want %v (one per minute over 5 minutes)", writes, want)
	}
}

func lag(t *testing.T, have, want string) float64 {
	t.Helper()
	h, w := resource.MustParse(have), resource.MustParse(want)
	return math.Abs(w.AsApproximateFloat64()-h.AsApproximateFloat64()) / h.AsApproximateFloat64()
}

func formatMilli(m float64) string {
	return recommend.FormatValue(recommend.ResourceCPU, int64(m))
}

func TestLastStatusWrite(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	st := writtenStatus(t0)
	later := metav1.NewTime(t0.Add(time.Minute))
	st.PodUsageStats = []ballastv1.UsageStats{{Resource: "ephemeral-storage", LastUpdated: &later}}
	if got := LastStatusWrite(st); !got.Equal(later.Time) {
		t.Errorf("LastStatusWrite = %v, want the newest lastUpdated %v", got, later.Time)
	}
	if got := LastStatusWrite(&ballastv1.WorkloadProfileStatus{}); !got.IsZero() {
		t.Errorf("LastStatusWrite of an empty status = %v, want zero", got)
	}
}

// TestLastWrites: a write this process made counts even when it carried no statistics (or
// kept old ones through a store reset); without one, the stored lastUpdated stands in.
func TestLastWrites(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	stored := writtenStatus(t0)
	var w lastWrites
	if got := w.last("p", stored); !got.Equal(t0) {
		t.Errorf("after a restart: %v, want the stored lastUpdated %v", got, t0)
	}
	w.wrote("p", t0.Add(time.Minute))
	if got := w.last("p", stored); !got.Equal(t0.Add(time.Minute)) {
		t.Errorf("after a write: %v, want the write's time", got)
	}
	if got := w.last("p", writtenStatus(t0.Add(time.Hour))); !got.Equal(t0.Add(time.Hour)) {
		t.Errorf("a newer stored write (another leader): %v, want it", got)
	}
	w.forget("p")
	if got := w.last("p", &ballastv1.WorkloadProfileStatus{}); !got.IsZero() {
		t.Errorf("forgotten, nothing stored: %v, want zero (write)", got)
	}
}

// TestKeyedMutex: a second pass over one profile waits for the first, another profile's
// does not, and released locks leave nothing behind.
func TestKeyedMutex(t *testing.T) {
	var k keyedMutex
	unlockA := k.lock("a")
	entered := make(chan struct{})
	go func() {
		defer k.lock("a")()
		close(entered)
	}()
	k.lock("b")() // another profile: not blocked by a's holder
	select {
	case <-entered:
		t.Fatal("a second pass over a ran while the first held it")
	case <-time.After(50 * time.Millisecond):
	}
	unlockA()
	<-entered
	// The goroutine's release runs after close(entered); wait for the map to empty.
	for i := 0; ; i++ {
		k.mu.Lock()
		n := len(k.m)
		k.mu.Unlock()
		if n == 0 {
			break
		}
		if i == 1000 {
			t.Fatalf("%d locks left after every pass released", n)
		}
		time.Sleep(time.Millisecond)
	}
}
