package podcache

import (
	"encoding/json"
	"os"
	"testing"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
)

// readProfile decodes the testdata profile: one of the live scale bench's, as the API
// server served it (two containers with statistics, recommendations and readiness, three
// conditions, managedFields).
func readProfile(t testing.TB) (*ballastv1.WorkloadProfile, []byte) {
	t.Helper()
	b, err := os.ReadFile("testdata/workload-profile.json")
	if err != nil {
		t.Fatal(err)
	}
	wp := &ballastv1.WorkloadProfile{}
	if err := json.Unmarshal(b, wp); err != nil {
		t.Fatal(err)
	}
	if len(wp.ManagedFields) == 0 || len(wp.Status.Containers) != 2 || len(wp.Status.Conditions) != 3 {
		t.Fatalf("testdata profile is not the one described: %+v", wp)
	}
	return wp, b
}

// TestProfileChangesNothingButManagedFields: the transformed profile equals the decoded
// one less managedFields, a second pass changes nothing, and the repeated strings of two
// separately decoded profiles share their bytes.
func TestProfileChangesNothingButManagedFields(t *testing.T) {
	full, raw := readProfile(t)
	out, err := Profile(full.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*ballastv1.WorkloadProfile)
	want := full.DeepCopy()
	want.ManagedFields = nil
	if !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("transformed profile differs beyond managedFields:\n%+v\nwant\n%+v", got, want)
	}
	again, _ := Profile(got.DeepCopy())
	if !equality.Semantic.DeepEqual(again, got) {
		t.Errorf("a second pass changed the profile")
	}
	other := &ballastv1.WorkloadProfile{}
	if err := json.Unmarshal(raw, other); err != nil {
		t.Fatal(err)
	}
	Profile(other)
	same := func(what, a, b string) {
		if unsafe.StringData(a) != unsafe.StringData(b) {
			t.Errorf("%s %q is not shared between profiles", what, a)
		}
	}
	same("condition message", got.Status.Conditions[0].Message, other.Status.Conditions[0].Message)
	same("source", got.Status.Containers[0].UsageStats[0].Source, other.Status.Containers[0].UsageStats[0].Source)
	for k := range got.Status.TupleLabels {
		for k2 := range other.Status.TupleLabels {
			if k == k2 {
				same("label key", k, k2)
			}
		}
	}
	if a, b := got.Status.Containers[0].Recommendations["cpu"].Request, other.Status.Containers[0].Recommendations["cpu"].Request; unsafe.StringData(a) == unsafe.StringData(b) {
		t.Errorf("a profile's own figure %q is interned", a)
	}
	cm := &corev1.ConfigMap{}
	if o, _ := Profile(cm); o != any(cm) {
		t.Errorf("other objects must pass unchanged")
	}
}

// BenchmarkCachedProfile reports the heap one cached WorkloadProfile holds among 2,000
// decoded from the testdata profile: with managedFields stripped (the default transform)
// and through Profile.
func BenchmarkCachedProfile(b *testing.B) {
	_, raw := readProfile(b)
	const n = 2000
	measure := func(transform func(*ballastv1.WorkloadProfile) any) float64 {
		return heapPerObject(n, func(int) any {
			wp := &ballastv1.WorkloadProfile{}
			if err := json.Unmarshal(raw, wp); err != nil {
				b.Fatal(err)
			}
			return transform(wp)
		})
	}
	var stripped, interned float64
	for b.Loop() {
		stripped = measure(func(wp *ballastv1.WorkloadProfile) any { wp.ManagedFields = nil; return wp })
		interned = measure(func(wp *ballastv1.WorkloadProfile) any { o, _ := Profile(wp); return o })
	}
	b.ReportMetric(stripped, "B/profile-stripped")
	b.ReportMetric(interned, "B/profile-interned")
	b.ReportMetric(stripped/interned, "ratio")
}
