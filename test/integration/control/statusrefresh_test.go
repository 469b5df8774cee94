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
	"github.com/ballastk8s/ballast/pkg/control/profiles"
	"github.com/ballastk8s/ballast/pkg/series"
	"github.com/ballastk8s/ballast/test/harness"
)

// TestStatusRefreshInterval: with --status-refresh-interval=3s and a sample every second
// (fake clock), an Accruing profile whose statistics move every cycle is written once per
// 3 s, not every second; the Accruing → Sufficient transition is written at once, a second
// after the previous write. Writes are counted on a watch of the API server.
//
// The manager runs too and reconciles the profile on its own (real-time requeues), so each
// cycle's samples are written before the clock steps to their time: a reconcile at any
// moment sees either the previous cycle's time with nothing due, or the new time with all of
// its data, and the writes fall where the stored statistics' lastUpdated says they must.
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
	// next writes a sample at the next second, then steps the clock to it.
	next := func(cpu float64) {
		at := e.clock.Now().Add(time.Second)
		e.writeSamplesEnding(t, at, hash, "app", series.ResourceCPU, []float64{cpu}, time.Second)
		e.writeSamplesEnding(t, at, hash, "app", series.ResourceMemory, []float64{192 << 20}, time.Second)
		e.clock.Step(time.Second)
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
	// The manager's own reconcile may have written the first statistics before the test's,
	// a second earlier, and something else since: start from what is stored now.
	if err := e.c.Get(ctx, client.ObjectKey{Name: name}, wp); err != nil {
		t.Fatal(err)
	}
	lastWrite := profiles.LastStatusWrite(&wp.Status)
	if lastWrite.IsZero() {
		t.Fatalf("stored status carries no lastUpdated: %+v", wp.Status)
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

	// Twelve cycles a second apart, each with a new sample: every statistic moves. A write is
	// due in the first cycle a refresh interval after the last one.
	const cycles = 12
	want, wantSamples := 0, int64(0)
	for i := 1; i <= cycles; i++ {
		next(float64(200 + 10*i))
		if now := e.clock.Now(); now.Sub(lastWrite) >= refresh {
			want, wantSamples, lastWrite = want+1, int64(4+i), now
		}
		e.reconcile(t, name)
	}
	last := &ballastv1.WorkloadProfile{}
	if err := e.c.Get(ctx, client.ObjectKey{Name: name}, last); err != nil {
		t.Fatal(err)
	}
	writes := writesUpTo(last.ResourceVersion)
	t.Logf("%d status writes over %d cycles of changing statistics at a %s refresh interval", writes, cycles, refresh)
	if writes != want || want < cycles/int(refresh/time.Second)-1 {
		t.Errorf("%d status writes in %d one-second cycles, want %d (one per %s)", writes, cycles, want, refresh)
	}
	if s := stat(last, "app", "cpu"); s == nil || s.Samples != wantSamples || s.LastUpdated == nil || !s.LastUpdated.Time.Equal(lastWrite) {
		t.Errorf("after the last refresh the stored cpu stats are %+v, want %d samples computed at %s", s, wantSamples, lastWrite)
	}
	if last.Status.State != ballastv1.StateAccruing {
		t.Fatalf("state %q, want Accruing still", last.Status.State)
	}

	// A second later, history reaching back three minutes makes it Sufficient: written at
	// once, well inside the refresh interval.
	at := e.clock.Now().Add(time.Second)
	e.writeSamplesEnding(t, at, hash, "app", series.ResourceCPU, []float64{240, 240}, 3*time.Minute)
	e.writeSamplesEnding(t, at, hash, "app", series.ResourceMemory, repeat(192<<20, 2), 3*time.Minute)
	e.clock.Step(time.Second)
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
