package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/test/harness"
	"github.com/ballastk8s/ballast/test/sandbox"
)

// ledger is an app that runs unenrolled while the loop runs (Prometheus scrapes it), and is
// enrolled afterwards in another namespace.
var ledger = sandbox.App{Name: "ledger", Component: "api", Model: sandbox.ModelSteady, Replicas: 1, CPU: "500m", Memory: "512Mi"}

// checkBackfill enrolls ledger in a new namespace after the sandbox's Prometheus has scraped
// its unenrolled pod (deployed at since) for the whole loop. Its new profile must be
// Backfilled from those scrapes and Sufficient sooner after its creation than readiness'
// minTimeSpan, which agent samples alone cannot do.
func checkBackfill(ctx context.Context, t *testing.T, s *sandbox.Sandbox, since time.Time, minTimeSpan time.Duration) {
	t.Helper()
	enrolled := time.Now()
	if err := s.Deploy(ctx, "team-late", ledger, "measure"); err != nil {
		t.Fatal(err)
	}
	var name string
	err := harness.Poll(ctx, 60*time.Second, "ledger's enrolled pod stamped", func() error {
		pods, err := s.AppPods(ctx, "team-late", ledger.Name)
		if err != nil {
			return err
		}
		for _, p := range pods {
			if name = p.Annotations[ballastv1.ProfileRefAnnotation]; name != "" {
				return nil
			}
		}
		return fmt.Errorf("%d pods, none stamped", len(pods))
	})
	if err != nil {
		t.Fatal(err)
	}
	wp := &ballastv1.WorkloadProfile{}
	var sufficient time.Time
	err = harness.Poll(ctx, 60*time.Second, "ledger's profile Backfilled and Sufficient", func() error {
		if err := s.Client.Get(ctx, client.ObjectKey{Name: name}, wp); err != nil {
			return err
		}
		c := meta.FindStatusCondition(wp.Status.Conditions, ballastv1.ConditionBackfilled)
		if c == nil || c.Status != metav1.ConditionTrue {
			return fmt.Errorf("Backfilled condition %+v", c)
		}
		if wp.Status.State != ballastv1.StateSufficient {
			return fmt.Errorf("state %q", wp.Status.State)
		}
		sufficient = time.Now()
		return nil
	})
	if err != nil {
		t.Fatalf("%v (logs in %s)", err, s.Logs())
	}
	c := meta.FindStatusCondition(wp.Status.Conditions, ballastv1.ConditionBackfilled)
	age := sufficient.Sub(wp.CreationTimestamp.Time)
	var p50 resource.Quantity
	for _, ct := range wp.Status.Containers {
		for _, u := range ct.UsageStats {
			if u.Resource == "cpu" {
				p50, _ = resource.ParseQuantity(u.P50)
				t.Logf("ledger cpu: %d samples, p50 %s, over %s", u.Samples, u.P50, u.TimeSpan)
			}
		}
	}
	t.Logf("ledger enrolled %v after its unenrolled pod was deployed; profile %s Sufficient %v after its creation: %s",
		enrolled.Sub(since).Round(time.Second), name, age.Round(100*time.Millisecond), c.Message)
	if age >= minTimeSpan {
		t.Errorf("Sufficient %v after creation: not sooner than minTimeSpan %v, so not from the scraped history", age, minTimeSpan)
	}
	// The steady model uses 180m ± 6m: the scraped counters' rate, within the histogram's
	// 2 % bucket error and the noise.
	if m := p50.MilliValue(); m < 165 || m > 195 {
		t.Errorf("ledger cpu p50 %s from the scraped history, want 180m ± 15m", p50.String())
	}
}
