// Package backfill gives a new profile day-0 history: when a WorkloadProfile with no
// history is created and --history-prometheus-url is set, ballast-control reads the
// cAdvisor usage of the profile's pods (selected through kube-state-metrics' kube_pod_labels)
// from Prometheus over the retention window and writes it once, through pkg/store, into the
// same series windows the node agents write. Readiness then counts those samples like any
// other. Prometheus being down, slow or answering garbage only means the profile accrues as
// it would have without it; docs/backfill.md describes it.
package backfill

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/series"
)

// Source is a Prometheus HTTP API (Prometheus in production).
type Source interface {
	QueryRange(ctx context.Context, query string, start, end time.Time, step time.Duration) ([]Series, int, error)
}

// Store is the backfill's view of the store (store.ProfileReader).
type Store interface {
	ClaimBackfill(ctx context.Context, profile, value string, retention time.Duration) (bool, error)
	SetBackfillMarker(ctx context.Context, profile, value string, retention time.Duration) error
	BackfillMarker(ctx context.Context, profile string) (string, error)
	WriteBackfill(ctx context.Context, retention time.Duration, ups []series.WindowUpdate) error
}

// Options tune the backfill.
type Options struct {
	// Step is the resolution asked of Prometheus (one sample per container and resource per
	// step; default 60s, metrics-server's resolution).
	Step time.Duration
	// RateWindow is the cpu rate()'s range (default 5m: four scrapes at a 75s interval).
	RateWindow time.Duration
	// Chunk is the longest range of one query (default 24h: 1,440 points per series at a
	// one-minute step, well under Prometheus' 11,000-point limit; never more than 10,000
	// steps).
	Chunk time.Duration
}

// maxPoints bounds the points of one series in one query.
const maxPoints = 10_000

func (o Options) withDefaults() Options {
	if o.Step <= 0 {
		o.Step = time.Minute
	}
	if o.RateWindow <= 0 {
		o.RateWindow = 5 * time.Minute
	}
	if o.Chunk <= 0 {
		o.Chunk = 24 * time.Hour
	}
	// At most 10,000 points per series and query: Prometheus refuses more than 11,000.
	if most := o.Step * maxPoints; o.Chunk > most {
		o.Chunk = most
	}
	return o
}

// Request is one profile to backfill.
type Request struct {
	// Profile is the WorkloadProfile's name (for logs), Hash its measurementHash (the
	// store's profile key).
	Profile, Hash string
	// SelectorLabels are the profile's status.selectorLabels.
	SelectorLabels map[string]string
	// Policy is the governing policy's selector, and PolicyNamespace a ResourcePolicy's
	// namespace ("" for a ClusterResourcePolicy): historical pods they do not match are
	// not read (ScopeMatchers).
	Policy          ballastv1.PolicySelector
	PolicyNamespace string
	// Start and End bound the history read; End is the profile's creation, so samples the
	// node agents wrote since are never doubled.
	Start, End time.Time
	// Retention is the store's retention window (the layout and expiry of the windows).
	Retention time.Duration
}

// Result reasons (the Backfilled condition's reason and ballast_backfill_total's result).
const (
	// ResultBackfilled: samples were written.
	ResultBackfilled = ballastv1.ReasonBackfilled
	// ResultNoHistory: Prometheus answered, but holds no usage of the profile's pods.
	ResultNoHistory = ballastv1.ReasonBackfillNoHistory
	// ResultAlreadyDone: the store's marker says the history was written before (the
	// condition then shows Backfilled with the marker's message).
	ResultAlreadyDone = "AlreadyBackfilled"
	// ResultUnavailable: Prometheus could not be reached, or did not answer in time.
	ResultUnavailable = ballastv1.ReasonPrometheusUnavailable
	// ResultBadAnswer: Prometheus answered something that is not a range answer, or an error.
	ResultBadAnswer = ballastv1.ReasonBackfillBadAnswer
	// ResultStoreError: the samples could not be written.
	ResultStoreError = ballastv1.ReasonBackfillStoreError
)

// Result is the outcome of one backfill.
type Result struct {
	Reason  string
	Message string
	// Samples written, and the time they span.
	Samples int64
	Span    time.Duration
	// Retry says the outcome is transient: the backfill may be tried again later.
	Retry bool
}

// Backfiller reads and writes one profile's day-0 history.
type Backfiller struct {
	src   Source
	store Store
	o     Options
}

// New returns a backfiller.
func New(src Source, st Store, o Options) *Backfiller {
	return &Backfiller{src: src, store: st, o: o.withDefaults()}
}

// Run backfills req's profile once. Everything is read before anything is written, and the
// store's marker is claimed (SET NX) before the write, so a restart never writes the same
// history twice: a crash between the claim and the write loses the backfill rather than
// doubling it.
func (b *Backfiller) Run(ctx context.Context, req Request) Result {
	if !req.End.After(req.Start) {
		return Result{Reason: ResultNoHistory, Message: "history: nothing to backfill before the profile was created"}
	}
	scope, err := ScopeMatchers(req.Policy, req.PolicyNamespace)
	if err != nil {
		return Result{Reason: ResultNoHistory, Message: "history: the policy's selector cannot be read from Prometheus: " + err.Error()}
	}
	layout := series.DefaultLayout(req.Retention)
	acc := newAccumulator(layout.Window)
	for lo := req.Start; lo.Before(req.End); lo = lo.Add(b.o.Chunk) {
		hi := minTime(lo.Add(b.o.Chunk), req.End)
		for _, q := range []struct {
			resource, query string
			scale           float64
		}{
			{series.ResourceCPU, CPUQuery(req.SelectorLabels, b.o.RateWindow, scope...), 1000},
			{series.ResourceMemory, MemoryQuery(req.SelectorLabels, scope...), 1},
		} {
			got, _, err := b.src.QueryRange(ctx, q.query, lo, hi, b.o.Step)
			if err != nil {
				return failure(err)
			}
			acc.add(q.resource, q.scale, got, lo, hi, !hi.Before(req.End))
		}
	}
	if acc.samples == 0 {
		return Result{Reason: ResultNoHistory,
			Message: "history: Prometheus holds no usage of this profile's pods (container_cpu_usage_seconds_total, container_memory_working_set_bytes joined with kube_pod_labels)"}
	}
	claimed, err := b.store.ClaimBackfill(ctx, req.Hash, "writing", req.Retention)
	if err != nil {
		return Result{Reason: ResultStoreError, Message: "history: not backfilled: " + err.Error(), Retry: true}
	}
	if !claimed {
		msg, _ := b.store.BackfillMarker(ctx, req.Hash)
		if !strings.HasPrefix(msg, "history:") {
			msg = "history: backfilled from Prometheus before (store marker)"
		}
		return Result{Reason: ResultAlreadyDone, Message: msg}
	}
	ups := acc.updates(req.Hash)
	// A failed write keeps the claim: some windows may have been applied, and writing them
	// again would count their samples twice (at most once, never twice).
	if err := b.store.WriteBackfill(ctx, req.Retention, ups); err != nil {
		return Result{Reason: ResultStoreError, Message: "history: backfill write failed (not retried): " + err.Error()}
	}
	span := acc.span()
	msg := fmt.Sprintf("history: backfilled %s days from Prometheus (%s, %d samples)", days(span), span.Round(time.Second), acc.samples)
	_ = b.store.SetBackfillMarker(ctx, req.Hash, msg, req.Retention)
	return Result{Reason: ResultBackfilled, Message: msg, Samples: acc.samples, Span: span}
}

// failure classifies a query error.
func failure(err error) Result {
	var api *APIError
	if errors.Is(err, ErrGarbage) || errors.As(err, &api) {
		return Result{Reason: ResultBadAnswer, Message: "history: not backfilled: " + err.Error(), Retry: true}
	}
	return Result{Reason: ResultUnavailable, Message: "history: not backfilled: " + err.Error(), Retry: true}
}

// days renders a span in days with two decimals ("0.04", "7.00").
func days(d time.Duration) string { return fmt.Sprintf("%.2f", d.Hours()/24) }

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
