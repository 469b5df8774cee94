package sizing

import (
	"fmt"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime/schema"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
)

// ReasonHPAConflict is the event reason (and explain guard) of a resource whose request
// Ballast leaves alone, or whose HPA target it rescales, because a HorizontalPodAutoscaler
// scales the pod's owner on that resource's utilization (behaviors.hpa).
const ReasonHPAConflict = "HPAConflict"

// Owner is one object of a pod's owner chain that an HPA's scaleTargetRef can name: the
// pod's direct controller (a ReplicaSet, a StatefulSet) and its top-level workload (a
// Deployment).
type Owner struct {
	Group, Kind, Name string
}

// HPATarget is one utilization metric of an HPA that scales the pod's owner: the HPA
// reads usage ÷ request of Resource, summed over every container of the pod (Container
// empty, metric type Resource) or of one container (metric type ContainerResource), and
// scales to keep it at Utilization percent.
type HPATarget struct {
	HPA         string // the HPA's name (same namespace as the pod)
	Container   string // "" for a Resource metric: every container
	Resource    corev1.ResourceName
	Utilization int32 // spec.metrics[i].…target.averageUtilization, percent
	// Index is the metric's position in the HPA's spec.metrics, for a patch.
	Index int
}

// Metric renders the metric for events and explain: "cpu utilization 60%",
// "memory utilization 80% of container app".
func (t HPATarget) Metric() string {
	s := fmt.Sprintf("%s utilization %d%%", t.Resource, t.Utilization)
	if t.Container != "" {
		s += " of container " + t.Container
	}
	return s
}

// covers reports whether the metric reads container's request of res.
func (t HPATarget) covers(container string, res corev1.ResourceName) bool {
	return t.Resource == res && (t.Container == "" || t.Container == container)
}

// appsKinds are the top-level workload kinds of group apps an HPA can scale.
var appsKinds = map[string]bool{"Deployment": true, "StatefulSet": true, "ReplicaSet": true}

// OwnersOf is the pod's owner chain as an HPA's scaleTargetRef can name it: its controller
// reference (a ReplicaSet or StatefulSet) and its top-level workload of kind topKind/topName
// (a Deployment, from the owner walk of SPEC §3.1).
func OwnersOf(pod *corev1.Pod, topKind, topName string) []Owner {
	var out []Owner
	for _, r := range pod.OwnerReferences {
		if r.Controller == nil || !*r.Controller {
			continue
		}
		if gv, err := schema.ParseGroupVersion(r.APIVersion); err == nil {
			out = append(out, Owner{Group: gv.Group, Kind: r.Kind, Name: r.Name})
		}
	}
	if appsKinds[topKind] {
		out = append(out, Owner{Group: "apps", Kind: topKind, Name: topName})
	}
	return out
}

// HPATargets returns the utilization metrics of the HPAs whose scaleTargetRef names one of
// owners, in HPA-name then metric order. Metrics on absolute values (averageValue, value),
// on pods, objects or external sources are not read: they do not move when a request
// does. An HPA naming another object, or a scaleTargetRef whose apiVersion does not parse,
// is skipped.
func HPATargets(hpas []autoscalingv2.HorizontalPodAutoscaler, owners []Owner) []HPATarget {
	var out []HPATarget
	for i := range hpas {
		h := &hpas[i]
		if !targets(h.Spec.ScaleTargetRef, owners) {
			continue
		}
		for j, m := range h.Spec.Metrics {
			var res corev1.ResourceName
			var container string
			var target autoscalingv2.MetricTarget
			switch {
			case m.Type == autoscalingv2.ResourceMetricSourceType && m.Resource != nil:
				res, target = m.Resource.Name, m.Resource.Target
			case m.Type == autoscalingv2.ContainerResourceMetricSourceType && m.ContainerResource != nil:
				res, target, container = m.ContainerResource.Name, m.ContainerResource.Target, m.ContainerResource.Container
			default:
				continue
			}
			if target.Type != autoscalingv2.UtilizationMetricType || target.AverageUtilization == nil {
				continue
			}
			out = append(out, HPATarget{HPA: h.Name, Container: container, Resource: res,
				Utilization: *target.AverageUtilization, Index: j})
		}
	}
	slices.SortStableFunc(out, func(a, b HPATarget) int { return strings.Compare(a.HPA, b.HPA) })
	return out
}

// targets reports whether ref names one of owners (kind, name, and the API group of its
// apiVersion; the version is not compared).
func targets(ref autoscalingv2.CrossVersionObjectReference, owners []Owner) bool {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return false
	}
	for _, o := range owners {
		if o.Kind == ref.Kind && o.Name == ref.Name && o.Group == gv.Group {
			return true
		}
	}
	return false
}

// HPAGuard is the behaviors.hpa decision for one pod.
type HPAGuard struct {
	// Mode is behaviors.hpa.
	Mode string
	// Preserved are the metrics whose requests the plan leaves alone (mode preserve), in
	// HPATargets order.
	Preserved []HPATarget
	// Rescaled are the metrics whose HPA target follows the new request (scale-target).
	Rescaled []HPATarget
	// Targets are every utilization metric of the owner's HPAs the guard applies to (none
	// under ignore), whether or not a recommendation touched it.
	Targets []HPATarget
}

// ScalesOn reports whether an HPA the guard applies to reads r's utilization.
func (g HPAGuard) ScalesOn(r corev1.ResourceName) bool {
	return slices.ContainsFunc(g.Targets, func(t HPATarget) bool { return t.Resource == r })
}

// GuardHPA applies behaviors.hpa to recs. Under preserve, every (container, resource) an
// HPA utilization metric reads is removed from the recommendations: its request and limit
// stay as written, so the HPA's scale point does not move; the other resources are sized.
// Under scale-target nothing is removed and the metrics are returned in Rescaled for the
// caller to patch (ScaleTargetUtilization). Under ignore (or with no targets) recs is
// returned as is. recs is not modified.
func GuardHPA(mode string, targets []HPATarget, recs Recommendations) (Recommendations, HPAGuard) {
	g := HPAGuard{Mode: mode}
	if len(targets) == 0 || mode == ballastv1.HPAIgnore {
		return recs, g
	}
	g.Targets = targets
	if mode == ballastv1.HPAScaleTarget {
		g.Rescaled = targets
		return recs, g
	}
	out := make(Recommendations, len(recs))
	for ctr, byRes := range recs {
		kept := make(map[corev1.ResourceName]ResourceRecommendation, len(byRes))
		for res, r := range byRes {
			if !slices.ContainsFunc(targets, func(t HPATarget) bool { return t.covers(ctr, res) }) {
				kept[res] = r
			}
		}
		out[ctr] = kept
	}
	for _, t := range targets {
		if slices.ContainsFunc(recs.containers(), func(c string) bool { return t.covers(c, t.Resource) && recs.has(c, t.Resource) }) {
			g.Preserved = append(g.Preserved, t)
		}
	}
	return out, g
}

func (r Recommendations) containers() []string {
	out := make([]string, 0, len(r))
	for c := range r {
		out = append(out, c)
	}
	slices.Sort(out)
	return out
}

func (r Recommendations) has(container string, res corev1.ResourceName) bool {
	_, ok := r[container][res]
	return ok
}

// PreservedAnnotationValue renders the preserved-by-hpa annotation: the preserved
// resources with their HPA, sorted, "cpu (hpa web, cpu utilization 60%)" joined by "; ".
// Empty when nothing is preserved.
func (g HPAGuard) PreservedAnnotationValue() string {
	parts := make([]string, 0, len(g.Preserved))
	for _, t := range g.Preserved {
		what := string(t.Resource)
		if t.Container != "" {
			what = t.Container + "/" + what
		}
		parts = append(parts, fmt.Sprintf("%s (hpa %s, %s)", what, t.HPA, t.Metric()))
	}
	slices.Sort(parts)
	return strings.Join(slices.Compact(parts), "; ")
}

// RequestSum is the sum of res requests the metric t reads: over every long-running
// container of pod (a Resource metric) or of t.Container, before and after changes. ok is
// false when a container read has no request of res (the HPA cannot compute utilization
// then, so there is nothing to keep constant).
func RequestSum(pod *corev1.Pod, changes []ContainerChanges, t HPATarget) (before, after Units, ok bool) {
	ok = true
	for _, ref := range LongRunning(&pod.Spec) {
		if t.Container != "" && ref.Name != t.Container {
			continue
		}
		ctr := ref.Container(&pod.Spec)
		q, has := ctr.Resources.Requests[t.Resource]
		if !has {
			ok = false
			continue
		}
		b := UnitsOf(t.Resource, q)
		a := b
		for _, ch := range changes {
			if ch.Name == ref.Name {
				if nq, w := ch.Requests[t.Resource]; w {
					a = UnitsOf(t.Resource, nq)
				}
			}
		}
		before += b
		after += a
	}
	if before <= 0 || after <= 0 {
		ok = false
	}
	return before, after, ok
}

// HPABase is what an HPA metric's utilization was set against before Ballast first
// rescaled it: the author's averageUtilization and the request sum it applied to. Ballast
// keeps it in an annotation on the HPA so that every later rescale starts from the
// author's absolute target, never from its own previous answer. Set is the utilization
// Ballast last wrote (0: none yet); a target that differs from it was changed by someone
// else, and that change becomes the new base (CurrentBase).
type HPABase struct {
	Utilization int32
	Request     Units
	Set         int32
}

// CurrentBase returns the base a rescale starts from: the recorded one (ok), unless the
// HPA's target is no longer what Ballast set, in which case the author's new target at the
// pod's current request sum.
func CurrentBase(recorded HPABase, ok bool, current int32, request Units) HPABase {
	if !ok || (recorded.Set != 0 && recorded.Set != current) {
		return HPABase{Utilization: current, Request: request}
	}
	return recorded
}

// MinHPAUtilization is the smallest averageUtilization the API server accepts.
const MinHPAUtilization = 1

// ScaleTargetUtilization returns the averageUtilization that keeps base's absolute target
// (base.Request × base.Utilization) at request: ceil(base.Utilization × base.Request ÷
// request), at least MinHPAUtilization and at most MaxInt32. It rounds up, never to the
// nearest: a target rounded down by a fraction of a percent can tip ceil(load ÷ target) to
// one more replica, less usage per pod, and a smaller recommendation next release (the
// replica feedback the guard exists to stop; TestHPAReplicaFeedback in pkg/recommend).
// exact is false when the answer is rounded or clamped, i.e. request × utilization differs
// from the base's product; the caller says so.
func ScaleTargetUtilization(base HPABase, request Units) (util int32, exact bool) {
	if request <= 0 || base.Request <= 0 || base.Utilization <= 0 {
		return base.Utilization, false
	}
	num := new(big.Int).Mul(big.NewInt(int64(base.Utilization)), big.NewInt(int64(base.Request)))
	// Ceiling of num ÷ request (both positive).
	den := big.NewInt(int64(request))
	q := new(big.Int).Add(num, new(big.Int).Sub(den, big.NewInt(1)))
	q.Quo(q, den)
	switch {
	case q.Cmp(big.NewInt(MinHPAUtilization)) < 0:
		return MinHPAUtilization, false
	case !q.IsInt64() || q.Int64() > math.MaxInt32:
		return math.MaxInt32, false
	}
	util = int32(q.Int64())
	exact = new(big.Int).Mul(big.NewInt(int64(util)), big.NewInt(int64(request))).Cmp(num) == 0
	return util, exact
}

// HPABaseAnnotation is the annotation key on an HPA holding the base of its metric at
// index (FormatHPABase): "ballast.tightlinesoftware.com/hpa-base-0".
func HPABaseAnnotation(index int) string {
	return ballastv1.HPABaseAnnotationPrefix + strconv.Itoa(index)
}

// FormatHPABase renders base for its annotation: "60% of 500m" (cpu) or "80% of 256Mi",
// followed by ", set 81%" once Ballast wrote a target.
func FormatHPABase(res corev1.ResourceName, b HPABase) string {
	q := b.Request.Quantity(res)
	s := fmt.Sprintf("%d%% of %s", b.Utilization, q.String())
	if b.Set > 0 {
		s += fmt.Sprintf(", set %d%%", b.Set)
	}
	return s
}

// ParseHPABase parses FormatHPABase's rendering.
func ParseHPABase(res corev1.ResourceName, s string) (HPABase, error) {
	body, set, hasSet := strings.Cut(s, ", set ")
	u, req, found := strings.Cut(body, "% of ")
	if !found {
		return HPABase{}, fmt.Errorf("hpa base %q: want \"<utilization>%% of <request>[, set <utilization>%%]\"", s)
	}
	n, err := parsePercent(u)
	if err != nil {
		return HPABase{}, fmt.Errorf("hpa base %q: %w", s, err)
	}
	q, err := resource.ParseQuantity(req)
	if err != nil {
		return HPABase{}, fmt.Errorf("hpa base %q: %w", s, err)
	}
	units := UnitsOf(res, q)
	if units <= 0 {
		return HPABase{}, fmt.Errorf("hpa base %q: request must be > 0", s)
	}
	b := HPABase{Utilization: n, Request: units}
	if hasSet {
		p, ok := strings.CutSuffix(set, "%")
		if !ok {
			return HPABase{}, fmt.Errorf("hpa base %q: set must end in %%", s)
		}
		if b.Set, err = parsePercent(p); err != nil {
			return HPABase{}, fmt.Errorf("hpa base %q: set: %w", s, err)
		}
	}
	return b, nil
}

// parsePercent parses a utilization: an integer in [1, MaxInt32].
func parsePercent(s string) (int32, error) {
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil || n < MinHPAUtilization {
		return 0, fmt.Errorf("utilization %q must be an integer ≥ 1", s)
	}
	return int32(n), nil
}
