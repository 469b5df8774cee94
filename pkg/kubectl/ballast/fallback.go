package ballast

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
)

// fallbackInfo is what explain and profiles show about samples that came through
// metrics.k8s.io (pods on nodes without a live node agent).
type fallbackInfo struct {
	Samples       int64  `json:"samples"`
	Share         string `json:"share,omitempty"`
	Resolution    string `json:"resolution,omitempty"`
	UncoveredPods int32  `json:"uncoveredPods,omitempty"`
	// Coverage is the AgentCoverage condition's reason and message, when present.
	Coverage string `json:"coverage,omitempty"`
}

// fallbackOf reads a profile's status.fallback and AgentCoverage condition; nil when every
// sample is node-local and every pod is covered.
func fallbackOf(wp *ballastv1.WorkloadProfile) *fallbackInfo {
	f := wp.Status.Fallback
	c := meta.FindStatusCondition(wp.Status.Conditions, ballastv1.ConditionAgentCoverage)
	if f == nil && c == nil {
		return nil
	}
	out := &fallbackInfo{}
	if f != nil {
		out.Samples, out.Share, out.UncoveredPods = f.Samples, f.Share, f.UncoveredPods
		if f.Resolution != nil {
			out.Resolution = f.Resolution.Duration.String()
		}
	}
	if c != nil {
		out.Coverage = c.Reason + ": " + c.Message
	}
	return out
}

// cell is the profiles table's FALLBACK column: share and resolution of the fallback's
// samples, and the pods no agent covers.
func (f *fallbackInfo) cell() string {
	if f == nil {
		return "-"
	}
	var parts []string
	if f.Samples > 0 {
		s := f.Share
		if f.Resolution != "" {
			s += " @" + f.Resolution
		}
		parts = append(parts, s)
	}
	if f.UncoveredPods > 0 {
		parts = append(parts, fmt.Sprintf("%d uncovered", f.UncoveredPods))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}

// lines are explain's sentences about the fallback.
func (f *fallbackInfo) lines() []string {
	if f == nil {
		return nil
	}
	var out []string
	if f.Samples > 0 {
		out = append(out, fmt.Sprintf("  fallback:  %s of the retained samples (%d) came through metrics.k8s.io at %s resolution, not from a node agent",
			f.Share, f.Samples, orDefault(f.Resolution, "unknown")))
	}
	if f.Coverage != "" {
		out = append(out, "  coverage:  "+f.Coverage)
	}
	return out
}
