package agent

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ballastk8s/ballast/pkg/nodeagent/cgroup"
	"github.com/ballastk8s/ballast/pkg/nodeagent/discovery"
	"github.com/ballastk8s/ballast/pkg/series"
	"github.com/ballastk8s/ballast/pkg/store"
	"github.com/ballastk8s/ballast/test/cgroupfixture"
	"github.com/ballastk8s/ballast/test/harness"
)

// A full node: the kubelet's default pod limit, two long-running containers each.
const benchPods, benchContainers = 110, 2

// benchNode writes a cgroup v2 tree (cgroupfs layout, real 6.12 file formats) for a full
// node and returns an agent reading it and the pods, all sampled at interval. Every pod has
// a profile of its own, the worst case for the number of series (replicas of one workload
// on a node share their series).
func benchNode(b testing.TB, interval time.Duration) (*Agent, []discovery.Pod) {
	b.Helper()
	tree, err := cgroupfixture.New(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	o := NewOptions()
	o.NodeName, o.CgroupRoot = "bench", tree.Root
	a := newAgent(o, prometheus.NewRegistry())
	if a.cg, err = cgroup.Open(tree.Root, cgroup.Options{}); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = a.cg.Close() })
	var pods []discovery.Pod
	for i := range benchPods {
		uid := fmt.Sprintf("%08x-0000-4000-8000-%012x", i, i)
		p := discovery.Pod{UID: uid, Namespace: "bench", Name: fmt.Sprintf("pod-%d", i), QOS: "Burstable",
			ProfileRef: fmt.Sprintf("profile-%d", i), Hash: fmt.Sprintf("%016x", i+1), Interval: interval}
		if err := tree.AddPod(uid, p.QOS, 0); err != nil {
			b.Fatal(err)
		}
		for c := range benchContainers {
			id := fmt.Sprintf("%064x", i*benchContainers+c+1)
			v := cgroupfixture.Values{UsageUsec: uint64(1e6 * (i + 1)), MemoryCurrent: uint64(100+i) << 20, InactiveFileBytes: 10 << 20, MemoryMax: 1 << 30}
			if err := tree.AddContainer(uid, p.QOS, id, v); err != nil {
				b.Fatal(err)
			}
			p.Containers = append(p.Containers, discovery.Container{Name: fmt.Sprintf("c%d", c), ID: "containerd://" + id})
		}
		pods = append(pods, p)
	}
	return a, pods
}

// cpuTime is the process's user + system CPU time (every thread, GC included).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkSamplingCycle is one cgroup sampling cycle of a full node: locate nothing
// (cgroups are found once), read every container's cgroup files, compute the cpu rate,
// working set and interval peak, and add three samples per container to the local windows.
// The CPU time per cycle, divided by the sampling interval, is the agent's steady-state
// share of a core for the cgroup source.
func BenchmarkSamplingCycle(b *testing.B) {
	a, pods := benchNode(b, 10*time.Second)
	g := &group{interval: 10 * time.Second, coll: cgroup.NewCollector(a.cg), pods: pods}
	defer g.coll.Close()
	first := time.Unix(1_800_000_000, 0)
	now := first
	a.setPods(pods, discovery.Capacity{}, "", now)
	ctx := context.Background()
	src := &cgroupSource{a: a}
	src.cycle(ctx, g, now) // first cycle: locate cgroups and open the peak files
	b.ReportAllocs()
	b.ResetTimer()
	start := cpuTime()
	for i := 0; b.Loop(); i++ {
		now = now.Add(time.Second)
		src.cycle(ctx, g, now)
	}
	perCycle := (cpuTime() - start) / time.Duration(b.N)
	b.ReportMetric(float64(perCycle.Microseconds()), "cpu-µs/cycle")
	b.ReportMetric(100*perCycle.Seconds()/10, "%core@10s")
	b.ReportMetric(100*perCycle.Seconds()/1, "%core@1s")
	// Three series per container, each with a window for every 5-minute window the cycles
	// reached (one cycle per simulated second from first, a window start: a run of more
	// than 300 cycles spans several).
	windows := int(series.WindowStart(now, series.DefaultWindow).Sub(first)/series.DefaultWindow) + 1
	if s := a.buf.Stats(); s.Filed != benchPods*benchContainers*3*windows {
		b.Fatalf("%d windows buffered, want %d", s.Filed, benchPods*benchContainers*3*windows)
	}
}

// countingProxy relays one TCP connection pair at a time and counts the bytes each way
// and the round trips (a client→server burst after a server→client one).
type countingProxy struct {
	ln     net.Listener
	target string

	mu         sync.Mutex
	sent, recv int64
	roundTrips int64
	lastUp     bool
}

func newCountingProxy(b *testing.B, target string) *countingProxy {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	p := &countingProxy{ln: ln, target: target}
	b.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			go p.pipe(s, c, true)
			go p.pipe(c, s, false)
		}
	}()
	return p
}

func (p *countingProxy) pipe(dst, src net.Conn, up bool) {
	defer dst.Close()
	buf := make([]byte, 64<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			if up {
				p.sent += int64(n)
				if !p.lastUp {
					p.roundTrips++
				}
			} else {
				p.recv += int64(n)
			}
			p.lastUp = up
			p.mu.Unlock()
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if err != io.EOF {
				return
			}
			return
		}
	}
}

func (p *countingProxy) reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sent, p.recv, p.roundTrips, p.lastUp = 0, 0, 0, false
}

// BenchmarkFlush writes one flush interval (10 s) of a full node to a real Valkey through a
// byte-counting proxy, with the node sampled every second and every 10 seconds. The
// windows hold the same series either way; only the number of samples in them differs.
func BenchmarkFlush(b *testing.B) {
	v, err := harness.StartValkey()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(v.Stop)
	proxy := newCountingProxy(b, v.Addr)
	c, err := store.Open("redis://" + proxy.ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(c.Close)
	layout := series.DefaultLayout(0)
	w, err := store.NewWriter(c, layout)
	if err != nil {
		b.Fatal(err)
	}
	for _, every := range []time.Duration{time.Second, 10 * time.Second} {
		b.Run("sampled-every-"+every.String(), func(b *testing.B) {
			a, pods := benchNode(b, every)
			r := rand.New(rand.NewPCG(1, 2))
			start := series.WindowStart(time.Unix(1_800_000_000, 0), layout.Window)
			// Usage varies ±20 % between samples, so more samples fill more buckets.
			jitter := func(base float64) float64 { return base * (0.8 + 0.4*r.Float64()) }
			a.st.mu.Lock()
			a.st.setPodsLocked(pods, start)
			for t := time.Duration(0); t < 10*time.Second; t += every {
				for _, p := range pods {
					for _, ctr := range p.Containers {
						cs := a.st.ctrs[containerKey(p.UID, ctr.Name)]
						a.recordLocked(p, cs, series.ResourceCPU, series.SignalUsage, jitter(250), start.Add(t), sourceCgroup, nil)
						a.recordLocked(p, cs, series.ResourceMemory, series.SignalUsage, jitter(200<<20), start.Add(t), sourceCgroup, nil)
						a.recordLocked(p, cs, series.ResourceMemory, series.SignalPeak, jitter(220<<20), start.Add(t), sourceCgroup, nil)
						if t == 0 { // the kubelet source: every 30 s, at most once per flush
							a.recordLocked(p, cs, series.ResourceEphemeralStorage, series.SignalUsage, jitter(50<<20), start, sourceKubelet, nil)
						}
					}
					if t == 0 {
						a.recordLocked(p, nil, series.ResourceEphemeralStorage, series.SignalUsage, jitter(10<<20), start, sourceKubelet, nil)
					}
				}
			}
			a.st.mu.Unlock()
			ups := a.buf.Take(0)
			var samples int64
			for _, u := range ups {
				samples += u.Hist.N
			}
			ctx := context.Background()
			if err := w.Flush(ctx, ups); err != nil { // loads the script once
				b.Fatal(err)
			}
			proxy.reset()
			for b.Loop() {
				if err := w.Flush(ctx, ups); err != nil {
					b.Fatal(err)
				}
			}
			proxy.mu.Lock()
			defer proxy.mu.Unlock()
			n := float64(b.N)
			b.ReportMetric(float64(len(ups)), "windows/flush")
			b.ReportMetric(float64(samples), "samples/flush")
			b.ReportMetric(float64(proxy.sent)/n, "bytes-sent/flush")
			b.ReportMetric(float64(proxy.recv)/n, "bytes-recv/flush")
			b.ReportMetric(float64(proxy.roundTrips)/n, "round-trips/flush")
			b.ReportMetric(float64(payloadBytes(ups, layout)), "payload-estimate-bytes")
		})
	}
}
