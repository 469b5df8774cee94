package series

import (
	"fmt"
	"hash/fnv"
	"time"
)

// Defaults of a Layout.
const (
	// DefaultWindow is the window width of retention windows of an hour or more; shorter
	// ones use ShortWindow. A window is the unit the control plane folds into rollups, so its
	// width sets how many hashes a backlog leaves to fold (4 per series-hour) and how often
	// every series' window closes; open windows are read whole every cycle whatever their
	// width.
	DefaultWindow    = 15 * time.Minute
	ShortWindow      = 5 * time.Minute
	DefaultRetention = 168 * time.Hour
	DefaultSlack     = time.Hour
	DefaultGrace     = 2 * time.Minute
	DefaultOOMMaxLen = 1000
)

// Layout holds the time parameters of the store. Agents use Window, Retention and Slack;
// the control plane uses all of them.
//
// Agents aggregate samples into fixed windows of width Window and write each window to its
// own hash. Once a window is closed (its end is Grace in the past) the control plane's
// reader folds it into the rollup of width Rollup that contains it and deletes it, so the
// store holds one hash per series per Rollup period plus the few windows still open. A
// rollup is included in statistics only while its start is within Retention, so retention is
// applied at Rollup granularity: samples older than Retention are always excluded, and up
// to one Rollup period of the oldest retained samples may be excluded too (SPEC §4.1 allows
// quantizing sample times to the store's time slices).
type Layout struct {
	// Window is the width of an aggregation window (whole seconds).
	Window time.Duration
	// Rollup is the width of a rollup (a multiple of Window, at most Retention/4).
	Rollup time.Duration
	// Retention is how long samples count (BallastConfig spec.retentionWindow).
	Retention time.Duration
	// Slack keeps keys this long beyond Retention, for late writers and clock skew.
	Slack time.Duration
	// Grace is how long after its end a window still counts as open.
	Grace time.Duration
	// OOMMaxLen caps each profile's OOM stream (approximately, XADD MAXLEN ~).
	OOMMaxLen int64
}

// rollupChoices are the rollup widths DefaultLayout picks from, largest first.
var rollupChoices = []time.Duration{24 * time.Hour, 6 * time.Hour, time.Hour, 15 * time.Minute}

// DefaultLayout returns the default layout for a retention window (≤ 0 means
// DefaultRetention): 15-minute windows (5-minute ones for a retention under an hour), and
// the largest of 24h, 6h, 1h and 15m rollups that fits four times into the retention, else
// the window width.
func DefaultLayout(retention time.Duration) Layout {
	if retention <= 0 {
		retention = DefaultRetention
	}
	window := DefaultWindow
	if 4*window > retention {
		window = ShortWindow
	}
	l := Layout{
		Window: window, Rollup: window, Retention: retention,
		Slack: DefaultSlack, Grace: DefaultGrace, OOMMaxLen: DefaultOOMMaxLen,
	}
	for _, r := range rollupChoices {
		if 4*r <= retention && r%window == 0 {
			l.Rollup = r
			break
		}
	}
	return l
}

// Validate checks that the layout is usable.
func (l Layout) Validate() error {
	switch {
	case l.Window < time.Second || l.Window%time.Second != 0:
		return fmt.Errorf("layout: window %v must be a whole number of seconds ≥ 1s", l.Window)
	case l.Rollup < l.Window || l.Rollup%l.Window != 0:
		return fmt.Errorf("layout: rollup %v must be a multiple of the window %v", l.Rollup, l.Window)
	case 4*l.Rollup > l.Retention:
		return fmt.Errorf("layout: rollup %v must be at most a quarter of the retention %v", l.Rollup, l.Retention)
	case l.Slack < 0 || l.Grace < 0:
		return fmt.Errorf("layout: slack %v and grace %v must be ≥ 0", l.Slack, l.Grace)
	case l.OOMMaxLen < 1:
		return fmt.Errorf("layout: OOM stream cap %d must be ≥ 1", l.OOMMaxLen)
	}
	return nil
}

// WindowStart returns the start of the fixed window of width that contains t. Windows are
// aligned to the unix epoch, so every process computes the same boundaries. width is
// truncated to whole seconds and must be at least one second.
func WindowStart(t time.Time, width time.Duration) time.Time {
	w := int64(width / time.Second)
	if w < 1 {
		w = 1
	}
	s := t.Unix()
	m := s % w
	if m < 0 {
		m += w
	}
	return time.Unix(s-m, 0).UTC()
}

// TTL is how long a key lives past the end of the data it holds: the retention window plus
// slack.
func TTL(retention, slack time.Duration) time.Duration { return retention + slack }

// TTL is TTL(l.Retention, l.Slack); profile-level keys are given it on every write.
func (l Layout) TTL() time.Duration { return TTL(l.Retention, l.Slack) }

// WindowExpiry is when the window starting at start expires: its end plus TTL.
func (l Layout) WindowExpiry(start time.Time) time.Time { return start.Add(l.Window + l.TTL()) }

// RollupStart returns the start of the rollup that the window starting at windowStart
// belongs to.
func (l Layout) RollupStart(windowStart time.Time) time.Time {
	return WindowStart(windowStart, l.Rollup)
}

// RollupExpiry is when the rollup starting at start expires: its end plus TTL.
func (l Layout) RollupExpiry(start time.Time) time.Time { return start.Add(l.Rollup + l.TTL()) }

// Cutoff is the oldest window or rollup start still retained at now: data whose period
// starts before it is excluded from statistics.
func (l Layout) Cutoff(now time.Time) time.Time { return now.Add(-l.Retention) }

// Closed reports whether the window starting at start is closed at now: its end lies more
// than Grace in the past, so writers are done with it except for late flushes.
func (l Layout) Closed(start, now time.Time) bool {
	return start.Add(l.Window + l.Grace).Before(now)
}

// Folds reports whether the control plane folds profile's window starting at start into
// its rollup at now: once it is closed and the profile's fold delay has passed too. Every
// series' window closes at the same boundary; the delay, fixed per profile and spread over
// a quarter of the window width, spreads the folding of a cluster's windows over the
// cycles that follow instead of the first one. Until then the window is read as an open
// one.
func (l Layout) Folds(profile string, start, now time.Time) bool {
	return start.Add(l.Window + l.Grace + l.FoldDelay(profile)).Before(now)
}

// ReloadMargin is profile's share of the spread of the readers' daily reloads (a reader
// merges a profile's older closed rollups into one histogram per series and must read them
// again before the oldest of them leaves the retention window): a whole number of seconds
// in [0, Rollup/2), from a hash of the profile, so profiles do not all reload in one cycle.
func (l Layout) ReloadMargin(profile string) time.Duration {
	spread := uint32(l.Rollup / 2 / time.Second)
	if spread == 0 {
		return 0
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte("reload:" + profile))
	return time.Duration(h.Sum32()%spread) * time.Second
}

// FoldDelay is profile's share of the fold spread: a whole number of seconds in
// [0, Window/4), from a hash of the profile.
func (l Layout) FoldDelay(profile string) time.Duration {
	spread := uint32(l.Window / 4 / time.Second)
	if spread == 0 {
		return 0
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(profile))
	return time.Duration(h.Sum32()%spread) * time.Second
}
