package podcache

import (
	"hash/maphash"
	"maps"
	"sync"
)

// maxMaps bounds the shared label and annotation maps; past it the table starts over
// (maps already shared stay shared, new ones are shared anew).
const maxMaps = 65536

// stringMaps shares equal label and annotation maps between cached objects: a workload's
// replicas carry the same labels (pod-template-hash included) and mostly the same
// annotations, so at two replicas a workload the pod cache holds half the maps. Shared
// maps are read only, as every cached object is.
var stringMaps = &mapInterner{seed: maphash.MakeSeed(), m: map[uint64]map[string]string{}}

type mapInterner struct {
	seed maphash.Seed
	mu   sync.Mutex
	m    map[uint64]map[string]string
}

// share returns a map equal to m whose keys and values are interned (intern): one already
// shared, or a new one that is shared from now on. nil and empty maps are returned as
// they are.
func (in *mapInterner) share(m map[string]string) map[string]string {
	if len(m) == 0 {
		return m
	}
	key := in.hash(m)
	in.mu.Lock()
	s, ok := in.m[key]
	in.mu.Unlock()
	if ok && maps.Equal(s, m) {
		return s
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[intern(k)] = intern(v)
	}
	if ok {
		return out // another map with the same hash: not shared
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if len(in.m) >= maxMaps {
		in.m = make(map[uint64]map[string]string, len(in.m))
	}
	in.m[key] = out
	return out
}

// hash is independent of m's iteration order: the sum of its entries' hashes.
func (in *mapInterner) hash(m map[string]string) uint64 {
	var h maphash.Hash
	h.SetSeed(in.seed)
	var sum uint64
	for k, v := range m {
		h.Reset()
		h.WriteString(k)
		h.WriteByte(0)
		h.WriteString(v)
		sum += h.Sum64()
	}
	return sum + uint64(len(m))
}
