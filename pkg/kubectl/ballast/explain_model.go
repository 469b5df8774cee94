package ballast

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/policy"
)

// explanation is the structured form of explain (-o json|yaml); the text form renders it.
type explanation struct {
	Target    string `json:"target"`
	Namespace string `json:"namespace"`
	Mode      string `json:"mode"`
	// Problem stops the explanation early (no BallastConfig, not enrolled).
	Problem  string        `json:"problem,omitempty"`
	Workload workloadInfo  `json:"workload"`
	Identity []tupleEntry  `json:"identity,omitempty"`
	Profile  profileInfo   `json:"profile"`
	Policy   policyExplain `json:"policy"`
	// Containers: readiness and recommendations per long-running container.
	Containers []containerExplain `json:"containers,omitempty"`
	Admission  admissionExplain   `json:"admission"`
	// StartupBoost is the policy's startup boost, replayed and as the pod carries it.
	StartupBoost *boostExplain `json:"startupBoost,omitempty"`
	// Annotations are the Ballast annotations on the pod.
	Annotations map[string]string `json:"annotations,omitempty"`
	Resize      resizeExplain     `json:"resize"`
}

type workloadInfo struct {
	Kind           string `json:"kind"`
	Name           string `json:"name"`
	ControllerKind string `json:"controllerKind,omitempty"`
}

type tupleEntry struct {
	Key     string `json:"key"`
	Value   string `json:"value"`
	Missing bool   `json:"missing,omitempty"`
}

type profileInfo struct {
	Name            string `json:"name"`
	MeasurementHash string `json:"measurementHash"`
	Exists          bool   `json:"exists"`
	State           string `json:"state,omitempty"`
	ActivePods      int32  `json:"activePods,omitempty"`
	ActiveWorkloads int32  `json:"activeWorkloads,omitempty"`
	// StampedRef is the pod's profile-ref annotation when it differs from Name.
	StampedRef string `json:"stampedRef,omitempty"`
	// Fallback: samples from metrics.k8s.io and pods without a live node agent.
	Fallback *fallbackInfo `json:"fallback,omitempty"`
}

type policyExplain struct {
	Winner     string          `json:"winner,omitempty"` // "ClusterResourcePolicy default"
	RefValue   string          `json:"policyRef,omitempty"`
	Why        string          `json:"why"`
	Candidates []candidateInfo `json:"candidates,omitempty"`
}

type candidateInfo struct {
	Policy   string `json:"policy"`
	Priority int32  `json:"priority"`
	Outcome  string `json:"outcome"` // won, lost, no-match, out-of-scope, invalid
	Detail   string `json:"detail,omitempty"`
}

type containerExplain struct {
	Name      string            `json:"name"`
	Resources []resourceExplain `json:"resources,omitempty"`
	// NoData: the profile has no statistics for this container name.
	NoData bool `json:"noData,omitempty"`
}

type resourceExplain struct {
	Resource string `json:"resource"`
	Samples  int64  `json:"samples"`
	TimeSpan string `json:"timeSpan"`
	Mean     string `json:"mean,omitempty"`
	CV       string `json:"cv,omitempty"`
	Ready    bool   `json:"ready"`
	// Readiness explains the verdict against the policy's gates.
	Readiness       string       `json:"readiness"`
	Recommendations []recExplain `json:"recommendations,omitempty"`
}

type recExplain struct {
	Field       string `json:"field"`
	Aggregation string `json:"aggregation"`
	Statistic   string `json:"statistic"`
	Headroom    string `json:"headroom"`
	Computed    string `json:"computed"`
	Recorded    string `json:"recorded,omitempty"`
	Note        string `json:"note,omitempty"`
}

type admissionExplain struct {
	Sized bool `json:"sized"`
	// Reason says why admission does not size (mode, profile state, no policy).
	Reason       string            `json:"reason,omitempty"`
	FromTemplate bool              `json:"fromTemplate"`
	QoSBefore    string            `json:"qosBefore,omitempty"`
	QoSAfter     string            `json:"qosAfter,omitempty"`
	StepDown     bool              `json:"stepDown,omitempty"`
	Fields       []fieldChange     `json:"fields,omitempty"`
	Pinned       []string          `json:"pinned,omitempty"`
	Annotations  map[string]string `json:"annotations,omitempty"`
	// HPA is the behaviors.hpa guard: the HPA utilization metrics that shaped the plan.
	HPA []hpaGuardLine `json:"hpa,omitempty"`
	// HPAError says the HPAs could not be read (the guard is then not shown).
	HPAError string `json:"hpaError,omitempty"`
	// Runtime is the policy's runtime memory profile and what it decided per container.
	Runtime *runtimeExplain `json:"runtime,omitempty"`
	// PodLevel is what admission does with pod-level spec.resources (nil when the pod
	// has none).
	PodLevel *podLevelExplain `json:"podLevel,omitempty"`
}

// hpaGuardLine is one HPA utilization metric on the pod's owner and what behaviors.hpa does.
type hpaGuardLine struct {
	HPA      string `json:"hpa"`
	Metric   string `json:"metric"`
	Resource string `json:"resource"`
	// Container is empty for a metric over every container.
	Container string `json:"container,omitempty"`
	// Action is preserve (request left as written), scale-target (the HPA's target follows the
	// new request; Utilization is what it would become) or ignore.
	Action      string `json:"action"`
	Utilization int32  `json:"newUtilization,omitempty"`
	Exact       bool   `json:"exact,omitempty"`
}

// runtimeExplain is the policy's spec.runtime and its per-container floors.
type runtimeExplain struct {
	Type       string             `json:"type"`
	Margin     string             `json:"margin"`
	Containers []runtimeContainer `json:"containers,omitempty"`
	// RestartOnly is true when memory shrinks of these containers are held in place.
	RestartOnly bool `json:"restartOnly,omitempty"`
}

type runtimeContainer struct {
	Container string `json:"container"`
	Runtime   string `json:"runtime"`
	Floor     string `json:"floor,omitempty"`
	Source    string `json:"source,omitempty"`
	Why       string `json:"why,omitempty"`
	Note      string `json:"note,omitempty"`
}

type podLevelExplain struct {
	Mode    string   `json:"mode"`
	Current string   `json:"current"`
	Written string   `json:"written,omitempty"`
	Notes   []string `json:"notes,omitempty"`
	Held    string   `json:"held,omitempty"`
}

type fieldChange struct {
	Container   string `json:"container"`
	Resource    string `json:"resource"`
	Field       string `json:"field"`
	Current     string `json:"current"`
	Recommended string `json:"recommended,omitempty"`
	Written     string `json:"written"`
	Changed     bool   `json:"changed"`
	Clamped     bool   `json:"clamped,omitempty"`
	Bound       string `json:"bound,omitempty"`
	StepDown    bool   `json:"stepDown,omitempty"`
	Pinned      bool   `json:"pinned,omitempty"`
	// Guards name what shaped the written value besides the recommendation: a runtime
	// floor, an allowed-range cap, a LimitRange, pod-level resources, a quota.
	Guards []string `json:"guards,omitempty"`
}

type resizeExplain struct {
	State          string `json:"state,omitempty"`
	StateSince     string `json:"stateSince,omitempty"`
	LastResize     string `json:"lastResize,omitempty"`
	Blocked        string `json:"blocked,omitempty"`
	BlockedAt      string `json:"blockedAt,omitempty"`
	DeferredPods   int32  `json:"profileDeferredPods,omitempty"`
	InfeasiblePods int32  `json:"profileInfeasiblePods,omitempty"`
	// Budget is the disruption budget's guard for the pod's workload (explain_budget.go).
	Budget *budgetExplain `json:"budget,omitempty"`
	Events []eventRecord  `json:"events,omitempty"`
}

type eventRecord struct {
	Reason  string `json:"reason"`
	Type    string `json:"type"`
	Count   int32  `json:"count"`
	Message string `json:"message"`
}

func explain(ctx context.Context, c client.Client, s *subject) (*explanation, error) {
	ex := &explanation{Target: s.Target, Namespace: s.Namespace, Mode: s.mode(),
		Workload: workloadInfo{Kind: s.Facts.Kind, Name: s.Workload, ControllerKind: s.Facts.ControllerKind}}
	if s.Pod != nil {
		ex.Annotations = ballastAnnotations(s.Pod.Annotations)
	}
	if !ballastv1.ValidMode(ex.Mode) {
		if ex.Mode == "" {
			ex.Problem = "not enrolled: no " + ballastv1.ModeLabel + " label, so Ballast neither measures nor sizes it"
		} else {
			ex.Problem = fmt.Sprintf("not enrolled: mode %q is not measure, apply or resize (the webhook denies such pods)", ex.Mode)
		}
	}
	idLabels, err := identityLabels(ctx, c)
	if errors.Is(err, errNoConfig) {
		ex.Problem = err.Error()
		return ex, nil
	} else if err != nil {
		return nil, err
	}
	infos, err := policies(ctx, c, s.Namespace)
	if err != nil {
		return nil, err
	}
	b := bindFacts(s.Facts, s.Workload, idLabels, compiledOf(infos))
	for _, k := range idLabels {
		ex.Identity = append(ex.Identity, tupleEntry{Key: k, Value: b.TupleLabels[k], Missing: b.SelectorLabels[k] == ballastv1.MissingSentinel})
	}
	ex.Policy = explainPolicy(infos, b.Policy, s.Facts)
	ex.Profile = profileInfo{Name: b.ProfileName, MeasurementHash: b.MeasurementHash}
	if s.Pod != nil {
		if ref := s.Pod.Annotations[ballastv1.ProfileRefAnnotation]; ref != "" && ref != b.ProfileName {
			ex.Profile.StampedRef = ref
		}
	}
	wp := &ballastv1.WorkloadProfile{}
	switch err := c.Get(ctx, client.ObjectKey{Name: b.ProfileName}, wp); {
	case apierrors.IsNotFound(err):
		wp = nil
	case err != nil:
		return nil, fmt.Errorf("reading WorkloadProfile %s: %w", b.ProfileName, err)
	default:
		ex.Profile.Exists, ex.Profile.State = true, wp.Status.State
		ex.Profile.ActivePods, ex.Profile.ActiveWorkloads = wp.Status.ActivePods, wp.Status.ActiveWorkloads
		ex.Profile.Fallback = fallbackOf(wp)
		ex.Resize.DeferredPods, ex.Resize.InfeasiblePods = wp.Status.Resize.DeferredPods, wp.Status.Resize.InfeasiblePods
	}
	// Statistics are computed under the policy the profile references (SPEC §3.4).
	statsPolicy := b.Policy
	if wp != nil && wp.Status.PolicyRef != nil {
		statsPolicy = findPolicy(infos, *wp.Status.PolicyRef)
	}
	pod, fromTemplate := s.admissionPod()
	ex.Containers = explainContainers(pod, wp, statsPolicy)
	admMode := ex.Mode // the webhook saw the template's mode, which may differ from the pod's now
	if fromTemplate {
		admMode = pod.Labels[ballastv1.ModeLabel]
	}
	targets, herr := hpaTargets(ctx, c, s, pod)
	ex.Admission = explainAdmission(pod, fromTemplate, admMode, wp, b.Policy, targets)
	if herr != nil {
		ex.Admission.HPAError = herr.Error()
	}
	ex.StartupBoost = explainBoost(ctx, c, pod, s.Pod, admMode, wp, b.Policy, time.Now())
	if s.Pod != nil {
		ex.Resize = explainResize(ctx, c, s.Pod, ex.Resize)
		ex.Resize.Budget = explainBudget(s.Pod, wp, statsPolicy, time.Now())
	}
	return ex, nil
}

func ballastAnnotations(a map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range a {
		if strings.HasPrefix(k, ballastv1.Prefix) {
			out[k] = v
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func findPolicy(infos []policyInfo, ref ballastv1.PolicyRef) *policy.Compiled {
	for _, p := range infos {
		if p.Kind == ref.Kind && p.Namespace == ref.Namespace && p.Name == ref.Name {
			return p.Compiled
		}
	}
	return nil
}

// explainPolicy says which policy won and why each other one did not.
func explainPolicy(infos []policyInfo, win *policy.Compiled, f policy.PodFacts) policyExplain {
	var pe policyExplain
	if win == nil {
		pe.Why = "no valid policy's selector matches this pod, so it has no policy: it is measured but never sized"
	} else {
		pe.Winner = win.Kind + " " + refName(win.Namespace, win.Name)
		pe.RefValue = win.RefAnnotation()
	}
	matched := 0
	for _, p := range infos {
		ci := candidateInfo{Policy: p.ref(), Priority: p.Priority}
		switch {
		case p.Compiled == nil:
			ci.Outcome, ci.Detail = "invalid", "skipped: "+p.Invalid
		case !p.Compiled.InScope(f.Namespace):
			ci.Outcome, ci.Detail = "out-of-scope", "a ResourcePolicy governs only its own namespace"
		case !p.Compiled.Matches(f):
			ci.Outcome, ci.Detail = "no-match", "selector does not match: "+selectorText(p.Compiled.Spec.Selector)
		case p.Compiled == win:
			ci.Outcome = "won"
			matched++
		default:
			ci.Outcome, ci.Detail = "lost", lostBecause(p.Compiled, win)
			matched++
		}
		pe.Candidates = append(pe.Candidates, ci)
	}
	if win != nil {
		switch {
		case matched == 1:
			pe.Why = "it is the only valid policy whose selector matches this pod"
		case win.Kind == ballastv1.KindResourcePolicy:
			pe.Why = fmt.Sprintf("a ResourcePolicy in the pod's namespace beats every ClusterResourcePolicy; among the matching ResourcePolicies it has the highest priority (%d), ties going to the smaller name", win.Spec.Priority)
		default:
			pe.Why = fmt.Sprintf("no ResourcePolicy matches; among the matching ClusterResourcePolicies it has the highest priority (%d), ties going to the smaller name", win.Spec.Priority)
		}
	}
	return pe
}

func refName(ns, name string) string {
	if ns == "" {
		return name
	}
	return ns + "/" + name
}

func lostBecause(p, win *policy.Compiled) string {
	switch {
	case win.Kind == ballastv1.KindResourcePolicy && p.Kind == ballastv1.KindClusterResourcePolicy:
		return "matches, but any ResourcePolicy beats a ClusterResourcePolicy"
	case p.Spec.Priority < win.Spec.Priority:
		return fmt.Sprintf("matches, but its priority %d is lower than %d", p.Spec.Priority, win.Spec.Priority)
	default:
		return fmt.Sprintf("matches with the same priority %d, but %q sorts after %q", p.Spec.Priority, p.Name, win.Name)
	}
}

func selectorText(sel ballastv1.PolicySelector) string {
	var parts []string
	if len(sel.Kinds) > 0 {
		parts = append(parts, "kinds "+strings.Join(sel.Kinds, ","))
	}
	if len(sel.Namespaces.Include) > 0 {
		parts = append(parts, "namespaces "+strings.Join(sel.Namespaces.Include, ","))
	}
	if len(sel.Namespaces.Exclude) > 0 {
		parts = append(parts, "not namespaces "+strings.Join(sel.Namespaces.Exclude, ","))
	}
	if len(sel.Annotations) > 0 {
		keys := make([]string, 0, len(sel.Annotations))
		for k, v := range sel.Annotations {
			keys = append(keys, k+"="+v)
		}
		sort.Strings(keys)
		parts = append(parts, "annotations "+strings.Join(keys, ","))
	}
	if sel.LabelSelector != nil {
		parts = append(parts, "labels "+labelSelectorText(sel.LabelSelector))
	}
	return strings.Join(parts, "; ")
}

// durationOrZero parses a timeSpan as displayed ("24h5m0s").
func durationOrZero(s string) time.Duration {
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0
	}
	return d
}

func parseFloat(s string) float64 {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0
	}
	return f
}
