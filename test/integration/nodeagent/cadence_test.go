package nodeagent

import (
	"context"
	"fmt"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/series"
)

// storagePolicy creates a kubeletSummary MetricsSource polled every interval and a
// ClusterResourcePolicy sizing ephemeral storage from it; it returns the policy's name.
func storagePolicy(t testing.TB, interval string) string {
	t.Helper()
	name := newName("storage")
	for _, obj := range []client.Object{
		&ballastv1.MetricsSource{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: ballastv1.MetricsSourceSpec{
			Type: ballastv1.SourceTypeKubeletSummary, Config: ballastv1.MetricsSourceConfig{PollInterval: interval}}},
		&ballastv1.ClusterResourcePolicy{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: ballastv1.ResourcePolicySpec{
			Metrics: []ballastv1.MetricSpec{{Resource: "ephemeral-storage", Field: "request", Source: name, Aggregation: "max"}}}},
	} {
		if err := srv.Kube.Client.Create(context.Background(), obj); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	return name
}

// The ephemeral-storage cadence follows the policy's kubeletSummary source (SPEC §4.1),
// floored at the kubelet's refresh period (--kubelet-min-interval: 10 s by default, 1 s
// here so the stub kubelet can refresh every 5 s and keep the test short), and counts by
// the stats' own timestamps:
//   - a 12 s source: exactly one sample per container per 12 s window (count = windows
//     spanned by the first and last sample: none doubled, none skipped);
//   - a 1 s source on a kubelet that refreshes every 5 s: one sample per refresh, never
//     the same stats twice although the agent reads the Summary more often than that.
func TestEphemeralStorageCadence(t *testing.T) {
	ensureCluster(t)
	slowPolicy, fastPolicy := storagePolicy(t, "12s"), storagePolicy(t, "1s")
	ns, node := createNamespace(t), newName("node")
	slowProfile, slowHash := newName("slow"), newHash()
	fastProfile, fastHash := newName("fast"), newHash()
	createProfile(t, slowProfile, slowHash)
	createProfile(t, fastProfile, fastHash)

	s := newSim(t)
	kl := newKubeletStub(t)
	const refresh = 5 * time.Second
	slow := &podSpec{ns: ns, name: "slow-1", node: node, profile: slowProfile, policy: slowPolicy, containers: []string{"app", "side"}}
	fast := &podSpec{ns: ns, name: "fast-1", node: node, profile: fastProfile, policy: fastPolicy, containers: []string{"app"}}
	for _, ps := range []*podSpec{slow, fast} {
		ps.create(t)
		vals := map[string]simCtr{}
		for _, c := range ps.containers {
			vals[c] = simCtr{milli: 10, v: memValues(10*mi, 0)}
		}
		s.addPod(t, ps, 0, vals)
	}
	kl.add(slow, map[string][2]uint64{"app": {4 * mi, mi}, "side": {2 * mi, 0}}, nil)
	// fast's rootfs grows by 1 MiB per refresh: its k-th refresh since the stub started
	// reads (k + 8) MiB, so the samples' sum shows any refresh counted twice or skipped.
	kl.addRefreshed(fast, map[string][2]uint64{"app": {7 * mi, mi}}, nil, refresh)

	startAgent(t, node, s.tree.Root, append(kl.flags(), "--debug-auth=false")...)
	r := storeReader(t)

	const window = 12 * time.Second
	windows := func(h *series.Histogram) int64 {
		return int64(h.LastSeen().Truncate(window).Sub(h.FirstSeen().Truncate(window))/window) + 1
	}
	eventually(t, 90*time.Second, "one sample per 12 s window per container, one per refresh of the 1 s pod", func() error {
		hs, err := read(r, slowHash)
		if err != nil {
			return err
		}
		for _, tok := range []string{"app/ephemeral-storage/usage", "side/ephemeral-storage/usage"} {
			h := hs[tok]
			if h == nil || h.Count() < 3 {
				return fmt.Errorf("slow %s: %v, want ≥ 3 samples", tok, h)
			}
			if n, w := h.Count(), windows(h); n != w {
				t.Fatalf("slow %s: %d samples over %d windows of 12 s (first %v, last %v)", tok, n, w, h.FirstSeen(), h.LastSeen())
			}
		}
		hs, err = read(r, fastHash)
		if err != nil {
			return err
		}
		h := hs["app/ephemeral-storage/usage"]
		if h == nil || h.Count() < 4 {
			return fmt.Errorf("fast app: %v, want ≥ 4 samples", h)
		}
		// Refreshes k0..k1 (from the first and last values) each exactly once.
		k0, k1 := int64(h.Min()/mi)-8, int64(h.Max()/mi)-8
		var want float64
		for k := k0; k <= k1; k++ {
			want += float64(k+8) * mi
		}
		if h.Count() != k1-k0+1 || h.Sum() != want {
			t.Fatalf("fast app: %d samples summing to %v MiB; refreshes %d..%d read once each would be %d summing to %v MiB",
				h.Count(), h.Sum()/mi, k0, k1, k1-k0+1, want/mi)
		}
		// The store keeps whole-second first/last times, so truncating two sub-second stats
		// timestamps can stretch or shrink the span by up to one second.
		if gap, want := h.LastSeen().Sub(h.FirstSeen()), time.Duration(k1-k0)*refresh; gap < want-time.Second || gap > want+time.Second {
			t.Fatalf("fast app: samples span %v, want %v ± 1 s (the stats' own timestamps, stored in whole seconds)", gap, want)
		}
		// The agent read the Summary more often than the kubelet refreshed (so repeats
		// were offered and dropped).
		if reads := kl.served(); int64(reads) <= h.Count()+1 {
			return fmt.Errorf("%d Summary reads for %d refreshes: no repeat offered yet", reads, h.Count())
		}
		return nil
	})
}
