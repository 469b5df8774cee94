package understudy

import (
	"context"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiwatch "k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

// readyEvents follows an app's pods through the API server's watch and counts its Ready
// pods after every event, in the order the API server wrote them: unlike 100 ms sampling it
// cannot miss a moment with no Ready pod, however short.
type readyEvents struct {
	mu       sync.Mutex
	ready    map[string]bool
	min, max int
	events   int
	both     time.Time // first event after which two pods were Ready
	// old is the pod being replaced; created is when another pod was first seen, gone when
	// old was first seen terminating or deleted.
	old           string
	created, gone time.Time
	cancel        context.CancelFunc
	done          chan struct{}
}

func watchReady(t *testing.T, ns, app, old string) *readyEvents {
	t.Helper()
	cs, err := kubernetes.NewForConfig(sb.Kube.Config)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	w, err := cs.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{LabelSelector: "app=" + app})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	r := &readyEvents{ready: map[string]bool{}, min: 1 << 30, old: old, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		defer w.Stop()
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			r.mu.Lock()
			r.ready[p.Name] = ev.Type != apiwatch.Deleted && ready(p)
			n := 0
			for _, v := range r.ready {
				if v {
					n++
				}
			}
			r.events++
			switch now := time.Now(); {
			case p.Name != r.old && r.created.IsZero():
				r.created = now
			case p.Name == r.old && r.gone.IsZero() && (ev.Type == apiwatch.Deleted || p.DeletionTimestamp != nil):
				r.gone = now
			}
			r.min, r.max = min(r.min, n), max(r.max, n)
			if n >= 2 && r.both.IsZero() {
				r.both = time.Now()
			}
			r.mu.Unlock()
		}
	}()
	return r
}

// end stops the watch and returns the fewest and most Ready pods after any event.
func (r *readyEvents) end() (minReady, maxReady, events int) {
	r.cancel()
	<-r.done
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.min, r.max, r.events
}
