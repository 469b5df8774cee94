package store

import (
	"errors"
	"fmt"

	"github.com/valkey-io/valkey-go"
)

// errNotArray is returned for a script reply of an unexpected shape.
var errNotArray = errors.New("unexpected reply shape")

type compactReply struct {
	before, after int64
	compacted     int64
	rolled        []string // rollup members written as sent
	skipped       []string
	stale         int64 // 'n' groups whose rollup existed after all
}

// parseCompact decodes a compactScript reply.
func parseCompact(profile string, res valkey.ValkeyResult) (compactReply, error) {
	arr, err := res.ToArray()
	if err != nil {
		return compactReply{}, fmt.Errorf("compacting windows of %s: %w", profile, err)
	}
	if len(arr) != 6 {
		return compactReply{}, fmt.Errorf("compacting windows of %s: %w: %d elements", profile, errNotArray, len(arr))
	}
	var cr compactReply
	var errs [6]error
	cr.before, errs[0] = arr[0].AsInt64()
	cr.after, errs[1] = arr[1].AsInt64()
	// An empty Lua table comes back as an empty array.
	cr.rolled, errs[2] = arr[2].AsStrSlice()
	cr.compacted, errs[3] = arr[3].AsInt64()
	cr.skipped, errs[4] = arr[4].AsStrSlice()
	cr.stale, errs[5] = arr[5].AsInt64()
	if err := errors.Join(errs[:]...); err != nil {
		return compactReply{}, fmt.Errorf("compacting windows of %s: %w", profile, err)
	}
	return cr, nil
}

// epochOf reads a GET reply of an epoch key; a missing key is epoch 0.
func epochOf(res valkey.ValkeyResult) (int64, error) {
	v, err := res.AsInt64()
	if valkey.IsValkeyNil(err) {
		return 0, nil
	}
	return v, err
}
