package enroll

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
)

func namespace(t *testing.T, name string) {
	t.Helper()
	create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
}

// TestNoRestartRoutes: a Deployment of 3, a RollingUpdate StatefulSet (matchExpressions
// selector), an OnDelete StatefulSet and a DaemonSet on two nodes are enrolled with
// --apply --no-restart: every pod is labelled and no pod UID changes; a second run reports
// only NOTE rows; a half-enrolled Deployment is repaired in place.
func TestNoRestartRoutes(t *testing.T) {
	const ns = "nr"
	namespace(t, ns)
	create(t, deployment(ns, "web", 3, nil), statefulSet(ns, "db", 2, false), statefulSet(ns, "cache", 2, true), daemonSet(ns, "agent"))
	settled(t, ns, 9)
	before := podsOf(t, ns)

	r := run(t, "enroll", "-n", ns, "--mode", "measure")
	if r.code != 0 {
		t.Fatalf("plan: exit %d", r.code)
	}
	golden(t, "nr-plan", r.stdout)
	sameUIDs(t, "dry run", before, podsOf(t, ns))
	allMode(t, podsOf(t, ns), "")

	r = run(t, "enroll", "-n", ns, "--mode", "measure", "--apply", "--no-restart", "--settle", "2")
	if r.code != 0 {
		t.Fatalf("apply: exit %d", r.code)
	}
	golden(t, "nr-apply", r.stdout)
	settled(t, ns, 9)
	after := podsOf(t, ns)
	sameUIDs(t, "--apply --no-restart", before, after)
	allMode(t, after, ballastv1.ModeMeasure)

	r = run(t, "enroll", "-n", ns, "--mode", "measure", "--apply", "--no-restart", "--settle", "2")
	if r.code != 0 {
		t.Fatalf("re-run: exit %d", r.code)
	}
	golden(t, "nr-rerun", r.stdout)
	sameUIDs(t, "re-run", before, podsOf(t, ns))

	// Half-enrolled: one pod of web lost its label (e.g. an interrupted earlier run).
	pods := &corev1.PodList{}
	if err := sb.Client.List(context.Background(), pods, client.InNamespace(ns), client.MatchingLabels{"app.kubernetes.io/name": "web"}); err != nil || len(pods.Items) == 0 {
		t.Fatalf("web pods: %v", err)
	}
	p := &pods.Items[0]
	if err := sb.Client.Patch(context.Background(), p, client.RawPatch("application/merge-patch+json",
		[]byte(`{"metadata":{"labels":{"`+ballastv1.ModeLabel+`":null}}}`))); err != nil {
		t.Fatal(err)
	}
	r = run(t, "enroll", "-n", ns, "--mode", "measure", "--apply", "--settle", "2")
	if r.code != 0 {
		t.Fatalf("repair: exit %d", r.code)
	}
	golden(t, "nr-repair", r.stdout)
	final := podsOf(t, ns)
	sameUIDs(t, "repair", before, final)
	allMode(t, final, ballastv1.ModeMeasure)
	// The controllers kept their original strategies.
	s := &appsv1.StatefulSet{}
	if err := sb.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "db"}, s); err != nil {
		t.Fatal(err)
	}
	if ru := s.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.Partition != nil && *ru.Partition != 0 {
		t.Errorf("StatefulSet db partition left at %d", *ru.Partition)
	}
	ds := &appsv1.DaemonSet{}
	if err := sb.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "agent"}, ds); err != nil {
		t.Fatal(err)
	}
	if ds.Spec.UpdateStrategy.Type != appsv1.RollingUpdateDaemonSetStrategyType {
		t.Errorf("DaemonSet agent strategy left at %s", ds.Spec.UpdateStrategy.Type)
	}
}

// TestRestartRoute: a Deployment and a StatefulSet of 2 take the restart route: every pod
// is replaced by one carrying the label, the rollout is awaited; a re-run is NOTE only.
func TestRestartRoute(t *testing.T) {
	const ns = "rr"
	namespace(t, ns)
	create(t, deployment(ns, "web", 2, nil), statefulSet(ns, "db", 2, false))
	settled(t, ns, 4)
	before := podsOf(t, ns)

	r := run(t, "enroll", "-n", ns, "--mode", "apply", "--apply", "--timeout", "120")
	if r.code != 0 {
		t.Fatalf("apply: exit %d", r.code)
	}
	golden(t, "rr-apply", r.stdout)
	settled(t, ns, 4)
	after := podsOf(t, ns)
	for _, u := range uids(before) {
		for _, v := range uids(after) {
			if u == v {
				t.Errorf("pod %s survived the restart route", u)
			}
		}
	}
	allMode(t, after, ballastv1.ModeApply)

	r = run(t, "enroll", "-n", ns, "--mode", "apply", "--apply")
	if r.code != 0 {
		t.Fatalf("re-run: exit %d", r.code)
	}
	golden(t, "rr-rerun", r.stdout)
	sameUIDs(t, "re-run", after, podsOf(t, ns))
}

// TestQualification: another mode without --remode is a WARN, a paused Deployment and an
// --ignore match are SKIPs, a template without the full tuple is not a target; --remode
// plans the other-mode one.
func TestQualification(t *testing.T) {
	const ns = "mix"
	namespace(t, ns)
	paused := deployment(ns, "paused", 1, nil)
	paused.Spec.Paused = true
	notuple := deployment(ns, "notuple", 1, nil)
	delete(notuple.Spec.Template.Labels, "app.kubernetes.io/component")
	create(t, deployment(ns, "legacy", 1, map[string]string{ballastv1.ModeLabel: ballastv1.ModeApply}),
		deployment(ns, "ignored-batch", 1, nil), notuple, paused)
	settled(t, ns, 3) // a paused new Deployment creates no pods

	r := run(t, "enroll", "-n", ns, "--mode", "resize", "--ignore", "^ignored-")
	if r.code != 0 {
		t.Fatalf("plan: exit %d", r.code)
	}
	golden(t, "mix-plan", r.stdout)
	r = run(t, "enroll", "-n", ns, "--mode", "resize", "--remode", "--ignore", "^ignored-")
	golden(t, "mix-remode-plan", r.stdout)

	for _, args := range [][]string{{"enroll"}, {"enroll", "--mode", "all"}, {"enroll", "--mode", "apply", "--ignore", "("}} {
		if r := run(t, args...); r.code != 1 {
			t.Errorf("%v: exit %d, want 1", args, r.code)
		}
	}
}
