package store

import (
	"errors"
	"fmt"

	"github.com/valkey-io/valkey-go"

	"github.com/ballastk8s/ballast/pkg/series"
)

// errNotArray is returned for a script reply of an unexpected shape.
var errNotArray = errors.New("unexpected reply shape")

type compactReply struct {
	before, after int64
	compacted     int64
	rolled        map[string]cachedHist
	skipped       []string
}

// parseCompact decodes a compactScript reply.
func parseCompact(profile string, res valkey.ValkeyResult) (compactReply, error) {
	arr, err := res.ToArray()
	if err != nil {
		return compactReply{}, fmt.Errorf("compacting windows of %s: %w", profile, err)
	}
	if len(arr) != 5 {
		return compactReply{}, fmt.Errorf("compacting windows of %s: %w: %d elements", profile, errNotArray, len(arr))
	}
	var cr compactReply
	if cr.before, err = arr[0].AsInt64(); err != nil {
		return compactReply{}, fmt.Errorf("compacting windows of %s: epoch: %w", profile, err)
	}
	if cr.after, err = arr[1].AsInt64(); err != nil {
		return compactReply{}, fmt.Errorf("compacting windows of %s: epoch: %w", profile, err)
	}
	items, err := arr[2].ToArray()
	if err != nil || len(items)%2 != 0 {
		return compactReply{}, fmt.Errorf("compacting windows of %s: %w", profile, errNotArray)
	}
	cr.rolled = make(map[string]cachedHist, len(items)/2)
	for i := 0; i < len(items); i += 2 {
		m, err1 := items[i].ToString()
		pairs, err2 := items[i+1].AsStrSlice()
		if err1 != nil || err2 != nil {
			return compactReply{}, fmt.Errorf("compacting windows of %s: %w", profile, errNotArray)
		}
		c, err := decodeEntry(profile, m, pairs)
		if err != nil {
			return compactReply{}, fmt.Errorf("compacting windows of %s: %w", profile, err)
		}
		cr.rolled[m] = c
	}
	if cr.compacted, err = arr[3].AsInt64(); err != nil {
		return compactReply{}, fmt.Errorf("compacting windows of %s: count: %w", profile, err)
	}
	// An empty Lua table comes back as an empty array.
	if cr.skipped, err = arr[4].AsStrSlice(); err != nil {
		return compactReply{}, fmt.Errorf("compacting windows of %s: skipped: %w", profile, err)
	}
	return cr, nil
}

// decodeEntry decodes the hash of a window or rollup member.
func decodeEntry(profile, member string, pairs []string) (cachedHist, error) {
	id, start, err := series.ParseMember(profile, member)
	if err != nil {
		return cachedHist{}, err
	}
	h, err := decodePairs(pairs)
	if err != nil {
		return cachedHist{}, fmt.Errorf("%s: %w", member, err)
	}
	return cachedHist{id: id, start: start, hist: series.Pack(h)}, nil
}

func decodePairs(pairs []string) (*series.Histogram, error) {
	if len(pairs)%2 != 0 {
		return nil, fmt.Errorf("hash reply has %d elements, want pairs", len(pairs))
	}
	m := make(map[string]string, len(pairs)/2)
	for i := 0; i < len(pairs); i += 2 {
		m[pairs[i]] = pairs[i+1]
	}
	return series.Decode(m)
}

// epochOf reads a GET reply of an epoch key; a missing key is epoch 0.
func epochOf(res valkey.ValkeyResult) (int64, error) {
	v, err := res.AsInt64()
	if valkey.IsValkeyNil(err) {
		return 0, nil
	}
	return v, err
}
