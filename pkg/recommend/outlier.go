package recommend

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
)

// Cross-checking nodes. Every node agent writes the samples of the pods on its node; a
// node whose samples of a series disagree strongly with the other nodes' samples of the
// same series (a compromised or broken agent) must not steer the profile. The check
// compares per-node means: a node whose mean is more than OutlierParams.Factor times the
// median of the other nodes' means is an outlier, and the series' recommendation is capped
// at Factor × that median (the histogram merges every node's samples, so they cannot be
// taken out again; the cap bounds what an outlier can add to at most what the check
// tolerates). A series written by fewer than MinPeers+1 nodes with MinSamples samples each
// cannot be cross-checked and is never bounded: a single-node profile is trusted as it is.

// ReasonOutlierNode is the reason of the RecommendationBounded condition (True) when a
// node's samples disagree with the other nodes'.
const ReasonOutlierNode = "OutlierNode"

// NodeShare is what one node contributed to a series (samples, and their sum in
// millicores or bytes).
type NodeShare struct {
	Node    string
	Samples int64
	Sum     float64
}

func (s NodeShare) mean() float64 { return s.Sum / float64(s.Samples) }

// OutlierParams tune the check; zero fields take the defaults.
type OutlierParams struct {
	// Factor: a node is an outlier above Factor × the others' median mean (default 4).
	Factor float64
	// MinSamples a node needs to take part (default 10).
	MinSamples int64
	// MinPeers: other nodes with MinSamples needed to judge one (default 2).
	MinPeers int
}

// Defaults of OutlierParams.
const (
	DefaultOutlierFactor     = 4.0
	DefaultOutlierMinSamples = 10
	DefaultOutlierMinPeers   = 2
)

func (p OutlierParams) withDefaults() OutlierParams {
	if p.Factor <= 1 {
		p.Factor = DefaultOutlierFactor
	}
	if p.MinSamples <= 0 {
		p.MinSamples = DefaultOutlierMinSamples
	}
	if p.MinPeers <= 0 {
		p.MinPeers = DefaultOutlierMinPeers
	}
	return p
}

// Outlier is one node found to disagree with the others on one series.
type Outlier struct {
	Container, Resource, Node string
	// NodeMean is the node's mean, PeersMedian the median of the other nodes' means, Peers
	// how many they are.
	NodeMean, PeersMedian float64
	Peers                 int
	// Cap is Factor × PeersMedian, rounded up to a whole millicore or byte.
	Cap int64
}

// OutlierNodes returns the nodes of shares whose mean exceeds p.Factor × the median of the
// other eligible nodes' means, sorted by node. Container and Resource are left empty.
func OutlierNodes(shares []NodeShare, p OutlierParams) []Outlier {
	p = p.withDefaults()
	var eligible []NodeShare
	for _, s := range shares {
		if s.Samples >= p.MinSamples && s.Sum >= 0 && !math.IsInf(s.Sum, 0) && !math.IsNaN(s.Sum) {
			eligible = append(eligible, s)
		}
	}
	if len(eligible) < p.MinPeers+1 {
		return nil
	}
	var out []Outlier
	means := make([]float64, 0, len(eligible)-1)
	for i, s := range eligible {
		means = means[:0]
		for j, o := range eligible {
			if j != i {
				means = append(means, o.mean())
			}
		}
		// An idle series (peers at 0) still bounds: against one unit.
		med := max(median(means), 1)
		if m := s.mean(); m > p.Factor*med {
			out = append(out, Outlier{Node: s.Node, NodeMean: m, PeersMedian: med, Peers: len(means),
				Cap: int64(math.Ceil(p.Factor * med))})
		}
	}
	slices.SortFunc(out, func(a, b Outlier) int { return strings.Compare(a.Node, b.Node) })
	return out
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// BoundOutliers checks every (container, resource) of containers that has node shares
// (container → resource → shares) and caps its recommended request and limit at the
// smallest Cap of its outliers. It returns the outliers found, sorted by container,
// resource and node; containers is changed in place.
func BoundOutliers(containers []v1.ContainerProfile, shares map[string]map[string][]NodeShare, p OutlierParams) []Outlier {
	var all []Outlier
	for i := range containers {
		cp := &containers[i]
		byRes := shares[cp.Name]
		for _, res := range slices.Sorted(maps.Keys(byRes)) {
			found := OutlierNodes(byRes[res], p)
			if len(found) == 0 {
				continue
			}
			limit := found[0].Cap
			for k := range found {
				found[k].Container, found[k].Resource = cp.Name, res
				limit = min(limit, found[k].Cap)
			}
			all = append(all, found...)
			rec, ok := cp.Recommendations[res]
			if !ok {
				continue
			}
			note := fmt.Sprintf(", capped at %s (node %s disagrees with the other nodes)", FormatValue(res, limit), found[0].Node)
			if v, ok := quantityUnits(res, rec.Request); ok && v > limit {
				rec.Request, rec.RequestBasis = FormatValue(res, limit), rec.RequestBasis+note
			}
			if v, ok := quantityUnits(res, rec.Limit); ok && v > limit {
				rec.Limit, rec.LimitBasis = FormatValue(res, limit), rec.LimitBasis+note
			}
			recs := maps.Clone(cp.Recommendations)
			recs[res] = rec
			cp.Recommendations = recs
		}
	}
	return all
}

// quantityUnits parses a recommendation into millicores (cpu) or bytes.
func quantityUnits(res, s string) (int64, bool) {
	if s == "" {
		return 0, false
	}
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return 0, false
	}
	if res == ResourceCPU {
		return q.MilliValue(), true
	}
	return q.Value(), true
}

// OutlierCondition is the RecommendationBounded condition for outliers (at least one).
func OutlierCondition(outliers []Outlier, generation int64, now time.Time) metav1.Condition {
	parts := make([]string, 0, min(len(outliers), 3))
	for _, o := range outliers[:min(len(outliers), 3)] {
		parts = append(parts, fmt.Sprintf("node %s: %s %s mean %s is %.1f× the median %s of %d other nodes, recommendation capped at %s",
			o.Node, o.Container, o.Resource, FormatStat(o.Resource, o.NodeMean), o.NodeMean/o.PeersMedian,
			FormatStat(o.Resource, o.PeersMedian), o.Peers, FormatValue(o.Resource, o.Cap)))
	}
	msg := strings.Join(parts, "; ")
	if len(outliers) > 3 {
		msg += fmt.Sprintf("; and %d more", len(outliers)-3)
	}
	return metav1.Condition{Type: v1.ConditionRecommendationBounded, Status: metav1.ConditionTrue, Reason: ReasonOutlierNode,
		Message: msg, ObservedGeneration: generation, LastTransitionTime: metav1.NewTime(now)}
}
