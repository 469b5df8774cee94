package backfill

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
)

// The PromQL of a backfill. A profile's pods are selected through kube-state-metrics'
// kube_pod_labels (one series per pod, its labels as label_<sanitized name>) joined on
// namespace/pod with the cAdvisor series the kubelets expose, so pods that ran before
// Ballast was installed, in any namespace, count: the same pooling a profile does.

// LabelName is kube-state-metrics' name for pod label key k: "label_" and k with every
// character outside [a-zA-Z0-9_] replaced by "_".
func LabelName(k string) string {
	var b strings.Builder
	b.WriteString("label_")
	for _, r := range k {
		if r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

// podSelector is the kube_pod_labels selector for a profile's selectorLabels; a missing
// label (the --missing-- sentinel) is an empty value, as kube-state-metrics exports it.
// scope are further matchers (ScopeMatchers: the governing policy's selector).
func podSelector(selectorLabels map[string]string, scope ...string) string {
	keys := make([]string, 0, len(selectorLabels))
	for k := range selectorLabels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		v := selectorLabels[k]
		if v == ballastv1.MissingSentinel {
			v = ""
		}
		parts = append(parts, LabelName(k)+"="+strconv.Quote(v))
	}
	parts = append(parts, scope...)
	return "kube_pod_labels{" + strings.Join(parts, ",") + "}"
}

// containers selects the containers' own cgroups (not the pod's, "", nor the sandbox's, "POD").
const containers = `container!="",container!="POD"`

// CPUQuery is the per-container cpu usage rate (cores) of the profile's pods; scope are
// extra kube_pod_labels matchers (ScopeMatchers).
func CPUQuery(selectorLabels map[string]string, rateWindow time.Duration, scope ...string) string {
	return fmt.Sprintf(`sum by (namespace, pod, container) (rate(container_cpu_usage_seconds_total{%s}[%ds])) * on (namespace, pod) group_left() max by (namespace, pod) (%s)`,
		containers, int64(rateWindow/time.Second), podSelector(selectorLabels, scope...))
}

// MemoryQuery is the per-container working set (bytes) of the profile's pods; scope are
// extra kube_pod_labels matchers (ScopeMatchers).
func MemoryQuery(selectorLabels map[string]string, scope ...string) string {
	return fmt.Sprintf(`max by (namespace, pod, container) (container_memory_working_set_bytes{%s}) * on (namespace, pod) group_left() max by (namespace, pod) (%s)`,
		containers, podSelector(selectorLabels, scope...))
}

// ScopeMatchers are the kube_pod_labels matchers that keep only the historical pods the
// governing policy's selector matches: its namespaces (include, exclude; a ResourcePolicy
// only its own namespace, policyNamespace) and its labelSelector, evaluated at each
// instant on the labels kube-state-metrics exported for the pod then. Its kinds and
// annotations have no kube_pod_labels equivalent and are not applied. A label that is not
// in kube-state-metrics' allowlist looks absent: matchLabels and In on it select nothing,
// NotIn and DoesNotExist select every pod.
func ScopeMatchers(sel ballastv1.PolicySelector, policyNamespace string) ([]string, error) {
	var m []string
	if policyNamespace != "" {
		m = append(m, "namespace="+strconv.Quote(policyNamespace))
	}
	for _, ns := range []struct {
		op       string
		patterns []string
	}{{"=~", sel.Namespaces.Include}, {"!~", sel.Namespaces.Exclude}} {
		if len(ns.patterns) == 0 {
			continue
		}
		alts := make([]string, 0, len(ns.patterns))
		for _, p := range ns.patterns {
			re, err := patternRegex(p)
			if err != nil {
				return nil, fmt.Errorf("namespace pattern %q: %w", p, err)
			}
			alts = append(alts, "(?:"+re+")")
		}
		m = append(m, "namespace"+ns.op+strconv.Quote(strings.Join(alts, "|")))
	}
	if ls := sel.LabelSelector; ls != nil {
		keys := make([]string, 0, len(ls.MatchLabels))
		for k := range ls.MatchLabels {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			m = append(m, LabelName(k)+"="+strconv.Quote(ls.MatchLabels[k]))
		}
		for _, e := range ls.MatchExpressions {
			alts := make([]string, len(e.Values))
			for i, v := range e.Values {
				alts[i] = regexp.QuoteMeta(v)
			}
			values := strconv.Quote(strings.Join(alts, "|"))
			switch e.Operator {
			case metav1.LabelSelectorOpIn:
				m = append(m, LabelName(e.Key)+"=~"+values)
			case metav1.LabelSelectorOpNotIn:
				m = append(m, LabelName(e.Key)+"!~"+values)
			case metav1.LabelSelectorOpExists:
				m = append(m, LabelName(e.Key)+`!=""`)
			case metav1.LabelSelectorOpDoesNotExist:
				m = append(m, LabelName(e.Key)+`=""`)
			default:
				return nil, fmt.Errorf("label selector operator %q", e.Operator)
			}
		}
	}
	return m, nil
}

// patternRegex is a namespace pattern (exact, or a full-string RE2 regex written /…/) as a
// PromQL regex (also RE2, also anchored at both ends).
func patternRegex(p string) (string, error) {
	if len(p) < 2 || p[0] != '/' || p[len(p)-1] != '/' {
		return regexp.QuoteMeta(p), nil
	}
	inner := p[1 : len(p)-1]
	if _, err := regexp.Compile(inner); err != nil {
		return "", err
	}
	return inner, nil
}
