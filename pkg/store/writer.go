package store

import (
	"context"
	"fmt"
	"slices"
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

// flushBatch caps the windows of one script call (a replayed buffer can hold many windows of
// one profile).
const flushBatch = 64

// Flush adds windows to the store in one pipelined batch: one atomic script call per profile
// (up to flushBatch windows each), which increments each window's bucket counters, count and
// sums, keeps its min/max/first/last, gives a new window its expiry (end + retention +
// slack), adds the windows to the profile's pending set and the series to the profile's
// index. Nothing is read back and nothing is read first, so the cost is one round trip (per
// cluster node) whose size follows the number of windows, not the number of samples.
//
// Invalid updates fail the whole flush before anything is sent. Otherwise a *FlushError
// names the updates that failed; the others were applied.
func (w *Writer) Flush(ctx context.Context, updates []series.WindowUpdate) error {
	if len(updates) == 0 {
		return nil
	}
	for _, u := range updates {
		if err := u.Validate(w.layout); err != nil {
			return fmt.Errorf("flushing windows: %w", err)
		}
	}
	ttl := strconv.FormatInt(int64(w.layout.TTL().Seconds()), 10)
	// Group by profile, in first-seen order: the keys of one call share the profile's hash tag.
	var order []string
	byProfile := map[string][]int{}
	for i, u := range updates {
		p := u.Series.Profile
		if _, ok := byProfile[p]; !ok {
			order = append(order, p)
		}
		byProfile[p] = append(byProfile[p], i)
	}
	var calls []scriptCall
	var members [][]int // update indexes of each call, in its window order
	for _, p := range order {
		idx := byProfile[p]
		for lo := 0; lo < len(idx); lo += flushBatch {
			batch := idx[lo:min(lo+flushBatch, len(idx))]
			call := scriptCall{keys: []string{series.IndexKey(p), series.PendingKey(p)}, args: []string{ttl}}
			for _, i := range batch {
				u := updates[i]
				fields := append(u.Hist.WireFields(), series.NodeFields(u.Node, u.Hist)...)
				call.keys = append(call.keys, series.WindowKey(u.Series, u.Start))
				call.args = append(call.args, series.Member(u.Series, u.Start), u.Series.Token(),
					strconv.FormatInt(u.Start.Unix(), 10), strconv.FormatInt(w.layout.WindowExpiry(u.Start).Unix(), 10),
					strconv.Itoa(len(fields)/2))
				call.args = append(call.args, fields...)
			}
			calls = append(calls, call)
			members = append(members, batch)
		}
	}
	res, _ := addScript.run(ctx, w.c, calls)
	fe := &FlushError{}
	fail := func(i int, err error) {
		fe.Failed = append(fe.Failed, i)
		if fe.Err == nil {
			fe.Err = fmt.Errorf("window %s: %w", updates[i].Series.String()+"@"+strconv.FormatInt(updates[i].Start.Unix(), 10), err)
		}
	}
	for k, r := range res {
		items, err := r.ToArray()
		if err == nil && len(items) != len(members[k]) {
			err = fmt.Errorf("%w: %d results for %d windows", errNotArray, len(items), len(members[k]))
		}
		for j, i := range members[k] {
			switch {
			case err != nil:
				fail(i, err)
			default:
				if n, e := items[j].AsInt64(); e != nil || n != 1 {
					msg, _ := items[j].ToString()
					fail(i, fmt.Errorf("refused: %s", msg))
				}
			}
		}
	}
	if len(fe.Failed) > 0 {
		slices.Sort(fe.Failed)
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
