package policy

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestMatches(t *testing.T) {
	deploymentPod := PodFacts{Namespace: "shop", Kind: "Deployment", ControllerKind: "ReplicaSet",
		Labels: pairs("app", "web", "tier", "frontend"), Annotations: pairs("team", "payments")}
	cronPod := PodFacts{Namespace: "batch-jobs", Kind: "CronJob", ControllerKind: "Job"}
	barePod := PodFacts{Namespace: "shop", Kind: "Pod"}
	orphanRSPod := PodFacts{Namespace: "shop", Kind: "ReplicaSet", ControllerKind: "ReplicaSet"}

	cases := map[string]struct {
		policy *policyBuilder
		pod    PodFacts
		want   bool
	}{
		"an empty selector matches every pod":                 {clusterPolicy("p"), barePod, true},
		"kinds match the top-level Deployment":                {clusterPolicy("p").Kinds("Deployment"), deploymentPod, true},
		"kinds match the direct ReplicaSet for compatibility": {clusterPolicy("p").Kinds("ReplicaSet"), deploymentPod, true},
		"kinds match the top-level CronJob":                   {clusterPolicy("p").Kinds("CronJob"), cronPod, true},
		"kinds match the direct Job for compatibility":        {clusterPolicy("p").Kinds("Job"), cronPod, true},
		"kinds that name neither kind do not match":           {clusterPolicy("p").Kinds("StatefulSet", "DaemonSet"), deploymentPod, false},
		"a bare pod is kind Pod":                              {clusterPolicy("p").Kinds("Pod"), barePod, true},
		"a bare pod is not a Deployment":                      {clusterPolicy("p").Kinds("Deployment"), barePod, false},
		"a ReplicaSet without owner is the top level":         {clusterPolicy("p").Kinds("ReplicaSet"), orphanRSPod, true},
		"kinds are case-sensitive":                            {clusterPolicy("p").Kinds("deployment"), deploymentPod, false},
		"namespace include by exact name":                     {clusterPolicy("p").Include("dev", "shop"), deploymentPod, true},
		"namespace include by regex":                          {clusterPolicy("p").Include("/sh.p/"), deploymentPod, true},
		"namespace include regex must match the whole name":   {clusterPolicy("p").Include("/sh/"), deploymentPod, false},
		"namespace not included":                              {clusterPolicy("p").Include("/batch-.*/"), deploymentPod, false},
		"namespace excluded by regex":                         {clusterPolicy("p").Exclude("/kube-.*|shop/"), deploymentPod, false},
		"exclusion of another namespace":                      {clusterPolicy("p").Exclude("kube-system"), deploymentPod, true},
		"included and excluded is excluded":                   {clusterPolicy("p").Include("/.*/").Exclude("shop"), deploymentPod, false},
		"annotation value matches exactly":                    {clusterPolicy("p").Annotations("team", "payments"), deploymentPod, true},
		"annotation value matches a regex":                    {clusterPolicy("p").Annotations("team", "/pay.*/"), deploymentPod, true},
		"annotation value differs":                            {clusterPolicy("p").Annotations("team", "search"), deploymentPod, false},
		"every annotation key must exist":                     {clusterPolicy("p").Annotations("team", "payments", "cost-center", "/.*/"), deploymentPod, false},
		"an absent annotation does not match an empty value":  {clusterPolicy("p").Annotations("owner", ""), deploymentPod, false},
		"labelSelector matchLabels": {
			clusterPolicy("p").Labels(&metav1.LabelSelector{MatchLabels: pairs("app", "web")}), deploymentPod, true,
		},
		"labelSelector matchExpressions NotIn": {
			clusterPolicy("p").Labels(&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "tier", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"frontend"}},
			}}), deploymentPod, false,
		},
		"an empty labelSelector matches every pod": {
			clusterPolicy("p").Labels(&metav1.LabelSelector{}), barePod, true,
		},
		"all parts must match": {
			clusterPolicy("p").Kinds("Deployment").Include("shop").Annotations("team", "payments").
				Labels(&metav1.LabelSelector{MatchLabels: pairs("app", "api")}), deploymentPod, false,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := tc.policy.Compile(t).Matches(tc.pod); got != tc.want {
				t.Errorf("Matches = %v, want %v", got, tc.want)
			}
		})
	}
}
