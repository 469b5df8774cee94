package store

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/valkey-io/valkey-go"

	"github.com/ballastk8s/ballast/pkg/series"
)

// StoreEpoch returns when this store's current life began: the time the epoch key was
// written, by the first use of the store (or at now, when it is missing: a new or wiped
// store). SET NX makes every control-plane replica agree on one value.
func (c *Client) StoreEpoch(ctx context.Context, now time.Time) (time.Time, error) {
	get := func() (time.Time, bool, error) {
		v, err := c.c.Do(ctx, c.c.B().Get().Key(series.StoreEpochKey).Build()).ToString()
		if valkey.IsValkeyNil(err) {
			return time.Time{}, false, nil
		}
		if err != nil {
			return time.Time{}, false, fmt.Errorf("reading the store epoch: %w", err)
		}
		ms, err := strconv.ParseInt(v, 10, 64)
		if err != nil || ms <= 0 {
			return time.Time{}, false, fmt.Errorf("store epoch %q is not a unix time in milliseconds", v)
		}
		return time.UnixMilli(ms), true, nil
	}
	if t, ok, err := get(); ok || err != nil {
		return t, err
	}
	ms := strconv.FormatInt(now.UnixMilli(), 10)
	if err := c.c.Do(ctx, c.c.B().Set().Key(series.StoreEpochKey).Value(ms).Nx().Build()).Error(); err != nil && !valkey.IsValkeyNil(err) {
		return time.Time{}, fmt.Errorf("writing the store epoch: %w", err)
	}
	t, ok, err := get()
	if err == nil && !ok {
		err = fmt.Errorf("the store epoch vanished right after it was written")
	}
	return t, err
}

// StoreEpoch is Client.StoreEpoch on the lazily opened connection.
func (s *ProfileReader) StoreEpoch(ctx context.Context, now time.Time) (time.Time, error) {
	c, err := s.lazy.connected()
	if err != nil {
		return time.Time{}, err
	}
	t, err := c.StoreEpoch(ctx, now)
	return t, s.lazy.Check(err)
}
