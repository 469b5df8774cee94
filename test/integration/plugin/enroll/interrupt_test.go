package enroll

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/kubectl/ballast"
)

// TestInterruptBreadcrumb interrupts enroll (as Ctrl-C does: the command's context ends)
// once the pods of a single-replica Deployment are labelled, while it waits --settle before
// verifying: the row is FAIL naming the object, stderr carries the breadcrumb, the exit
// code is 2, and a re-run converges to NOTE only.
func TestInterruptBreadcrumb(t *testing.T) {
	const ns = "int"
	namespace(t, ns)
	create(t, deployment(ns, "slow", 1, nil))
	settled(t, ns, 1)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { // the interrupt: as soon as the pod carries the label
		for ctx.Err() == nil {
			pods := &corev1.PodList{}
			if sb.Client.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels{ballastv1.ModeLabel: ballastv1.ModeMeasure}) == nil && len(pods.Items) == 1 {
				cancel()
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	var out, errb bytes.Buffer
	code := ballast.Run(ctx, []string{"--kubeconfig", sb.Kube.Kubeconfig, "enroll", "-n", ns, "--mode", "measure", "--apply", "--settle", "120"},
		genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errb})
	t.Logf("exit %d\n%s%s", code, out.String(), errb.String())
	if code != 2 {
		t.Errorf("exit %d, want 2", code)
	}
	golden(t, "int-interrupted", out.String())
	if !strings.Contains(errb.String(), "interrupted: Deployment int/slow was in flight") {
		t.Errorf("no breadcrumb on stderr: %q", errb.String())
	}
	r := run(t, "enroll", "-n", ns, "--mode", "measure", "--apply", "--settle", "1")
	if r.code != 0 {
		t.Fatalf("re-run: exit %d", r.code)
	}
	golden(t, "int-rerun", r.stdout)
}
