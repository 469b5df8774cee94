package control

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/control/app"
	"github.com/ballastk8s/ballast/pkg/series"
	"github.com/ballastk8s/ballast/test/harness"
)

// TestStatusRefreshInterval: with --status-refresh-interval=3s and a sample every second
// (fake clock), an Accruing profile whose statistics move every cycle is written about
// once per 3 s, not every second; the Accruing → Sufficient transition is written at once,
// a second after the previous write. Writes are counted on a watch of the API server.
func TestStatusRefreshInterval(t *testing.T) {
	kube, err := harness.StartKube(harness.KubeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(kube.Stop)
	const refresh = 3 * time.Second
	e := startEnv(t, kube, srv.Valkey.URL(), func(o *app.Options) { o.StatusRefreshInterval = refresh })
	ctx := context.Background()

	seed := pod("seed", e.namespace(t, "refresh"), "measure", "refresh", "api")
	mustCreate(t, e.c, seed)
	name := seed.Annotations[ballastv1.ProfileRefAnnotation]
	hash := e.profile(t, name, "profile created", func(wp *ballastv1.WorkloadProfile) error {
		if wp.Status.MeasurementHash == "" {
			return fmt.Errorf("no hash yet")
		}
		return nil
	}).Status.MeasurementHash
	sample := func(cpu float64) {
		e.writeSamples(t, hash, "app", series.ResourceCPU, []float64{cpu}, time.Second)
		e.writeSamples(t, hash, "app", series.ResourceMemory, []float64{192 << 20}, time.Second)
	}
	// A minute of history: Accruing (minTimeSpan 2m), its statistics written at once (the
	// container appears).
	e.writeSamples(t, hash, "app", series.ResourceCPU, repeat(240, 4), 20*time.Second)
	e.writeSamples(t, hash, "app", series.ResourceMemory, repeat(192<<20, 4), 20*time.Second)
	e.clock.Step(time.Second)
	e.reconcile(t, name)
	wp := e.profile(t, name, "first statistics written", func(wp *ballastv1.WorkloadProfile) error {
		if s := stat(wp, "app", "cpu"); s == nil || s.Samples != 4 {
			return fmt.Errorf("cpu stats %+v, want 4 samples", s)
		}
		return nil
	})
	if wp.Status.State != ballastv1.StateAccruing {
		t.Fatalf("state %q, want Accruing", wp.Status.State)
	}

	wc, err := client.NewWithWatch(kube.Config, client.Options{Scheme: kube.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	w, err := wc.Watch(wctx, &ballastv1.WorkloadProfileList{}, client.MatchingFields{"metadata.name": name},
		&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: wp.ResourceVersion}})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	// writesUpTo counts the watch's MODIFIED events until it delivers resourceVersion rv.
	seen := wp.ResourceVersion
	writesUpTo := func(rv string) int {
		t.Helper()
		n := 0
		if rv == seen {
			return 0
		}
		for ev := range w.ResultChan() {
			if ev.Type != watch.Modified {
				t.Fatalf("watch event %s %+v", ev.Type, ev.Object)
			}
			n++
			if seen = ev.Object.(*ballastv1.WorkloadProfile).ResourceVersion; seen == rv {
				return n
			}
		}
		t.Fatalf("watch closed before resourceVersion %s", rv)
		return n
	}

	// Twelve cycles a second apart, each with a new sample: every statistic moves.
	const cycles = 12
	for i := 1; i <= cycles; i++ {
		e.clock.Step(time.Second)
		sample(float64(200 + 10*i))
		e.reconcile(t, name)
	}
	last := &ballastv1.WorkloadProfile{}
	if err := e.c.Get(ctx, client.ObjectKey{Name: name}, last); err != nil {
		t.Fatal(err)
	}
	writes := writesUpTo(last.ResourceVersion)
	t.Logf("%d status writes over %d cycles of changing statistics at a %s refresh interval", writes, cycles, refresh)
	if per := int(cycles * time.Second / refresh); writes < per-1 || writes > per+1 {
		t.Errorf("%d status writes in %d one-second cycles, want about %d (one per %s)", writes, cycles, per, refresh)
	}
	if s := stat(last, "app", "cpu"); s == nil || s.Samples != 4+cycles {
		t.Errorf("after the last refresh the stored cpu stats are %+v, want %d samples", s, 4+cycles)
	}
	if last.Status.State != ballastv1.StateAccruing {
		t.Fatalf("state %q, want Accruing still", last.Status.State)
	}

	// A second later, history reaching back three minutes makes it Sufficient: written at
	// once, well inside the refresh interval.
	e.clock.Step(time.Second)
	e.writeSamples(t, hash, "app", series.ResourceCPU, []float64{240, 240}, 3*time.Minute)
	e.writeSamples(t, hash, "app", series.ResourceMemory, repeat(192<<20, 2), 3*time.Minute)
	e.reconcile(t, name)
	now := &ballastv1.WorkloadProfile{}
	if err := e.c.Get(ctx, client.ObjectKey{Name: name}, now); err != nil {
		t.Fatal(err)
	}
	if now.Status.State != ballastv1.StateSufficient || now.ResourceVersion == last.ResourceVersion {
		t.Fatalf("a second after the last write: state %q (resourceVersion %s, was %s), want Sufficient written at once",
			now.Status.State, now.ResourceVersion, last.ResourceVersion)
	}
	if n := writesUpTo(now.ResourceVersion); n != 1 {
		t.Errorf("%d writes for the transition, want 1", n)
	}
}
