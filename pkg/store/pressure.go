package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/valkey-io/valkey-go"

	"github.com/ballastk8s/ballast/pkg/series"
)

// PressureEntry is one reading to add to a profile's pressure stream.
type PressureEntry struct {
	// Profile is the profile hash.
	Profile string
	Reading series.PressureReading
}

// PressureRecord is one entry of a profile's pressure stream.
type PressureRecord struct {
	// ID is the stream entry ID; pass the last one seen to ReadPressure to continue after it.
	ID      string
	Reading series.PressureReading
	// Err is why the entry could not be decoded (Reading is then zero). It is returned, not
	// fatal, so one bad entry does not hide the ones after it.
	Err error
}

// AddPressure appends readings to their profiles' pressure streams in one pipelined
// batch: one XADD per reading (each stream capped at about series.PressureMaxLen entries)
// and one EXPIRE per profile (series.PressureTTL). Invalid entries fail the whole batch
// before anything is sent; otherwise the error joins the failed commands' errors.
func (w *Writer) AddPressure(ctx context.Context, entries []PressureEntry) error {
	if len(entries) == 0 {
		return nil
	}
	maxLen := strconv.FormatInt(series.PressureMaxLen, 10)
	cmds := make(valkey.Commands, 0, len(entries)+1)
	profiles := map[string]bool{}
	for _, e := range entries {
		if err := series.CheckProfile(e.Profile); err != nil {
			return fmt.Errorf("adding pressure readings: %w", err)
		}
		if err := e.Reading.Validate(); err != nil {
			return fmt.Errorf("adding pressure readings: %w", err)
		}
		fv := w.c.B().Xadd().Key(series.PressureKey(e.Profile)).Maxlen().Almost().Threshold(maxLen).Id("*").FieldValue()
		f := e.Reading.WireFields()
		for i := 0; i+1 < len(f); i += 2 {
			fv = fv.FieldValue(f[i], f[i+1])
		}
		cmds = append(cmds, fv.Build())
		profiles[e.Profile] = true
	}
	for p := range profiles {
		cmds = append(cmds, w.c.B().Expire().Key(series.PressureKey(p)).Seconds(int64(series.PressureTTL.Seconds())).Build())
	}
	var errs []error
	for _, r := range w.c.DoMulti(ctx, cmds...) {
		if err := r.Error(); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("adding %d pressure readings: %w", len(entries), err)
	}
	return nil
}

// ReadPressure returns the profile's pressure readings recorded after the entry afterID,
// oldest first, at most series.PressureMaxLen of them; call again with the last ID for
// more. afterID "" reads from the oldest retained entry; a stream ID built from a time
// ("<unix ms>-0") reads what was added after that time.
func (r *Reader) ReadPressure(ctx context.Context, profile, afterID string) ([]PressureRecord, error) {
	if err := series.CheckProfile(profile); err != nil {
		return nil, fmt.Errorf("reading pressure readings: %w", err)
	}
	start := "-"
	if afterID != "" {
		start = "(" + afterID
	}
	key := series.PressureKey(profile)
	entries, err := r.do(ctx, r.c.B().Xrange().Key(key).Start(start).End("+").Count(series.PressureMaxLen).Build())[0].AsXRange()
	if err != nil {
		return nil, fmt.Errorf("reading pressure readings of %s: %w", profile, err)
	}
	out := make([]PressureRecord, 0, len(entries))
	for _, e := range entries {
		rd, err := series.DecodePressureReading(e.FieldValues)
		if err != nil {
			err = fmt.Errorf("pressure entry %s of %s: %w", e.ID, profile, err)
		}
		out = append(out, PressureRecord{ID: e.ID, Reading: rd, Err: err})
	}
	return out, nil
}
