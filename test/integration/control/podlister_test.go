package control

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/control/app"
	"github.com/ballastk8s/ballast/pkg/control/podcache"
)

// TestPodListerReadsTheCache: podcache.Lister over a cache built with ballast-control's
// cache options returns the enrolled pods only, slimmed, and the very objects the cache
// holds (the same pointers on every call), not copies.
func TestPodListerReadsTheCache(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	k := srv.Kube
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "lister-"}}
	if err := k.Client.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k.Client.Delete(context.Background(), ns) })
	pod := func(name string, enrolled bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns.Name, Labels: map[string]string{"app": "lister"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "busybox", Command: []string{"sleep", "1d"}}}}}
		if enrolled {
			p.Labels[ballastv1.ModeLabel] = ballastv1.ModeMeasure
		}
		return p
	}
	want := map[string]bool{}
	for i := 0; i < 3; i++ {
		p := pod(fmt.Sprintf("enrolled-%d", i), true)
		want[p.Name] = true
		if err := k.Client.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	if err := k.Client.Create(ctx, pod("not-enrolled", false)); err != nil {
		t.Fatal(err)
	}

	opts := app.CacheOptions(operatorNS)
	opts.Scheme = k.Scheme
	c, err := cache.New(k.Config, opts)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = c.Start(ctx) }()
	list := podcache.Lister(c)

	var first []*corev1.Pod
	deadline := time.Now().Add(time.Minute)
	for {
		pods, err := list(ctx)
		if err != nil {
			t.Fatal(err)
		}
		first = first[:0]
		for _, p := range pods {
			if p.Namespace == ns.Name {
				first = append(first, p)
			}
		}
		if len(first) == len(want) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("listed %d pods of %s, want %d", len(first), ns.Name, len(want))
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, p := range first {
		if !want[p.Name] {
			t.Errorf("listed %s, which is not enrolled", p.Name)
		}
		if p.Spec.Containers[0].Image != "" {
			t.Errorf("%s was not slimmed: image %q", p.Name, p.Spec.Containers[0].Image)
		}
	}
	again, err := list(ctx)
	if err != nil {
		t.Fatal(err)
	}
	same := map[*corev1.Pod]bool{}
	for _, p := range again {
		same[p] = true
	}
	for _, p := range first {
		if !same[p] {
			t.Errorf("%s: a second list returned another object: the lister copies", p.Name)
		}
	}
}
