package store

import (
	"context"
	"fmt"

	"github.com/ballastk8s/ballast/pkg/series"
)

// OOMRecord is one entry of a profile's OOM stream.
type OOMRecord struct {
	// ID is the stream entry ID; pass the last one seen to ReadOOM to continue after it.
	ID    string
	Event series.OOMEvent
}

// ReadOOM returns the profile's OOM kills recorded after the entry afterID ("" reads from
// the oldest retained entry), oldest first, at most layout.OOMMaxLen of them; call again
// with the last ID for more.
func (r *Reader) ReadOOM(ctx context.Context, profile, afterID string) ([]OOMRecord, error) {
	if err := series.CheckProfile(profile); err != nil {
		return nil, fmt.Errorf("reading oom events: %w", err)
	}
	start := "-"
	if afterID != "" {
		start = "(" + afterID
	}
	key := series.OOMKey(profile)
	entries, err := r.do(ctx, r.c.B().Xrange().Key(key).Start(start).End("+").Count(r.layout.OOMMaxLen).Build())[0].AsXRange()
	if err != nil {
		return nil, fmt.Errorf("reading oom events of %s: %w", profile, err)
	}
	out := make([]OOMRecord, 0, len(entries))
	for _, e := range entries {
		ev, err := series.DecodeOOMEvent(e.FieldValues)
		if err != nil {
			return nil, fmt.Errorf("reading oom event %s of %s: %w", e.ID, profile, err)
		}
		out = append(out, OOMRecord{ID: e.ID, Event: ev})
	}
	return out, nil
}
