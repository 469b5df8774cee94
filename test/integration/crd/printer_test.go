package crd

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
)

// TestKubectlPrinterColumns runs the real kubectl against the test API server.
func TestKubectlPrinterColumns(t *testing.T) {
	c, cx := srv.Kube.Client, ctx(t)
	wp := &ballastv1.WorkloadProfile{ObjectMeta: metav1.ObjectMeta{Name: uniq("billing--api--default-a1b2c3d4")}}
	if err := c.Create(cx, wp); err != nil {
		t.Fatal(err)
	}
	wp.Status = ballastv1.WorkloadProfileStatus{
		State: ballastv1.StateSufficient, Summary: "-", ActiveWorkloads: 3, ActivePods: 7, MeetsThreshold: true,
		PolicyRef: &ballastv1.PolicyRef{Kind: ballastv1.KindClusterResourcePolicy, Name: "default"},
		Conditions: []metav1.Condition{
			{Type: ballastv1.ConditionReady, Status: metav1.ConditionTrue, Reason: ballastv1.ReasonSamplesCollected,
				Message: "All policy resources produced samples in the latest collection cycle", LastTransitionTime: metav1.Now()},
			{Type: ballastv1.ConditionOrphaned, Status: metav1.ConditionFalse, Reason: "ActiveWorkloads",
				Message: "", LastTransitionTime: metav1.Now()},
		},
	}
	if err := c.Status().Update(cx, wp); err != nil {
		t.Fatal(err)
	}
	out, err := srv.Kube.Kubectl(cx, "get", "workloadprofiles", wp.Name)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 {
		t.Fatalf("kubectl printed %d lines, want header + 1 row:\n%s", len(lines), out)
	}
	header, row := strings.Fields(lines[0]), strings.Fields(lines[1])
	wantHeader := []string{"NAME", "ACTIVEWORKLOADS", "ACTIVEPODS", "POLICY", "STATE", "RECOMMENDATION", "COLLECTING", "ORPHANED", "AGE"}
	if strings.Join(header, " ") != strings.Join(wantHeader, " ") {
		t.Errorf("header = %v, want %v", header, wantHeader)
	}
	wantRow := []string{wp.Name, "3", "7", "default", "Sufficient", "-", "True", "False"}
	if len(row) != len(wantHeader) || strings.Join(row[:8], " ") != strings.Join(wantRow, " ") {
		t.Errorf("row = %v, want %v + age", row, wantRow)
	}

	// Policies show priority, discriminator and validity.
	crp := &ballastv1.ClusterResourcePolicy{ObjectMeta: metav1.ObjectMeta{Name: uniq("cols")}, Spec: validPolicySpec()}
	if err := c.Create(cx, crp); err != nil {
		t.Fatal(err)
	}
	crp.Status.ProfileDiscriminator = "cols-0123abcd"
	crp.Status.Priority = crp.Spec.Priority // as the policies controller writes it
	crp.Status.Conditions = []metav1.Condition{{Type: ballastv1.ConditionValid, Status: metav1.ConditionTrue,
		Reason: ballastv1.ReasonValid, Message: "policy is valid", LastTransitionTime: metav1.Now()}}
	if err := c.Status().Update(cx, crp); err != nil {
		t.Fatal(err)
	}
	out, err = srv.Kube.Kubectl(cx, "get", "clusterresourcepolicies", crp.Name)
	if err != nil {
		t.Fatal(err)
	}
	if f := strings.Fields(strings.Split(strings.TrimSpace(out), "\n")[1]); len(f) < 4 || f[1] != "3" || f[2] != "cols-0123abcd" || f[3] != "True" {
		t.Errorf("clusterresourcepolicies row = %v, want priority 3, discriminator, Valid True:\n%s", f, out)
	}
}
