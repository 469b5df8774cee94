// Package simagent stands in for ballast-node in the scale benchmarks: one goroutine per
// node writes the open window of every series of its pods through store.Writer (the wire
// format ballast-node uses) once per flush interval, one sample per series per flush, and
// optionally the agent's heartbeat. It also writes a history backlog as windows, and whole
// days as rollups from its day models (days.go). Only benchmarks use it: test/bench,
// test/vpabench and test/integration/store's.
package simagent

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/ballastk8s/ballast/pkg/series"
	"github.com/ballastk8s/ballast/pkg/store"
)

// Containers is how many containers each simulated pod has (named c0, c1, ...).
const Containers = 2

// Resources are the resources each container's series cover.
var Resources = []string{series.ResourceCPU, series.ResourceMemory, series.ResourceEphemeralStorage}

// ContainerName is the name of the n-th container of a simulated pod.
func ContainerName(n int) string { return "c" + strconv.Itoa(n) }

// Agent is one node's simulated agent.
type Agent struct {
	// Node is the node name (the heartbeat's key); Seed varies its samples and start offset.
	Node string
	Seed uint64
	// Hashes holds the measurementHash of each pod on the node (one entry per pod).
	Hashes []string
	// Every is the flush interval.
	Every time.Duration
	// Heartbeat writes the agent's presence record after each flush, as ballast-node does
	// (the control plane's fallback source then leaves the node's pods to it).
	Heartbeat bool
}

// Counters count flushes of every agent.
type Counters struct {
	Flushes, Errors atomic.Int64
}

// heartbeatFlushes mirrors ballast-node's: a heartbeat is live for three flush intervals.
const heartbeatFlushes = 3

// Run flushes until ctx ends. The first flush comes after a random part of one interval,
// so a fleet of agents spreads over the interval as independent agents do.
func (a Agent) Run(ctx context.Context, w *store.Writer, c *Counters) {
	r := rand.New(rand.NewPCG(a.Seed, 17))
	select {
	case <-ctx.Done():
		return
	case <-time.After(time.Duration(r.Int64N(int64(a.Every)))):
	}
	since := time.Now().UTC()
	t := time.NewTicker(a.Every)
	defer t.Stop()
	for {
		now := time.Now().UTC()
		start := series.WindowStart(now, series.DefaultWindow)
		batch := make([]series.WindowUpdate, 0, len(a.Hashes)*Containers*len(Resources))
		for _, hash := range a.Hashes {
			for cn := 0; cn < Containers; cn++ {
				for ri, res := range Resources {
					h := &series.Histogram{}
					_ = h.Add(sample(ri, r.IntN(50)), now)
					batch = append(batch, series.WindowUpdate{Series: series.SeriesID{Profile: hash,
						Container: ContainerName(cn), Resource: res, Signal: series.SignalUsage}, Start: start, Hist: h})
				}
			}
		}
		err := w.Flush(ctx, batch)
		if err == nil && a.Heartbeat {
			err = w.Heartbeat(ctx, series.Heartbeat{Node: a.Node, Version: "simagent", Signals: []string{series.ResourceCPU,
				series.ResourceEphemeralStorage, series.ResourceMemory, "oom"}, Since: since, Through: now, At: time.Now().UTC(),
				TTL: heartbeatFlushes * a.Every})
		}
		if err != nil && ctx.Err() == nil {
			c.Errors.Add(1)
		}
		c.Flushes.Add(1)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// sample is a usage value of resource index ri (cpu, memory, ephemeral storage) with a
// little noise (0..49).
func sample(ri, noise int) float64 {
	return float64(100*(ri+1)+noise) * float64(1+ri*1000000)
}

// History writes the windows (series.DefaultWindow wide, one sample per 10 s) of backlog
// ending at end for every fraction-th hash's series, in batches.
func History(ctx context.Context, w *store.Writer, hashes []string, end time.Time, backlog time.Duration, fraction float64) error {
	every := int(1 / fraction)
	window := series.DefaultWindow
	windows := max(int((backlog+window-1)/window), 1)
	samples := int(window / (10 * time.Second))
	var batch []series.WindowUpdate
	for i, hash := range hashes {
		if i%every != 0 {
			continue
		}
		for cn := 0; cn < Containers; cn++ {
			for ri, res := range Resources {
				for k := 0; k < windows; k++ {
					start := series.WindowStart(end.Add(-time.Duration(k)*window), window)
					hist := &series.Histogram{}
					for s := 0; s < samples; s++ {
						_ = hist.Add(sample(ri, (i+s+k)%50), start.Add(time.Duration(s)*10*time.Second))
					}
					batch = append(batch, series.WindowUpdate{Series: series.SeriesID{Profile: hash,
						Container: ContainerName(cn), Resource: res, Signal: series.SignalUsage}, Start: start, Hist: hist})
				}
			}
		}
		if len(batch) >= 2000 {
			if err := flushRetry(ctx, w, batch); err != nil {
				return err
			}
			batch = batch[:0]
		}
	}
	if len(batch) > 0 {
		return flushRetry(ctx, w, batch)
	}
	return nil
}

// flushRetry writes a batch, and up to twice more the updates that failed (a connection
// dropped on a busy machine), as ballast-node keeps failed windows for its next flush.
func flushRetry(ctx context.Context, w *store.Writer, batch []series.WindowUpdate) error {
	var err error
	for try := 0; try < 3 && len(batch) > 0; try++ {
		if err = w.Flush(ctx, batch); err == nil || ctx.Err() != nil {
			return err
		}
		var fe *store.FlushError
		if !errors.As(err, &fe) {
			return err
		}
		failed := make([]series.WindowUpdate, 0, len(fe.Failed))
		for _, i := range fe.Failed {
			failed = append(failed, batch[i])
		}
		batch = failed
	}
	return err
}
