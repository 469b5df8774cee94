package resize

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
)

const boostRecord = `{"readyFor":"1m0s","containers":{"app":{"request":"200m","boostedRequest":"400m"}}}`

func boostPod(ann string, ready *time.Time) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", UID: "u1",
		Labels:      map[string]string{ballastv1.ModeLabel: ballastv1.ModeApply},
		Annotations: map[string]string{ballastv1.StartupBoostAnnotation: ann}},
		Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "app", Image: "app:1",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("400m")}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	if ready != nil {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(*ready)}}
	}
	return p
}

// TestStartupBoostsWaits: before Ready nothing is requeued (the Ready update wakes the
// reconciler); Ready for 20s of 60s requeues after the 40s left; an ended or unreadable
// boost is left alone. Nothing is written in any of these cases.
func TestStartupBoostsWaits(t *testing.T) {
	at := func(d time.Duration) *time.Time { v := t0.Add(d); return &v }
	cases := map[string]struct {
		pod  *corev1.Pod
		want reconcile.Result
	}{
		"not ready":            {boostPod(boostRecord, nil), reconcile.Result{}},
		"ready for 20s of 60s": {boostPod(boostRecord, at(-20*time.Second)), reconcile.Result{RequeueAfter: 40 * time.Second}},
		"ended":                {boostPod(boostRecord[:len(boostRecord)-1]+`,"ended":"2026-12-03T09:00:00Z"}`, at(-time.Hour)), reconcile.Result{}},
		"unreadable":           {boostPod("2x", at(-time.Hour)), reconcile.Result{}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := fakeClient(t, tc.pod)
			ctl, _ := newTestController(c, nil)
			res, err := ctl.StartupBoosts().Reconcile(context.Background(), tc.pod.DeepCopy())
			if err != nil || res != tc.want {
				t.Fatalf("Reconcile = %+v, %v; want %+v", res, err, tc.want)
			}
			got := &corev1.Pod{}
			if err := c.Get(context.Background(), client.ObjectKeyFromObject(tc.pod), got); err != nil {
				t.Fatal(err)
			}
			if got.Annotations[ballastv1.StartupBoostAnnotation] != tc.pod.Annotations[ballastv1.StartupBoostAnnotation] ||
				got.Spec.Containers[0].Resources.Requests.Cpu().String() != "400m" {
				t.Errorf("pod written: %v %v", got.Annotations, got.Spec.Containers[0].Resources)
			}
		})
	}
}

// TestBoostActive: the predicate of the un-boost watch and the profile pass's skip.
func TestBoostActive(t *testing.T) {
	if !boostActive(boostPod(boostRecord, nil)) {
		t.Error("an active boost is not active")
	}
	if boostActive(boostPod(boostRecord[:len(boostRecord)-1]+`,"ended":"2026-12-03T09:00:00Z"}`, nil)) {
		t.Error("an ended boost is active")
	}
	if boostActive(boostPod("garbage", nil)) {
		t.Error("an unreadable boost is active")
	}
	p := boostPod(boostRecord, nil)
	delete(p.Annotations, ballastv1.StartupBoostAnnotation)
	if boostActive(p) {
		t.Error("a pod without the annotation is active")
	}
}
