package enroll

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/kubectl/ballast"
)

// TestInterruptBreadcrumb interrupts enroll (as Ctrl-C does: the command's context ends)
// as soon as it has paused a single-replica Deployment on the no-restart route: the row is
// FAIL naming the step, stderr carries the breadcrumb, the exit code is 2, what the route
// changed is rolled back (the Deployment is not left paused, its ReplicaSet and template
// agree), no pod restarted, and re-running converges to NOTE only.
func TestInterruptBreadcrumb(t *testing.T) {
	const ns = "int"
	namespace(t, ns)
	create(t, deployment(ns, "slow", 1, nil))
	settled(t, ns, 1)
	before := podsOf(t, ns)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { // the interrupt: as soon as the Deployment is paused
		for ctx.Err() == nil {
			d := &appsv1.Deployment{}
			if sb.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "slow"}, d) == nil && d.Spec.Paused {
				cancel()
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	var out, errb bytes.Buffer
	code := ballast.Run(ctx, []string{"--kubeconfig", sb.Kube.Kubeconfig, "enroll", "-n", ns, "--mode", "measure", "--apply", "--settle", "120"},
		genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errb})
	t.Logf("exit %d\n%s%s", code, out.String(), errb.String())
	if code != 2 || !strings.HasPrefix(out.String(), "FAIL Deployment int/slow: interrupted while ") ||
		!strings.Contains(out.String(), "Summary: 0 enrolled, 1 failed, 0 warning(s), 0 skipped.") {
		t.Errorf("exit %d, output %q: want exit 2 and a FAIL row for the interrupted Deployment", code, out.String())
	}
	if !strings.Contains(errb.String(), "interrupted: Deployment int/slow was in flight (") {
		t.Errorf("no breadcrumb on stderr: %q", errb.String())
	}
	d := &appsv1.Deployment{}
	if err := sb.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "slow"}, d); err != nil {
		t.Fatal(err)
	}
	rss := &appsv1.ReplicaSetList{}
	if err := sb.Client.List(context.Background(), rss, client.InNamespace(ns)); err != nil || len(rss.Items) != 1 {
		t.Fatalf("ReplicaSets: %v (%d), want the one", err, len(rss.Items))
	}
	if d.Spec.Paused || d.Spec.Template.Labels[ballastv1.ModeLabel] != rss.Items[0].Spec.Template.Labels[ballastv1.ModeLabel] {
		t.Errorf("after the interrupt: paused %v, template mode %q, ReplicaSet mode %q", d.Spec.Paused,
			d.Spec.Template.Labels[ballastv1.ModeLabel], rss.Items[0].Spec.Template.Labels[ballastv1.ModeLabel])
	}
	// The rollback resumed the Deployment: until its controller observes that generation,
	// enroll rightly SKIPs it as "rollout not settled", so resume once it has.
	settled(t, ns, 1)
	r := run(t, "enroll", "-n", ns, "--mode", "measure", "--apply", "--settle", "1")
	if r.code != 0 || strings.Contains(r.stdout, "FAIL") || strings.Contains(r.stdout, "WARN") || strings.Contains(r.stdout, "SKIP") {
		t.Fatalf("resume: exit %d\n%s", r.code, r.stdout)
	}
	r = run(t, "enroll", "-n", ns, "--mode", "measure", "--apply", "--settle", "1")
	golden(t, "int-converged", r.stdout)
	settled(t, ns, 1)
	sameUIDs(t, "interrupt and resume", before, podsOf(t, ns))
	allMode(t, podsOf(t, ns), ballastv1.ModeMeasure)
}
