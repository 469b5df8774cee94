package sandbox

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Point is one sample of the cluster-wide picture the demo chart draws.
type Point struct {
	At                                time.Duration // since the recorder started
	CPUCapacity, CPURequests, CPUUsed float64       // cores
	MemCapacity, MemRequests, MemUsed float64       // GiB
	Event                             string        // a scenario step that happened at this point
}

// Recorder samples allocatable capacity, the sum of running pods' requests, and actual
// usage (what the workload models consume) at a fixed cadence.
type Recorder struct {
	s      *Sandbox
	start  time.Time
	mu     sync.Mutex
	points []Point
	event  string
}

// Record starts sampling every step until ctx ends.
func (s *Sandbox) Record(ctx context.Context, step time.Duration) *Recorder {
	r := &Recorder{s: s, start: time.Now()}
	go func() {
		t := time.NewTicker(step)
		defer t.Stop()
		for {
			r.sample(ctx)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return r
}

// Mark labels the next point with a scenario event.
func (r *Recorder) Mark(event string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.event = event
}

// Points returns a copy of the samples so far.
func (r *Recorder) Points() []Point {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Point(nil), r.points...)
}

func (r *Recorder) sample(ctx context.Context) {
	p := Point{At: time.Since(r.start)}
	gi := float64(1 << 30)
	for _, n := range r.s.Nodes {
		p.CPUCapacity += float64(nodeCapacity.Cpu().MilliValue()) / 1000
		p.MemCapacity += float64(nodeCapacity.Memory().Value()) / gi
		cpu, mem := n.Used()
		p.CPUUsed += cpu / 1000
		p.MemUsed += mem / gi
	}
	pods := &corev1.PodList{}
	if err := r.s.Client.List(ctx, pods); err != nil {
		return
	}
	for _, pod := range pods.Items {
		if pod.Spec.NodeName == "" || pod.Status.Phase != corev1.PodRunning {
			continue
		}
		for _, c := range pod.Spec.Containers {
			p.CPURequests += float64(c.Resources.Requests.Cpu().MilliValue()) / 1000
			p.MemRequests += float64(c.Resources.Requests.Memory().Value()) / gi
		}
	}
	r.mu.Lock()
	p.Event, r.event = r.event, ""
	r.points = append(r.points, p)
	r.mu.Unlock()
}
