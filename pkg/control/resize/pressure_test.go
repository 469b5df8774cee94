package resize

import (
	"context"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/control/config"
	"github.com/ballastk8s/ballast/pkg/resizeplan"
	"github.com/ballastk8s/ballast/pkg/series"
	"github.com/ballastk8s/ballast/pkg/store"
)

// noPressure is a pressure stream with no readings.
type noPressure struct{}

func (noPressure) ReadPressure(context.Context, string, string) ([]store.PressureRecord, error) {
	return nil, nil
}

// The refusals a pressure raise decides before it reads anything from the API: each says
// whether the run starts over (refused) or waits for its next reading (later), and counts
// its result. (Raises that are sent go through the real API server in
// test/integration/control/resize_pressure_test.go.)
func TestRaiseOnPressureRefusals(t *testing.T) {
	withLimit := corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: bytes(128 << 20)},
		Limits: corev1.ResourceList{corev1.ResourceMemory: bytes(256 << 20)}}
	noLimit := corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: bytes(128 << 20)}}
	pod := func(state string, r corev1.ResourceRequirements) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", Annotations: map[string]string{}},
			Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "app", Resources: r}}}}
		if state != "" {
			p.Annotations[ballastv1.ResizeStateAnnotation] = state
		}
		return p
	}
	cases := map[string]struct {
		pod        *corev1.Pod
		container  string
		want       raiseResult
		wantResult string // "" counts nothing
	}{
		"a resize still pending waits":      {pod(ballastv1.ResizeStatePending, withLimit), "app", raiseLater, ""},
		"a resize deferred waits":           {pod(ballastv1.ResizeStateDeferred, withLimit), "app", raiseLater, ""},
		"a container the pod does not run":  {pod("", withLimit), "gone", raiseRefused, "no_container"},
		"no memory limit: the node's stall": {pod(ballastv1.ResizeStateCompleted, noLimit), "app", raiseRefused, "no_limit"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			m := NewMetrics(nil, nil)
			c := New(clocktesting.NewFakePassiveClock(time.Unix(1_800_000_000, 0)), nil, nil, config.NewState(nil), nil, m, nil,
				logr.Discard(), Options{Pressure: noPressure{}})
			run := &resizeplan.PressureRun{Start: time.Unix(1_800_000_000, 0), End: time.Unix(1_800_000_030, 0), Peak: 300_000,
				Stalled: 9 * time.Second, Source: series.PressureSourcePSI}
			wp := &ballastv1.WorkloadProfile{ObjectMeta: metav1.ObjectMeta{Name: "web"}}
			if got := c.raiseOnPressure(context.Background(), wp, tc.pod, tc.container, run); got != tc.want {
				t.Errorf("result %v, want %v", got, tc.want)
			}
			total := 0.0
			for _, r := range []string{"no_container", "no_limit", "sent", "kill_switch"} {
				n := testutil.ToFloat64(m.Raises.WithLabelValues("pressure", r))
				total += n
				if r == tc.wantResult && n != 1 {
					t.Errorf("raises{result=%q} = %v, want 1", r, n)
				}
			}
			if want := map[bool]float64{true: 0, false: 1}[tc.wantResult == ""]; total != want {
				t.Errorf("%v raises counted, want %v", total, want)
			}
		})
	}
}
