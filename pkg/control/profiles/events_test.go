package profiles

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/recommend"
)

func TestTransitions(t *testing.T) {
	cond := func(typ, status, reason, msg string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: metav1.ConditionStatus(status), Reason: reason, Message: msg}
	}
	recs := map[string]ballastv1.Recommendation{"cpu": {Request: "300m"}, "memory": {Request: "192Mi", Limit: "231Mi"}}
	accruing := ballastv1.WorkloadProfileStatus{ActivePods: 2,
		Conditions: []metav1.Condition{cond("Sufficient", "False", "Accruing", "app: cpu samples 120/250")}}
	sufficient := ballastv1.WorkloadProfileStatus{ActivePods: 2, MeetsThreshold: true,
		Containers: []ballastv1.ContainerProfile{{Name: "app", Recommendations: recs}},
		Conditions: []metav1.Condition{cond("Sufficient", "True", "ReadinessMet", "ok")}}
	bumped := *sufficient.DeepCopy()
	bumped.Containers[0].Recommendations["memory"] = ballastv1.Recommendation{Request: "600Mi", Limit: "600Mi",
		LimitBasis: recommend.BasisOOM + " to max(peak × 1.2, peak + 100Mi) = 600Mi"}
	// The request moves with the statistics; the OOM-raised limit stays.
	bumpedMoved := *bumped.DeepCopy()
	bumpedMoved.Containers[0].Recommendations["memory"] = ballastv1.Recommendation{Request: "610Mi", Limit: "600Mi",
		RequestBasis: "p75 610.00Mi", LimitBasis: bumped.Containers[0].Recommendations["memory"].LimitBasis}
	orphaned := *sufficient.DeepCopy()
	orphaned.ActivePods = 0
	orphaned.Conditions = append(orphaned.Conditions, cond("Orphaned", "True", "NoActiveWorkloads", ""))
	blind := *accruing.DeepCopy()
	blind.Conditions = append(blind.Conditions, cond("Ready", "False", "MissingSamples", "No samples in the latest collection cycle for: ephemeral-storage"))
	blind.Containers = []ballastv1.ContainerProfile{{Name: "app", Readiness: []ballastv1.ResourceReadiness{
		{Resource: "ephemeral-storage", SourceError: "x509: certificate signed by unknown authority"}}}}

	collecting := *accruing.DeepCopy()
	collecting.Conditions = append(collecting.Conditions, cond("Ready", "True", "SamplesCollected", ""))
	waiting := *accruing.DeepCopy()
	waiting.Conditions = append(waiting.Conditions, cond("Ready", "False", "MissingSamples", "No samples in the latest collection cycle for: cpu"))
	waiting.Containers = []ballastv1.ContainerProfile{{Name: "app", Readiness: []ballastv1.ResourceReadiness{
		{Resource: "cpu", SourceError: recommend.NoSamplesYet}}}}
	cases := map[string]struct {
		old, next ballastv1.WorkloadProfileStatus
		want      []string
	}{
		"nothing changes, nothing is recorded":                 {old: accruing, next: accruing},
		"becoming Sufficient":                                  {old: accruing, next: sufficient, want: []string{"Normal Sufficient Sufficient: recommends app: cpu 300m, mem 192Mi/231Mi"}},
		"falling back to Accruing":                             {old: sufficient, next: accruing, want: []string{"Warning Accruing Accruing again: app: cpu samples 120/250"}},
		"an OOM bump":                                          {old: sufficient, next: bumped, want: []string{"Warning OOMBump container app: an OOM kill raised memory to request 600Mi limit 600Mi"}},
		"the same OOM bump again is quiet":                     {old: bumped, next: bumped},
		"the request moving under the same OOM raise is quiet": {old: bumped, next: bumpedMoved},
		"orphaned": {old: sufficient, next: orphaned, want: []string{"Normal Orphaned no bound pods; history is kept until the orphan TTL runs out"}},
		"a source that cannot deliver": {old: collecting, next: blind, want: []string{"Warning SourceUnavailable " +
			"No samples in the latest collection cycle for: ephemeral-storage; app ephemeral-storage: x509: certificate signed by unknown authority"}},
		"a read error on a new profile": {old: accruing, next: blind, want: []string{"Warning SourceUnavailable " +
			"app ephemeral-storage: x509: certificate signed by unknown authority"}},
		"still unavailable is quiet":            {old: blind, next: blind},
		"a new profile waiting for its samples": {old: accruing, next: waiting},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			wp := &ballastv1.WorkloadProfile{Status: tc.old}
			var got []string
			for _, e := range transitions(wp, &tc.next) {
				got = append(got, e.Type+" "+e.Reason+" "+e.Message)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}
