package agent

import (
	"sync"
	"time"

	"github.com/ballastk8s/ballast/pkg/nodeagent/buffer"
	"github.com/ballastk8s/ballast/pkg/nodeagent/cgroup"
	"github.com/ballastk8s/ballast/pkg/nodeagent/discovery"
	"github.com/ballastk8s/ballast/pkg/nodeagent/ebpf"
	"github.com/ballastk8s/ballast/pkg/nodeagent/source"
	"github.com/ballastk8s/ballast/pkg/series"
)

// state is what the agent knows per pod and container; the sampling loops update it and
// the debug endpoint, the OOM path and the flusher read it. One mutex guards it; it is
// always taken before the buffer's.
type state struct {
	mu       sync.Mutex
	pods     map[string]*podState // by pod UID
	ctrs     map[string]*ctrState // by container key
	departed map[string]departed  // pods that left the node while holding pending samples
	tallies  map[tallyKey]*tally
	paused   string
	gen      uint64
	// capacity bounds plausible samples (bounds.go).
	capacity discovery.Capacity
	// ignoredRefs are the profile-refs ignored per pod UID, each logged and counted once.
	ignoredRefs map[string]string
}

type podState struct {
	pod discovery.Pod
	// emptyDirAt is the kubelet's time of the last recorded emptyDir reading.
	emptyDirAt time.Time
}

type ctrState struct {
	key, podUID, name, id string
	sidecar               bool

	located          bool
	loc              cgroup.Location
	cpuPath, memPath string // absolute cgroup directories (the debug view)
	oomWatched       bool
	oomDir           string // the watched directory, relative to the cgroup root
	cgroupTried      bool   // a cgroup cycle has read (or tried to read) the container
	cpuOK, memOK     bool   // the last cgroup cycle produced the signal
	limit            uint64
	hasLimit         bool
	maxSeen          uint64 // largest usage or peak seen, the OOM peak of last resort
	polledOOM        uint64 // memory.events / oom_control oom_kill, for the polling fallback
	hasPolledOOM     bool
	last             map[buffer.Series]lastSample
	errs             map[string]*errState
	oomKills         map[string]int64
	kubeletAt        map[string]time.Time // kubelet (stats) times of the last recorded readings
	gen              uint64               // the setPodsLocked call that last listed the container
	// eBPF (--ebpf): the memory cgroup's id (its directory's inode), the last reclaim
	// stall reading, and the kills each OOM path reported, to count one kill once.
	memcgID   uint64
	stall     *ebpf.StallReading
	stallAt   time.Time
	oomLedger oomLedger
	// Memory pressure: the previous memory.pressure "some" total (cgroup v2) and the last
	// reading made from it or from the reclaim stall (pressure.go).
	psiTotal    uint64
	psiAt       time.Time
	hasPSI      bool
	pressure    series.PressureReading
	hasPressure bool
}

type lastSample struct {
	v      float64
	at     time.Time
	source string
	exact  *bool
}

type errState struct {
	msg   string
	at    time.Time
	count int64
}

type departed struct {
	profileRef string
	at         time.Time
}

// tallyKey names a series for the debug counters: owner is the hash, or "pod:<uid>".
type tallyKey struct {
	owner string
	s     buffer.Series
}

type tally struct {
	recorded, flushed int64
	touched           time.Time
}

func newState() *state {
	return &state{pods: map[string]*podState{}, ctrs: map[string]*ctrState{}, departed: map[string]departed{},
		tallies: map[tallyKey]*tally{}}
}

// containerKey names a container in the state, the cgroup targets and the sources' errors.
func containerKey(podUID, name string) string { return source.ContainerKey(podUID, name) }

// setPodsLocked makes pods the current set. It returns the keys of containers that are
// gone (their OOM watches must be removed). Pods that left keep their profile-ref for a
// while so their pending samples can still be filed.
func (s *state) setPodsLocked(pods []discovery.Pod, now time.Time) (gone []string) {
	s.gen++
	seen := make(map[string]bool, len(pods))
	for _, p := range pods {
		seen[p.UID] = true
		ps := s.pods[p.UID]
		if ps == nil {
			ps = &podState{}
			s.pods[p.UID] = ps
		}
		ps.pod = p
		for _, c := range p.Containers {
			k := containerKey(p.UID, c.Name)
			cs := s.ctrs[k]
			if cs == nil {
				cs = &ctrState{key: k, podUID: p.UID, name: c.Name, last: map[buffer.Series]lastSample{},
					errs: map[string]*errState{}, oomKills: map[string]int64{}, kubeletAt: map[string]time.Time{}}
				s.ctrs[k] = cs
			}
			cs.sidecar = c.Sidecar
			if cs.id != c.ID {
				// A new container (restart): its cgroup, limit and counters start over.
				cs.id, cs.located, cs.loc, cs.cpuPath, cs.memPath = c.ID, false, cgroup.Location{}, "", ""
				cs.cpuOK, cs.memOK, cs.hasPolledOOM, cs.maxSeen, cs.cgroupTried = false, false, false, 0, false
				cs.hasPSI, cs.hasPressure = false, false
			}
			cs.gen = s.gen
		}
	}
	for uid, ps := range s.pods {
		if !seen[uid] {
			ref := ps.pod.ProfileRef
			if ps.pod.RefIgnored {
				ref = "" // never filed under a profile its labels do not lead to
			}
			s.departed[uid] = departed{profileRef: ref, at: now}
			delete(s.pods, uid)
		}
	}
	for k, cs := range s.ctrs {
		if cs.gen != s.gen {
			gone = append(gone, k)
			delete(s.ctrs, k)
		}
	}
	return gone
}

// errorLocked records an error of source for a container.
func (cs *ctrState) errorLocked(source, msg string, at time.Time) {
	e := cs.errs[source]
	if e == nil {
		e = &errState{}
		cs.errs[source] = e
	}
	e.msg, e.at = msg, at
	e.count++
}

// owner is the tally owner of a pod's samples: its hash, or the pod while unbound.
func owner(p discovery.Pod) string {
	if p.Hash != "" {
		return p.Hash
	}
	return "pod:" + p.UID
}

// tallyLocked counts n recorded samples of series s of owner o.
func (s *state) tallyLocked(o string, sr buffer.Series, n int64, now time.Time) *tally {
	k := tallyKey{owner: o, s: sr}
	t := s.tallies[k]
	if t == nil {
		t = &tally{}
		s.tallies[k] = t
	}
	t.recorded += n
	t.touched = now
	return t
}

// pruneTalliesLocked forgets series counters untouched for an hour.
func (s *state) pruneTalliesLocked(now time.Time) {
	for k, t := range s.tallies {
		if now.Sub(t.touched) > time.Hour {
			delete(s.tallies, k)
		}
	}
	for uid, d := range s.departed {
		if now.Sub(d.at) > time.Hour {
			delete(s.departed, uid)
		}
	}
}

// ignoredRefsLocked records the pods whose profile-ref discovery ignored and returns those
// not reported before (a pod, or a new ref of it); pods gone are forgotten.
func (s *state) ignoredRefsLocked(pods []discovery.Pod) []discovery.Pod {
	if s.ignoredRefs == nil {
		s.ignoredRefs = map[string]string{}
	}
	var fresh []discovery.Pod
	seen := make(map[string]bool, len(pods))
	for _, p := range pods {
		if !p.RefIgnored {
			continue
		}
		seen[p.UID] = true
		if s.ignoredRefs[p.UID] != p.ProfileRef {
			s.ignoredRefs[p.UID] = p.ProfileRef
			fresh = append(fresh, p)
		}
	}
	for uid := range s.ignoredRefs {
		if !seen[uid] {
			delete(s.ignoredRefs, uid)
		}
	}
	return fresh
}
