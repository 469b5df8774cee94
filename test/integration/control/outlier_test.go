package control

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/control/profiles"
	"github.com/ballastk8s/ballast/pkg/recommend"
	"github.com/ballastk8s/ballast/pkg/series"
	"github.com/ballastk8s/ballast/test/harness"
)

// writeNodeSamples is writeSamples by a node agent that names its node.
func (e *env) writeNodeSamples(t *testing.T, node, hash, container, res string, values []float64, step time.Duration) {
	t.Helper()
	layout := series.DefaultLayout(ballastv1.DefaultRetentionWindow)
	end := e.clock.Now()
	windows := map[time.Time]*series.Histogram{}
	for i, v := range values {
		at := end.Add(-time.Duration(len(values)-1-i) * step)
		start := series.WindowStart(at, layout.Window)
		if windows[start] == nil {
			windows[start] = &series.Histogram{}
		}
		if err := windows[start].Add(v, at); err != nil {
			t.Fatal(err)
		}
	}
	var ups []series.WindowUpdate
	for start, h := range windows {
		ups = append(ups, series.WindowUpdate{Series: series.SeriesID{Profile: hash, Container: container,
			Resource: res, Signal: series.SignalUsage}, Start: start, Hist: h, Node: node})
	}
	if err := e.writer.Flush(context.Background(), ups); err != nil {
		t.Fatal(err)
	}
}

// TestOutlierNodeBoundsTheRecommendation: three nodes write a container's usual cpu
// (240m) and memory, a fourth writes ten times that cpu. The cpu recommendation is not
// followed but capped at 4 × the other nodes' median (960m), and the profile carries
// RecommendationBounded=True, reason OutlierNode, naming the node, resource and figures,
// with one Warning event. Memory, where the nodes agree, is followed as computed.
func TestOutlierNodeBoundsTheRecommendation(t *testing.T) {
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
	e := startEnv(t, kube, v.URL())
	seed := pod("seed", e.namespace(t, "outlier"), "measure", "outlier", "api")
	mustCreate(t, e.c, seed)
	name := seed.Annotations[ballastv1.ProfileRefAnnotation]
	wp := e.profile(t, name, "profile created", func(wp *ballastv1.WorkloadProfile) error {
		if wp.Status.MeasurementHash == "" {
			return fmt.Errorf("no hash yet")
		}
		return nil
	})
	hash := wp.Status.MeasurementHash
	for _, n := range []string{"node-a", "node-b", "node-c", "node-d"} {
		cpu := 240.0
		if n == "node-d" {
			cpu = 2400
		}
		e.writeNodeSamples(t, n, hash, "app", series.ResourceCPU, repeat(cpu, 13), 20*time.Second)
		e.writeNodeSamples(t, n, hash, "app", series.ResourceMemory, repeat(192<<20, 13), 20*time.Second)
	}
	e.clock.Step(time.Second)
	e.reconcile(t, name)
	got := e.profile(t, name, "profile bounded", func(wp *ballastv1.WorkloadProfile) error {
		c := meta.FindStatusCondition(wp.Status.Conditions, ballastv1.ConditionRecommendationBounded)
		if c == nil || c.Status != metav1.ConditionTrue || c.Reason != recommend.ReasonOutlierNode {
			return fmt.Errorf("RecommendationBounded %+v", c)
		}
		if wp.Status.State != ballastv1.StateSufficient {
			return fmt.Errorf("state %q", wp.Status.State)
		}
		return nil
	})
	c := meta.FindStatusCondition(got.Status.Conditions, ballastv1.ConditionRecommendationBounded)
	for _, want := range []string{"node node-d", "app cpu", "mean 2400m", "median 240m", "capped at 960m"} {
		if !strings.Contains(c.Message, want) {
			t.Errorf("condition message %q lacks %q", c.Message, want)
		}
	}
	rec := got.Status.Containers[0].Recommendations
	capQ := resource.MustParse("960m")
	for what, s := range map[string]string{"request": rec["cpu"].Request, "limit": rec["cpu"].Limit} {
		if q, err := resource.ParseQuantity(s); s != "" && (err != nil || q.Cmp(capQ) > 0) {
			t.Errorf("cpu %s %q is above the 960m cap", what, s)
		}
	}
	if rec["cpu"].Request == "" || !strings.Contains(rec["cpu"].RequestBasis, "node-d") {
		t.Errorf("cpu recommendation %+v: not capped, or its basis does not name node-d", rec["cpu"])
	}
	if strings.Contains(rec["memory"].RequestBasis, "capped") {
		t.Errorf("memory, where the nodes agree, was capped: %+v", rec["memory"])
	}
	waitEvent(t, e, "", name, profiles.EventRecommendationBounded, "node-d")
}
