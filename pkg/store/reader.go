package store

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valkey-io/valkey-go"

	"github.com/ballastk8s/ballast/pkg/series"
)

// Reader merges the stored windows of a profile's series into one histogram per series,
// over the retention window. The control plane uses one Reader for all profiles.
//
// Each Read folds the profile's closed windows into rollups (one hash per series per
// layout.Rollup period) and caches the rollups in memory, so a cycle fetches only the
// windows still open plus the rollups it just changed: commands per cycle are constant per
// profile (two, or three when windows are pending) and the data read follows the number of
// series that received samples, not the number of samples or of windows retained. A
// compaction counter per profile (the epoch) tells a Reader when another Reader compacted
// windows, and only then is the profile's rollup cache reloaded.
//
// A Reader expects now to move forward: rollups that fall out of the retention window
// leave the cache for good.
type Reader struct {
	c      valkey.Client
	layout series.Layout

	mu       sync.Mutex
	profiles map[string]*profileCache

	commands, roundTrips, windows, rollups, compacted, reloads atomic.Int64
}

// ReaderStats counts what a Reader has asked the store for since it was created.
type ReaderStats struct {
	// Commands is the number of commands sent, RoundTrips the number of pipelined batches
	// they went out in.
	Commands, RoundTrips int64
	// WindowsRead and RollupsRead count the window and rollup hashes received.
	WindowsRead, RollupsRead int64
	// Compacted counts windows this Reader folded into rollups.
	Compacted int64
	// Reloads counts full loads of a profile's rollups (first read, or after another Reader
	// compacted).
	Reloads int64
}

type cachedHist struct {
	id    series.SeriesID
	start time.Time
	hist  *series.Histogram
}

type profileCache struct {
	mu      sync.Mutex
	loaded  bool
	epoch   int64
	rollups map[string]cachedHist // by rollup member
	open    map[string]cachedHist // by window member, as of the last Read
}

// maxAttempts bounds how often a Read restarts because another Reader compacted meanwhile.
const maxAttempts = 4

// syncBatch is the number of pending windows handed to one script call.
const syncBatch = 128

// NewReader returns a reader for layout l.
func NewReader(c *Client, l series.Layout) (*Reader, error) {
	if err := l.Validate(); err != nil {
		return nil, err
	}
	return &Reader{c: c.c, layout: l, profiles: map[string]*profileCache{}}, nil
}

// Stats returns the reader's counters.
func (r *Reader) Stats() ReaderStats {
	return ReaderStats{
		Commands: r.commands.Load(), RoundTrips: r.roundTrips.Load(), WindowsRead: r.windows.Load(), RollupsRead: r.rollups.Load(),
		Compacted: r.compacted.Load(), Reloads: r.reloads.Load(),
	}
}

// Forget drops the cache of a profile (after Purge, or when the profile is deleted).
func (r *Reader) Forget(profile string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.profiles, profile)
}

func (r *Reader) cache(profile string) *profileCache {
	r.mu.Lock()
	defer r.mu.Unlock()
	pc := r.profiles[profile]
	if pc == nil {
		pc = &profileCache{}
		r.profiles[profile] = pc
	}
	return pc
}

func (r *Reader) do(ctx context.Context, cmds ...valkey.Completed) []valkey.ValkeyResult {
	r.commands.Add(int64(len(cmds)))
	r.roundTrips.Add(1)
	return r.c.DoMulti(ctx, cmds...)
}

// count adds a script run of calls that sent sent commands (more than calls when a node
// lacked the script and got it by EVAL in a second round trip).
func (r *Reader) count(sent, calls int) {
	r.commands.Add(int64(sent))
	r.roundTrips.Add(1)
	if sent > calls {
		r.roundTrips.Add(1)
	}
}

// Read returns, for every series of the profile with samples in [now − retention, now],
// the merged histogram of those samples (retention applied at window and rollup
// granularity, see series.Layout). The histograms are fresh copies the caller may keep.
func (r *Reader) Read(ctx context.Context, profile string, now time.Time) (map[series.SeriesID]*series.Histogram, error) {
	if err := series.CheckProfile(profile); err != nil {
		return nil, fmt.Errorf("reading profile: %w", err)
	}
	pc := r.cache(profile)
	pc.mu.Lock()
	defer pc.mu.Unlock()
	for attempt := 0; attempt < maxAttempts; attempt++ {
		if !pc.loaded {
			if err := r.load(ctx, profile, pc, now); err != nil {
				return nil, err
			}
		}
		current, err := r.sync(ctx, profile, pc, now)
		if err != nil {
			pc.loaded = false // the outcome of a failed compaction is unknown: start over next time
			return nil, err
		}
		if current {
			return pc.merge(r.layout.Cutoff(now)), nil
		}
		pc.loaded = false // another reader compacted: the cached rollups are stale
	}
	return nil, fmt.Errorf("reading profile %s: other readers kept compacting it, retry later", profile)
}

// load fetches every retained rollup of the profile, consistently: it retries when the
// epoch moved while it read.
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
			pc.rollups, pc.epoch, pc.loaded = map[string]cachedHist{}, before, true
			return nil
		}
		cmds := make(valkey.Commands, 0, len(members)+1)
		for _, m := range members {
			cmds = append(cmds, r.c.B().Hgetall().Key(series.RollupKeyOf(profile, m)).Build())
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
		rollups := make(map[string]cachedHist, len(members))
		for i, m := range members {
			fields, err := res[i].AsStrMap()
			if err != nil {
				return fmt.Errorf("reading rollup %s of %s: %w", m, profile, err)
			}
			if len(fields) == 0 {
				continue // expired since the listing
			}
			id, start, err := series.ParseMember(profile, m)
			if err != nil {
				return fmt.Errorf("reading rollups of %s: %w", profile, err)
			}
			h, err := series.Decode(fields)
			if err != nil {
				return fmt.Errorf("reading rollup %s of %s: %w", m, profile, err)
			}
			rollups[m] = cachedHist{id: id, start: start, hist: h}
		}
		r.rollups.Add(int64(len(members)))
		r.reloads.Add(1)
		pc.rollups, pc.epoch, pc.loaded = rollups, before, true
		return nil
	}
	return fmt.Errorf("reading rollups of %s: other readers kept compacting it, retry later", profile)
}

// sync reads the profile's pending windows, compacting the closed ones. It reports false
// when another reader compacted since this one last looked, so the rollup cache is stale.
//
// In steady state the pending windows are the open windows of the last Read, so the script
// over them goes out in the same round trip as the listing of the pending set; only windows
// the listing shows for the first time (a new window period, a new series) cost a second
// round trip.
func (r *Reader) sync(ctx context.Context, profile string, pc *profileCache, now time.Time) (bool, error) {
	known := make([]string, 0, len(pc.open))
	for m := range pc.open {
		known = append(known, m)
	}
	slices.Sort(known)
	calls, err := r.syncCalls(profile, known, now)
	if err != nil {
		return false, err
	}
	cmds := make(valkey.Commands, 0, len(calls)+2)
	for _, call := range calls {
		cmds = append(cmds, syncScript.cmd(r.c, call))
	}
	cmds = append(cmds,
		r.c.B().Smembers().Key(series.PendingKey(profile)).Build(),
		r.c.B().Get().Key(series.EpochKey(profile)).Build())
	res := r.do(ctx, cmds...)
	listed, err := res[len(calls)].AsStrSlice()
	if err != nil {
		return false, fmt.Errorf("listing pending windows of %s: %w", profile, err)
	}
	epoch, err := epochOf(res[len(calls)+1])
	if err != nil {
		return false, fmt.Errorf("reading epoch of %s: %w", profile, err)
	}
	replies := res[:len(calls)]
	if len(calls) > 0 && noScript(replies) {
		// The node lacks the script: run the calls again, with EVAL where needed. Running a
		// call twice is harmless: a window it compacted is gone, an open one is read again.
		var sent int
		replies, sent = syncScript.run(ctx, r.c, calls)
		r.count(sent, len(calls))
	}
	seen := make(map[string]bool, len(known))
	for _, m := range known {
		seen[m] = true
	}
	var fresh []string
	for _, m := range listed {
		if !seen[m] {
			fresh = append(fresh, m)
		}
	}
	if len(fresh) > 0 {
		slices.Sort(fresh)
		more, err := r.syncCalls(profile, fresh, now)
		if err != nil {
			return false, err
		}
		rs, sent := syncScript.run(ctx, r.c, more)
		r.count(sent, len(more))
		replies = append(replies, rs...)
	}
	open := map[string]cachedHist{}
	if len(replies) == 0 {
		pc.open = open
		return epoch == pc.epoch, nil
	}
	current, expect := true, pc.epoch
	for _, reply := range replies {
		sr, err := parseSync(profile, reply)
		if err != nil {
			return false, err
		}
		if sr.before != expect {
			current = false
		}
		expect = sr.after
		for m, c := range sr.rolled {
			pc.rollups[m] = c
		}
		for m, c := range sr.open {
			open[m] = c
		}
		r.windows.Add(int64(len(sr.open)))
		r.rollups.Add(int64(len(sr.rolled)))
		r.compacted.Add(sr.compacted)
	}
	pc.epoch, pc.open = expect, open
	return current, nil
}

// syncCalls builds the syncScript calls over the given pending windows (sorted), syncBatch
// windows per call.
func (r *Reader) syncCalls(profile string, members []string, now time.Time) ([]scriptCall, error) {
	if len(members) == 0 {
		return nil, nil
	}
	l := r.layout
	header := []string{
		strconv.FormatInt(now.Add(-(l.Window + l.Grace)).Unix(), 10),
		strconv.FormatInt(int64((l.Rollup + l.TTL()).Seconds()), 10),
		strconv.FormatInt(int64(l.TTL().Seconds()), 10),
		strconv.FormatInt(now.Add(-(l.TTL() + l.Rollup)).Unix(), 10),
		strconv.FormatInt(l.Cutoff(now).Unix(), 10),
	}
	var calls []scriptCall
	for lo := 0; lo < len(members); lo += syncBatch {
		batch := members[lo:min(lo+syncBatch, len(members))]
		call := scriptCall{
			keys: []string{series.EpochKey(profile), series.PendingKey(profile), series.RollupsKey(profile), series.IndexKey(profile)},
			args: slices.Clone(header),
		}
		for _, m := range batch {
			id, start, err := series.ParseMember(profile, m)
			if err != nil {
				return nil, fmt.Errorf("pending windows of %s: %w", profile, err)
			}
			rstart := l.RollupStart(start)
			call.keys = append(call.keys, series.WindowKeyOf(profile, m), series.RollupKey(id, rstart))
			call.args = append(call.args, m, series.Member(id, rstart),
				strconv.FormatInt(rstart.Unix(), 10), strconv.FormatInt(start.Unix(), 10))
		}
		calls = append(calls, call)
	}
	return calls, nil
}

// merge builds the per-series result from the cache, dropping rollups that left the
// retention window.
func (pc *profileCache) merge(cutoff time.Time) map[series.SeriesID]*series.Histogram {
	out := map[series.SeriesID]*series.Histogram{}
	add := func(c cachedHist) {
		h := out[c.id]
		if h == nil {
			h = &series.Histogram{}
			out[c.id] = h
		}
		h.Merge(c.hist)
	}
	for m, c := range pc.rollups {
		if c.start.Before(cutoff) {
			delete(pc.rollups, m)
			continue
		}
		add(c)
	}
	for _, c := range pc.open {
		if !c.start.Before(cutoff) {
			add(c)
		}
	}
	return out
}

// Series lists the series in the profile's index: every series written within the
// retention window (plus slack) and not purged.
func (r *Reader) Series(ctx context.Context, profile string) ([]series.SeriesID, error) {
	if err := series.CheckProfile(profile); err != nil {
		return nil, fmt.Errorf("listing series: %w", err)
	}
	idx, err := r.do(ctx, r.c.B().Hkeys().Key(series.IndexKey(profile)).Build())[0].AsStrSlice()
	if err != nil {
		return nil, fmt.Errorf("listing series of %s: %w", profile, err)
	}
	out := make([]series.SeriesID, 0, len(idx))
	for _, tok := range idx {
		id, err := series.ParseToken(profile, tok)
		if err != nil {
			return nil, fmt.Errorf("listing series of %s: %w", profile, err)
		}
		out = append(out, id)
	}
	slices.SortFunc(out, func(a, b series.SeriesID) int { return strings.Compare(a.Token(), b.Token()) })
	return out, nil
}
