package control

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/control/app"
	"github.com/ballastk8s/ballast/pkg/series"
	"github.com/ballastk8s/ballast/pkg/store"
	"github.com/ballastk8s/ballast/test/harness"
)

// TestStoreFull fills a small real Valkey (maxmemory 3mb, noeviction) the way node agents
// write, until it refuses a flush. The control plane, reading the store's memory every
// 250 ms, marks the profile StoreFull (reason MaxMemoryReached, used and max bytes in the
// message) with a Warning event and exposes ballast_store_used_bytes and ballast_store_full;
// nothing crashes. Raising maxmemory lets the refused windows be written and clears the
// condition, with a Normal StoreWritable event. It logs the time from the first refused write
// to the metric, the condition and the event being visible.
func TestStoreFull(t *testing.T) {
	v, err := harness.StartValkey("--maxmemory", "3mb", "--maxmemory-policy", "noeviction")
	if err != nil {
		t.Fatal(err)
	}
	defer v.Stop()
	kube, err := harness.StartKube(harness.KubeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer kube.Stop()
	const interval = 250 * time.Millisecond
	e := startEnv(t, kube, v.URL(), func(o *app.Options) { o.StoreCapacityInterval = interval })
	ctx := context.Background()

	seed := pod("seed", e.namespace(t, "storefull"), "measure", "storefull", "api")
	mustCreate(t, e.c, seed)
	name := seed.Annotations[ballastv1.ProfileRefAnnotation]
	e.profile(t, name, "profile created", func(wp *ballastv1.WorkloadProfile) error {
		if wp.Status.MeasurementHash == "" {
			return fmt.Errorf("no hash yet")
		}
		return nil
	})
	if got := gauge(e, "ballast_store_full"); got != 0 {
		t.Fatalf("ballast_store_full %v on an empty store", got)
	}

	// Other workloads' history fills the store, 600 windows per flush.
	layout := series.DefaultLayout(ballastv1.DefaultRetentionWindow)
	start := series.WindowStart(e.clock.Now(), layout.Window)
	var refused []series.WindowUpdate
	var firstRefused time.Time
	for batch := 0; batch < 100 && refused == nil; batch++ {
		var ups []series.WindowUpdate
		for i := range 600 {
			h := &series.Histogram{}
			at := start.Add(-time.Duration(i%24) * layout.Window)
			if err := h.Add(float64(100+i)*(1<<20), at); err != nil {
				t.Fatal(err)
			}
			ups = append(ups, series.WindowUpdate{Series: series.SeriesID{Profile: fmt.Sprintf("%016x", 1+batch*25+i/24),
				Container: "app", Resource: series.ResourceMemory, Signal: series.SignalUsage}, Start: at, Hist: h})
		}
		err := e.writer.Flush(ctx, ups)
		var fe *store.FlushError
		switch {
		case err == nil:
		case errors.As(err, &fe) && store.IsStoreFull(err):
			firstRefused = time.Now()
			for _, i := range fe.Failed {
				refused = append(refused, ups[i])
			}
		default:
			t.Fatalf("flush %d: %v", batch, err)
		}
	}
	if refused == nil {
		t.Fatal("the 3mb store never refused a flush")
	}
	info, _ := v.Do("INFO", "memory")
	t.Logf("store refused %d windows: %s", len(refused), infoLine(info, "used_memory"))

	var metricAt, condAt time.Time
	eventually(t, 30*time.Second, "ballast_store_full", func() error {
		if gauge(e, "ballast_store_full") != 1 {
			return fmt.Errorf("ballast_store_full %v", gauge(e, "ballast_store_full"))
		}
		metricAt = time.Now()
		return nil
	})
	if used, limit := gauge(e, "ballast_store_used_bytes"), gauge(e, "ballast_store_max_bytes"); used <= 0 || limit != 3<<20 {
		t.Errorf("ballast_store_used_bytes %v, ballast_store_max_bytes %v", used, limit)
	}
	wp := e.profile(t, name, "profile StoreFull", func(wp *ballastv1.WorkloadProfile) error {
		c := meta.FindStatusCondition(wp.Status.Conditions, ballastv1.ConditionStoreFull)
		if c == nil || c.Status != metav1.ConditionTrue || c.Reason != ballastv1.ReasonMaxMemoryReached {
			return fmt.Errorf("StoreFull condition %+v", c)
		}
		condAt = time.Now()
		return nil
	})
	ev := waitEvent(t, e, "", name, "StoreFull", "of maxmemory 3.00Mi")
	eventAt := time.Now()
	if ev.Type != corev1.EventTypeWarning {
		t.Errorf("StoreFull event of type %s", ev.Type)
	}
	t.Logf("first refused write → visible: metric %v, condition %v, event ≤ %v (capacity read every %v); message: %s",
		metricAt.Sub(firstRefused).Round(time.Millisecond), condAt.Sub(firstRefused).Round(time.Millisecond),
		eventAt.Sub(firstRefused).Round(time.Millisecond), interval,
		meta.FindStatusCondition(wp.Status.Conditions, ballastv1.ConditionStoreFull).Message)

	// Still full: the writes stay refused, and the control plane keeps running.
	if err := e.writer.Flush(ctx, refused); !store.IsStoreFull(err) {
		t.Fatalf("retry while full: %v", err)
	}
	if _, err := v.Do("CONFIG", "SET", "maxmemory", "64mb"); err != nil {
		t.Fatal(err)
	}
	if err := e.writer.Flush(ctx, refused); err != nil {
		t.Fatalf("retry after maxmemory was raised: %v", err)
	}
	e.profile(t, name, "StoreFull cleared", func(wp *ballastv1.WorkloadProfile) error {
		if c := meta.FindStatusCondition(wp.Status.Conditions, ballastv1.ConditionStoreFull); c != nil {
			return fmt.Errorf("StoreFull condition %+v", c)
		}
		return nil
	})
	waitEvent(t, e, "", name, "StoreWritable", "accepts writes again")
	if got := gauge(e, "ballast_store_full"); got != 0 {
		t.Errorf("ballast_store_full %v after recovery", got)
	}
}

// gauge is the value of an unlabelled gauge of the control plane's registry (-1: absent).
func gauge(e *env, name string) float64 {
	fams, err := e.registry.Gather()
	if err != nil {
		return -1
	}
	for _, f := range fams {
		if f.GetName() == name && len(f.GetMetric()) == 1 {
			return f.GetMetric()[0].GetGauge().GetValue()
		}
	}
	return -1
}

func infoLine(info, key string) string {
	cp, err := store.ParseInfoMemory(info)
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("%s %d of maxmemory %d", key, cp.UsedBytes, cp.MaxBytes)
}
