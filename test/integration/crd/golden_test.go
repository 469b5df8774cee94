package crd

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
)

var update = flag.Bool("update", false, "rewrite the golden files of kubectl output")

// volatile are the parts of kubectl output that differ per run: ages, timestamps, UIDs and
// resource versions.
var volatile = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`(?m)^(\s*(Creation Timestamp|Last Transition Time|Last Seen|Last Updated):\s+).*$`), "${1}<time>"},
	{regexp.MustCompile(`(?m)^(\s*(UID|Resource Version|Generation):\s+).*$`), "${1}<id>"},
}

// age is the AGE column of a `kubectl get` row (the last one).
var age = regexp.MustCompile(`(?m)^(\S.*\s)\d+[smhd](\d+[smh])?$`)

func golden(t *testing.T, name, got string) {
	t.Helper()
	for _, v := range volatile {
		got = v.re.ReplaceAllString(got, v.with)
	}
	got = age.ReplaceAllString(got, "${1}<age>")
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to write it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s (-want +got):\n%s", name, diff)
	}
}

// TestKubectlGolden checks what a person reads from `kubectl get` and `kubectl describe`
// (the real kubectl against the real API server): why a profile is still Accruing and
// where each number comes from.
func TestKubectlGolden(t *testing.T) {
	c, cx := srv.Kube.Client, ctx(t)
	wp := &ballastv1.WorkloadProfile{ObjectMeta: metav1.ObjectMeta{Name: "shop--api--default-0badc0de"}}
	if err := c.Create(cx, wp); err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	wp.Status = ballastv1.WorkloadProfileStatus{
		PolicyRef:       &ballastv1.PolicyRef{Kind: ballastv1.KindClusterResourcePolicy, Name: "default"},
		MeasurementHash: "0badc0de",
		State:           ballastv1.StateAccruing, ActiveWorkloads: 2, ActivePods: 6,
		Summary: "app: cpu 225m, mem 192Mi/231Mi",
		Containers: []ballastv1.ContainerProfile{{
			Name: "app", LastSeen: &now,
			UsageStats: []ballastv1.UsageStats{
				{Resource: "cpu", Source: "kubernetes-metrics", Samples: 300, TimeSpan: "25h0m0s", P50: "170m", P75: "190m",
					P90: "200m", P95: "210m", P99: "230m", Max: "260m", Mean: "180m", StdDev: "20m", CV: "0.111", LastUpdated: &now},
				{Resource: "memory", Source: "kubernetes-metrics", Samples: 300, TimeSpan: "25h0m0s", P50: "180.00Mi",
					P75: "192.00Mi", P90: "200.00Mi", P95: "205.00Mi", P99: "192.00Mi", Max: "240.00Mi", Mean: "185.00Mi",
					StdDev: "10.00Mi", CV: "0.054", LastUpdated: &now},
			},
			Recommendations: map[string]ballastv1.Recommendation{
				"cpu": {Request: "225m", RequestBasis: "avg 180m × 1.25 = 225m"},
				"memory": {Request: "192Mi", Limit: "231Mi", RequestBasis: "p75 192.00Mi × 1.0 = 192Mi",
					LimitBasis: "p99 192.00Mi × 1.2 = 230.40Mi, rounded up to 231Mi"},
			},
			Readiness: []ballastv1.ResourceReadiness{
				{Resource: "cpu", Ready: true, Samples: "300/250", TimeSpan: "25h0m0s/24h0m0s", CV: "0.111/1.500"},
				{Resource: "ephemeral-storage", SourceError: "kubelet: x509: certificate signed by unknown authority",
					Missing: "source error: kubelet: x509: certificate signed by unknown authority"},
				{Resource: "memory", Ready: true, Samples: "300/250", TimeSpan: "25h0m0s/24h0m0s", CV: "0.054/1.500"},
			},
		}},
		Conditions: []metav1.Condition{
			{Type: ballastv1.ConditionReady, Status: metav1.ConditionFalse, Reason: ballastv1.ReasonMissingSamples,
				Message: "No samples in the latest collection cycle for: ephemeral-storage", LastTransitionTime: now},
			{Type: ballastv1.ConditionSufficient, Status: metav1.ConditionFalse, Reason: ballastv1.ReasonAccruing,
				Message: "app: ephemeral-storage source error: kubelet: x509: certificate signed by unknown authority", LastTransitionTime: now},
		},
	}
	if err := c.Status().Update(cx, wp); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		file string
		args []string
	}{
		{"get-workloadprofile.golden", []string{"get", "workloadprofile", wp.Name}},
		{"describe-workloadprofile.golden", []string{"describe", "workloadprofile", wp.Name}},
	} {
		out, err := srv.Kube.Kubectl(cx, tc.args...)
		if err != nil {
			t.Fatal(err)
		}
		golden(t, tc.file, out)
	}

	// A policy without a priority shows 0 (the policies controller writes status.priority).
	crp := &ballastv1.ClusterResourcePolicy{ObjectMeta: metav1.ObjectMeta{Name: "golden-zero"}}
	if err := c.Create(cx, crp); err != nil {
		t.Fatal(err)
	}
	crp.Status.ProfileDiscriminator = "golden-zero-0123abcd"
	crp.Status.Conditions = []metav1.Condition{{Type: ballastv1.ConditionValid, Status: metav1.ConditionTrue,
		Reason: ballastv1.ReasonValid, Message: "policy is valid", LastTransitionTime: now}}
	if err := c.Status().Update(cx, crp); err != nil {
		t.Fatal(err)
	}
	out, err := srv.Kube.Kubectl(cx, "get", "clusterresourcepolicy", crp.Name)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "get-clusterresourcepolicy.golden", out)
}

// TestKubectlExplainDescribesEveryField: the real kubectl explain finds a description for
// the fields people look up (recommendation request and limit, readiness, policy values).
func TestKubectlExplainDescribesEveryField(t *testing.T) {
	cx := ctx(t)
	for _, path := range []string{
		"workloadprofile.status", "workloadprofile.status.containers",
		"workloadprofile.status.containers.recommendations", "workloadprofile.status.containers.readiness",
		"workloadprofile.status.containers.usageStats", "clusterresourcepolicy.spec.metrics",
		"clusterresourcepolicy.spec.readiness", "clusterresourcepolicy.spec.behaviors.thresholds.resize.resourceThresholds",
		"resourcepolicy.spec.behaviors.resize", "clusterresourcepolicy.status",
	} {
		out, err := srv.Kube.Kubectl(cx, "explain", path)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(out, "<no description>") {
			t.Errorf("kubectl explain %s shows <no description>:\n%s", path, out)
		}
	}
	out, err := srv.Kube.Kubectl(cx, "explain", "workloadprofile.status.containers.recommendations")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"request", "limit", "whole MiB", "requestBasis"} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl explain of recommendations lacks %q:\n%s", want, out)
		}
	}
}
