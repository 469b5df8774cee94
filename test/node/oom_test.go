package node

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/series"
	"github.com/ballastk8s/ballast/test/harness"
)

const oomLimit = "64Mi"

// testOOM: a real OOM kill in a pod with a 64 MiB limit (a child process of the load app
// allocates until the kernel kills it; the container survives, as with a worker process)
// reaches the profile's OOM stream and raises the memory recommendation.
func testOOM(t *testing.T, ctx context.Context) {
	createNamespace(t, ctx, "oom")
	p := runningPod(t, ctx, loadPod("oom", "oomer", "oomer", "measure",
		[]string{"-cpu-millis", "20", "-memory-mib", "16", "-oom-child-after", "15s"},
		res("20m", "32Mi"), res("", oomLimit)))
	var wp *ballastv1.WorkloadProfile
	harness.Eventually(t, time.Minute, "profile loadapp/oomer has a measurement hash", func() error {
		var err error
		if wp, err = profileOf(ctx, "oomer"); err != nil {
			return err
		}
		if wp.Status.MeasurementHash == "" {
			return fmt.Errorf("no measurement hash yet")
		}
		return nil
	})
	addr := valkeyAddr(t, ctx)
	key := series.OOMKey(wp.Status.MeasurementHash)
	var entry string
	harness.Eventually(t, 90*time.Second, "an entry in "+key, func() error {
		out, err := valkeyCLI(ctx, addr, "XRANGE", key, "-", "+")
		if err != nil {
			return err
		}
		if strings.TrimSpace(out) == "" || strings.Contains(out, "empty") {
			return fmt.Errorf("stream empty")
		}
		entry = out
		return nil
	})
	// The stream entry's ID is its XADD time in ms; the load app logs when its child was
	// killed. Both clocks are this machine's.
	idMS := firstStreamID(entry)
	killedMS := killTime(t, ctx, p)
	if idMS > 0 && killedMS > 0 {
		t.Logf("OOM kill → stream entry: %d ms (agent sampling interval 1 s; cgroup v1 oom_control is polled)", idMS-killedMS)
	}
	t.Logf("stream entry: %s", strings.Join(strings.Fields(entry), " "))
	// SPEC's OOM bump: max(peak × 1.2, peak + 100Mi) until history covers it.
	peak := float64(streamField(entry, "peak"))
	if peak == 0 {
		t.Fatalf("stream entry without a peak: %s", entry)
	}
	want := max(peak*1.2, peak+100*(1<<20))
	harness.Eventually(t, time.Minute, "memory limit recommendation raised to the OOM bump", func() error {
		wp, err := profileOf(ctx, "oomer")
		if err != nil {
			return err
		}
		r := recommendation(wp, string(corev1.ResourceMemory))
		if r.Limit == "" {
			return fmt.Errorf("no memory limit recommendation: %+v", wp.Status.Containers)
		}
		// The recommendation is rounded to whole KiB, so allow one KiB below the bump.
		if q := quantity(t, "memory limit recommendation", r.Limit); float64(q.Value()) < want-1024 {
			return fmt.Errorf("memory limit recommendation %s, want ≥ %.0f (peak %.0f + 100Mi)", r.Limit, want, peak)
		}
		t.Logf("after the OOM kill: memory recommendation request %s limit %s", r.Request, r.Limit)
		return nil
	})
}

var streamID = regexp.MustCompile(`(\d{13})-\d+`)

func firstStreamID(out string) int64 {
	m := streamID.FindStringSubmatch(out)
	if m == nil {
		return 0
	}
	v, _ := strconv.ParseInt(m[1], 10, 64)
	return v
}

// streamField returns the numeric field name of the first entry in valkey-cli's XRANGE output.
func streamField(out, name string) int64 {
	m := regexp.MustCompile(`"` + name + `"\s+\d+\)\s+"(\d+)"`).FindStringSubmatch(out)
	if m == nil {
		return 0
	}
	v, _ := strconv.ParseInt(m[1], 10, 64)
	return v
}

var killedLine = regexp.MustCompile(`OOM child ended at (\d+) ms`)

// killTime reads the load app's log (through the API server and the kubelet) for the time
// its OOM child ended.
func killTime(t *testing.T, ctx context.Context, p *corev1.Pod) int64 {
	b, err := n.Clientset.CoreV1().Pods(p.Namespace).GetLogs(p.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
	if err != nil {
		t.Logf("reading the load app's log: %v", err)
		return 0
	}
	m := killedLine.FindSubmatch(b)
	if m == nil {
		t.Logf("load app log has no kill line:\n%s", b)
		return 0
	}
	v, _ := strconv.ParseInt(string(m[1]), 10, 64)
	return v
}
