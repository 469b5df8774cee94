package kubeletstats

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

const (
	uidWeb    = "0c9b6a4e-1f2d-4b3c-9a8e-7d6c5b4a3f21"
	uidReport = "5e4d3c2b-1a09-4f8e-8d7c-6b5a49382716"
	uidIdle   = "a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d"
	uidGone   = "99999999-9999-4999-8999-999999999999"
)

func at(h, m, s int) time.Time { return time.Date(2026, 3, 1, h, m, s, 0, time.UTC) }

func summaryJSON(t testing.TB) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/summary.json")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// enrolled is what the pod watch would pass for testdata/summary.json: "shm" is a
// Memory-medium emptyDir, so it is not in the list.
var enrolled = map[string]Pod{
	uidWeb:    {Containers: []string{"app", "istio-proxy"}, EmptyDirVolumes: []string{"cache", "uploads"}},
	uidReport: {Containers: []string{"worker"}, EmptyDirVolumes: []string{"scratch"}},
	uidIdle:   {},
	uidGone:   {Containers: []string{"x"}},
}

func TestExtractSummaryFixture(t *testing.T) {
	s, err := DecodeSummary(summaryJSON(t))
	if err != nil {
		t.Fatal(err)
	}
	if s.Node.NodeName != "worker-1" || len(s.Pods) != 4 {
		t.Fatalf("decoded node %q with %d pods", s.Node.NodeName, len(s.Pods))
	}
	got := Extract(s, enrolled)
	web := func(c string) ContainerReading {
		return ContainerReading{PodUID: uidWeb, Namespace: "shop", PodName: "web-7d9f8b6c5-x2k4p", Container: c}
	}
	app, proxy := web("app"), web("istio-proxy")
	app.HasEphemeralStorage, app.EphemeralStorageBytes, app.EphemeralStorageTime = true, 50<<20+10<<20, at(11, 59, 55)
	app.HasMilliCPU, app.MilliCPU, app.CPUTime = true, 124, at(12, 0, 0) // 123.456789m rounds up
	app.HasWorkingSet, app.WorkingSetBytes, app.MemoryTime = true, 144<<20, at(12, 0, 0)
	proxy.HasEphemeralStorage, proxy.EphemeralStorageBytes, proxy.EphemeralStorageTime = true, 65536+4096, at(11, 59, 55)
	proxy.HasMilliCPU, proxy.MilliCPU, proxy.CPUTime = true, 4, at(12, 0, 0) // exactly 4m
	proxy.HasWorkingSet, proxy.WorkingSetBytes, proxy.MemoryTime = true, 40<<20, at(12, 0, 0)
	worker := ContainerReading{PodUID: uidReport, Namespace: "jobs", PodName: "report-29012345-abcde", Container: "worker",
		HasWorkingSet: true, WorkingSetBytes: 16 << 20, MemoryTime: at(12, 0, 0)}
	sleep := ContainerReading{PodUID: uidIdle, Namespace: "default", PodName: "idle", Container: "sleep",
		HasMilliCPU: true, MilliCPU: 0, CPUTime: at(12, 0, 0)}

	want := Readings{
		Containers: []ContainerReading{app, proxy, worker, sleep},
		Pods: []PodReading{{PodUID: uidWeb, Namespace: "shop", PodName: "web-7d9f8b6c5-x2k4p",
			EmptyDirBytes: 200<<20 + 8192, Time: at(11, 59, 50)}},
		Skipped: []Skip{
			{uidReport, "worker", SignalEphemeralStorage, "logs.usedBytes missing"},
			{uidReport, "worker", SignalCPU, "cpu.usageNanoCores missing"},
			{uidReport, "", SignalEmptyDir, "emptyDir volumes without usage: scratch (no usedBytes)"},
			{uidIdle, "sleep", SignalEphemeralStorage, "rootfs.usedBytes missing"},
			{uidIdle, "sleep", SignalMemory, "memory.workingSetBytes missing"},
			{uidGone, "", SignalPod, "pod not in the summary"},
		},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got)\n%s", d)
	}
}

func TestExtractCases(t *testing.T) {
	const pod = `{"node":{"nodeName":"n"},"pods":[{"podRef":{"name":"p","namespace":"ns","uid":"u"},"containers":[%s],"volume":[%s]}]}`
	cases := map[string]struct {
		containers, volumes string
		want                Pod
		wantPods            int
		wantSkip            []string // "container/signal: reason"
	}{
		"unlisted container is reported": {containers: `{"name":"a","rootfs":{"usedBytes":1},"logs":{"usedBytes":2}}`,
			want:     Pod{Containers: []string{"a", "b"}},
			wantSkip: []string{"a/cpu: cpu.usageNanoCores missing", "a/memory: memory.workingSetBytes missing", "b/container: container not in the summary"}},
		"duplicate container keeps the first": {containers: `{"name":"a","cpu":{"usageNanoCores":1},"memory":{"workingSetBytes":1},"rootfs":{"usedBytes":1},"logs":{"usedBytes":2}},{"name":"a"}`,
			wantSkip: []string{"a/container: container listed more than once in the pod; first entry used"}},
		"emptyDir volume not listed": {volumes: `{"name":"cache","usedBytes":5}`, want: Pod{EmptyDirVolumes: []string{"cache", "tmp"}},
			wantSkip: []string{"/emptydir: emptyDir volumes without usage: tmp (not listed)"}},
		"emptyDir names are deduplicated": {volumes: `{"name":"cache","usedBytes":5}`, want: Pod{EmptyDirVolumes: []string{"cache", "cache"}}, wantPods: 1},
		"emptyDir sum overflow": {volumes: `{"name":"a","usedBytes":18446744073709551615},{"name":"b","usedBytes":1}`, want: Pod{EmptyDirVolumes: []string{"a", "b"}},
			wantSkip: []string{"/emptydir: emptyDir volumes without usage: b (sum overflows)"}},
		"ephemeral overflow": {containers: `{"name":"a","cpu":{"usageNanoCores":1},"memory":{"workingSetBytes":1},"rootfs":{"usedBytes":18446744073709551615},"logs":{"usedBytes":1}}`,
			wantSkip: []string{"a/ephemeral-storage: rootfs.usedBytes + logs.usedBytes overflows"}},
		"no rootfs at all": {containers: `{"name":"a","cpu":{"usageNanoCores":1},"memory":{"workingSetBytes":1}}`,
			wantSkip: []string{"a/ephemeral-storage: rootfs.usedBytes missing"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s, err := DecodeSummary([]byte(strings.Replace(strings.Replace(pod, "%s", tc.containers, 1), "%s", tc.volumes, 1)))
			if err != nil {
				t.Fatal(err)
			}
			got := Extract(s, map[string]Pod{"u": tc.want})
			var skips []string
			for _, sk := range got.Skipped {
				skips = append(skips, sk.Container+"/"+string(sk.Signal)+": "+sk.Reason)
			}
			if d := cmp.Diff(tc.wantSkip, skips); d != "" {
				t.Errorf("skips (-want +got)\n%s", d)
			}
			if len(got.Pods) != tc.wantPods {
				t.Errorf("pod readings %+v, want %d", got.Pods, tc.wantPods)
			}
		})
	}
}

func TestDecodeSummaryRejects(t *testing.T) {
	cases := map[string]string{
		"empty":            "",
		"null":             "null",
		"array":            "[]",
		"garbage":          "<html>502 Bad Gateway</html>",
		"truncated":        `{"node":{"nodeName":"n"},"pods":[`,
		"trailing data":    `{"pods":[]} {"pods":[]}`,
		"negative bytes":   `{"pods":[{"podRef":{"uid":"u"},"containers":[{"name":"a","rootfs":{"usedBytes":-1}}]}]}`,
		"bad time":         `{"pods":[{"podRef":{"uid":"u"},"startTime":"yesterday","containers":[]}]}`,
		"wrong field type": `{"pods":{"uid":"u"}}`,
	}
	for name, in := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := DecodeSummary([]byte(in)); !errors.Is(err, ErrDecode) {
				t.Errorf("error %v, want ErrDecode", err)
			}
		})
	}
	// Unknown fields from a newer kubelet are fine.
	if _, err := DecodeSummary([]byte(`{"node":{"nodeName":"n","future":{"x":1}},"pods":[],"newTopLevel":true}`)); err != nil {
		t.Errorf("unknown fields rejected: %v", err)
	}
}

func TestNanoToMilliCores(t *testing.T) {
	cases := map[uint64]int64{0: 0, 1: 1, 999_999: 1, 1_000_000: 1, 1_000_001: 2, 2_500_000_000: 2500, ^uint64(0): 18446744073710}
	for in, want := range cases {
		if got := nanoToMilliCores(in); got != want {
			t.Errorf("nanoToMilliCores(%d) = %d, want %d", in, got, want)
		}
	}
}

// FuzzDecodeSummary: decoding and extraction never panic, every error wraps ErrDecode,
// and every reading that is produced satisfies the sums it claims.
func FuzzDecodeSummary(f *testing.F) {
	// Small seeds, one per shape the decoder and Extract handle: the 9 KB node fixture
	// (testdata/summary.json, decoded by TestDecodeSummary) would make the fuzzer spend its
	// budget minimising instead of exploring.
	for _, seed := range []string{
		`{"pods":[{"podRef":{"uid":"u"},"containers":[{"name":"a","rootfs":{"usedBytes":1},"logs":{"usedBytes":2}}],"volume":[{"name":"v","usedBytes":3}]}]}`,
		`{"pods":[{"podRef":{"uid":"u"},"containers":[{"name":"a","cpu":{"time":"2026-01-01T00:00:00Z","usageNanoCores":250000000},"memory":{"time":"2026-01-01T00:00:00Z","workingSetBytes":1048576}}]}]}`,
		`{"pods":[{"podRef":{"uid":"u"},"containers":[{"name":"a","rootfs":{"usedBytes":18446744073709551615},"logs":{"usedBytes":1},"memory":{"workingSetBytes":18446744073709551615}}]}]}`,
		`{"node":{"nodeName":"n"},"pods":[]}`,
		`{"pods":[{"podRef":{"uid":"u"},"volume":[{"name":"cache"}]}]}`,
		`null`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := DecodeSummary(data)
		if err != nil {
			if !errors.Is(err, ErrDecode) {
				t.Fatalf("error %v does not wrap ErrDecode", err)
			}
			return
		}
		pods := map[string]Pod{"u": {EmptyDirVolumes: []string{"v", "cache"}}}
		for _, p := range s.Pods {
			pods[p.PodRef.UID] = Pod{EmptyDirVolumes: []string{"v"}}
		}
		r := Extract(s, pods)
		for _, c := range r.Containers {
			if c.HasMilliCPU && c.MilliCPU < 0 {
				t.Fatalf("negative cpu %d", c.MilliCPU)
			}
		}
		if len(r.Pods) > len(pods) {
			t.Fatalf("%d pod readings for %d pods", len(r.Pods), len(pods))
		}
	})
}
