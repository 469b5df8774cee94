package store

import (
	"context"
	"fmt"
	"strconv"

	"github.com/valkey-io/valkey-go"

	"github.com/ballastk8s/ballast/pkg/series"
)

// Writer adds locally aggregated windows to the store. Node agents use it; any number of
// writers may write the same series at once, because every update commutes.
type Writer struct {
	c      valkey.Client
	layout series.Layout
}

// NewWriter returns a writer for layout l.
func NewWriter(c *Client, l series.Layout) (*Writer, error) {
	if err := l.Validate(); err != nil {
		return nil, err
	}
	return &Writer{c: c.c, layout: l}, nil
}

// FlushError reports the updates of a Flush that did not succeed. An update answered with
// an error reply was not applied; after a connection error its outcome is unknown (the
// server may have applied it), so retrying it may count its samples twice.
type FlushError struct {
	// Failed holds the indexes, into the slice given to Flush, of the updates that failed.
	Failed []int
	// Err is the first error.
	Err error
}

func (e *FlushError) Error() string {
	return fmt.Sprintf("flushing windows: %d failed, first: %v", len(e.Failed), e.Err)
}

func (e *FlushError) Unwrap() error { return e.Err }

// Flush adds windows to the store in one pipelined batch: one atomic script call per
// window, which increments the window's bucket counters, count and sums, keeps its
// min/max/first/last, sets the window's expiry (end + retention + slack), adds the window to
// the profile's pending set and the series to the profile's index. Nothing is read back
// and nothing is read first, so the cost is one round trip (per cluster node) whose size
// follows the number of windows, not the number of samples.
//
// Invalid updates fail the whole flush before anything is sent. Otherwise a *FlushError
// names the updates that failed.
func (w *Writer) Flush(ctx context.Context, updates []series.WindowUpdate) error {
	if len(updates) == 0 {
		return nil
	}
	ttl := strconv.FormatInt(int64(w.layout.TTL().Seconds()), 10)
	calls := make([]scriptCall, len(updates))
	for i, u := range updates {
		if err := u.Validate(w.layout); err != nil {
			return fmt.Errorf("flushing windows: %w", err)
		}
		p := u.Series.Profile
		member := series.Member(u.Series, u.Start)
		args := make([]string, 0, 5+14+2*len(u.Hist.Buckets))
		args = append(args, member, u.Series.Token(), strconv.FormatInt(u.Start.Unix(), 10),
			strconv.FormatInt(w.layout.WindowExpiry(u.Start).Unix(), 10), ttl)
		calls[i] = scriptCall{
			keys: []string{series.WindowKey(u.Series, u.Start), series.IndexKey(p), series.PendingKey(p)},
			args: append(args, u.Hist.WireFields()...),
		}
	}
	res, _ := addScript.run(ctx, w.c, calls)
	fe := &FlushError{}
	for i, r := range res {
		if err := r.Error(); err != nil {
			fe.Failed = append(fe.Failed, i)
			if fe.Err == nil {
				fe.Err = fmt.Errorf("window %s: %w", updates[i].Series.String()+"@"+strconv.FormatInt(updates[i].Start.Unix(), 10), err)
			}
		}
	}
	if len(fe.Failed) > 0 {
		return fe
	}
	return nil
}

// AddOOM appends an OOM kill to the profile's stream, capped at about layout.OOMMaxLen
// entries, and refreshes the stream's expiry. It returns the entry ID.
func (w *Writer) AddOOM(ctx context.Context, profile string, ev series.OOMEvent) (string, error) {
	if err := series.CheckProfile(profile); err != nil {
		return "", fmt.Errorf("adding oom event: %w", err)
	}
	if err := ev.Validate(); err != nil {
		return "", fmt.Errorf("adding oom event: %w", err)
	}
	key := series.OOMKey(profile)
	fv := w.c.B().Xadd().Key(key).Maxlen().Almost().Threshold(strconv.FormatInt(w.layout.OOMMaxLen, 10)).Id("*").FieldValue()
	fields := ev.WireFields()
	for i := 0; i+1 < len(fields); i += 2 {
		fv = fv.FieldValue(fields[i], fields[i+1])
	}
	res := w.c.DoMulti(ctx, fv.Build(),
		w.c.B().Expire().Key(key).Seconds(int64(w.layout.TTL().Seconds())).Build())
	id, err := res[0].ToString()
	if err != nil {
		return "", fmt.Errorf("adding oom event to %s: %w", key, err)
	}
	if err := res[1].Error(); err != nil {
		return id, fmt.Errorf("setting expiry of %s: %w", key, err)
	}
	return id, nil
}
