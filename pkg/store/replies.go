package store

import (
	"errors"
	"fmt"

	"github.com/valkey-io/valkey-go"

	"github.com/ballastk8s/ballast/pkg/series"
)

// errNotArray is returned for a script reply of an unexpected shape.
var errNotArray = errors.New("unexpected reply shape")

type syncReply struct {
	before, after int64
	compacted     int64
	open, rolled  map[string]cachedHist
}

// parseSync decodes a syncScript reply.
func parseSync(profile string, res valkey.ValkeyResult) (syncReply, error) {
	arr, err := res.ToArray()
	if err != nil {
		return syncReply{}, fmt.Errorf("compacting windows of %s: %w", profile, err)
	}
	if len(arr) != 5 {
		return syncReply{}, fmt.Errorf("compacting windows of %s: %w: %d elements", profile, errNotArray, len(arr))
	}
	var sr syncReply
	if sr.before, err = arr[0].AsInt64(); err != nil {
		return syncReply{}, fmt.Errorf("compacting windows of %s: epoch: %w", profile, err)
	}
	if sr.after, err = arr[1].AsInt64(); err != nil {
		return syncReply{}, fmt.Errorf("compacting windows of %s: epoch: %w", profile, err)
	}
	for k, dst := range []*map[string]cachedHist{&sr.open, &sr.rolled} {
		items, err := arr[2+k].ToArray()
		if err != nil || len(items)%2 != 0 {
			return syncReply{}, fmt.Errorf("compacting windows of %s: %w", profile, errNotArray)
		}
		*dst = make(map[string]cachedHist, len(items)/2)
		for i := 0; i < len(items); i += 2 {
			m, err1 := items[i].ToString()
			pairs, err2 := items[i+1].AsStrSlice()
			if err1 != nil || err2 != nil {
				return syncReply{}, fmt.Errorf("compacting windows of %s: %w", profile, errNotArray)
			}
			c, err := decodeEntry(profile, m, pairs)
			if err != nil {
				return syncReply{}, fmt.Errorf("compacting windows of %s: %w", profile, err)
			}
			(*dst)[m] = c
		}
	}
	if sr.compacted, err = arr[4].AsInt64(); err != nil {
		return syncReply{}, fmt.Errorf("compacting windows of %s: count: %w", profile, err)
	}
	return sr, nil
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
	return cachedHist{id: id, start: start, hist: h}, nil
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
