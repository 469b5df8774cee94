// Package fallback measures enrolled pods on nodes without a live node agent (serverless and
// virtual nodes, nodes the agent's tolerations leave out, agents crash-looping or being
// upgraded) through metrics.k8s.io, and writes their samples into the same store windows
// the agents write, through pkg/store.
//
// Which path measures a sample is decided per sample time by the node's heartbeat
// (series.OwnerOf): a live agent owns everything it flushed; once its heartbeat expired, the
// fallback owns what is later than the agent's last flushed sampling turn; a restarted agent
// owns everything from its first turn on. So a hand-over in either direction neither drops
// nor doubles a sampling instant. ARCHITECTURE.md and docs/fallback.md describe it.
package fallback

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/control/config"
	"github.com/ballastk8s/ballast/pkg/control/events"
	"github.com/ballastk8s/ballast/pkg/control/podcache"
	"github.com/ballastk8s/ballast/pkg/series"
	"github.com/ballastk8s/ballast/pkg/sizing"
)

// Store is the fallback's view of the store (store.ProfileReader).
type Store interface {
	Heartbeats(ctx context.Context, now time.Time) (map[string]series.Heartbeat, map[string]error, error)
	FallbackCursors(ctx context.Context, uids []string) (map[string]time.Time, error)
	WriteFallback(ctx context.Context, retention time.Duration, ups []series.WindowUpdate, cursors map[string]time.Time) error
	ForgetFallbackCursors(ctx context.Context, uids []string) error
}

// Options tune the controller.
type Options struct {
	// Enabled turns the fallback on; off, nothing is polled and nodes without an agent stay
	// unmeasured (their profiles still say so).
	Enabled bool
	// Interval is how often metrics.k8s.io is read (each distinct reading is written once,
	// so polling faster than the metrics API's resolution only shortens the delay).
	Interval time.Duration
	// EphemeralStorage also reads those pods' ephemeral storage from the kubelet Summary
	// API through the API server's node proxy (needs get on nodes/proxy, which also allows
	// far more than reading stats; off by default). Off, it is not measured for them.
	EphemeralStorage bool
}

// Controller is the fallback source. It runs on the leader only.
type Controller struct {
	clock  clock.PassiveClock
	client client.Client
	state  *config.State
	store  Store
	api    MetricsAPI
	sum    SummaryAPI // nil unless Options.EphemeralStorage
	// podLister lists the enrolled pods the manager's cache holds (WithPodLister); nil lists
	// them through client, which copies each pod's struct.
	podLister podcache.PodLister
	m         *Metrics
	events    *events.Recorder
	log       logr.Logger
	o         Options

	mu     sync.Mutex
	pods   map[string]*podState // by pod UID
	eph    map[string]*podState // ephemeral-storage points by pod UID (Options.EphemeralStorage)
	view   viewState
	logged string // the last problem logged, so each is logged once per change
	// coverage is each node's coverage as last logged (nil before the first cycle), so a
	// node losing or regaining its agent is logged once per change.
	coverage map[string]bool
	// resolution is the coarsest metrics.k8s.io window seen (metrics-server's default
	// until a reading says otherwise).
	resolution time.Duration
}

// New returns the controller.
func New(clk clock.PassiveClock, c client.Client, st *config.State, s Store, api MetricsAPI, m *Metrics,
	ev *events.Recorder, log logr.Logger, o Options) *Controller {
	if o.Interval <= 0 {
		o.Interval = 30 * time.Second
	}
	return &Controller{clock: clk, client: c, state: st, store: s, api: api, m: m, events: ev, log: log, o: o,
		pods: map[string]*podState{}, eph: map[string]*podState{}, view: viewState{profiles: map[string]ProfileCoverage{}}, resolution: time.Minute}
}

// WithPodLister makes the controller read the enrolled pods from l (podcache.Lister over
// the manager's cache) instead of listing them through its client every cycle.
func (c *Controller) WithPodLister(l podcache.PodLister) *Controller {
	c.podLister = l
	return c
}

// WithSummary sets the node-proxy Summary reader of Options.EphemeralStorage.
func (c *Controller) WithSummary(s SummaryAPI) *Controller {
	c.sum = s
	return c
}

// Register adds the controller to the manager (leader only).
func (c *Controller) Register(mgr ctrl.Manager) error { return mgr.Add(c) }

// NeedLeaderElection: only the leader writes samples.
func (c *Controller) NeedLeaderElection() bool { return true }

// Start runs a cycle every Interval until ctx ends.
func (c *Controller) Start(ctx context.Context) error {
	t := time.NewTicker(c.o.Interval)
	defer t.Stop()
	for {
		if err := c.Cycle(ctx); err != nil {
			c.problem("fallback cycle failed", err)
		} else {
			c.problem("", nil)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// problem logs a cycle's problem once per change (never once per cycle or per pod).
func (c *Controller) problem(msg string, err error) {
	text := ""
	if err != nil {
		text = msg + ": " + err.Error()
	}
	c.mu.Lock()
	changed := text != c.logged
	c.logged = text
	c.mu.Unlock()
	switch {
	case changed && err != nil:
		c.log.Error(err, msg)
	case changed:
		c.log.Info("fallback cycle succeeded again")
	}
}

// enrolledPod is one bound, running enrolled pod as the fallback sees it.
type enrolledPod struct {
	pod     *corev1.Pod
	profile string // WorkloadProfile name
	hash    string // its measurementHash ("" until the profile has one)
}

// Cycle reads heartbeats, updates coverage, and measures the pods of uncovered nodes.
func (c *Controller) Cycle(ctx context.Context) error {
	now := c.clock.Now()
	hbs, bad, err := c.store.Heartbeats(ctx, now)
	if err != nil {
		return fmt.Errorf("reading agent heartbeats: %w", err)
	}
	c.m.badHeartbeats.Set(float64(len(bad)))
	nodes := &corev1.NodeList{}
	if err := c.client.List(ctx, nodes); err != nil {
		return fmt.Errorf("listing nodes: %w", err)
	}
	covered := map[string]bool{}
	for _, n := range nodes.Items {
		hb, ok := hbs[n.Name]
		covered[n.Name] = ok && hb.Live(now)
	}
	c.m.setCoverage(covered)
	c.logCoverage(covered, hbs, now)
	pods, err := c.enrolledPods(ctx)
	if err != nil {
		return err
	}
	uncovered := map[string]int{}
	needNodes := map[string]bool{}
	for _, ep := range pods {
		node := ep.pod.Spec.NodeName
		if !covered[node] {
			uncovered[ep.profile]++
		}
		if !covered[node] || stale(hbs[node], now) || c.justStarted(hbs[node], now) {
			needNodes[node] = true
		}
	}
	need := len(needNodes) > 0
	c.m.uncoveredPods.Set(float64(sum(uncovered)))
	if !c.o.Enabled {
		c.setView(uncovered, APIDisabled, "")
		return nil
	}
	c.forgetGone(ctx, pods)
	if !need && !c.holding() {
		c.setView(uncovered, c.currentAPIState(), "")
		return nil
	}
	if err := c.loadCursors(ctx, pods); err != nil {
		return err
	}
	var ephErr error
	if c.o.EphemeralStorage {
		ephErr = c.measureEphemeral(ctx, now, hbs, pods, needNodes)
	}
	readings, err := c.api.PodMetrics(ctx)
	if err != nil {
		state, msg := classify(err)
		c.apiTransition(ctx, state, msg)
		c.setView(uncovered, state, msg)
		if state == APIUnavailable {
			return ephErr // said once by the event and the condition; not a cycle error
		}
		return errors.Join(fmt.Errorf("reading metrics.k8s.io: %w", err), ephErr)
	}
	c.apiTransition(ctx, APIServed, "")
	c.setView(uncovered, APIServed, "")
	return errors.Join(c.measure(ctx, now, hbs, pods, readings), ephErr)
}

// maxCoverageLines bounds the per-node lines one cycle logs about coverage changes; more
// changes than that (a cluster's first cycle, a DaemonSet deleted) are logged as one line.
const maxCoverageLines = 10

// logCoverage logs the nodes whose agent coverage changed since the last cycle: an agent's
// heartbeat expiring (its node's enrolled pods move to the fallback for the sampling
// instants after its last flushed turn) or coming back. The first cycle logs the nodes
// without a live agent once.
func (c *Controller) logCoverage(covered map[string]bool, hbs map[string]series.Heartbeat, now time.Time) {
	c.mu.Lock()
	prev, first := c.coverage, c.coverage == nil
	c.coverage = covered
	c.mu.Unlock()
	var lost, back []string
	for n, ok := range covered {
		was, seen := prev[n]
		switch {
		case !ok && (first || !seen || was):
			lost = append(lost, n)
		case ok && !first && seen && !was:
			back = append(back, n)
		}
	}
	sort.Strings(lost)
	sort.Strings(back)
	if first || len(lost)+len(back) > maxCoverageLines {
		if len(lost)+len(back) > 0 {
			c.log.Info("agent coverage changed", "withoutLiveAgent", len(lost), "agentBack", len(back),
				"nodes", firstNames(append(lost, back...), maxCoverageLines), "covered", count(covered))
		}
		return
	}
	for _, n := range lost {
		if hb, ok := hbs[n]; ok {
			c.log.Info("node agent heartbeat expired: the node's enrolled pods are measured through the fallback after the agent's last flushed turn",
				"node", n, "heartbeatAt", hb.At, "ttl", hb.TTL.String(), "through", hb.Through, "late", now.Sub(hb.At.Add(hb.TTL)).Round(time.Millisecond).String())
		} else {
			c.log.Info("node has no node agent heartbeat: its enrolled pods are measured through the fallback", "node", n)
		}
	}
	for _, n := range back {
		c.log.Info("node agent heartbeat live again: the node's pods are measured node-locally from the agent's first turn", "node", n, "since", hbs[n].Since)
	}
}

func firstNames(names []string, n int) []string {
	if len(names) > n {
		return append(names[:n:n], fmt.Sprintf("and %d more", len(names)-n))
	}
	return names
}

func count(m map[string]bool) int {
	n := 0
	for _, ok := range m {
		if ok {
			n++
		}
	}
	return n
}

// stale reports that a live heartbeat was not refreshed for more than one flush interval:
// the agent may be gone, so the fallback starts collecting the node's readings (held until
// the heartbeat either covers them or expires).
func stale(hb series.Heartbeat, now time.Time) bool {
	return hb.TTL <= 0 || now.Sub(hb.At) > hb.TTL/3+hb.TTL/6
}

// justStarted reports that the node's agent (re)started so recently that metrics.k8s.io may
// still serve a reading from before its first sampling turn: the fallback keeps reading
// until that reading (the fallback's, as no agent measured it) cannot be served any more.
func (c *Controller) justStarted(hb series.Heartbeat, now time.Time) bool {
	c.mu.Lock()
	res := c.resolution
	c.mu.Unlock()
	return now.Sub(hb.Since) < c.o.Interval+2*res
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// enrolledPods lists the bound, running enrolled pods with their profile's hash.
func (c *Controller) enrolledPods(ctx context.Context) (map[string]enrolledPod, error) {
	// Read only: the cache's pods are used as they are, not copied every cycle.
	pods, err := c.listPods(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing enrolled pods: %w", err)
	}
	hashes := map[string]string{}
	out := map[string]enrolledPod{}
	for _, p := range pods {
		if _, ok := p.Labels[ballastv1.ModeLabel]; !ok {
			continue
		}
		ref := p.Annotations[ballastv1.ProfileRefAnnotation]
		if ref == "" || p.Spec.NodeName == "" || p.Status.Phase != corev1.PodRunning || !p.DeletionTimestamp.IsZero() {
			continue
		}
		if !ballastv1.ValidMode(p.Labels[ballastv1.ModeLabel]) {
			continue
		}
		hash, ok := hashes[ref]
		if !ok {
			wp := &ballastv1.WorkloadProfile{} // shares the cached profile's fields: read only
			if err := c.client.Get(ctx, client.ObjectKey{Name: ref}, wp, client.UnsafeDisableDeepCopy); client.IgnoreNotFound(err) != nil {
				return nil, fmt.Errorf("reading profile %s: %w", ref, err)
			}
			hash = wp.Status.MeasurementHash
			hashes[ref] = hash
		}
		out[string(p.UID)] = enrolledPod{pod: p, profile: ref, hash: hash}
	}
	return out, nil
}

// listPods returns the enrolled pods, read only: from the pod lister when there is one,
// else through the client (which copies each pod's struct, not its fields).
func (c *Controller) listPods(ctx context.Context) ([]*corev1.Pod, error) {
	if c.podLister != nil {
		return c.podLister(ctx)
	}
	list := &corev1.PodList{}
	if err := c.client.List(ctx, list, client.HasLabels{ballastv1.ModeLabel}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	out := make([]*corev1.Pod, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}

// longRunning names the containers Ballast records (SPEC §6.2), as sizing.LongRunning lists
// them: regular containers and restartable init containers (sidecars).
func longRunning(p *corev1.Pod) map[string]bool {
	out := map[string]bool{}
	for _, r := range sizing.LongRunning(&p.Spec) {
		out[r.Name] = true
	}
	return out
}

// holding reports whether some pod has undecided points.
func (c *Controller) holding() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, states := range []map[string]*podState{c.pods, c.eph} {
		for _, ps := range states {
			if len(ps.pending) > 0 {
				return true
			}
		}
	}
	return false
}

// forgetGone drops the state and the stored cursors of pods that are no longer enrolled
// and running.
func (c *Controller) forgetGone(ctx context.Context, pods map[string]enrolledPod) {
	c.mu.Lock()
	var gone []string
	for uid := range c.pods {
		if _, ok := pods[uid]; !ok {
			gone = append(gone, uid, uid+ephemeralSuffix)
			delete(c.pods, uid)
			delete(c.eph, uid)
		}
	}
	c.mu.Unlock()
	if err := c.store.ForgetFallbackCursors(ctx, gone); err != nil {
		c.log.V(1).Info("forgetting fallback cursors", "error", err.Error())
	}
}

// loadCursors reads the stored cursors of pods seen for the first time.
func (c *Controller) loadCursors(ctx context.Context, pods map[string]enrolledPod) error {
	c.mu.Lock()
	var fresh, fields []string
	for uid := range pods {
		if c.pods[uid] == nil {
			fresh = append(fresh, uid)
			fields = append(fields, uid, uid+ephemeralSuffix)
		}
	}
	c.mu.Unlock()
	if len(fresh) == 0 {
		return nil
	}
	cur, err := c.store.FallbackCursors(ctx, fields)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, uid := range fresh {
		c.pods[uid] = &podState{cursor: cur[uid]}
		c.eph[uid] = &podState{cursor: cur[uid+ephemeralSuffix]}
	}
	return nil
}

var errNoAPI = errors.New("metrics.k8s.io is not configured")
