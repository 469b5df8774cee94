package agent

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/ballastk8s/ballast/pkg/nodeagent/buffer"
	"github.com/ballastk8s/ballast/pkg/series"
	"github.com/ballastk8s/ballast/pkg/store"
)

// storeConn is the agent's Valkey connection (store.Lazy: connected on first use, so the
// agent starts, samples and buffers while Valkey is unreachable, one Writer per layout)
// and what the debug view shows of it.
type storeConn struct {
	lazy *store.Lazy
	// redact hides the store's credentials in every message shown or logged.
	redact *store.Redactor

	mu     sync.Mutex
	status storeStatus
}

type storeStatus struct {
	connected           bool
	lastFlush           time.Time
	lastFlushDur        time.Duration
	lastFlushWindows    int
	lastErr             string
	lastErrAt           time.Time
	consecutiveFailures int
	flushedWindows      int64
	flushedSamples      int64
	// full: the last flush was refused because the store is at its maxmemory.
	full bool
}

// writer returns the Writer for layout l, connecting first if needed.
func (s *storeConn) writer(l series.Layout) (*store.Writer, error) { return s.lazy.Writer(l) }

// failed records a failed store use; changed reports that the error differs from the last
// one (so the caller logs each distinct problem once, not every flush). The message is
// redacted: connection errors may quote the store URL.
func (s *storeConn) failed(at time.Time, err error) (msg string, changed bool) {
	err = s.lazy.Check(err) // a refused password: reconnect next time, re-reading the file
	s.mu.Lock()
	defer s.mu.Unlock()
	msg = s.redact.String(err.Error())
	changed = msg != s.status.lastErr
	s.status.connected = false
	s.status.lastErr, s.status.lastErrAt = msg, at
	s.status.consecutiveFailures++
	return msg, changed
}

func (s *storeConn) succeeded(at time.Time, d time.Duration, windows int, samples int64) {
	s.wrote(windows, samples)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.status.connected = true
	s.status.lastFlush, s.status.lastFlushDur, s.status.lastFlushWindows = at, d, windows
	s.status.consecutiveFailures = 0
}

// wrote counts windows and samples the store applied.
func (s *storeConn) wrote(windows int, samples int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.status.flushedWindows += int64(windows)
	s.status.flushedSamples += samples
}

// setFull records whether the store refuses writes for lack of memory and reports a change.
func (s *storeConn) setFull(full bool) (changed bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	changed = s.status.full != full
	s.status.full = full
	return changed
}

func (s *storeConn) snapshot() storeStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.status
}

func (s *storeConn) close() { s.lazy.Close() }

// layout is the store layout for the current retention window (as the control plane
// derives it, series.DefaultLayout).
func (a *Agent) layout() series.Layout {
	return series.DefaultLayout(time.Duration(a.retention.Load()))
}

// runFlusher writes the buffer to Valkey every FlushInterval, and once more on shutdown.
func (a *Agent) runFlusher(ctx context.Context) error {
	t := time.NewTicker(a.o.FlushInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			// Shutdown (a DaemonSet rollout): write what is held, within one flush timeout.
			final, cancel := context.WithTimeout(context.Background(), a.o.FlushTimeout)
			a.flushOnce(final, a.now())
			cancel()
			return nil
		case <-t.C:
			a.flushOnce(ctx, a.now())
		}
	}
}

// flushOnce files pending samples whose pod is now bound, drops expired windows, retries
// queued OOM events and writes every filed window in pipelined batches. Windows of a batch
// that fails stay in the buffer (merged with newer samples) for the next flush.
func (a *Agent) flushOnce(ctx context.Context, now time.Time) {
	// Every sample of the turns completed so far is in the buffer now; once the buffer is
	// written, the heartbeat may say so.
	sampled := a.sampled.Load()
	a.filePending(now)
	l := a.layout()
	a.buf.Expire(now, l.TTL())
	w, err := a.store.writer(l)
	if err != nil {
		if msg, changed := a.store.failed(now, err); changed {
			a.log.Info("store unavailable; samples stay buffered and every flush retries", "error", msg)
		}
		a.m.storeUp.Set(0)
		a.m.flushes.WithLabelValues("unavailable").Inc()
		return
	}
	a.retryOOM(ctx, now)
	if a.flushAll(ctx, w, l, now) && sampled != 0 {
		a.through = time.Unix(0, sampled)
	}
	a.writeHeartbeat(ctx, w, now)
}

// flushAll writes the buffer's filed windows in batches; it reports whether all were written.
func (a *Agent) flushAll(ctx context.Context, w *store.Writer, l series.Layout, now time.Time) bool {
	for {
		ups := a.buf.Take(a.o.FlushMaxWindows)
		if len(ups) == 0 {
			return true
		}
		if !a.flushBatch(ctx, w, l, ups, now) {
			return false
		}
		if len(ups) < a.o.FlushMaxWindows {
			return true
		}
	}
}

// flushBatch writes one batch; it reports whether the batch was written.
func (a *Agent) flushBatch(ctx context.Context, w *store.Writer, l series.Layout, ups []series.WindowUpdate, now time.Time) bool {
	// Invalid windows would fail the whole batch before anything is sent; set them aside.
	valid := ups[:0:0]
	var rejected []series.WindowUpdate
	for _, u := range ups {
		u.Node = a.o.NodeName // attribution: the store's readers can tell which node wrote what
		if u.Validate(l) != nil {
			rejected = append(rejected, u)
		} else {
			valid = append(valid, u)
		}
	}
	if len(rejected) > 0 {
		a.buf.Reject(rejected)
		a.log.Error(errors.New("invalid window"), "dropping windows the store would reject", "count", len(rejected),
			"example", rejected[0].Series.String())
	}
	if len(valid) == 0 {
		return true
	}
	start := time.Now()
	fctx, cancel := context.WithTimeout(ctx, a.o.FlushTimeout)
	err := w.Flush(fctx, valid)
	cancel()
	d := time.Since(start)
	a.m.flushDuration.Observe(d.Seconds())
	a.m.flushBytes.Add(float64(payloadBytes(valid, l)))

	failed := map[int]bool{}
	var fe *store.FlushError
	switch {
	case err == nil:
	case errors.As(err, &fe):
		for _, i := range fe.Failed {
			failed[i] = true
		}
	default:
		for i := range valid {
			failed[i] = true
		}
	}
	var retry []series.WindowUpdate
	var windows int
	var samples int64
	a.st.mu.Lock()
	for i, u := range valid {
		if failed[i] {
			retry = append(retry, u)
			continue
		}
		windows++
		samples += u.Hist.N
		k := tallyKey{owner: u.Series.Profile, s: buffer.Series{Container: u.Series.Container, Resource: u.Series.Resource, Signal: u.Series.Signal}}
		if t := a.st.tallies[k]; t != nil {
			t.flushed += u.Hist.N
		}
	}
	a.st.pruneTalliesLocked(now)
	a.st.mu.Unlock()
	a.m.seriesFlushed.Add(float64(windows))
	a.m.samplesFlushed.Add(float64(samples))
	if len(retry) > 0 {
		// A failed update was not applied, or its outcome is unknown after a connection
		// error; keeping it loses nothing at the rare risk of counting it twice.
		a.buf.Return(retry)
		msg, _ := a.store.failed(now, err)
		a.store.wrote(windows, samples) // the batch's applied part (a store filling up mid-batch)
		a.m.storeUp.Set(0)
		if store.IsStoreFull(err) {
			// Valkey is at its maxmemory and refuses every write: nothing of the batch was
			// applied. Said once when it starts, not every flush.
			a.m.flushes.WithLabelValues(flushStoreFull).Inc()
			if a.store.setFull(true) {
				a.log.Error(nil, "the store is full (maxmemory): windows stay in the bounded buffer and every flush retries; raise the store's maxmemory",
					"failed", len(retry), "of", len(valid), "buffered", a.buf.Stats().Filed, "error", msg)
			}
			return false
		}
		a.m.flushes.WithLabelValues("error").Inc()
		a.log.V(1).Info("flush failed, windows kept", "failed", len(retry), "of", len(valid), "error", msg)
		return false
	}
	a.store.succeeded(now, d, windows, samples)
	if a.store.setFull(false) {
		a.log.Info("the store accepts writes again: buffered windows are being flushed", "buffered", a.buf.Stats().Filed)
	}
	a.m.storeUp.Set(1)
	a.m.flushes.WithLabelValues("ok").Inc()
	return true
}

// filePending moves the samples of pods that became bound under their profile hash, and
// discards those of pods that left the node without ever being stamped.
func (a *Agent) filePending(now time.Time) {
	for _, uid := range a.buf.PendingPods() {
		a.st.mu.Lock()
		ps, here := a.st.pods[uid]
		d, left := a.st.departed[uid]
		a.st.mu.Unlock()
		var hash string
		switch {
		case here:
			hash = a.hashOfPod(uid, ps.pod.ProfileRef)
		case left && d.profileRef != "":
			hash = a.hashOfPod(uid, d.profileRef)
			if hash == "" && now.Sub(d.at) > time.Hour {
				a.buf.Discard(uid, buffer.DropUnbound)
				continue
			}
		default:
			a.buf.Discard(uid, buffer.DropUnbound)
			continue
		}
		if hash == "" {
			continue
		}
		moved := a.buf.File(uid, hash)
		a.st.mu.Lock()
		for s, n := range moved {
			delete(a.st.tallies, tallyKey{owner: "pod:" + uid, s: s})
			a.st.tallyLocked(hash, s, n, now)
		}
		a.st.mu.Unlock()
		a.log.V(1).Info("filed pending samples", "pod", uid, "hash", hash, "series", len(moved))
	}
}

// payloadBytes estimates what a batch sends: every key and argument of the store's
// per-window script call (protocol framing not counted).
func payloadBytes(ups []series.WindowUpdate, l series.Layout) int {
	ttl := len(strconv.FormatInt(int64(l.TTL().Seconds()), 10))
	n := 0
	for _, u := range ups {
		p := u.Series.Profile
		n += len(series.WindowKey(u.Series, u.Start)) + len(series.IndexKey(p)) + len(series.PendingKey(p))
		n += len(series.Member(u.Series, u.Start)) + len(u.Series.Token()) + 2*10 + ttl
		for _, f := range u.Hist.WireFields() {
			n += len(f)
		}
	}
	return n
}
