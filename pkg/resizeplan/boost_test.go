package resizeplan

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ballastk8s/ballast/pkg/sizing"
)

func boostedPod(cpuReq, cpuLim string, ready *time.Time) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpuReq)},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpuLim)},
		}}}}}
	if ready != nil {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue,
			LastTransitionTime: metav1.NewTime(*ready)}}
	} else {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}
	}
	return p
}

func TestUnboost(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 17, 0, 0, 0, time.UTC)
	rec := sizing.BoostRecord{ReadyFor: "1m0s", Containers: map[string]sizing.BoostContainer{
		"app": {Request: "250m", Limit: "500m", BoostedRequest: "500m", BoostedLimit: "1"}}}
	at := func(d time.Duration) *time.Time { t := t0.Add(d); return &t }
	type out struct {
		Step string
		Wait time.Duration
		CPU  string // request/limit after the changes
	}
	cases := map[string]struct {
		pod  *corev1.Pod
		now  time.Time
		want out
	}{
		"not ready":                {pod: boostedPod("500m", "1", nil), now: t0, want: out{Step: UnboostWaitReady, CPU: "500m/1"}},
		"ready for 20s of 60s":     {pod: boostedPod("500m", "1", at(0)), now: t0.Add(20 * time.Second), want: out{Step: UnboostWaitReadyFor, Wait: 40 * time.Second, CPU: "500m/1"}},
		"ready for exactly 60s":    {pod: boostedPod("500m", "1", at(0)), now: t0.Add(time.Minute), want: out{Step: UnboostNow, CPU: "250m/500m"}},
		"ready long ago":           {pod: boostedPod("500m", "1", at(-time.Hour)), now: t0, want: out{Step: UnboostNow, CPU: "250m/500m"}},
		"resized by someone since": {pod: boostedPod("700m", "1", at(-time.Hour)), now: t0, want: out{Step: UnboostNothing, CPU: "700m/1"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d := Unboost(tc.pod, rec, time.Minute, tc.now)
			after := sizing.WithChanges(tc.pod, d.Changes)
			c := after.Spec.Containers[0].Resources
			got := out{Step: d.Step, Wait: d.Wait, CPU: c.Requests.Cpu().String() + "/" + c.Limits.Cpu().String()}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
