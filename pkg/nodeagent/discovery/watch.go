package discovery

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/policy"
)

// Options configure a Watcher.
type Options struct {
	// NodeName is the node whose pods are watched.
	NodeName string
	// MinInterval is the floor of every sampling interval.
	MinInterval time.Duration
}

// Watcher keeps the discovered state current from informers. It never writes to the API
// server: every informer only lists and watches.
type Watcher struct {
	opts    Options
	cache   cache.Cache
	changed chan struct{}

	mu       sync.Mutex
	version  uint64
	synced   bool
	pods     map[string]Pod // by UID, unresolved
	config   *ballastv1.BallastConfigSpec
	cluster  map[string][]ballastv1.MetricSpec    // ClusterResourcePolicy name → metrics
	ns       map[string][]ballastv1.MetricSpec    // "<ns>/<name>" → metrics
	compiled map[string]*policy.Compiled          // same keys as cluster and ns; nil when invalid
	rps      map[string]*ballastv1.ResourcePolicy // "<ns>/<name>" → object, recompiled when the floors change
	sources  map[string]policy.Source
	hashes   map[string]string
	capacity Capacity
	built    []Pod
	builtVer uint64
}

// Scheme returns the scheme of the objects a Watcher reads: core/v1 and Ballast's kinds.
func Scheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := corev1.AddToScheme(s); err != nil {
		return nil, err
	}
	if err := ballastv1.AddToScheme(s); err != nil {
		return nil, err
	}
	return s, nil
}

// NewWatcher builds the informers' cache for node o.NodeName. Run starts it.
func NewWatcher(cfg *rest.Config, o Options) (*Watcher, error) {
	if o.NodeName == "" {
		return nil, errors.New("discovery: node name is required")
	}
	scheme, err := Scheme()
	if err != nil {
		return nil, err
	}
	enrolled, err := labels.NewRequirement(ballastv1.ModeLabel, selection.Exists, nil)
	if err != nil {
		return nil, err
	}
	c, err := cache.New(waitForServer(cfg), cache.Options{
		Scheme:           scheme,
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			// Only the enrolled pods of this node: the agent's cost follows enrolled pods,
			// not cluster size.
			&corev1.Pod{}: {
				Field: fields.OneTermEqualSelector("spec.nodeName", o.NodeName),
				Label: labels.NewSelector().Add(*enrolled),
			},
			&ballastv1.BallastConfig{}: {Field: fields.OneTermEqualSelector("metadata.name", ballastv1.BallastConfigName)},
			// Its own Node only, for the capacity that bounds plausible samples.
			&corev1.Node{}: {Field: fields.OneTermEqualSelector("metadata.name", o.NodeName), Transform: slimNode},
			// Profiles carry statistics the agent does not need; keep name → hash only.
			&ballastv1.WorkloadProfile{}: {Transform: slimProfile},
		},
	})
	if err != nil {
		return nil, fmt.Errorf("building the discovery cache: %w", err)
	}
	return &Watcher{
		opts: o, cache: c, changed: make(chan struct{}, 1),
		pods: map[string]Pod{}, cluster: map[string][]ballastv1.MetricSpec{}, ns: map[string][]ballastv1.MetricSpec{},
		compiled: map[string]*policy.Compiled{}, rps: map[string]*ballastv1.ResourcePolicy{},
		sources: map[string]policy.Source{}, hashes: map[string]string{},
	}, nil
}

// slimProfile keeps the name and measurementHash of a WorkloadProfile.
func slimProfile(obj any) (any, error) {
	wp, ok := obj.(*ballastv1.WorkloadProfile)
	if !ok {
		return obj, nil
	}
	return &ballastv1.WorkloadProfile{
		ObjectMeta: metav1.ObjectMeta{Name: wp.Name, UID: wp.UID, ResourceVersion: wp.ResourceVersion},
		Status:     ballastv1.WorkloadProfileStatus{MeasurementHash: wp.Status.MeasurementHash},
	}, nil
}

// Run registers the event handlers, starts the informers and blocks until ctx is done. It
// fails at once when a kind cannot be watched (for example Ballast's CRDs are missing).
func (w *Watcher) Run(ctx context.Context) error {
	handlers := []struct {
		obj    client.Object
		upsert func(client.Object)
		remove func(client.Object)
	}{
		{&corev1.Pod{}, w.upsertPod, w.removePod},
		{&ballastv1.BallastConfig{}, w.upsertConfig, w.removeConfig},
		{&ballastv1.MetricsSource{}, w.upsertSource, w.removeSource},
		{&ballastv1.ClusterResourcePolicy{}, w.upsertClusterPolicy, w.removeClusterPolicy},
		{&ballastv1.ResourcePolicy{}, w.upsertPolicy, w.removePolicy},
		{&ballastv1.WorkloadProfile{}, w.upsertProfile, w.removeProfile},
		{&corev1.Node{}, w.upsertNode, w.removeNode},
	}
	for _, h := range handlers {
		inf, err := w.cache.GetInformer(ctx, h.obj)
		if err != nil {
			return fmt.Errorf("watching %T: %w", h.obj, err)
		}
		if _, err := inf.AddEventHandler(funcs(h.upsert, h.remove)); err != nil {
			return fmt.Errorf("watching %T: %w", h.obj, err)
		}
	}
	errc := make(chan error, 1)
	go func() { errc <- w.cache.Start(ctx) }()
	if !w.cache.WaitForCacheSync(ctx) {
		if err := ctx.Err(); err != nil {
			return err
		}
		return errors.New("discovery informers did not sync")
	}
	w.mu.Lock()
	w.synced = true
	w.touchLocked()
	w.mu.Unlock()
	return <-errc
}

func funcs(upsert, remove func(client.Object)) toolscache.ResourceEventHandlerFuncs {
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { call(upsert, obj) },
		UpdateFunc: func(_, obj any) { call(upsert, obj) },
		DeleteFunc: func(obj any) {
			if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			call(remove, obj)
		},
	}
}

func call(f func(client.Object), obj any) {
	if o, ok := obj.(client.Object); ok {
		f(o)
	}
}

// Changed is signalled (without blocking, coalesced) after every change.
func (w *Watcher) Changed() <-chan struct{} { return w.changed }

// Synced reports whether every informer has listed once.
func (w *Watcher) Synced() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.synced
}

// Snapshot returns the current state; pods are resolved again only after a change.
func (w *Watcher) Snapshot() Snapshot {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.built == nil || w.builtVer != w.version {
		in := Inputs{Policies: make(map[string][]ballastv1.MetricSpec, len(w.cluster)+len(w.ns)),
			Sources: w.sources, Hashes: w.hashes, MinInterval: w.opts.MinInterval, Candidates: w.candidatesLocked()}
		if w.config != nil {
			in.IdentityLabels = w.config.IdentityLabels
		}
		maps.Copy(in.Policies, w.cluster)
		maps.Copy(in.Policies, w.ns)
		w.built, w.builtVer = Build(slices.Collect(maps.Values(w.pods)), in), w.version
	}
	s := Snapshot{Version: w.version, Synced: w.synced, ConfigFound: w.config != nil,
		Retention: ballastv1.DefaultRetentionWindow, Pods: w.built, Capacity: w.capacity}
	if w.config != nil {
		s.Retention, _ = ballastv1.RetentionWindow(*w.config)
	}
	return s
}

// ProfileHash returns the measurementHash of the profile named name, "" when the profile
// does not exist, has no hash yet or its hash is not valid store input.
func (w *Watcher) ProfileHash(name string) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return Resolve(Pod{ProfileRef: name}, Inputs{Hashes: w.hashes}).Hash
}

// touchLocked records a change and wakes the waiter.
func (w *Watcher) touchLocked() {
	w.version++
	select {
	case w.changed <- struct{}{}:
	default:
	}
}

func (w *Watcher) upsertPod(o client.Object) {
	p, ok := o.(*corev1.Pod)
	if !ok {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	view, enrolled := FromPod(p)
	if !enrolled {
		if _, had := w.pods[string(p.UID)]; had {
			delete(w.pods, string(p.UID))
			w.touchLocked()
		}
		return
	}
	if old, had := w.pods[view.UID]; had && podEqual(old, view) {
		return
	}
	w.pods[view.UID] = view
	w.touchLocked()
}

func (w *Watcher) removePod(o client.Object) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, had := w.pods[string(o.GetUID())]; had {
		delete(w.pods, string(o.GetUID()))
		w.touchLocked()
	}
}

func podEqual(a, b Pod) bool {
	return a.Namespace == b.Namespace && a.Name == b.Name && a.Mode == b.Mode && a.QOS == b.QOS &&
		a.ProfileRef == b.ProfileRef && a.PolicyRef == b.PolicyRef && a.Terminating == b.Terminating &&
		maps.Equal(a.Labels, b.Labels) && maps.Equal(a.Annotations, b.Annotations) &&
		slices.Equal(a.Containers, b.Containers) && slices.Equal(a.EmptyDirVolumes, b.EmptyDirVolumes)
}

func (w *Watcher) upsertConfig(o client.Object) {
	c, ok := o.(*ballastv1.BallastConfig)
	if !ok || c.Name != ballastv1.BallastConfigName {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	before := w.floorsLocked()
	spec := c.Spec
	w.config = &spec
	w.recompileLocked(before)
	w.touchLocked()
}

// floorsLocked are the ResourcePolicy floors of the current BallastConfig (the defaults
// without one), as the control plane applies them.
func (w *Watcher) floorsLocked() policy.Floors {
	f, _ := policy.FloorsOf(w.config)
	return f
}

// recompileLocked compiles every ResourcePolicy again when the floors differ from before.
func (w *Watcher) recompileLocked(before policy.Floors) {
	floors := w.floorsLocked()
	if floors.Equal(before) {
		return
	}
	for key, p := range w.rps {
		w.compiled[key], _ = policy.CompileNamespaced(p, floors)
	}
}

func (w *Watcher) removeConfig(o client.Object) {
	if o.GetName() != ballastv1.BallastConfigName {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	before := w.floorsLocked()
	w.config = nil
	w.recompileLocked(before)
	w.touchLocked()
}

func (w *Watcher) upsertSource(o client.Object) {
	s, ok := o.(*ballastv1.MetricsSource)
	if !ok {
		return
	}
	w.set(func() bool {
		next := policy.Source{Type: s.Spec.Type, PollInterval: s.Spec.Config.PollInterval}
		old, had := w.sources[s.Name]
		w.sources[s.Name] = next
		return !had || old != next
	})
}

func (w *Watcher) removeSource(o client.Object) {
	w.set(func() bool { delete(w.sources, o.GetName()); return true })
}

func (w *Watcher) upsertClusterPolicy(o client.Object) {
	if p, ok := o.(*ballastv1.ClusterResourcePolicy); ok {
		c, _ := policy.CompileCluster(p) // nil when invalid: it governs no pod
		w.set(func() bool { w.cluster[p.Name], w.compiled[p.Name] = p.Spec.Metrics, c; return true })
	}
}

func (w *Watcher) removeClusterPolicy(o client.Object) {
	w.set(func() bool { delete(w.cluster, o.GetName()); delete(w.compiled, o.GetName()); return true })
}

func (w *Watcher) upsertPolicy(o client.Object) {
	if p, ok := o.(*ballastv1.ResourcePolicy); ok {
		key := PolicyKey(p.Namespace, p.Name)
		w.set(func() bool {
			c, _ := policy.CompileNamespaced(p, w.floorsLocked()) // nil when invalid or below a floor
			w.ns[key], w.compiled[key], w.rps[key] = p.Spec.Metrics, c, p
			return true
		})
	}
}

func (w *Watcher) removePolicy(o client.Object) {
	key := PolicyKey(o.GetNamespace(), o.GetName())
	w.set(func() bool { delete(w.ns, key); delete(w.compiled, key); delete(w.rps, key); return true })
}

// candidatesLocked are the policies that can govern pods, as the control plane counts
// them: valid, and naming only MetricsSources of a known type.
func (w *Watcher) candidatesLocked() []*policy.Compiled {
	types := make(map[string]string, len(w.sources))
	for name, s := range w.sources {
		types[name] = s.Type
	}
	known := policy.KnownSources(types)
	out := make([]*policy.Compiled, 0, len(w.compiled))
	for _, c := range w.compiled {
		if c != nil && len(policy.UnknownSources(c.Spec.Metrics, known)) == 0 {
			out = append(out, c)
		}
	}
	return out
}

// upsertProfile records a profile's hash; only a changed hash counts as a change, so the
// frequent status updates of profiles cost the agent nothing else.
func (w *Watcher) upsertProfile(o client.Object) {
	p, ok := o.(*ballastv1.WorkloadProfile)
	if !ok {
		return
	}
	w.set(func() bool {
		old, had := w.hashes[p.Name]
		w.hashes[p.Name] = p.Status.MeasurementHash
		return !had || old != p.Status.MeasurementHash
	})
}

func (w *Watcher) removeProfile(o client.Object) {
	w.set(func() bool { delete(w.hashes, o.GetName()); return true })
}

// set applies f under the lock and records a change when f reports one.
func (w *Watcher) set(f func() bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if f() {
		w.touchLocked()
	}
}

// slimNode keeps the name and capacity of a Node.
func slimNode(obj any) (any, error) {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return obj, nil
	}
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.Name, UID: n.UID, ResourceVersion: n.ResourceVersion},
		Status: corev1.NodeStatus{Capacity: n.Status.Capacity}}, nil
}

func (w *Watcher) upsertNode(o client.Object) {
	n, ok := o.(*corev1.Node)
	if !ok || n.Name != w.opts.NodeName {
		return
	}
	w.set(func() bool {
		next := CapacityOf(n.Status.Capacity)
		changed := next != w.capacity
		w.capacity = next
		return changed
	})
}

func (w *Watcher) removeNode(o client.Object) {
	if o.GetName() == w.opts.NodeName {
		w.set(func() bool { w.capacity = Capacity{}; return true })
	}
}
