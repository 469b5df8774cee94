package store

import (
	"context"
	"errors"
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

	beforeCompact func() // SetBeforeCompact

	commands, roundTrips, windows, rollups, compacted, reloads, merged atomic.Int64
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
	// Reloads counts full loads of a profile's rollups (first read, after another Reader
	// compacted, or before a merged day leaves the retention window).
	Reloads int64
	// Merged counts rollups merged into per-series histograms: closed days at loads, and
	// yesterday once it settles.
	Merged int64
}

// The cache holds every series' rollups, merged days and open windows — at 60,000 series,
// a quarter of a million histograms — so what it keeps per histogram is small: the
// histogram packed (series.Packed, one byte slice), the start in unix seconds, and the
// series as an index into its profile's table of series (seriesTable) instead of a
// SeriesID's four strings.

// cachedHist is an open window: read, and not yet folded into its rollup.
type cachedHist struct {
	hist  series.Packed
	start int64 // unix seconds
	sid   int32 // the series, in profileCache.ids
	// settled marks a window read after it closed: it is not read again before it folds.
	settled bool
}

func (c *cachedHist) startTime() time.Time { return time.Unix(c.start, 0).UTC() }

// histKey names a cached rollup: its series (in profileCache.ids) and start (unix seconds).
type histKey struct {
	sid   int32
	start int64
}

func (k histKey) startTime() time.Time { return time.Unix(k.start, 0).UTC() }

// seriesTable lists the series of one profile its cache has seen since the last load,
// without the profile. Cached histograms name their series by index in it; a profile has a
// handful of series, so a lookup is a scan.
type seriesTable []seriesName

type seriesName struct{ container, resource, signal string }

// index returns id's index, adding id if it is new.
func (t *seriesTable) index(id series.SeriesID) int32 {
	n := seriesName{id.Container, id.Resource, id.Signal}
	for i, x := range *t {
		if x == n {
			return int32(i)
		}
	}
	*t = append(*t, n)
	return int32(len(*t) - 1)
}

// id is the series at index sid, of profile.
func (t seriesTable) id(profile string, sid int32) series.SeriesID {
	n := t[sid]
	return series.SeriesID{Profile: profile, Container: n.container, Resource: n.resource, Signal: n.signal}
}

type profileCache struct {
	mu      sync.Mutex
	loaded  bool
	epoch   int64
	ids     seriesTable               // the series cached histograms name; reset at each load
	rollups map[histKey]series.Packed // not those merged into base
	// base merges, per series, the rollups that started in [baseFrom, recentFrom): closed
	// days not recent enough to take folds, and not the next to leave the retention window
	// once the profile's daily reload is past (mergeBase). A load merges those before
	// yesterday; yesterday joins once it has settled (mergeSettled). A week of history is
	// then at most three histograms per series (from the daily reload until midnight the
	// oldest day, base and today; from midnight until yesterday settles yesterday, base and
	// today) and two the rest of the day, instead of eight (a 7-day retention; the longer
	// the retention, the more it saves). The profile is loaded again before the cutoff
	// reaches baseFrom (mustReload). base is indexed like ids (an entry may be empty, and
	// the slice shorter than ids); baseFrom is zero when base is empty.
	base                 []series.Packed
	baseFrom, recentFrom time.Time
	open                 map[string]cachedHist // by window member, as of the last Read
	// reread holds the windows whose fold was skipped because they changed (a late flush):
	// read them again even if settled.
	reread map[string]bool
	// nodes attributes samples to the nodes that wrote them (nodes.go); nil while no
	// window carried node tallies, so a profile without them pays one pointer.
	nodes *nodeAttribution
}

// maxAttempts bounds how often a Read restarts because another Reader compacted meanwhile.
const maxAttempts = 4

// syncBatch is the number of closed windows handed to one compaction call.
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
		Compacted: r.compacted.Load(), Reloads: r.reloads.Load(), Merged: r.merged.Load(),
	}
}

// Cached counts the histograms the reader holds for profile: its rollups held by
// themselves, its merged days (one per series) and its pending windows.
func (r *Reader) Cached(profile string) int {
	r.mu.Lock()
	pc := r.profiles[profile]
	r.mu.Unlock()
	if pc == nil {
		return 0
	}
	pc.mu.Lock()
	defer pc.mu.Unlock()
	n := len(pc.rollups)
	for i := range pc.base {
		if pc.base[i].N() > 0 {
			n++
		}
	}
	for _, c := range pc.open {
		if c.hist.N() > 0 { // an open window read again next time holds no histogram meanwhile
			n++
		}
	}
	return n
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
	if pc.loaded && r.mustReload(profile, pc, now) {
		pc.loaded = false
	}
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
			r.mergeSettled(profile, pc, now)
			out := pc.merge(profile, r.layout.Cutoff(now))
			pc.dropUnsettled()
			return out, nil
		}
		pc.loaded = false // another reader compacted: the cached rollups are stale
	}
	return nil, fmt.Errorf("reading profile %s: other readers kept compacting it, retry later", profile)
}

// sync reads the profile's pending windows and compacts the closed ones. It reports false
// when another reader compacted since this one last looked, so the rollup cache is stale.
//
// The windows are read with plain HGETALLs between two reads of the epoch, in the same round
// trip as the listing of the pending set: in steady state the pending windows are the open
// windows of the last Read, so a warm read is one round trip and runs no script. A window
// already read after it closed is not read again while it waits for its fold delay. Windows the
// listing shows for the first time (a new window period, a new series, a late flush) cost a
// second round trip. Closed windows are merged per rollup here, and compactScript applies
// each rollup's delta only if its windows still hold what was read.
func (r *Reader) sync(ctx context.Context, profile string, pc *profileCache, now time.Time) (bool, error) {
	// A window read after it closed (settled) waits for its fold from the cache: agents are
	// done with it, and a late flush into it shows as a changed count when it folds, which
	// skips the fold and marks it to be read again.
	known := make([]string, 0, len(pc.open))
	var kept []string
	for m, c := range pc.open {
		if c.settled && !pc.reread[m] {
			kept = append(kept, m)
		} else {
			known = append(known, m)
		}
	}
	slices.Sort(known)
	// A built command is recycled once sent: build each GET of the epoch anew.
	epochCmd := func() valkey.Completed { return r.c.B().Get().Key(series.EpochKey(profile)).Build() }
	cmds := make(valkey.Commands, 0, len(known)+3)
	cmds = append(cmds, epochCmd(), r.c.B().Smembers().Key(series.PendingKey(profile)).Build())
	for _, m := range known {
		cmds = append(cmds, r.c.B().Hgetall().Key(series.WindowKeyOf(profile, m)).Build())
	}
	res := r.do(ctx, append(cmds, epochCmd())...)
	e1, err1 := epochOf(res[0])
	e2, err2 := epochOf(res[len(res)-1])
	listed, err := res[1].AsStrSlice()
	if err = errors.Join(err1, err2, err); err != nil {
		return false, fmt.Errorf("listing pending windows of %s: %w", profile, err)
	}
	if e1 != e2 || e1 != pc.epoch {
		return false, nil // another reader compacted: reload the rollups first
	}
	read := make(map[string]map[string]string, len(listed))
	for i, m := range known {
		fields, err := res[2+i].AsStrMap()
		if err != nil {
			return false, fmt.Errorf("reading window %s of %s: %w", m, profile, err)
		}
		read[m] = fields
	}
	var fresh []string
	for _, m := range listed {
		if c, ok := pc.open[m]; ok && c.settled && !pc.reread[m] {
			continue // kept
		}
		if _, ok := read[m]; !ok {
			fresh = append(fresh, m)
		}
	}
	if len(fresh) > 0 {
		slices.Sort(fresh)
		cmds := make(valkey.Commands, 0, len(fresh)+1)
		for _, m := range fresh {
			cmds = append(cmds, r.c.B().Hgetall().Key(series.WindowKeyOf(profile, m)).Build())
		}
		res := r.do(ctx, append(cmds, epochCmd())...)
		if e, err := epochOf(res[len(fresh)]); err != nil || e != e1 {
			return false, err
		}
		for i, m := range fresh {
			fields, err := res[i].AsStrMap()
			if err != nil {
				return false, fmt.Errorf("reading window %s of %s: %w", m, profile, err)
			}
			read[m] = fields
		}
	}
	l := r.layout
	if pc.nodes != nil {
		pc.nodes.open = nil // read again below
	}
	open := map[string]cachedHist{}
	var gone []string
	groups := map[string]*compactGroup{}
	var order []string
	listedSet := make(map[string]bool, len(listed))
	for _, m := range listed {
		listedSet[m] = true
	}
	place := func(m, count string, c cachedHist) {
		rstart := l.RollupStart(c.startTime())
		if !l.Folds(profile, c.startTime(), now) || pc.inBase(rstart) {
			open[m] = c
			return
		}
		id := pc.ids.id(profile, c.sid)
		rm := series.Member(id, rstart)
		g := groups[rm]
		if g == nil {
			g = &compactGroup{member: rm, key: series.RollupKey(id, rstart), sid: c.sid, start: rstart, delta: &series.Histogram{}}
			groups[rm] = g
			order = append(order, rm)
		}
		g.windows = append(g.windows, compactWindow{member: m, count: count, hist: c})
		g.delta.MergePacked(&c.hist)
	}
	for _, m := range kept {
		if listedSet[m] { // else its pending entry was dropped: it expired
			c := pc.open[m]
			place(m, strconv.FormatInt(c.hist.N(), 10), c)
		}
	}
	for m, fields := range read {
		if len(fields) == 0 {
			if listedSet[m] {
				gone = append(gone, m) // expired: drop it from the pending set
			}
			continue
		}
		id, start, err := series.ParseMember(profile, m)
		if err != nil {
			return false, fmt.Errorf("pending windows of %s: %w", profile, err)
		}
		h, err := series.Decode(fields)
		if err != nil {
			return false, fmt.Errorf("reading window %s of %s: %w", m, profile, err)
		}
		sid, closed := pc.ids.index(id), l.Closed(start, now)
		pc.noteNodes(sid, fields, closed, pc.reread[m])
		place(m, fields[series.FieldCount], cachedHist{sid: sid, start: start.Unix(), hist: series.PackValue(h), settled: closed})
	}
	r.windows.Add(int64(len(read) - len(gone)))
	pc.reread = nil
	if len(order) == 0 && len(gone) == 0 {
		pc.open = open
		return true, nil
	}
	slices.Sort(order)
	slices.Sort(gone)
	if r.beforeCompact != nil {
		r.beforeCompact()
	}
	cutoff := l.Cutoff(now)
	for _, rm := range order {
		// The cache holds every stored rollup that starts within the retention window (load
		// reads them all, compactions add theirs, and another reader's compaction moves the
		// epoch), so for those the new rollup is the cached one plus the windows.
		g := groups[rm]
		switch c, ok := pc.rollups[histKey{g.sid, g.start.Unix()}]; {
		case g.start.Before(cutoff):
			g.form = formExpired // no read sees this rollup again: its windows are dropped
		case ok:
			sum := c.Unpack()
			sum.Merge(g.delta)
			g.form, g.packed = formFull, series.Pack(sum)
		default:
			g.form, g.packed = formNew, series.Pack(g.delta)
		}
	}
	calls := r.compactCalls(profile, pc.epoch, gone, order, groups, now)
	replies, sent := compactScript.run(ctx, r.c, calls)
	r.count(sent, len(calls))
	current, expect := true, pc.epoch
	for _, reply := range replies {
		cr, err := parseCompact(profile, reply)
		if err != nil {
			return false, err
		}
		if cr.before != expect {
			current = false
		}
		expect = cr.after
		for _, m := range cr.rolled {
			if g := groups[m]; g != nil && g.packed != nil {
				pc.rollups[histKey{g.sid, g.start.Unix()}] = *g.packed
			}
		}
		if cr.stale > 0 {
			current = false // a rollup the cache did not know exists: reload
		}
		for _, m := range cr.skipped {
			// Changed since it was read (a late flush): count what was read this time, and
			// read it again and fold it at the next read.
			for _, w := range groups[m].windows {
				open[w.member] = w.hist
				if pc.reread == nil {
					pc.reread = map[string]bool{}
				}
				pc.reread[w.member] = true
			}
		}
		r.rollups.Add(int64(len(cr.rolled)))
		r.compacted.Add(cr.compacted)
	}
	pc.epoch, pc.open = expect, open
	return current, nil
}

type compactWindow struct {
	member, count string
	hist          cachedHist
}

// compactGroup is the closed windows of one rollup and their merged samples.
type compactGroup struct {
	member, key string
	sid         int32
	start       time.Time
	windows     []compactWindow
	delta       *series.Histogram
	// form is how compactScript applies packed: formFull, the whole new rollup (the cached
	// one plus delta); formNew, delta as the whole rollup the cache does not have;
	// formExpired, nothing (the rollup left the retention window; packed is nil).
	form   string
	packed *series.Packed
}

// The forms of a compaction group (compactScript).
const (
	formFull    = "f"
	formNew     = "n"
	formExpired = "x"
)

// compactCalls builds the compactScript calls: the expired members go with the first call;
// groups are packed up to syncBatch windows per call, a larger group alone in its call.
// epoch is the epoch the first call expects; each call that compacts bumps it, so the
// next one expects one more.
func (r *Reader) compactCalls(profile string, epoch int64, gone, order []string, groups map[string]*compactGroup, now time.Time) []scriptCall {
	l := r.layout
	header := []string{
		strconv.FormatInt(int64((l.Rollup + l.TTL()).Seconds()), 10),
		strconv.FormatInt(int64(l.TTL().Seconds()), 10),
		strconv.FormatInt(now.Add(-(l.TTL() + l.Rollup)).Unix(), 10),
		strconv.FormatInt(l.Cutoff(now).Unix(), 10),
	}
	newCall := func(gone []string) scriptCall {
		c := scriptCall{
			keys: []string{series.EpochKey(profile), series.PendingKey(profile), series.RollupsKey(profile), series.IndexKey(profile)},
			args: append(slices.Clone(header), strconv.FormatInt(epoch, 10), strconv.Itoa(len(gone))),
		}
		c.args = append(c.args, gone...)
		epoch++
		return c
	}
	var calls []scriptCall
	call, windows := newCall(gone), 0
	for _, rm := range order {
		g := groups[rm]
		if windows > 0 && windows+len(g.windows) > syncBatch {
			calls = append(calls, call)
			call, windows = newCall(nil), 0
		}
		call.keys = append(call.keys, g.key, series.LegacyRollupKeyOf(profile, g.member))
		call.args = append(call.args, g.member, strconv.FormatInt(g.start.Unix(), 10), g.form, strconv.Itoa(len(g.windows)))
		for _, w := range g.windows {
			call.keys = append(call.keys, series.WindowKeyOf(profile, w.member))
			call.args = append(call.args, w.member, w.count)
		}
		var payload []byte
		if g.packed != nil {
			payload, _ = g.packed.MarshalBinary()
		}
		call.args = append(call.args, string(payload))
		windows += len(g.windows)
	}
	return append(calls, call)
}

// merge builds the per-series result from the cache, dropping rollups that left the
// retention window.
func (pc *profileCache) merge(profile string, cutoff time.Time) map[series.SeriesID]*series.Histogram {
	out := map[series.SeriesID]*series.Histogram{}
	add := func(sid int32, p *series.Packed) {
		if p.N() == 0 {
			return
		}
		id := pc.ids.id(profile, sid)
		h := out[id]
		if h == nil {
			h = &series.Histogram{}
			out[id] = h
		}
		h.MergePacked(p)
	}
	for k, p := range pc.rollups {
		if k.startTime().Before(cutoff) {
			delete(pc.rollups, k)
			continue
		}
		add(k.sid, &p)
	}
	for sid := range pc.base { // every merged rollup is within retention (mustReload)
		add(int32(sid), &pc.base[sid])
	}
	for _, c := range pc.open {
		if !c.startTime().Before(cutoff) {
			add(c.sid, &c.hist)
		}
	}
	return out
}

// dropUnsettled empties the histograms of the open windows that the next sync reads again
// (not settled, or to be read again after a skipped fold): only their names are needed
// until then. At 60,000 series that is a window per series, ~15 MB of heap.
func (pc *profileCache) dropUnsettled() {
	for m, c := range pc.open {
		if !c.settled || pc.reread[m] {
			c.hist = series.Packed{}
			pc.open[m] = c
		}
	}
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
