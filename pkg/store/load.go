package store

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/valkey-io/valkey-go"

	"github.com/ballastk8s/ballast/pkg/series"
)

// Loading a profile's rollups into the reader's cache, and merging its closed days.

// load fetches every retained rollup of the profile, consistently: it retries when the
// epoch moved while it read. It forgets the windows of the last read too: after another
// reader's compaction a window kept from an earlier read may have been folded and written
// anew, so every pending window is read again.
func (r *Reader) load(ctx context.Context, profile string, pc *profileCache, now time.Time) error {
	cutoff := strconv.FormatInt(r.layout.Cutoff(now).Unix(), 10)
	for attempt := 0; attempt < maxAttempts; attempt++ {
		res := r.do(ctx,
			r.c.B().Get().Key(series.EpochKey(profile)).Build(),
			r.c.B().Zrange().Key(series.RollupsKey(profile)).Min(cutoff).Max("+inf").Byscore().Build())
		before, err := epochOf(res[0])
		if err != nil {
			return fmt.Errorf("reading rollups of %s: %w", profile, err)
		}
		members, err := res[1].AsStrSlice()
		if err != nil {
			return fmt.Errorf("reading rollups of %s: %w", profile, err)
		}
		if len(members) == 0 {
			// Nothing to read, so nothing to read consistently: a compaction after the GET
			// shows in sync's epoch check, which reloads.
			r.reloads.Add(1)
			pc.rollups, pc.epoch, pc.loaded, pc.open, pc.ids = map[histKey]series.Packed{}, before, true, nil, nil
			pc.base, pc.baseFrom, pc.recentFrom = nil, time.Time{}, time.Time{}
			pc.nodes = nil
			return nil
		}
		cmds := make(valkey.Commands, 0, len(members)+1)
		for _, m := range members {
			cmds = append(cmds, r.c.B().Get().Key(series.RollupKeyOf(profile, m)).Build())
		}
		cmds = append(cmds, r.c.B().Get().Key(series.EpochKey(profile)).Build())
		res = r.do(ctx, cmds...)
		after, err := epochOf(res[len(members)])
		if err != nil {
			return fmt.Errorf("reading rollups of %s: %w", profile, err)
		}
		if after != before {
			continue
		}
		rollups := make(map[histKey]series.Packed, len(members))
		var ids seriesTable
		var legacy []string // rollups still in the hash of versions before packed rollups
		for i, m := range members {
			b, err := res[i].AsBytes()
			if valkey.IsValkeyNil(err) {
				legacy = append(legacy, m)
				continue
			}
			if err != nil {
				return fmt.Errorf("reading rollup %s of %s: %w", m, profile, err)
			}
			id, start, err := series.ParseMember(profile, m)
			if err != nil {
				return fmt.Errorf("reading rollups of %s: %w", profile, err)
			}
			p, err := series.UnmarshalPacked(b)
			if err != nil {
				return fmt.Errorf("reading rollup %s of %s: %w", m, profile, err)
			}
			rollups[histKey{ids.index(id), start.Unix()}] = *p
		}
		if len(legacy) > 0 {
			ok, err := r.loadLegacy(ctx, profile, before, legacy, rollups, &ids)
			if err != nil {
				return err
			}
			if !ok {
				continue
			}
		}
		r.rollups.Add(int64(len(members)))
		r.reloads.Add(1)
		// A table at its size: it was grown by appending, and lives until the next load.
		pc.rollups, pc.epoch, pc.loaded, pc.open, pc.ids = rollups, before, true, nil, slices.Clone(ids)
		pc.nodes = nil // every pending window is read again
		r.mergeBase(profile, pc, now)
		return nil
	}
	return fmt.Errorf("reading rollups of %s: other readers kept compacting it, retry later", profile)
}

// mergeBase moves the rollups that started in [baseFrom, recentFrom) out of pc.rollups
// into one histogram per series. Left out are those starting yesterday or later (the ones
// folds go into; yesterday joins once it settles, mergeSettled) and, when its reload would
// be due at once, the oldest retained rollup: the next to leave the retention window,
// which merge then drops on its own. So a load after the profile's reload time of the day
// keeps the oldest day by itself until midnight, and one before it (a first load, or after
// another reader compacted) merges it and loads again at that time. Nothing is read: a
// merged histogram is exactly the sum of its rollups.
func (r *Reader) mergeBase(profile string, pc *profileCache, now time.Time) {
	l := r.layout
	cutoff := l.Cutoff(now)
	baseFrom := l.RollupStart(cutoff)
	if baseFrom.Before(cutoff) {
		baseFrom = baseFrom.Add(l.Rollup) // the oldest rollup still retained
	}
	if r.reloadDue(profile, baseFrom, now) {
		baseFrom = baseFrom.Add(l.Rollup)
	}
	recentFrom := l.RollupStart(now).Add(-l.Rollup)
	pc.base, pc.baseFrom, pc.recentFrom = nil, baseFrom, recentFrom
	sums := map[int32]*series.Histogram{}
	// A new map, grown to what stays: one that had entries deleted keeps the room it had.
	rest := map[histKey]series.Packed{}
	for k, p := range pc.rollups {
		if !pc.inBase(k.startTime()) {
			rest[k] = p
			continue
		}
		h := sums[k.sid]
		if h == nil {
			h = &series.Histogram{}
			sums[k.sid] = h
		}
		h.MergePacked(&p)
	}
	if len(sums) == 0 {
		pc.baseFrom = time.Time{}
		return
	}
	r.merged.Add(int64(len(pc.rollups) - len(rest)))
	pc.rollups = rest
	pc.base = make([]series.Packed, len(pc.ids))
	for sid, h := range sums {
		pc.base[sid] = series.PackValue(h)
	}
}

// mergeSettled moves the rollups of the day starting at pc.recentFrom into base once that
// day has settled: it is not today, its last window has folded, a quarter of a rollup
// has passed since it ended (longer than an agent's outage buffer holds windows, so a
// flush late after an outage still folds into it) and no window of it is pending. Without
// it yesterday would stay a histogram of its own until the next load, a day later. A
// window of that day written later still counts, as a window, until it expires (inBase).
// Nothing is read: base stays exactly the sum of its rollups.
func (r *Reader) mergeSettled(profile string, pc *profileCache, now time.Time) {
	l := r.layout
	for !pc.recentFrom.IsZero() {
		day, end := pc.recentFrom, pc.recentFrom.Add(l.Rollup)
		if end.After(l.RollupStart(now)) || now.Before(end.Add(l.Rollup/4)) || !l.Folds(profile, end.Add(-l.Window), now) {
			return
		}
		for _, c := range pc.open {
			if l.RollupStart(c.startTime()).Equal(day) {
				return // folds at a later read
			}
		}
		if day.Before(l.Cutoff(now)) {
			// Out of the retention window already (a profile not read for days, with
			// nothing merged to reload for): merge drops its rollups.
			pc.recentFrom = end
			continue
		}
		if pc.baseFrom.IsZero() {
			pc.baseFrom = day
		}
		if n := len(pc.ids); len(pc.base) < n {
			pc.base = append(pc.base, make([]series.Packed, n-len(pc.base))...)
		}
		for k, p := range pc.rollups {
			if k.start != day.Unix() {
				continue
			}
			h := &series.Histogram{}
			h.MergePacked(&pc.base[k.sid])
			h.MergePacked(&p)
			pc.base[k.sid] = series.PackValue(h)
			delete(pc.rollups, k)
			r.merged.Add(1)
		}
		pc.recentFrom = end
	}
}

// mustReload reports whether the profile's merged rollups must be read again: the cutoff
// is about to pass the oldest of them (within the profile's ReloadMargin, so profiles
// loaded together do not all reload in one cycle).
func (r *Reader) mustReload(profile string, pc *profileCache, now time.Time) bool {
	return !pc.baseFrom.IsZero() && r.reloadDue(profile, pc.baseFrom, now)
}

// reloadDue reports whether merged rollups starting at baseFrom must be read again at now.
func (r *Reader) reloadDue(profile string, baseFrom, now time.Time) bool {
	return !r.layout.Cutoff(now).Add(r.layout.ReloadMargin(profile)).Before(baseFrom)
}

// inBase reports whether the rollup starting at start is one of those merged into base:
// windows of it are not folded (the reader does not hold that rollup by itself); they are
// counted as windows until they expire, which only happens to windows a day or more late
// (a backlog after an outage).
func (pc *profileCache) inBase(start time.Time) bool {
	return !pc.baseFrom.IsZero() && !start.Before(pc.baseFrom) && start.Before(pc.recentFrom)
}

// loadLegacy reads the rollups of members that have no packed rollup: the hashes versions
// before packed rollups wrote (each is replaced by a packed one at its next compaction, and
// the others expire within the retention window), or nothing when one expired since the
// listing. It reports false when the epoch moved from before meanwhile.
func (r *Reader) loadLegacy(ctx context.Context, profile string, before int64, members []string, into map[histKey]series.Packed, ids *seriesTable) (bool, error) {
	cmds := make(valkey.Commands, 0, len(members)+1)
	for _, m := range members {
		cmds = append(cmds, r.c.B().Hgetall().Key(series.LegacyRollupKeyOf(profile, m)).Build())
	}
	cmds = append(cmds, r.c.B().Get().Key(series.EpochKey(profile)).Build())
	res := r.do(ctx, cmds...)
	if after, err := epochOf(res[len(members)]); err != nil || after != before {
		return false, err
	}
	for i, m := range members {
		fields, err := res[i].AsStrMap()
		if err != nil {
			return false, fmt.Errorf("reading rollup %s of %s: %w", m, profile, err)
		}
		if len(fields) == 0 {
			continue // expired since the listing
		}
		id, start, err := series.ParseMember(profile, m)
		if err != nil {
			return false, fmt.Errorf("reading rollups of %s: %w", profile, err)
		}
		h, err := series.Decode(fields)
		if err != nil {
			return false, fmt.Errorf("reading rollup %s of %s: %w", m, profile, err)
		}
		into[histKey{ids.index(id), start.Unix()}] = series.PackValue(h)
	}
	return true, nil
}
