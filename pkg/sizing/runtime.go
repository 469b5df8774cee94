package sizing

import (
	"fmt"
	"math/big"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/ballastk8s/ballast/pkg/sizing/memfloor"
)

// ReasonRestartOnly: a memory shrink of a runtime that cannot give memory back in place
// (jvm) was held; it takes effect at the pod's next restart (admission sizes it then).
// It becomes an event reason (RestartOnly), a skip reason and a metric attribute.
const ReasonRestartOnly = "restart_only"

// RuntimeParams are a policy's spec.runtime, parsed.
type RuntimeParams struct {
	// Type is the runtime named by the policy; empty is generic, Auto is resolved per
	// container (memfloor.Detect).
	Type memfloor.Runtime
	// Margin is the percentage added to a floor; nil means memfloor.DefaultMarginPercent.
	Margin *big.Rat
}

// RuntimeNote is what the runtime profile decided for one container: its resolved runtime,
// the floor its settings imply (or why none) and which recommendations the floor raised.
type RuntimeNote struct {
	Container string
	Floor     memfloor.Floor
	// Raised lists the memory recommendations the floor raised.
	Raised []FloorRaise
}

// FloorRaise is one memory recommendation a runtime floor raised.
type FloorRaise struct {
	Field    Field
	From, To Units
}

// String renders the note for the runtime-floor annotation, events and explain.
func (n RuntimeNote) String() string {
	f := n.Floor
	what := ""
	switch {
	case f.Has:
		what = fmt.Sprintf("floor %s (%s: %s)", Units(f.Bytes).String(corev1.ResourceMemory), f.Source, f.Why)
	case f.Note != "":
		what = f.Note
	default:
		what = "no floor"
	}
	var raised []string
	for _, r := range n.Raised {
		raised = append(raised, fmt.Sprintf("memory %s %s→%s", r.Field, r.From.String(corev1.ResourceMemory), r.To.String(corev1.ResourceMemory)))
	}
	out := fmt.Sprintf("%s %s %s", n.Container, f.Runtime, what)
	if len(raised) > 0 {
		out += "; raised " + strings.Join(raised, ", ")
	}
	return out
}

// MemoryShrinkNeedsRestart reports whether the resize path must hold in-place memory
// shrinks of a container of runtime rt (ReasonRestartOnly).
func MemoryShrinkNeedsRestart(rt memfloor.Runtime) bool { return memfloor.ShrinkNeedsRestart(rt) }

// applyFloors raises every memory recommendation below its container's runtime floor and
// returns the runtime notes of every container whose runtime is not generic (or whose
// settings could not be read). recs is not modified. It also returns the resolved
// runtime per container name, for the restart-only hold.
func applyFloors(pod *corev1.Pod, recs Recommendations, rp RuntimeParams) (Recommendations, []RuntimeNote, map[string]memfloor.Runtime) {
	if rp.Type == "" || rp.Type == memfloor.Generic {
		return recs, nil, nil
	}
	out := make(Recommendations, len(recs))
	for name, byRes := range recs {
		out[name] = byRes
	}
	var notes []RuntimeNote
	runtimes := map[string]memfloor.Runtime{}
	for _, ref := range LongRunning(&pod.Spec) {
		byRes, ok := recs[ref.Name]
		if !ok {
			continue
		}
		ctr := ref.Container(&pod.Spec)
		lim := int64(0)
		if q, ok := ctr.Resources.Limits[corev1.ResourceMemory]; ok {
			lim = q.Value()
		}
		f := memfloor.For(rp.Type, ctr, rp.Margin, lim)
		runtimes[ref.Name] = f.Runtime
		note := RuntimeNote{Container: ref.Name, Floor: f}
		if r, ok := byRes[corev1.ResourceMemory]; ok && f.Has {
			floor := Units(f.Bytes)
			if r.HasRequest && r.Request < floor {
				note.Raised = append(note.Raised, FloorRaise{Field: Request, From: r.Request, To: floor})
				r.Request = floor
			}
			if r.HasLimit && r.Limit < floor {
				note.Raised = append(note.Raised, FloorRaise{Field: Limit, From: r.Limit, To: floor})
				r.Limit = floor
			}
			copied := make(map[corev1.ResourceName]ResourceRecommendation, len(byRes))
			for k, v := range byRes {
				copied[k] = v
			}
			copied[corev1.ResourceMemory] = r
			out[ref.Name] = copied
		}
		if f.Runtime != memfloor.Generic || f.Note != "" {
			notes = append(notes, note)
		}
	}
	return out, notes, runtimes
}

// holdShrink reports whether memory of the named container may not shrink in place.
func (c *calculator) holdShrink(container string, res corev1.ResourceName) bool {
	return c.stepping == Stepped && res == corev1.ResourceMemory && MemoryShrinkNeedsRestart(c.runtimes[container])
}

// restartOnly lists the fields of a plan held by ReasonRestartOnly, for events and explain.
func (p Plan) restartOnly() []string {
	var out []string
	for _, cp := range p.Containers {
		for _, rp := range cp.Resources {
			for _, f := range [...]struct {
				field Field
				plan  FieldPlan
			}{{Limit, rp.Limit}, {Request, rp.Request}} {
				if f.plan.Reason == ReasonRestartOnly {
					out = append(out, fmt.Sprintf("container %s: %s %s %s held (recommended %s; shrinks take effect at restart)",
						cp.Name, rp.Resource, f.field, f.plan.Current.String(rp.Resource), f.plan.Recommended.String(rp.Resource)))
				}
			}
		}
	}
	return out
}

// RuntimeSummary renders the notes whose floor raised something, sorted, joined by "; "
// (the runtime-floor annotation); empty when none did.
func RuntimeSummary(notes []RuntimeNote) string {
	var parts []string
	for _, n := range notes {
		if len(n.Raised) > 0 {
			parts = append(parts, n.String())
		}
	}
	slices.Sort(parts)
	return strings.Join(parts, "; ")
}
