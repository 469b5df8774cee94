package kubelet

import (
	"os"
	"testing"
	"time"

	"github.com/ballastk8s/ballast/pkg/kubeletstats"
)

// The decoder's fixture (pkg/kubeletstats/testdata), served here by a stub kubelet.
const (
	uidWeb    = "0c9b6a4e-1f2d-4b3c-9a8e-7d6c5b4a3f21"
	uidReport = "5e4d3c2b-1a09-4f8e-8d7c-6b5a49382716"
	uidIdle   = "a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d"
	uidGone   = "99999999-9999-4999-8999-999999999999"
)

func at(h, m, s int) time.Time { return time.Date(2026, 3, 1, h, m, s, 0, time.UTC) }

func summaryJSON(t testing.TB) []byte {
	t.Helper()
	b, err := os.ReadFile("../../kubeletstats/testdata/summary.json")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// enrolled is what the pod watch would pass for the fixture ("shm" is a Memory-medium
// emptyDir, so it is not in the list).
var enrolled = map[string]kubeletstats.Pod{
	uidWeb:    {Containers: []string{"app", "istio-proxy"}, EmptyDirVolumes: []string{"cache", "uploads"}},
	uidReport: {Containers: []string{"worker"}, EmptyDirVolumes: []string{"scratch"}},
	uidIdle:   {},
	uidGone:   {Containers: []string{"x"}},
}
