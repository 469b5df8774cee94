package plugin

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/kubectl/ballast"
)

// BenchmarkReportAPIServer10k runs kubectl ballast report (in process: two LIST calls,
// decoding, the pure report, rendering) against the real API server holding 10,000
// WorkloadProfiles with status and one bound pod each over 40 namespaces. Setting up
// writes 30,000 objects; they are deleted afterwards (the views tests list every profile).
func BenchmarkReportAPIServer10k(b *testing.B) {
	kc, _ := views(b)
	ctx := context.Background()
	c := srv.Kube.Client
	const n, namespaces = 10000, 40
	for i := range namespaces {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("bench-report-%02d", i)}}); err != nil {
			b.Fatal(err)
		}
	}
	// Best effort: benchmarks run after the tests, and one collection DELETE of 10,000
	// custom resources can outlast the API server's request timeout.
	b.Cleanup(func() {
		if err := c.DeleteAllOf(ctx, &ballastv1.WorkloadProfile{}, client.MatchingLabels{"bench-report": "yes"}); err != nil {
			b.Logf("deleting the benchmark's profiles: %v", err)
		}
		for i := range namespaces {
			if err := c.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(fmt.Sprintf("bench-report-%02d", i)), client.GracePeriodSeconds(0)); err != nil {
				b.Logf("deleting the benchmark's pods: %v", err)
			}
		}
	})
	start := time.Now()
	work := make(chan int)
	errs := make(chan error, 16)
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				if err := createBenchProfile(ctx, c, i, namespaces); err != nil {
					select {
					case errs <- err:
					default:
					}
				}
			}
		}()
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	b.Logf("wrote %d profiles with status and %d pods in %v", n, n, time.Since(start).Round(time.Second))
	select {
	case err := <-errs:
		b.Fatal(err)
	default:
	}
	args := []string{"--kubeconfig", kc, "report", "-A", "-l", "bench-report=yes", "-o", "json", "--price-cpu-hour", "0.031", "--price-gib-hour", "0.0042"}
	b.ResetTimer()
	for b.Loop() {
		var out, errb bytes.Buffer
		streams := genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errb}
		if code := ballast.Run(ctx, args, streams); code != 0 {
			b.Fatalf("exit %d: %s", code, errb.String())
		}
		if !strings.Contains(out.String(), `"pods": 10000`) {
			b.Fatalf("the report does not count 10,000 pods:\n%.2000s", out.String())
		}
	}
}

func createBenchProfile(ctx context.Context, c client.Client, i, namespaces int) error {
	name := fmt.Sprintf("bench-%05d--server--default-a9696153", i)
	wp := &ballastv1.WorkloadProfile{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"bench-report": "yes"}}}
	if err := c.Create(ctx, wp); err != nil {
		return err
	}
	wp.Status = ballastv1.WorkloadProfileStatus{State: ballastv1.StateSufficient, Containers: []ballastv1.ContainerProfile{{Name: "app",
		UsageStats: []ballastv1.UsageStats{
			stats("cpu", 4320, "36h0m0s", fmt.Sprintf("%dm", 50+i%300), "0.400", "260m", fmt.Sprintf("%dm", 100+i%400)),
			stats("memory", 4320, "36h0m0s", fmt.Sprintf("%d.00Mi", 40+i%400), "0.100", "192.00Mi", fmt.Sprintf("%d.00Mi", 80+i%400))},
		Recommendations: map[string]ballastv1.Recommendation{"cpu": {Request: fmt.Sprintf("%dm", 100+i%400)},
			"memory": {Request: fmt.Sprintf("%dMi", 64+i%512), Limit: "1Gi"}}}}}
	if err := c.Status().Update(ctx, wp); err != nil {
		return err
	}
	return c.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: fmt.Sprintf("bench-report-%02d", i%namespaces), Name: fmt.Sprintf("bench-%05d", i),
		Labels:      map[string]string{ballastv1.ModeLabel: "apply", "bench-report": "yes"},
		Annotations: map[string]string{ballastv1.ProfileRefAnnotation: name}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.invalid/app:1", Resources: resources("500m", "", "512Mi", "")}}}})
}
