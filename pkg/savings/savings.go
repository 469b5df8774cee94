// Package savings is the arithmetic of what Ballast saves (issue 31): per WorkloadProfile,
// per namespace and cluster-wide, the cpu and memory the bound pods request, what they
// would request at the profile's recommendation, what they use (p50 and p95 of the
// profile's usageStats), the capacity that is reclaimable, and its cost per month at
// prices the caller gives. `kubectl ballast report` and ballast-control's
// ballast_profile_reclaimable_* / ballast_profile_monthly_savings gauges both call it, so
// the two cannot disagree.
//
// The model, per bound pod and per long-running container (native sidecars and regular
// containers), in whole units (millicores, bytes):
//
//	requested   = the container's current request (0 when it has none)
//	recommended = the profile's recommended request for that container name, or the
//	              current request when the profile recommends none (nothing to reclaim)
//	reclaimable = max(0, requested − recommended)
//	shortfall   = max(0, recommended − requested)
//	used p50/95 = the profile's usageStats p50/p95 for that container name (one replica's
//	              usage; absent statistics count 0 and Measured stays false)
//
// A profile's figures are these summed over its pods, so a Deployment of n uniform
// replicas contributes n × (request − recommendation); pods of one profile that carry
// different requests (another namespace, an older rollout) each count with their own.
// Reclaimable and shortfall are kept apart: a shrink of one container does not pay for the
// growth of another, and requested − recommended = reclaimable − shortfall.
//
// The package is pure (hack/checkdeps): no clients, no I/O, no clock.
package savings

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/sizing"
)

// Amount is a quantity of cpu and memory in whole units.
type Amount struct {
	MilliCPU    int64 `json:"milliCPU"`
	MemoryBytes int64 `json:"memoryBytes"`
}

// Add returns a + b.
func (a Amount) Add(b Amount) Amount {
	return Amount{MilliCPU: a.MilliCPU + b.MilliCPU, MemoryBytes: a.MemoryBytes + b.MemoryBytes}
}

// Cores is the cpu in cores.
func (a Amount) Cores() float64 { return float64(a.MilliCPU) / 1000 }

// GiB is the memory in GiB (2^30 bytes).
func (a Amount) GiB() float64 { return float64(a.MemoryBytes) / (1 << 30) }

// Figures are the savings figures of a set of pods.
type Figures struct {
	// Pods counts the bound pods summed.
	Pods int `json:"pods"`
	// Requested is the sum of the pods' current requests.
	Requested Amount `json:"requested"`
	// Recommended is the sum of the requests at the profile's recommendation.
	Recommended Amount `json:"recommended"`
	// UsedP50 and UsedP95 sum the profile's p50 and p95 usage once per pod.
	UsedP50 Amount `json:"usedP50"`
	UsedP95 Amount `json:"usedP95"`
	// Measured is true when at least one container had usage statistics.
	Measured bool `json:"measured"`
	// Reclaimable is the capacity the pods request above their recommendation.
	Reclaimable Amount `json:"reclaimable"`
	// Shortfall is the capacity the pods request below their recommendation.
	Shortfall Amount `json:"shortfall"`
	// Cost is the monthly cost of the figures; nil when no price is set.
	Cost *Cost `json:"cost,omitempty"`
}

// Cost is what Figures cost per month at Prices.
type Cost struct {
	// Requested and Recommended are the monthly cost of those amounts.
	Requested   float64 `json:"requested"`
	Recommended float64 `json:"recommended"`
	// Savings is the monthly cost of the reclaimable capacity.
	Savings float64 `json:"savings"`
	// Shortfall is the monthly cost of the capacity the recommendation adds.
	Shortfall float64 `json:"shortfall"`
}

// Add adds o to f (Cost is recomputed by Price, not added).
func (f *Figures) Add(o Figures) {
	f.Pods += o.Pods
	f.Requested = f.Requested.Add(o.Requested)
	f.Recommended = f.Recommended.Add(o.Recommended)
	f.UsedP50 = f.UsedP50.Add(o.UsedP50)
	f.UsedP95 = f.UsedP95.Add(o.UsedP95)
	f.Measured = f.Measured || o.Measured
	f.Reclaimable = f.Reclaimable.Add(o.Reclaimable)
	f.Shortfall = f.Shortfall.Add(o.Shortfall)
}

// Price sets f.Cost at p (nil when p sets no price).
func (f *Figures) Price(p Prices) {
	if !p.Set() {
		f.Cost = nil
		return
	}
	f.Cost = &Cost{Requested: p.Monthly(f.Requested), Recommended: p.Monthly(f.Recommended),
		Savings: p.Monthly(f.Reclaimable), Shortfall: p.Monthly(f.Shortfall)}
}

// container is one container name of a profile, parsed once.
type container struct {
	rec       Amount
	hasCPU    bool // a recommended cpu request
	hasMemory bool // a recommended memory request
	p50, p95  Amount
	measured  bool // usage statistics for cpu or memory
}

// Profile is a WorkloadProfile's status parsed into whole units.
type Profile struct {
	Name       string
	State      string
	containers map[string]container
}

// ParseProfile reads the recommendations and usage statistics of wp's status. Values that
// do not parse are treated as absent (the profile's own status is the authority; a broken
// value recommends nothing).
func ParseProfile(wp *ballastv1.WorkloadProfile) Profile {
	p := Profile{Name: wp.Name, State: wp.Status.State, containers: make(map[string]container, len(wp.Status.Containers))}
	if p.State == "" {
		p.State = ballastv1.StateAccruing
	}
	recs, _ := sizing.ParseRecommendations(wp.Status.Containers)
	for _, cp := range wp.Status.Containers {
		var c container
		if r, ok := recs[cp.Name][corev1.ResourceCPU]; ok && r.HasRequest {
			c.rec.MilliCPU, c.hasCPU = int64(r.Request), true
		}
		if r, ok := recs[cp.Name][corev1.ResourceMemory]; ok && r.HasRequest {
			c.rec.MemoryBytes, c.hasMemory = int64(r.Request), true
		}
		for _, us := range cp.UsageStats {
			if us.Samples <= 0 {
				continue
			}
			switch corev1.ResourceName(us.Resource) {
			case corev1.ResourceCPU:
				c.p50.MilliCPU = stat(corev1.ResourceCPU, us.P50)
				c.p95.MilliCPU = stat(corev1.ResourceCPU, us.P95)
				c.measured = true
			case corev1.ResourceMemory:
				c.p50.MemoryBytes = stat(corev1.ResourceMemory, us.P50)
				c.p95.MemoryBytes = stat(corev1.ResourceMemory, us.P95)
				c.measured = true
			}
		}
		p.containers[cp.Name] = c
	}
	return p
}

// stat reads one usageStats value ("230m", "176.00Mi") in whole units; 0 when it does not
// parse.
func stat(res corev1.ResourceName, v string) int64 {
	if v == "" {
		return 0
	}
	q, err := resource.ParseQuantity(v)
	if err != nil {
		return 0
	}
	return int64(sizing.UnitsOf(res, q))
}

// ContainerRequest is one long-running container of a pod and its current requests.
type ContainerRequest struct {
	Name    string
	Request Amount
}

// Pod is one bound pod: its namespace and long-running containers.
type Pod struct {
	Namespace  string
	Containers []ContainerRequest
}

// Counts reports whether pod counts as running its profile: live (no deletionTimestamp),
// on the mode ladder, and not finished (a Succeeded or Failed pod holds no capacity).
func Counts(pod *corev1.Pod) bool {
	return pod.DeletionTimestamp == nil && ballastv1.ValidMode(pod.Labels[ballastv1.ModeLabel]) &&
		pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed
}

// PodOf reads the long-running containers' requests of pod (native sidecars first, then
// regular containers).
func PodOf(pod *corev1.Pod) Pod {
	p := Pod{Namespace: pod.Namespace, Containers: make([]ContainerRequest, 0, len(pod.Spec.Containers))}
	add := func(c *corev1.Container) {
		var a Amount
		if q, ok := c.Resources.Requests[corev1.ResourceCPU]; ok {
			a.MilliCPU = q.MilliValue()
		}
		if q, ok := c.Resources.Requests[corev1.ResourceMemory]; ok {
			a.MemoryBytes = q.Value()
		}
		p.Containers = append(p.Containers, ContainerRequest{Name: c.Name, Request: a})
	}
	for i := range pod.Spec.InitContainers {
		if c := &pod.Spec.InitContainers[i]; c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			add(c)
		}
	}
	for i := range pod.Spec.Containers {
		add(&pod.Spec.Containers[i])
	}
	return p
}

// Figures sums the profile's figures over pods (Cost unset: see Figures.Price).
func (p Profile) Figures(pods []Pod) Figures {
	var f Figures
	for _, pod := range pods {
		f.Pods++
		for _, ctr := range pod.Containers {
			c := p.containers[ctr.Name]
			rec := ctr.Request
			if c.hasCPU {
				rec.MilliCPU = c.rec.MilliCPU
			}
			if c.hasMemory {
				rec.MemoryBytes = c.rec.MemoryBytes
			}
			f.Requested = f.Requested.Add(ctr.Request)
			f.Recommended = f.Recommended.Add(rec)
			f.Reclaimable = f.Reclaimable.Add(Amount{MilliCPU: max(0, ctr.Request.MilliCPU-rec.MilliCPU),
				MemoryBytes: max(0, ctr.Request.MemoryBytes-rec.MemoryBytes)})
			f.Shortfall = f.Shortfall.Add(Amount{MilliCPU: max(0, rec.MilliCPU-ctr.Request.MilliCPU),
				MemoryBytes: max(0, rec.MemoryBytes-ctr.Request.MemoryBytes)})
			if c.measured {
				f.UsedP50 = f.UsedP50.Add(c.p50)
				f.UsedP95 = f.UsedP95.Add(c.p95)
				f.Measured = true
			}
		}
	}
	return f
}
