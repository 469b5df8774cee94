package control

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/control/app"
	"github.com/ballastk8s/ballast/pkg/control/backfill"
	"github.com/ballastk8s/ballast/pkg/store"
	"github.com/ballastk8s/ballast/test/harness"
)

// steady is a container using 250m and 200Mi, with a little noise.
func steady(t time.Time) (float64, float64) {
	wobble := math.Sin(float64(t.Unix()) / 300)
	return 0.25 + 0.01*wobble, 200<<20 + 4<<20*wobble
}

// TestBackfillFromPrometheus: a real Prometheus holds an hour of cAdvisor and
// kube-state-metrics history (promtool's TSDB backfill from generated OpenMetrics: two pods
// of the workload in two namespaces, one pod of another). A profile created afterwards is
// Sufficient on its first computation with no node agent sample at all, says so in its
// Backfilled condition, and a second backfill (a restarted leader) writes nothing.
func TestBackfillFromPrometheus(t *testing.T) {
	now := time.Now().UTC().Truncate(time.Second)
	pods := []harness.PodUsage{
		{Namespace: "dev-a", Pod: "bf-1", Labels: map[string]string{"app.kubernetes.io/name": "bf", "app.kubernetes.io/component": "api"},
			Containers: map[string]func(time.Time) (float64, float64){"app": steady}},
		{Namespace: "dev-b", Pod: "bf-2", Labels: map[string]string{"app.kubernetes.io/name": "bf", "app.kubernetes.io/component": "api"},
			Containers: map[string]func(time.Time) (float64, float64){"app": steady}},
		{Namespace: "dev-a", Pod: "other", Labels: map[string]string{"app.kubernetes.io/name": "other", "app.kubernetes.io/component": "api"},
			Containers: map[string]func(time.Time) (float64, float64){"app": func(time.Time) (float64, float64) { return 4, 3 << 30 }}},
	}
	var om bytes.Buffer
	if err := harness.WriteCAdvisorHistory(&om, pods, now.Add(-65*time.Minute), now.Add(-time.Minute), 15*time.Second); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	prom, err := harness.StartPrometheus(om.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	defer prom.Stop()
	t.Logf("prometheus with an hour of history (%d KiB OpenMetrics) ready in %v", om.Len()>>10, time.Since(began).Round(time.Millisecond))

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
	e := startEnv(t, kube, v.URL(), func(o *app.Options) { o.HistoryPrometheusURL = prom.URL })

	seed := pod("bf-new", e.namespace(t, "backfill"), "measure", "bf", "api")
	mustCreate(t, e.c, seed)
	name := seed.Annotations[ballastv1.ProfileRefAnnotation]
	wp := e.profile(t, name, "profile Sufficient from Prometheus history alone", backfilledSufficient)
	cond := meta.FindStatusCondition(wp.Status.Conditions, ballastv1.ConditionBackfilled)
	if !strings.HasPrefix(cond.Message, "history: backfilled 0.0") || !strings.Contains(cond.Message, " days from Prometheus (1h") {
		t.Errorf("Backfilled message %q", cond.Message)
	}
	cpu, mem := stat(wp, "app", "cpu"), stat(wp, "app", "memory")
	if cpu == nil || mem == nil {
		t.Fatalf("no statistics: %+v", wp.Status.Containers)
	}
	t.Logf("after the backfill: %s; cpu %d samples p50 %s over %s, memory %d samples p50 %s", cond.Message, cpu.Samples, cpu.P50, cpu.TimeSpan, mem.Samples, mem.P50)
	// Two pods × one sample a minute for ~an hour each (the other workload's pod is not
	// joined); the rate needs two scrapes, the working set is held 5 minutes past the last.
	if cpu.Samples < 2*60 || cpu.Samples > 2*71 || mem.Samples < 2*60 || mem.Samples > 2*71 {
		t.Errorf("samples cpu %d, memory %d: want about 2 × 60-70", cpu.Samples, mem.Samples)
	}
	// Within the histogram's 2 % bucket error plus the ±1 % wobble.
	if q := mustQuantity(t, cpu.P50); q < 240 || q > 260 {
		t.Errorf("cpu p50 %s, want 250m ± 10m", cpu.P50)
	}
	if !strings.HasPrefix(mem.P50, "19") && !strings.HasPrefix(mem.P50, "20") {
		t.Errorf("memory p50 %s, want ~200Mi", mem.P50)
	}
	// Exactly one write; a pass that raced the first status write finds the store's marker
	// (AlreadyBackfilled) and writes nothing.
	if got := counterWith(t, e, "ballast_backfill_total", "result", backfill.ResultBackfilled); got != 1 {
		t.Errorf("ballast_backfill_total{result=Backfilled} = %v, want 1", got)
	}

	// A restarted (or new) leader: the store's marker stops a second write.
	src, err := backfill.NewPrometheus(prom.URL, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	reader := store.NewProfileReaderConfig(store.Config{URL: v.URL()})
	res := backfill.New(src, reader, backfill.Options{}).Run(context.Background(), backfill.Request{Profile: name,
		Hash: wp.Status.MeasurementHash, SelectorLabels: wp.Status.SelectorLabels, Start: now.Add(-2 * time.Hour), End: now,
		Retention: ballastv1.DefaultRetentionWindow})
	if res.Reason != backfill.ResultAlreadyDone || res.Message != cond.Message {
		t.Errorf("second backfill: %+v", res)
	}
	e.clock.Step(time.Second)
	e.reconcile(t, name)
	again := e.profile(t, name, "profile re-read", func(*ballastv1.WorkloadProfile) error { return nil })
	if s := stat(again, "app", "cpu"); s.Samples != cpu.Samples {
		t.Errorf("cpu samples went from %d to %d after a second backfill", cpu.Samples, s.Samples)
	}
}

// TestBackfillPrometheusBad: a Prometheus that hangs past the timeout, then one answering
// garbage. Pods are admitted and stamped as always, the profile accrues, its Backfilled
// condition says why (False, PrometheusUnavailable then BadAnswer), Warning events are
// published, ballast_backfill_total counts each result, and nothing is written.
func TestBackfillPrometheusBad(t *testing.T) {
	var mode atomic.Value
	mode.Store("hang")
	release := make(chan struct{})
	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch mode.Load() {
		case "hang":
			select {
			case <-release:
			case <-r.Context().Done():
			}
		default:
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{`))
		}
	}))
	defer bad.Close()
	defer close(release)
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
		o.HistoryPrometheusURL, o.HistoryPrometheusTimeout = bad.URL, time.Second
	})
	ns := e.namespace(t, "badprom")
	seed := pod("seed", ns, "measure", "badprom", "api")
	mustCreate(t, e.c, seed)
	name := seed.Annotations[ballastv1.ProfileRefAnnotation]
	if name == "" {
		t.Fatal("pod not stamped while Prometheus hangs")
	}
	backfilled := func(reason string) func(*ballastv1.WorkloadProfile) error {
		return func(wp *ballastv1.WorkloadProfile) error {
			c := meta.FindStatusCondition(wp.Status.Conditions, ballastv1.ConditionBackfilled)
			if c == nil || c.Status != metav1.ConditionFalse || c.Reason != reason {
				return fmt.Errorf("Backfilled condition %+v, want False/%s", c, reason)
			}
			if wp.Status.State != ballastv1.StateAccruing {
				return fmt.Errorf("state %q", wp.Status.State)
			}
			return nil
		}
	}
	wp := e.profile(t, name, "Backfilled False after the timeout", backfilled(ballastv1.ReasonPrometheusUnavailable))
	t.Logf("hanging Prometheus: %s", meta.FindStatusCondition(wp.Status.Conditions, ballastv1.ConditionBackfilled).Message)
	waitEvent(t, e, "", name, "BackfillFailed", "history: not backfilled")

	mode.Store("garbage")
	e.clock.Step(6 * time.Minute) // past the retry delay
	e.reconcile(t, name)
	wp = e.profile(t, name, "Backfilled False on garbage", backfilled(ballastv1.ReasonBackfillBadAnswer))
	t.Logf("garbage: %s", meta.FindStatusCondition(wp.Status.Conditions, ballastv1.ConditionBackfilled).Message)
	for _, r := range []string{backfill.ResultUnavailable, backfill.ResultBadAnswer} {
		if got := counterWith(t, e, "ballast_backfill_total", "result", r); got < 1 {
			t.Errorf("ballast_backfill_total{result=%q} = %v, want ≥ 1", r, got)
		}
	}
	if got, _ := v.Do("EXISTS", "ballast:{"+wp.Status.MeasurementHash+"}:backfill"); got != "0" {
		t.Errorf("backfill marker set although nothing was written: EXISTS = %q", got)
	}
	// Agent samples still make it Sufficient.
	e.writeSamples(t, wp.Status.MeasurementHash, "app", "cpu", repeat(240, 13), 20*time.Second)
	e.writeSamples(t, wp.Status.MeasurementHash, "app", "memory", repeat(192<<20, 13), 20*time.Second)
	e.clock.Step(time.Second)
	e.reconcile(t, name)
	e.profile(t, name, "Sufficient from agent samples", func(wp *ballastv1.WorkloadProfile) error {
		if wp.Status.State != ballastv1.StateSufficient {
			return fmt.Errorf("state %q", wp.Status.State)
		}
		return nil
	})
}

// counterWith is the value of counter name's series with label = value.
func counterWith(t *testing.T, e *env, name, label, value string) float64 {
	t.Helper()
	for _, m := range e.gather(t)[name].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == label && l.GetValue() == value {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// mustQuantity reads a cpu statistic ("250m") as millicores.
func mustQuantity(t *testing.T, s string) int64 {
	t.Helper()
	var m int64
	if _, err := fmt.Sscanf(s, "%dm", &m); err != nil {
		t.Fatalf("cpu statistic %q: %v", s, err)
	}
	return m
}

// backfilledSufficient is the wait of the backfill tests: the profile carries a true
// Backfilled condition and is Sufficient.
func backfilledSufficient(wp *ballastv1.WorkloadProfile) error {
	c := meta.FindStatusCondition(wp.Status.Conditions, ballastv1.ConditionBackfilled)
	if c == nil {
		return fmt.Errorf("no Backfilled condition yet")
	}
	if c.Status != metav1.ConditionTrue || c.Reason != ballastv1.ReasonBackfilled {
		return fmt.Errorf("Backfilled %s/%s: %s", c.Status, c.Reason, c.Message)
	}
	if wp.Status.State != ballastv1.StateSufficient {
		return fmt.Errorf("state %q", wp.Status.State)
	}
	return nil
}
