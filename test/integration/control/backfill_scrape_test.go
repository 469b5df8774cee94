package control

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/control/app"
	"github.com/ballastk8s/ballast/pkg/control/backfill"
	"github.com/ballastk8s/ballast/test/harness"
)

// scrapedFor is how long Prometheus scrapes before the profile is created.
const scrapedFor = 25 * time.Second

// TestBackfillFromScrapes: a real Prometheus scrapes, every second, a live stand-in for the
// kubelet's cAdvisor endpoint and for kube-state-metrics (harness.LiveCAdvisor): two pods
// of the workload in two namespaces, a pod with the same identity labels that the
// governing policy's labelSelector excludes (tier=batch, 4 cores, 3Gi), and a pod of
// another workload. After 25 s of scrapes a profile is created under a policy whose
// minTimeSpan (15s) fits that window: it is Sufficient on its first computation with no
// agent sample, from the scraped samples of the two matching pods only.
func TestBackfillFromScrapes(t *testing.T) {
	labels := func(name string, extra ...string) map[string]string {
		l := map[string]string{"app.kubernetes.io/name": name, "app.kubernetes.io/component": "api"}
		for i := 0; i+1 < len(extra); i += 2 {
			l[extra[i]] = extra[i+1]
		}
		return l
	}
	heavy := func(time.Time) (float64, float64) { return 4, 3 << 30 }
	live := harness.StartLiveCAdvisor([]harness.PodUsage{
		{Namespace: "dev-a", Pod: "sc-1", Labels: labels("sc", "tier", "web"), Containers: map[string]func(time.Time) (float64, float64){"app": steady}},
		{Namespace: "dev-b", Pod: "sc-2", Labels: labels("sc", "tier", "web"), Containers: map[string]func(time.Time) (float64, float64){"app": steady}},
		{Namespace: "dev-a", Pod: "sc-batch", Labels: labels("sc", "tier", "batch"), Containers: map[string]func(time.Time) (float64, float64){"app": heavy}},
		{Namespace: "dev-a", Pod: "other", Labels: labels("other"), Containers: map[string]func(time.Time) (float64, float64){"app": heavy}},
	})
	defer live.Close()
	began := time.Now()
	prom, err := harness.StartScrapingPrometheus(live.URL, live.URL, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer prom.Stop()
	scraping := time.Now()
	t.Logf("prometheus scraping every 1s, ready in %v", scraping.Sub(began).Round(time.Millisecond))

	v, err := harness.StartValkey()
	if err != nil {
		t.Fatal(err)
	}
	defer v.Stop()
	kube, err := harness.StartKube(harness.KubeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer kube.Stop()
	e := startEnv(t, kube, v.URL(), func(o *app.Options) {
		o.HistoryPrometheusURL = prom.URL
		o.HistoryPrometheusStep, o.HistoryPrometheusRateWindow = time.Second, 5*time.Second
	})
	// The governing policy: the workload, but not its batch pods; readiness that 25 s of
	// one-second samples can meet.
	spec := fastPolicy()
	spec.Priority = 10
	spec.Selector.LabelSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/name": "sc"},
		MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"batch"}}}}
	spec.Readiness = ballastv1.Readiness{MinDataPoints: 20, MinTimeSpan: "15s", MaxCV: "2.0"}
	mustCreate(t, e.c, &ballastv1.ClusterResourcePolicy{ObjectMeta: metav1.ObjectMeta{Name: "scraped"}, Spec: spec})

	// Prometheus has scraped both stand-ins for a while: every pod's series is there.
	src, err := backfill.NewPrometheus(prom.URL, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, scrapedFor+30*time.Second, "Prometheus scraped for 25 s", func() error {
		if wait := scrapedFor - time.Since(scraping); wait > 0 {
			return fmt.Errorf("%v to go", wait.Round(time.Second))
		}
		got, _, err := src.QueryRange(context.Background(), `kube_pod_labels or container_memory_working_set_bytes{container="app"}`,
			time.Now().Add(-time.Minute), time.Now(), time.Second)
		if err != nil {
			return err
		}
		if len(got) != 8 {
			return fmt.Errorf("%d series scraped, want 8 (4 pods' labels and working sets)", len(got))
		}
		return nil
	})

	// The profile is created now: the fake clock follows, so the backfill reads up to it.
	e.clock.SetTime(time.Now().UTC().Truncate(time.Second))
	seed := pod("sc-new", e.namespace(t, "scraped"), "measure", "sc", "api")
	seed.Labels["tier"] = "web"
	mustCreate(t, e.c, seed)
	name := seed.Annotations[ballastv1.ProfileRefAnnotation]
	if !strings.Contains(name, "scraped") {
		t.Fatalf("pod stamped with %q, want a profile of policy scraped", name)
	}
	wp := e.profile(t, name, "profile Sufficient from scraped history alone", backfilledSufficient)
	cond := meta.FindStatusCondition(wp.Status.Conditions, ballastv1.ConditionBackfilled)
	cpu, mem := stat(wp, "app", "cpu"), stat(wp, "app", "memory")
	if cpu == nil || mem == nil {
		t.Fatalf("no statistics: %+v", wp.Status.Containers)
	}
	t.Logf("after %v of scrapes: %s; cpu %d samples p50 %s p95 %s over %s, memory %d samples p50 %s p95 %s",
		time.Since(scraping).Round(time.Second), cond.Message, cpu.Samples, cpu.P50, cpu.P95, cpu.TimeSpan, mem.Samples, mem.P50, mem.P95)
	// Two pods × one sample a second for ~25 s each (the rate needs two scrapes); the batch
	// pod and the other workload's pod are not joined.
	if cpu.Samples < 2*15 || cpu.Samples > 2*60 || mem.Samples < 2*15 || mem.Samples > 2*60 {
		t.Errorf("samples cpu %d, memory %d: want about 2 × 25", cpu.Samples, mem.Samples)
	}
	// Within the histogram's 2 % bucket error plus the ±1 % wobble; a batch pod's 4 cores
	// or 3Gi anywhere in the history would show in the p95.
	for what, s := range map[string]string{"p50": cpu.P50, "p95": cpu.P95} {
		if q := mustQuantity(t, s); q < 235 || q > 265 {
			t.Errorf("cpu %s %s, want 250m ± 15m (the batch pod's 4 cores not joined)", what, s)
		}
	}
	for what, s := range map[string]string{"p50": mem.P50, "p95": mem.P95} {
		if !strings.HasPrefix(s, "19") && !strings.HasPrefix(s, "20") {
			t.Errorf("memory %s %s, want ~200Mi (the batch pod's 3Gi not joined)", what, s)
		}
	}
}
