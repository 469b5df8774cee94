package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/valkey-io/valkey-go"

	"github.com/ballastk8s/ballast/pkg/series"
)

// Day-0 history from Prometheus (pkg/control/backfill). The samples go through the agents'
// Writer into the same windows; series.BackfillKey makes the write happen at most once per
// profile.

// ClaimBackfill sets the profile's backfill marker to value unless it exists, with the
// history's expiry (retention plus slack): a profile whose history has all expired may be
// backfilled again. It reports whether this call set it; false means the history was
// backfilled (or is being backfilled) already and must not be written again.
func (s *ProfileReader) ClaimBackfill(ctx context.Context, profile, value string, retention time.Duration) (bool, error) {
	c, err := s.lazy.connected()
	if err != nil {
		return false, err
	}
	ttl := series.DefaultLayout(retention).TTL()
	err = c.c.Do(ctx, c.c.B().Set().Key(series.BackfillKey(profile)).Value(value).Nx().Ex(ttl).Build()).Error()
	switch {
	case errors.Is(err, valkey.Nil):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("claiming the backfill of %s: %w", profile, err)
	}
	return true, nil
}

// BackfillMarker returns the profile's backfill marker ("" when none).
func (s *ProfileReader) BackfillMarker(ctx context.Context, profile string) (string, error) {
	c, err := s.lazy.connected()
	if err != nil {
		return "", err
	}
	v, err := c.c.Do(ctx, c.c.B().Get().Key(series.BackfillKey(profile)).Build()).ToString()
	switch {
	case errors.Is(err, valkey.Nil):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("reading the backfill marker of %s: %w", profile, err)
	}
	return v, nil
}

// SetBackfillMarker replaces the marker's value (keeping it claimed), e.g. with the outcome.
func (s *ProfileReader) SetBackfillMarker(ctx context.Context, profile, value string, retention time.Duration) error {
	c, err := s.lazy.connected()
	if err != nil {
		return err
	}
	ttl := series.DefaultLayout(retention).TTL()
	if err := c.c.Do(ctx, c.c.B().Set().Key(series.BackfillKey(profile)).Value(value).Ex(ttl).Build()).Error(); err != nil {
		return fmt.Errorf("recording the backfill of %s: %w", profile, err)
	}
	return nil
}

// WriteBackfill adds backfilled windows to the store through the agents' write path (one
// pipelined Flush).
func (s *ProfileReader) WriteBackfill(ctx context.Context, retention time.Duration, ups []series.WindowUpdate) error {
	w, err := s.lazy.Writer(series.DefaultLayout(retention))
	if err != nil {
		return err
	}
	return w.Flush(ctx, ups)
}
