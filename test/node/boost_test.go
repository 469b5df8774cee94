package node

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/resizeplan"
	"github.com/ballastk8s/ballast/pkg/sizing"
	"github.com/ballastk8s/ballast/test/harness"
)

// boostReadyFor is the test policy's startupBoost.readyFor.
const boostReadyFor = 20 * time.Second

// testStartupBoost: an apply-mode pod under a policy with startupBoost {cpu: 2x, readyFor:
// 20s} is admitted with its cpu request and limit doubled, the real kubelet starts it with
// the boosted cgroup values (cgroup v1 cpu.shares and cpu.cfs_quota_us), and once it has
// been Ready for 20 s the resize controller takes the boost back in place: the kubelet
// writes the un-boosted values into the same container's cgroup, without a restart.
// The figures (docs/benchmarks.md) are logged: create → boosted cgroup seen, Ready +
// readyFor → un-boosted cgroup seen.
func testStartupBoost(t *testing.T, ctx context.Context) {
	createNamespace(t, ctx, "boost")
	pol := &ballastv1.ResourcePolicy{ObjectMeta: metav1.ObjectMeta{Name: "boost", Namespace: "boost"},
		Spec: ballastv1.ResourcePolicySpec{
			Metrics: []ballastv1.MetricSpec{
				{Resource: "cpu", Field: "request", Source: "kubernetes-metrics", Aggregation: "avg", Headroom: "1.25"},
				{Resource: "memory", Field: "request", Source: "kubernetes-metrics", Aggregation: "p75", Headroom: "1.0"},
			},
			Readiness: ballastv1.Readiness{MinDataPoints: 5, MinTimeSpan: "20s", MaxCV: "2.0"},
			Behaviors: ballastv1.Behaviors{StartupBoost: &ballastv1.StartupBoost{CPU: "2x", ReadyFor: boostReadyFor.String()}},
		}}
	if err := n.Client.Create(ctx, pol); err != nil {
		t.Fatal(err)
	}
	var p *corev1.Pod
	var created time.Time
	harness.Eventually(t, 30*time.Second, "pod admitted boosted", func() error {
		_ = n.Client.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "boosted", Namespace: "boost"}}, client.GracePeriodSeconds(0))
		harness.Eventually(t, 10*time.Second, "old pod gone", func() error {
			return client.IgnoreNotFound(n.Client.Get(ctx, client.ObjectKey{Namespace: "boost", Name: "boosted"}, &corev1.Pod{}))
		})
		p = loadPod("boost", "boosted", "boost", "apply", []string{"-cpu-millis", "20", "-memory-mib", "16"},
			res("200m", "64Mi"), res("400m", "128Mi"))
		created = time.Now()
		if err := n.Client.Create(ctx, p); err != nil {
			return err
		}
		if _, ok := p.Annotations[ballastv1.StartupBoostAnnotation]; !ok {
			return fmt.Errorf("not boosted (policy-ref %q): cpu %v", p.Annotations[ballastv1.PolicyRefAnnotation], p.Spec.Containers[0].Resources)
		}
		return nil
	})
	r := p.Spec.Containers[0].Resources
	if r.Requests.Cpu().String() != "400m" || r.Limits.Cpu().String() != "800m" || r.Limits.Memory().String() != "128Mi" {
		t.Fatalf("admitted resources %v, want cpu 400m/800m and memory untouched", r)
	}
	p = waitRunning(t, ctx, p)
	cs := p.Status.ContainerStatuses[0]
	shares, quota := cpuCgroup(t, p)
	boostSeen := time.Since(created)
	if shares != milliToShares(400) || quota != 80000 {
		t.Fatalf("boosted cgroup: cpu.shares %d cpu.cfs_quota_us %d, want %d and 80000", shares, quota, milliToShares(400))
	}
	t.Logf("boost visible: cpu.shares %d cpu.cfs_quota_us %d, %s after create", shares, quota, boostSeen.Round(10*time.Millisecond))

	var readyAt, specAt, unboosted time.Time
	deadline := time.Now().Add(boostReadyFor + 90*time.Second)
	for {
		if time.Now().After(deadline) {
			t.Fatalf("boost not taken back: annotation %s, spec %v", p.Annotations[ballastv1.StartupBoostAnnotation], p.Spec.Containers[0].Resources)
		}
		time.Sleep(100 * time.Millisecond) // polling the cgroup files; the observation times are the figures
		if err := n.Client.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
			t.Fatal(err)
		}
		if readyAt.IsZero() {
			if since, ok := resizeplan.ReadySince(p); ok {
				readyAt = since
			}
		}
		if specAt.IsZero() && p.Spec.Containers[0].Resources.Requests.Cpu().MilliValue() == 200 {
			specAt = time.Now()
		}
		if s, q := cpuCgroup(t, p); s == milliToShares(200) && q == 40000 {
			unboosted = time.Now()
			break
		}
	}
	harness.Eventually(t, 30*time.Second, "boost marked ended", func() error {
		if err := n.Client.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
			return err
		}
		rec, _, err := sizing.ParseBoostRecord(p.Annotations[ballastv1.StartupBoostAnnotation])
		if err != nil {
			return err
		}
		if rec.Ended == "" {
			return fmt.Errorf("not ended")
		}
		return nil
	})
	st := p.Status.ContainerStatuses[0]
	if st.RestartCount != cs.RestartCount || st.ContainerID != cs.ContainerID {
		t.Errorf("container restarted: count %d → %d, id %s → %s", cs.RestartCount, st.RestartCount, cs.ContainerID, st.ContainerID)
	}
	if got := p.Spec.Containers[0].Resources; got.Requests.Cpu().String() != "200m" || got.Limits.Cpu().String() != "400m" {
		t.Errorf("un-boosted spec %v, want cpu 200m/400m", got)
	}
	// Ready's transition time has a one-second resolution: the lag is ± 1 s.
	lag := unboosted.Sub(readyAt.Add(boostReadyFor))
	if specAt.IsZero() {
		specAt = unboosted // seen in the same poll
	}
	t.Logf("boost removed: cgroup back to cpu.shares %d cpu.cfs_quota_us 40000 at Ready + readyFor (%s) + %s (±1 s, Ready's time stamp resolution); "+
		"pod spec un-boosted at Ready + readyFor + %s, cgroup %s after the spec; %s after create",
		milliToShares(200), boostReadyFor, lag.Round(10*time.Millisecond), specAt.Sub(readyAt.Add(boostReadyFor)).Round(10*time.Millisecond),
		unboosted.Sub(specAt).Round(10*time.Millisecond), unboosted.Sub(created).Round(10*time.Millisecond))
	if lag < -time.Second {
		t.Errorf("boost taken back %s before Ready + readyFor", -lag)
	}
}

// cpuCgroup reads the app container's cgroup v1 cpu.shares and cpu.cfs_quota_us.
func cpuCgroup(t *testing.T, p *corev1.Pod) (shares, quota uint64) {
	t.Helper()
	_, id, _ := strings.Cut(p.Status.ContainerStatuses[0].ContainerID, "://")
	dir, err := podCgroup("cpu", *p)
	if err != nil {
		t.Fatal(err)
	}
	return readUint(t, filepath.Join(dir, id, "cpu.shares")), readUint(t, filepath.Join(dir, id, "cpu.cfs_quota_us"))
}
