package crd

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
)

func understudy(name string) *ballastv1.Understudy {
	return &ballastv1.Understudy{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: ballastv1.UnderstudySpec{TargetRef: ballastv1.UnderstudyTargetRef{Kind: "Deployment", Name: "web"}}}
}

// TestUnderstudySchema checks the schema defaults, the bounds and the immutable targetRef
// as the real API server applies them (SPEC §15.1).
func TestUnderstudySchema(t *testing.T) {
	c, cx := srv.Kube.Client, ctx(t)
	u := understudy(uniq("us-defaults"))
	if err := c.Create(cx, u); err != nil {
		t.Fatal(err)
	}
	if u.Spec.SurgeReplicas != 1 || u.Spec.MinSurgeTimeSeconds == nil || *u.Spec.MinSurgeTimeSeconds != 60 ||
		u.Spec.ReadinessDeadlineSeconds != 600 || u.Spec.HoldMode != ballastv1.HoldAlways {
		t.Errorf("defaults = %+v, want surge 1, minSurge 60, deadline 600, holdMode always", u.Spec)
	}
	zero := int32(0)
	u0 := understudy(uniq("us-zero"))
	u0.Spec.MinSurgeTimeSeconds = &zero
	if err := c.Create(cx, u0); err != nil || *u0.Spec.MinSurgeTimeSeconds != 0 {
		t.Errorf("minSurgeTimeSeconds 0 must be kept: err %v", err)
	}

	u.Spec.TargetRef.Name = "other"
	if err := c.Update(cx, u); err == nil || !strings.Contains(err.Error(), "targetRef is immutable") {
		t.Errorf("changing targetRef: err = %v, want targetRef is immutable", err)
	}
	u.Spec.TargetRef.Name = "web"
	u.Spec.HoldMode = ballastv1.HoldVoluntaryOnly
	if err := c.Update(cx, u); err != nil {
		t.Errorf("changing holdMode must be allowed: %v", err)
	}

	bad := map[string]func(*ballastv1.Understudy){
		"surgeReplicas":            func(u *ballastv1.Understudy) { u.Spec.SurgeReplicas = 11 },
		"holdMode":                 func(u *ballastv1.Understudy) { u.Spec.HoldMode = "hostage" },
		"minSurgeTimeSeconds":      func(u *ballastv1.Understudy) { v := int32(-1); u.Spec.MinSurgeTimeSeconds = &v },
		"readinessDeadlineSeconds": func(u *ballastv1.Understudy) { u.Spec.ReadinessDeadlineSeconds = -5 },
		"targetRef.name":           func(u *ballastv1.Understudy) { u.Spec.TargetRef.Name = "" },
	}
	for field, mutate := range bad {
		b := understudy(uniq("us-bad"))
		mutate(b)
		err := c.Create(cx, b)
		if err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("%s: err = %v, want a rejection naming the field", field, err)
		}
	}
	// A hold of more than an hour blocks drains for no stand-in's sake: refused.
	long := understudy(uniq("us-long"))
	long.Spec.ReadinessDeadlineSeconds = 3601
	if err := c.Create(cx, long); err == nil || !strings.Contains(err.Error(), "readinessDeadlineSeconds") {
		t.Errorf("readinessDeadlineSeconds 3601: err = %v, want a rejection", err)
	}
	long = understudy(uniq("us-hour"))
	long.Spec.ReadinessDeadlineSeconds = 3600
	if err := c.Create(cx, long); err != nil {
		t.Errorf("readinessDeadlineSeconds 3600 refused: %v", err)
	}
}

// TestUnderstudyPrinterColumns runs the real kubectl: target, mode, phase, blocked, age;
// the kind is in category ballast.
func TestUnderstudyPrinterColumns(t *testing.T) {
	c, cx := srv.Kube.Client, ctx(t)
	u := understudy(uniq("us-cols"))
	if err := c.Create(cx, u); err != nil {
		t.Fatal(err)
	}
	u.Status = ballastv1.UnderstudyStatus{Phase: ballastv1.UnderstudySurging, Mode: ballastv1.HoldAlways,
		BlockedSince: &metav1.Time{Time: metav1.Now().Add(-90e9)}}
	if err := c.Status().Update(cx, u); err != nil {
		t.Fatal(err)
	}
	out, err := srv.Kube.Kubectl(cx, "get", "understudies", "-n", "default", u.Name)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 {
		t.Fatalf("kubectl printed %d lines:\n%s", len(lines), out)
	}
	header, row := strings.Fields(lines[0]), strings.Fields(lines[1])
	if got := strings.Join(header, " "); got != "NAME TARGET MODE PHASE BLOCKED AGE" {
		t.Errorf("header = %q", got)
	}
	if len(row) != 6 || row[1] != "web" || row[2] != "always" || row[3] != "Surging" || !strings.HasSuffix(row[4], "s") {
		t.Errorf("row = %v", row)
	}
	out, err = srv.Kube.Kubectl(cx, "get", "ballast", "-n", "default", "-o", "name")
	if err != nil || !strings.Contains(out, "understudy.ballast.tightlinesoftware.com/"+u.Name) {
		t.Errorf("kubectl get ballast: %v\n%s", err, out)
	}
}
