package profiles

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/control/backfill"
	"github.com/ballastk8s/ballast/pkg/control/config"
	"github.com/ballastk8s/ballast/pkg/control/events"
)

// Event reasons of the day-0 backfill (on the WorkloadProfile).
const (
	// EventBackfilled: history from Prometheus was written into the profile's store.
	EventBackfilled = "Backfilled"
	// EventBackfillFailed: Prometheus could not give the history; the profile accrues.
	EventBackfillFailed = "BackfillFailed"
)

// Backfiller gives a new profile day-0 history (backfill.Backfiller).
type Backfiller interface {
	Run(ctx context.Context, req backfill.Request) backfill.Result
}

// BackfillOptions tune when backfills run.
type BackfillOptions struct {
	// Timeout bounds one profile's backfill (every query and the write), so a slow
	// Prometheus holds a profile worker for at most this long.
	Timeout time.Duration
	// RetryAfter is how long after a transient failure (Prometheus down, slow, garbage) the
	// profile is tried again; meanwhile no other profile asks an unavailable Prometheus.
	RetryAfter time.Duration
}

// backfillState is the controller's in-memory view of backfills.
type backfillState struct {
	b Backfiller
	o BackfillOptions
	m *backfill.Metrics

	mu sync.Mutex
	// retryAt is, per profile, when a failed backfill may be tried again.
	retryAt map[string]time.Time
	// downUntil: Prometheus was unreachable; nobody asks it before then. downWhy is the
	// failure that said so, given to the profiles that were not asked meanwhile.
	downUntil time.Time
	downWhy   string
}

// SetBackfill turns on day-0 backfills from Prometheus (before Register).
func (c *Controller) SetBackfill(b Backfiller, m *backfill.Metrics, o BackfillOptions) {
	if o.Timeout <= 0 {
		o.Timeout = 30 * time.Second
	}
	if o.RetryAfter <= 0 {
		o.RetryAfter = 5 * time.Minute
	}
	c.backfill = &backfillState{b: b, o: o, m: m, retryAt: map[string]time.Time{}}
}

// applyBackfill backfills a profile with no history once, before its statistics are
// computed, so a profile whose pods Prometheus has seen for long enough is Sufficient on its
// first pass. It sets the Backfilled condition and returns the events to publish with the
// status. Never an error: whatever goes wrong, the profile accrues as without it.
func (c *Controller) applyBackfill(ctx context.Context, wp *ballastv1.WorkloadProfile, next *ballastv1.WorkloadProfileStatus,
	snap config.Snapshot, now time.Time) []events.Event {
	bs := c.backfill
	if bs == nil || snap.Config == nil || next.MeasurementHash == "" || len(next.SelectorLabels) == 0 {
		return nil
	}
	prev := meta.FindStatusCondition(next.Conditions, ballastv1.ConditionBackfilled)
	if prev != nil && prev.Status == metav1.ConditionTrue {
		return nil // done once; the store's marker also says so
	}
	if prev == nil && hasHistory(next) {
		return nil // history from before backfills were turned on: nothing to add
	}
	bs.mu.Lock()
	retryAt, pending := bs.retryAt[wp.Name]
	down := !now.After(bs.downUntil)
	due := now.After(retryAt) && !down
	downUntil, downWhy := bs.downUntil, bs.downWhy
	bs.mu.Unlock()
	// A failure is tried again when its reason is transient, or this process marked the
	// outcome as retriable (a store error before anything was claimed).
	if prev != nil && !retriable(prev.Reason) && !pending {
		return nil
	}
	if !due {
		if down && prev == nil {
			// Not asked: Prometheus was found unreachable for another profile. Say so now
			// rather than after the retry delay; the profile is asked once it has passed.
			return c.setBackfillCondition(ctx, wp, next, prev, now, backfill.Result{Reason: backfill.ResultUnavailable,
				Message: fmt.Sprintf("%s (not asked again until %s)", downWhy, downUntil.UTC().Format(time.RFC3339))})
		}
		return nil
	}
	retention, _ := ballastv1.RetentionWindow(*snap.Config)
	req := backfill.Request{Profile: wp.Name, Hash: next.MeasurementHash, SelectorLabels: next.SelectorLabels,
		Start: now.Add(-retention), End: minTime(wp.CreationTimestamp.Time, now), Retention: retention}
	// Only the historical pods the governing policy selects (a policy that cannot be
	// loaded now is tried again on a later pass).
	if ref := next.PolicyRef; ref != nil {
		compiled, err := c.resolver.Policy(ctx, *ref)
		if err != nil || compiled == nil {
			return nil
		}
		req.Policy, req.PolicyNamespace = compiled.Spec.Selector, ref.Namespace
	}
	rctx, cancel := context.WithTimeout(ctx, bs.o.Timeout)
	start := time.Now()
	res := bs.b.Run(rctx, req)
	cancel()
	bs.m.Duration.Observe(time.Since(start).Seconds())
	bs.m.Total.WithLabelValues(res.Reason).Inc()
	bs.m.Samples.Add(float64(res.Samples))

	bs.mu.Lock()
	if res.Retry {
		bs.retryAt[wp.Name] = now.Add(bs.o.RetryAfter)
		if res.Reason == backfill.ResultUnavailable {
			bs.downUntil, bs.downWhy = now.Add(bs.o.RetryAfter), res.Message
		}
	} else {
		delete(bs.retryAt, wp.Name)
	}
	bs.mu.Unlock()
	return c.setBackfillCondition(ctx, wp, next, prev, now, res)
}

// setBackfillCondition records one backfill outcome in the Backfilled condition and returns
// the event to publish with the status (none when the condition says the same already).
func (c *Controller) setBackfillCondition(ctx context.Context, wp *ballastv1.WorkloadProfile, next *ballastv1.WorkloadProfileStatus,
	prev *metav1.Condition, now time.Time, res backfill.Result) []events.Event {
	log := logr.FromContextOrDiscard(ctx).WithValues("profile", wp.Name)
	cond := metav1.Condition{Type: ballastv1.ConditionBackfilled, Status: metav1.ConditionFalse, Reason: res.Reason,
		Message: res.Message, ObservedGeneration: wp.Generation, LastTransitionTime: metav1.NewTime(now)}
	var ev []events.Event
	switch res.Reason {
	case backfill.ResultBackfilled, backfill.ResultAlreadyDone:
		cond.Status, cond.Reason = metav1.ConditionTrue, ballastv1.ReasonBackfilled
		log.Info("profile history backfilled from Prometheus", "samples", res.Samples, "span", res.Span.Round(time.Second).String(), "result", res.Reason)
		if res.Reason == backfill.ResultBackfilled {
			ev = append(ev, events.Event{Object: wp, Type: corev1.EventTypeNormal, Reason: EventBackfilled, Message: res.Message})
		}
	case backfill.ResultNoHistory:
		log.Info("no history to backfill from Prometheus", "why", res.Message)
	default:
		log.Error(nil, "backfill from Prometheus failed; the profile accrues without it", "result", res.Reason, "why", res.Message)
		ev = append(ev, events.Event{Object: wp, Type: corev1.EventTypeWarning, Reason: EventBackfillFailed, Message: res.Message})
	}
	if prev != nil && prev.Reason == cond.Reason && prev.Message == cond.Message {
		return nil // the same failure again: no new event, no status churn
	}
	meta.SetStatusCondition(&next.Conditions, cond)
	return ev
}

// retriable says whether a False Backfilled condition's reason may still turn True.
func retriable(reason string) bool {
	switch reason {
	case ballastv1.ReasonPrometheusUnavailable, ballastv1.ReasonBackfillBadAnswer:
		return true
	}
	return false
}

// hasHistory says whether the status already shows samples.
func hasHistory(st *ballastv1.WorkloadProfileStatus) bool {
	for _, c := range st.Containers {
		for _, u := range c.UsageStats {
			if u.Samples > 0 {
				return true
			}
		}
	}
	return false
}

func minTime(a, b time.Time) time.Time {
	if !a.IsZero() && a.Before(b) {
		return a
	}
	return b
}

// forgetBackfill drops a deleted profile's retry time.
func (c *Controller) forgetBackfill(name string) {
	if bs := c.backfill; bs != nil {
		bs.mu.Lock()
		delete(bs.retryAt, name)
		bs.mu.Unlock()
	}
}
