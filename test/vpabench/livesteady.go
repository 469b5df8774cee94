package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
)

// controlMetrics are the prefixes of ballast-control's metrics the live run reads.
var controlMetrics = []string{"controller_runtime_", "workqueue_", "go_memstats_heap_inuse_bytes"}

var profilesController = map[string]string{"controller": "profiles"}

// scrapeClient waits long for a /metrics of thousands of profiles on a busy machine.
var scrapeClient = &http.Client{Timeout: 30 * time.Second}

// scrape reads ballast-control's controller-runtime and work-queue metrics, trying up to
// three times.
func (l *liveCluster) scrape() ([]promSample, error) {
	var err error
	for try := 0; try < 3; try++ {
		var resp *http.Response
		if resp, err = scrapeClient.Get(l.s.MetricsURL); err != nil {
			continue
		}
		b, rerr := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err = rerr; err == nil {
			return parseProm(string(b), controlMetrics...)
		}
	}
	return nil, fmt.Errorf("scraping ballast-control: %w", err)
}

func sumOr0(ss []promSample, name string, match map[string]string) float64 {
	v, _ := promSum(ss, name, match)
	return v
}

// meanDelta is the mean of histogram name's observations between two scrapes (0: none).
func meanDelta(later, earlier []promSample, name string, match map[string]string) float64 {
	n := sumOr0(later, name+"_count", match) - sumOr0(earlier, name+"_count", match)
	if n <= 0 {
		return 0
	}
	return (sumOr0(later, name+"_sum", match) - sumOr0(earlier, name+"_sum", match)) / n
}

// pass enqueues every profile at once (an annotation on a MetricsSource: the profiles
// controller recomputes all profiles on any MetricsSource event) and times it until the
// controller reconciled at least that many and its queue is empty again.
func (l *liveCluster) pass(ctx context.Context, profiles int) (float64, error) {
	m0, err := l.scrape()
	if err != nil {
		return 0, err
	}
	base := sumOr0(m0, "controller_runtime_reconcile_total", profilesController)
	ms := &ballastv1.MetricsSource{}
	if err := l.c.Get(ctx, client.ObjectKey{Name: "kubelet-summary"}, ms); err != nil {
		return 0, err
	}
	patch := client.MergeFrom(ms.DeepCopy())
	if ms.Annotations == nil {
		ms.Annotations = map[string]string{}
	}
	ms.Annotations["bench.ballast.dev/pass"] = strconv.FormatInt(time.Now().UnixNano(), 10)
	t0 := time.Now()
	if err := l.c.Patch(ctx, ms, patch); err != nil {
		return 0, err
	}
	last := time.Now()
	var reached time.Duration // when the reconciles first reached profiles
	for {
		// Every 2 s: at 10,000 profiles one scrape of ballast-control's /metrics (44,000
		// series, most of them per profile) costs it about a second of cpu on this machine,
		// so polling faster measures the scrapes.
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(2 * time.Second):
		}
		m, err := l.scrape()
		if err != nil {
			continue
		}
		done := sumOr0(m, "controller_runtime_reconcile_total", profilesController) - base
		depth := sumOr0(m, "workqueue_depth", map[string]string{"name": "profiles"})
		if done >= float64(profiles) && depth == 0 {
			return time.Since(t0).Seconds(), nil
		}
		if done >= float64(profiles) && reached == 0 {
			reached = time.Since(t0)
		}
		if reached > 0 && time.Since(t0)-reached > 2*time.Minute {
			// The agents' flushes keep requeueing profiles faster than they are computed:
			// the pass is as long as the reconciles took to reach the profile count.
			fmt.Printf("%s  pass: %.0f reconciled, the queue did not empty (depth %.0f): counting %.0f s\n", now(), done, depth, reached.Seconds())
			l.notEmptied = append(l.notEmptied, depth)
			return reached.Seconds(), nil
		}
		if time.Since(last) > 10*time.Second {
			last = time.Now()
			fmt.Printf("%s  pass: %.0f/%d reconciled, queue depth %.0f\n", now(), done, profiles, depth)
		}
		if time.Since(t0) > 20*time.Minute {
			return time.Since(t0).Seconds(), fmt.Errorf("pass not done after %s: %.0f/%d reconciled", time.Since(t0).Round(time.Second), done, profiles)
		}
	}
}

// steady watches the steady phase: the profiles controller at its own cadence, the agents
// flushing; reconcile rates, queue depth, ballast-control's footprint, Valkey and the API
// server's writes.
func (l *liveCluster) steady(ctx context.Context, r *LiveScale, o LiveOptions) error {
	// Whole sampling intervals: the profiles were all computed in the pass before, so their
	// requeues come in step; a window of k intervals counts each profile about k times
	// whatever its phase. One interval first, for the agents' and requeues' cadence.
	rounds := max(1, int((o.Steady+o.Sampling/2)/o.Sampling))
	window := time.Duration(rounds) * o.Sampling
	fmt.Printf("%s  steady phase: %s settling, then %s (%d sampling intervals) measured\n", now(), o.Sampling, window, rounds)
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(o.Sampling):
	}
	m0, err := l.scrape()
	if err != nil {
		return err
	}
	w0, _ := apiWrites(ctx, l.s)
	p0 := l.s.ProcStats()["ballast-control"]
	ops0 := valkeyInfo(l, "stats", "total_commands_processed")
	t0 := time.Now()
	for time.Since(t0) < window {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Second):
		}
		if m, err := l.scrape(); err == nil {
			r.QueueDepthMax = max(r.QueueDepthMax, sumOr0(m, "workqueue_depth", map[string]string{"name": "profiles"}))
		}
	}
	m1, err := l.scrape()
	if err != nil {
		return err
	}
	secs := time.Since(t0).Seconds()
	r.SteadyS = secs
	w1, _ := apiWrites(ctx, l.s)
	p1 := l.s.ProcStats()["ballast-control"]
	r.ValkeyOpsPerS = (valkeyInfo(l, "stats", "total_commands_processed") - ops0) / secs
	r.ValkeyUsedMiB = valkeyInfo(l, "memory", "used_memory") / (1 << 20)
	r.ValkeyRSSMiB = valkeyInfo(l, "memory", "used_memory_rss") / (1 << 20)
	for k, v := range w1 {
		if d := v - w0[k]; d > 0 {
			r.WritesPerMin[k] = d / (secs / 60)
		}
	}
	r.ReconcilesPerS = (sumOr0(m1, "controller_runtime_reconcile_total", profilesController) -
		sumOr0(m0, "controller_runtime_reconcile_total", profilesController)) / secs
	r.ReconcileErrors = sumOr0(m1, "controller_runtime_reconcile_errors_total", profilesController) -
		sumOr0(m0, "controller_runtime_reconcile_errors_total", profilesController)
	r.NeededPerS = float64(r.Profiles) / o.Sampling.Seconds()
	r.ReconcileMeanMs = 1000 * meanDelta(m1, m0, "controller_runtime_reconcile_time_seconds", profilesController)
	r.QueueWaitMeanMs = 1000 * meanDelta(m1, m0, "workqueue_queue_duration_seconds", map[string]string{"name": "profiles"})
	r.Workers = sumOr0(m1, "controller_runtime_max_concurrent_reconciles", profilesController)
	r.ControlCPUCores = (p1.CPUSeconds - p0.CPUSeconds) / secs
	r.ControlRSSMiB, r.ControlPeakMiB = p1.RSSMiB, p1.PeakMiB
	r.StalestS, r.MedianAgeS, r.Unrecomputed, r.MedianSamples = l.ages(ctx)
	fmt.Printf("%s  steady: %.0f reconciles/s (needed %.0f/s), mean reconcile %.1f ms, queue wait %.1f ms, stalest profile %.0f s\n",
		now(), r.ReconcilesPerS, r.NeededPerS, r.ReconcileMeanMs, r.QueueWaitMeanMs, r.StalestS)
	return nil
}

// ages reads every profile's newest usageStats.lastUpdated: the oldest and the median age,
// how many profiles have no usage statistics at all, and the median of the retained
// samples of each profile's first cpu series (the history its statistics cover).
func (l *liveCluster) ages(ctx context.Context) (stalest, median float64, none int, medianSamples int64) {
	var ages []float64
	var samples []int64
	at := time.Now()
	_ = listPages(ctx, l.c, &ballastv1.WorkloadProfileList{}, func(o client.ObjectList) {
		for _, wp := range o.(*ballastv1.WorkloadProfileList).Items {
			var newest time.Time
			cpu := false
			for _, c := range wp.Status.Containers {
				for _, u := range c.UsageStats {
					if u.LastUpdated != nil && u.LastUpdated.After(newest) {
						newest = u.LastUpdated.Time
					}
					if !cpu && u.Resource == "cpu" {
						samples, cpu = append(samples, u.Samples), true
					}
				}
			}
			if newest.IsZero() {
				none++
				continue
			}
			ages = append(ages, at.Sub(newest).Seconds())
		}
	})
	if len(samples) > 0 {
		slices.Sort(samples)
		medianSamples = samples[len(samples)/2]
	}
	if len(ages) == 0 {
		return 0, 0, none, medianSamples
	}
	slices.Sort(ages)
	return ages[len(ages)-1], ages[len(ages)/2], none, medianSamples
}

// valkeyInfo reads one numeric field of an INFO section (0 when missing).
func valkeyInfo(l *liveCluster, section, field string) float64 {
	out, err := l.s.Valkey.Do("INFO", section)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return f
		}
	}
	return 0
}
