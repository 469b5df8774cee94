package policies

import (
	"testing"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
)

func TestShownBoundsTheNames(t *testing.T) {
	if got := shown([]string{"a", "b"}); got != "a, b" {
		t.Errorf("shown = %q", got)
	}
	if got := shown([]string{"a", "b", "c", "d", "e", "f", "g"}); got != "a, b, c, d, e and 2 more" {
		t.Errorf("shown = %q", got)
	}
}

func TestHasHistory(t *testing.T) {
	empty := &ballastv1.WorkloadProfileStatus{Containers: []ballastv1.ContainerProfile{{Name: "app",
		UsageStats: []ballastv1.UsageStats{{Resource: "cpu", Source: "km"}}}}}
	if hasHistory(empty) {
		t.Error("a profile without samples has history")
	}
	empty.Containers[0].UsageStats[0].Samples = 3
	if !hasHistory(empty) {
		t.Error("a profile with samples has no history")
	}
	if !hasHistory(&ballastv1.WorkloadProfileStatus{PodUsageStats: []ballastv1.UsageStats{{Samples: 1}}}) {
		t.Error("pod-level samples are history")
	}
}

func TestTupleKeyIsCanonical(t *testing.T) {
	a := tupleKey(map[string]string{"x": "1", "y": "2"})
	if a != tupleKey(map[string]string{"y": "2", "x": "1"}) || a == tupleKey(map[string]string{"x": "12"}) {
		t.Errorf("tupleKey not canonical: %q", a)
	}
}
