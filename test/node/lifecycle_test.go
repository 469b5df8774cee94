package node

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/test/harness"
)

// testSummary: the real agent read the kubelet's Summary API over the node's TLS endpoint
// (https://<node IP>:10250, the kubelet's certificate verified with the service-account
// ca.crt, authenticated with its token and authorized by the kubelet's webhook as get on
// nodes/stats): the profile has ephemeral-storage statistics from source kubelet-summary.
func testSummary(t *testing.T, ctx context.Context) {
	ds := &appsv1.DaemonSet{}
	if err := n.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "ballast-node"}, ds); err != nil {
		t.Fatal(err)
	}
	if args := ds.Spec.Template.Spec.Containers[0].Args; !slices.Contains(args, "--kubelet-url=https://$(NODE_IP):10250") {
		t.Fatalf("agent args %v do not name the node's kubelet", args)
	}
	harness.Eventually(t, 90*time.Second, "ephemeral-storage statistics from the kubelet Summary", func() error {
		wp, err := profileOf(ctx, "worker")
		if err != nil {
			return err
		}
		s, ok := stats(wp, "ephemeral-storage")
		if !ok || s.Samples == 0 {
			return fmt.Errorf("no ephemeral-storage statistics yet: %+v", wp.Status.Containers)
		}
		if s.Source != "kubelet-summary" {
			return fmt.Errorf("ephemeral-storage source %q", s.Source)
		}
		t.Logf("ephemeral-storage from the kubelet Summary: %d samples, p50 %s", s.Samples, s.P50)
		return nil
	})
}

// testUpgrade: helm upgrade with a changed value rolls both workloads out with it.
func testUpgrade(t *testing.T, ctx context.Context) {
	helm(t, "upgrade", release, chartDir(), "-n", namespace, "--reuse-values", "--set", "logging.level=debug",
		"--wait", "--timeout", "5m")
	dep := &appsv1.Deployment{}
	if err := n.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "ballast"}, dep); err != nil {
		t.Fatal(err)
	}
	ds := &appsv1.DaemonSet{}
	if err := n.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "ballast-node"}, ds); err != nil {
		t.Fatal(err)
	}
	for what, args := range map[string][]string{"control": dep.Spec.Template.Spec.Containers[0].Args,
		"agent": ds.Spec.Template.Spec.Containers[0].Args} {
		if !slices.Contains(args, "--log-level=debug") {
			t.Errorf("%s args after upgrade: %v", what, args)
		}
	}
	if dep.Status.UpdatedReplicas != 2 || dep.Status.ReadyReplicas != 2 || ds.Status.UpdatedNumberScheduled != 1 || ds.Status.NumberReady != 1 {
		t.Errorf("after upgrade: control updated %d ready %d; agent updated %d ready %d", dep.Status.UpdatedReplicas,
			dep.Status.ReadyReplicas, ds.Status.UpdatedNumberScheduled, ds.Status.NumberReady)
	}
}

// documentedLeftovers are what the chart README says `helm uninstall` keeps.
var documentedLeftovers = []string{
	"Secret/ballast-webhook-cert", // built-in certificates: created by ballast-control, not Helm
	"Lease/910c37cf.tightlinesoftware.com",
}

// testUninstall: helm uninstall leaves nothing of the release but the documented objects
// (the CRDs with the WorkloadProfiles, the built-in certificate Secret, the leader Lease).
func testUninstall(t *testing.T, ctx context.Context) {
	helm(t, "uninstall", release, "-n", namespace, "--wait", "--timeout", "3m")
	// --wait returns once the objects are deleted; their pods may still be terminating.
	harness.Eventually(t, time.Minute, "release pods gone", func() error {
		pods, err := n.Clientset.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
		if err != nil || len(pods.Items) > 0 {
			return fmt.Errorf("%v pods left: %v", len(pods.Items), err)
		}
		return nil
	})
	left := leftovers(t, ctx)
	for _, l := range left {
		if !slices.Contains(documentedLeftovers, l) {
			t.Errorf("uninstall left %s", l)
		}
	}
	t.Logf("left after uninstall (documented): %v", left)
	for _, crd := range []string{"workloadprofiles", "ballastconfigs", "clusterresourcepolicies", "metricssources", "resourcepolicies"} {
		if _, err := n.Clientset.Discovery().ServerResourcesForGroupVersion("ballast.tightlinesoftware.com/v1"); err != nil {
			t.Errorf("CRD %s gone after uninstall: %v", crd, err)
		}
	}
	// Start the next install clean, as a user following the README would.
	for _, l := range left {
		kind, name, _ := strings.Cut(l, "/")
		switch kind {
		case "Secret":
			_ = n.Client.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}})
		}
	}
}

// leftovers lists the objects of the release namespace and the cluster-scoped objects of
// Ballast that exist, beyond what every namespace has.
func leftovers(t *testing.T, ctx context.Context) []string {
	t.Helper()
	var out []string
	add := func(kind string, names ...string) {
		for _, nm := range names {
			out = append(out, kind+"/"+nm)
		}
	}
	cs := n.Clientset
	opt := metav1.ListOptions{}
	if l, err := cs.CoreV1().Pods(namespace).List(ctx, opt); err == nil {
		for _, o := range l.Items {
			add("Pod", o.Name)
		}
	}
	if l, err := cs.CoreV1().Services(namespace).List(ctx, opt); err == nil {
		for _, o := range l.Items {
			add("Service", o.Name)
		}
	}
	if l, err := cs.CoreV1().ConfigMaps(namespace).List(ctx, opt); err == nil {
		for _, o := range l.Items {
			if o.Name != "kube-root-ca.crt" {
				add("ConfigMap", o.Name)
			}
		}
	}
	if l, err := cs.CoreV1().Secrets(namespace).List(ctx, opt); err == nil {
		for _, o := range l.Items {
			add("Secret", o.Name)
		}
	}
	if l, err := cs.CoreV1().ServiceAccounts(namespace).List(ctx, opt); err == nil {
		for _, o := range l.Items {
			if o.Name != "default" {
				add("ServiceAccount", o.Name)
			}
		}
	}
	if l, err := cs.CoreV1().PersistentVolumeClaims(namespace).List(ctx, opt); err == nil {
		for _, o := range l.Items {
			add("PersistentVolumeClaim", o.Name)
		}
	}
	if l, err := cs.AppsV1().Deployments(namespace).List(ctx, opt); err == nil {
		for _, o := range l.Items {
			add("Deployment", o.Name)
		}
	}
	if l, err := cs.AppsV1().DaemonSets(namespace).List(ctx, opt); err == nil {
		for _, o := range l.Items {
			add("DaemonSet", o.Name)
		}
	}
	if l, err := cs.BatchV1().Jobs(namespace).List(ctx, opt); err == nil {
		for _, o := range l.Items {
			add("Job", o.Name)
		}
	}
	if l, err := cs.RbacV1().Roles(namespace).List(ctx, opt); err == nil {
		for _, o := range l.Items {
			add("Role", o.Name)
		}
	}
	if l, err := cs.RbacV1().RoleBindings(namespace).List(ctx, opt); err == nil {
		for _, o := range l.Items {
			add("RoleBinding", o.Name)
		}
	}
	if l, err := cs.PolicyV1().PodDisruptionBudgets(namespace).List(ctx, opt); err == nil {
		for _, o := range l.Items {
			add("PodDisruptionBudget", o.Name)
		}
	}
	if l, err := cs.CoordinationV1().Leases(namespace).List(ctx, opt); err == nil {
		for _, o := range l.Items {
			add("Lease", o.Name)
		}
	}
	sel := metav1.ListOptions{LabelSelector: "app.kubernetes.io/part-of=ballast"}
	if l, err := cs.RbacV1().ClusterRoles().List(ctx, sel); err == nil {
		for _, o := range l.Items {
			add("ClusterRole", o.Name)
		}
	}
	if l, err := cs.RbacV1().ClusterRoleBindings().List(ctx, sel); err == nil {
		for _, o := range l.Items {
			add("ClusterRoleBinding", o.Name)
		}
	}
	if l, err := cs.AdmissionregistrationV1().MutatingWebhookConfigurations().List(ctx, sel); err == nil {
		for _, o := range l.Items {
			add("MutatingWebhookConfiguration", o.Name)
		}
	}
	for _, list := range []client.ObjectList{&ballastv1.BallastConfigList{}, &ballastv1.MetricsSourceList{}, &ballastv1.ClusterResourcePolicyList{}} {
		if err := n.Client.List(ctx, list); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("listing %T: %v", list, err)
		}
		switch l := list.(type) {
		case *ballastv1.BallastConfigList:
			for _, o := range l.Items {
				add("BallastConfig", o.Name)
			}
		case *ballastv1.MetricsSourceList:
			for _, o := range l.Items {
				add("MetricsSource", o.Name)
			}
		case *ballastv1.ClusterResourcePolicyList:
			for _, o := range l.Items {
				add("ClusterResourcePolicy", o.Name)
			}
		}
	}
	return out
}

// testExternalStore: with valkey.enabled=false and store.endpoint naming a Valkey outside
// the cluster (here a valkey-server on the node's address), samples reach it, and the
// history survives helm uninstall + install: the reinstalled control plane's profile counts
// at least the samples it had before.
func testExternalStore(t *testing.T, ctx context.Context) {
	bin, err := exec.LookPath("valkey-server")
	if err != nil {
		if bin, err = exec.LookPath("redis-server"); err != nil {
			t.Fatal("no valkey-server or redis-server: run hack/install-deps.sh")
		}
	}
	addr := NodeIP + ":6390"
	vk, err := harness.StartProc(n.logs(), "external-valkey", bin, "--bind", NodeIP, "--port", "6390", "--save", "", "--appendonly", "no",
		"--protected-mode", "no")
	if err != nil {
		t.Fatal(err)
	}
	defer vk.Stop(5 * time.Second)
	install := func() {
		helm(t, append([]string{"install", release, chartDir(), "-n", namespace, "--create-namespace", "--wait", "--timeout", "5m"},
			append(userValues(t), "--set", "valkey.enabled=false", "--set", "store.endpoint=redis://"+addr)...)...)
	}
	install()
	createNamespace(t, ctx, "external")
	runningPod(t, ctx, loadPod("external", "load", "external", "measure",
		[]string{"-cpu-millis", "50", "-memory-mib", "32"}, res("20m", "64Mi"), res("", "128Mi")))
	var before int64
	var hash string
	harness.Eventually(t, 3*time.Minute, "profile loadapp/external Sufficient with samples in the external Valkey", func() error {
		wp, err := profileOf(ctx, "external")
		if err != nil {
			return err
		}
		s, ok := stats(wp, "cpu")
		if wp.Status.State != ballastv1.StateSufficient || !ok {
			return fmt.Errorf("state %q", wp.Status.State)
		}
		before, hash = s.Samples, wp.Status.MeasurementHash
		keys, err := valkeyCLI(ctx, addr, "--scan", "--pattern", "ballast:{"+hash+"}:*")
		if err != nil || strings.TrimSpace(keys) == "" {
			return fmt.Errorf("no keys of %s in the external Valkey: %v", hash, err)
		}
		return nil
	})
	helm(t, "uninstall", release, "-n", namespace, "--wait", "--timeout", "3m")
	_ = n.Client.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "ballast-webhook-cert"}})
	// Forget the profile object too (its finalizer's controller is gone), so whatever the
	// reinstalled control plane reports comes from the store alone.
	if wp, err := profileOf(ctx, "external"); err == nil {
		wp.Finalizers = nil
		_ = n.Client.Update(ctx, wp)
		_ = n.Client.Delete(ctx, wp)
	}
	install()
	// A redeploy in a fresh namespace, as after a helm uninstall of the app.
	createNamespace(t, ctx, "external-again")
	runningPod(t, ctx, loadPod("external-again", "load", "external", "measure",
		[]string{"-cpu-millis", "50", "-memory-mib", "32"}, res("20m", "64Mi"), res("", "128Mi")))
	harness.Eventually(t, 2*time.Minute, "reinstalled profile counts the history from before the uninstall", func() error {
		wp, err := profileOf(ctx, "external")
		if err != nil {
			return err
		}
		s, ok := stats(wp, "cpu")
		if !ok || s.Samples < before || wp.Status.MeasurementHash != hash {
			return fmt.Errorf("samples %d (before uninstall %d), hash %s (was %s)", s.Samples, before, wp.Status.MeasurementHash, hash)
		}
		t.Logf("history kept across uninstall + install: %d samples before, %d after", before, s.Samples)
		return nil
	})
	helm(t, "uninstall", release, "-n", namespace, "--wait", "--timeout", "3m")
}
