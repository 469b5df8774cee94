package chart

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	storagev1 "k8s.io/api/storage/v1"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
)

// TestInstallUpgradeUninstall installs the chart into the real API server with the built-in
// certificate mode (cert-manager's CRDs are absent), upgrades and uninstalls it. There are
// no nodes, so no pod runs: the test plays the kubelet for the CRD hook Job (running the real
// `ballast-control apply-crds` as the hook's ServiceAccount) and runs the real ballast-control
// binary with the chart's arguments as the chart's ServiceAccount, which proves the rendered
// RBAC and flags are enough for it.
func TestInstallUpgradeUninstall(t *testing.T) {
	h := newHelm(t)
	cx := ctx(t)
	c := srv.Kube.Client
	control := buildControl(t)
	conn := []string{"--kubeconfig", srv.Kube.Kubeconfig, "--namespace", namespace, "--timeout", "2m"}
	// install and upgrade: cert-manager's CRDs are absent, so the built-in certificate mode.
	helmDo := func(args ...string) (string, error) {
		return h.run(cx, slices.Concat(args, conn, []string{"--set", "certManager.enabled=false"})...)
	}

	// Guard 2 (SPEC §13.5): a classless PVC on a reachable cluster needs a default StorageClass.
	out, err := helmDo("install", release, chartDir(), "--dry-run=server")
	if err == nil || !strings.Contains(err.Error(), "the cluster has no default StorageClass") {
		t.Fatalf("install without a default StorageClass: err = %v\n%s", err, out)
	}
	sc := &storagev1.StorageClass{
		ObjectMeta:  metav1.ObjectMeta{Name: "standard", Annotations: map[string]string{"storageclass.kubernetes.io/is-default-class": "true"}},
		Provisioner: "example.com/none",
	}
	if err := c.Create(cx, sc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), sc) })

	hooks := startHookRunner(t, control)

	// Install.
	if out, err := helmDo("install", release, chartDir(), "--create-namespace"); err != nil {
		t.Fatalf("%v\n%s\nCRD hook: %v", err, out, hooks.err())
	} else if !strings.Contains(out, "ballast-control keeps its own CA") {
		t.Errorf("NOTES do not explain the built-in certificate mode:\n%s", notes(out))
	}
	if n := hooks.runs(); n != 1 {
		t.Errorf("CRD hook ran %d times during install, want 1", n)
	}
	checkInstalled(t, cx)

	// The real control plane, as the chart's ServiceAccount with the chart's arguments.
	runControlPlane(t, cx, control)

	// A manual suspension survives an upgrade: the chart never renders spec.suspended.
	bc := &ballastv1.BallastConfig{}
	if err := c.Get(cx, client.ObjectKey{Name: "ballast"}, bc); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(bc.DeepCopy())
	bc.Spec.Suspended = true
	if err := c.Patch(cx, bc, patch); err != nil {
		t.Fatal(err)
	}
	mwc := &admissionregistrationv1.MutatingWebhookConfiguration{}
	if err := c.Get(cx, client.ObjectKey{Name: fullname}, mwc); err != nil {
		t.Fatal(err)
	}
	caBundle := mwc.Webhooks[0].ClientConfig.CABundle
	storePassword := valkeyPassword(t, cx)
	agentPassword := secretPassword(t, cx, release+"-valkey-agent-auth")
	valkeyChecksums := valkeyAuthChecksums(t, cx)

	// Upgrade with a changed value.
	if out, err := helmDo("upgrade", release, chartDir(), "--set", "logging.level=debug"); err != nil {
		t.Fatalf("%v\n%s\nCRD hook: %v", err, out, hooks.err())
	}
	if n := hooks.runs(); n != 2 {
		t.Errorf("CRD hook ran %d times after the upgrade, want 2", n)
	}
	d := &appsv1.Deployment{}
	if err := c.Get(cx, client.ObjectKey{Namespace: namespace, Name: fullname}, d); err != nil {
		t.Fatal(err)
	}
	if args := d.Spec.Template.Spec.Containers[0].Args; !slices.Contains(args, "--log-level=debug") {
		t.Errorf("upgrade did not change the args: %q", args)
	}
	if err := c.Get(cx, client.ObjectKey{Name: "ballast"}, bc); err != nil {
		t.Fatal(err)
	}
	if !bc.Spec.Suspended {
		t.Error("the upgrade reverted a manual suspension (spec.suspended)")
	}
	if err := c.Get(cx, client.ObjectKey{Name: fullname}, mwc); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(mwc.Webhooks[0].ClientConfig.CABundle, caBundle) {
		t.Error("the upgrade dropped the caBundle ballast-control wrote into the webhook configuration")
	}

	if got := valkeyPassword(t, cx); got != storePassword {
		t.Error("the upgrade changed the generated Valkey password (the Secret must be looked up and kept)")
	}
	if got := secretPassword(t, cx, release+"-valkey-agent-auth"); got != agentPassword || got == storePassword {
		t.Error("the upgrade changed the agents' Valkey password, or it equals the control plane's")
	}
	if got := valkeyAuthChecksums(t, cx); got != valkeyChecksums || got[0] == "" {
		t.Errorf("the upgrade changed the Valkey pod's password checksums %q to %q: it would restart Valkey for nothing", valkeyChecksums, got)
	}

	checkLiveStorageGuards(t, cx, helmDo)

	// Uninstall removes everything the release created; CRDs and their objects' kinds stay.
	if out, err := h.run(cx, slices.Concat([]string{"uninstall", release}, conn)...); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	checkUninstalled(t, cx)
	hooks.stop(t)
}

// checkInstalled checks the objects of an install on the API server.
func checkInstalled(t *testing.T, cx context.Context) {
	t.Helper()
	c := srv.Kube.Client
	crds := &apiextv1.CustomResourceDefinitionList{}
	if err := c.List(cx, crds); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, crd := range crds.Items {
		if crd.Spec.Group != ballastv1.GroupVersion.Group {
			continue
		}
		names = append(names, crd.Name)
		managers := map[string]bool{}
		for _, f := range crd.ManagedFields {
			managers[f.Manager] = true
		}
		// helm installed crds/; the hook's apply-crds then took ownership.
		if !managers[ballastv1.CRDFieldManager] {
			t.Errorf("CRD %s was not applied by the hook (managers %v)", crd.Name, managers)
		}
	}
	if len(names) != 6 {
		t.Errorf("Ballast CRDs installed: %v, want 6", names)
	}

	exist := []client.Object{
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: fullname}},
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "ballast-valkey"}},
		&appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "ballast-node"}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "ballast-webhook"}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "ballast-valkey"}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: fullname}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "ballast-node"}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: fullname}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "ballast-node"}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "ballast-webhook-cert"}},
		&ballastv1.MetricsSource{ObjectMeta: metav1.ObjectMeta{Name: "kubernetes-metrics"}},
		&ballastv1.MetricsSource{ObjectMeta: metav1.ObjectMeta{Name: "kubelet-summary"}},
	}
	for _, o := range exist {
		if err := c.Get(cx, client.ObjectKeyFromObject(o), o); err != nil {
			t.Errorf("%T %s: %v", o, o.GetName(), err)
		}
	}
	// Hooks delete themselves after success.
	for _, o := range crdHookObjects() {
		if err := c.Get(cx, client.ObjectKeyFromObject(o), o); !apierrors.IsNotFound(err) {
			t.Errorf("hook object %T %s still present after success: %v", o, o.GetName(), err)
		}
	}

	mwc := &admissionregistrationv1.MutatingWebhookConfiguration{}
	if err := c.Get(cx, client.ObjectKey{Name: fullname}, mwc); err != nil {
		t.Fatal(err)
	}
	if len(mwc.Webhooks) != 1 || mwc.Webhooks[0].Name != ballastv1.WebhookName ||
		mwc.Webhooks[0].ClientConfig.Service == nil || mwc.Webhooks[0].ClientConfig.Service.Name != "ballast-webhook" {
		t.Errorf("webhook configuration: %+v", mwc.Webhooks)
	}

	bc := &ballastv1.BallastConfig{}
	if err := c.Get(cx, client.ObjectKey{Name: "ballast"}, bc); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(bc.Spec.IdentityLabels, []string{"app.kubernetes.io/name", "app.kubernetes.io/component"}) || bc.Spec.Suspended {
		t.Errorf("BallastConfig spec %+v", bc.Spec)
	}
	p := &ballastv1.ClusterResourcePolicy{}
	if err := c.Get(cx, client.ObjectKey{Name: "default"}, p); err != nil {
		t.Fatal(err)
	}
	if len(p.Spec.Metrics) != 5 || p.Spec.Readiness.MinDataPoints != 250 || p.Spec.Readiness.CVMeanFloor["memory"] != "25Mi" {
		t.Errorf("default policy spec as stored: %+v", p.Spec)
	}

	pvc := &corev1.PersistentVolumeClaim{}
	if err := c.Get(cx, client.ObjectKey{Namespace: namespace, Name: "ballast-valkey"}, pvc); err != nil {
		t.Fatal(err)
	}
	if ptr.Deref(pvc.Spec.StorageClassName, "") != "standard" {
		t.Errorf("PVC class %v, want the cluster default", pvc.Spec.StorageClassName)
	}
}

// checkLiveStorageGuards exercises guards 3 and 4 (SPEC §13.5) against the installed PVC,
// with server-side dry runs (lookups are live there).
func checkLiveStorageGuards(t *testing.T, cx context.Context, helmDo func(...string) (string, error)) {
	t.Helper()
	c := srv.Kube.Client
	pvc := &corev1.PersistentVolumeClaim{}
	if err := c.Get(cx, client.ObjectKey{Namespace: namespace, Name: "ballast-valkey"}, pvc); err != nil {
		t.Fatal(err)
	}
	// No volume controller runs here: play the one that bound the claim at 1Gi.
	pvc.Status.Phase = corev1.ClaimBound
	pvc.Status.AccessModes = pvc.Spec.AccessModes
	pvc.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}
	if err := c.Status().Update(cx, pvc); err != nil {
		t.Fatal(err)
	}
	upgrade := func(size string) error {
		_, err := helmDo("upgrade", release, chartDir(), "--dry-run=server", "--set", "valkey.dataStorage.requestedSize="+size)
		return err
	}
	if err := upgrade("1024Mi"); err != nil {
		t.Errorf("same capacity written differently: %v", err)
	}
	if err := upgrade("512Mi"); err == nil || !strings.Contains(err.Error(), "PVCs cannot shrink") ||
		!strings.Contains(err.Error(), "Set valkey.dataStorage.requestedSize to 1Gi") {
		t.Errorf("shrinking the PVC: err = %v", err)
	}
	if err := upgrade("2Gi"); err == nil || !strings.Contains(err.Error(), `StorageClass "standard" does not allow volume expansion`) {
		t.Errorf("growing a PVC whose class cannot expand: err = %v", err)
	}
	sc := &storagev1.StorageClass{}
	if err := c.Get(cx, client.ObjectKey{Name: "standard"}, sc); err != nil {
		t.Fatal(err)
	}
	sc.AllowVolumeExpansion = ptr.To(true)
	if err := c.Update(cx, sc); err != nil {
		t.Fatal(err)
	}
	if err := upgrade("2Gi"); err != nil {
		t.Errorf("growing a PVC whose class can expand: %v", err)
	}
}

func checkUninstalled(t *testing.T, cx context.Context) {
	t.Helper()
	c := srv.Kube.Client
	gone := []client.Object{
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: fullname}},
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "ballast-valkey"}},
		&appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "ballast-node"}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "ballast-webhook"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "ballast-valkey"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "ballast-valkey-auth"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "ballast-valkey-agent-auth"}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: fullname}},
		&admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: fullname}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: fullname}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "ballast-node"}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: fullname}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "ballast-killswitch"}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "ballast-leader-election"}},
		&ballastv1.BallastConfig{ObjectMeta: metav1.ObjectMeta{Name: "ballast"}},
		&ballastv1.MetricsSource{ObjectMeta: metav1.ObjectMeta{Name: "kubernetes-metrics"}},
		&ballastv1.ClusterResourcePolicy{ObjectMeta: metav1.ObjectMeta{Name: "default"}},
	}
	for _, o := range gone {
		if err := c.Get(cx, client.ObjectKeyFromObject(o), o); !apierrors.IsNotFound(err) {
			t.Errorf("%T %s survived uninstall: %v", o, o.GetName(), err)
		}
	}
	// The claim carries kubernetes.io/pvc-protection, which only kube-controller-manager
	// removes: deleted means terminating here.
	pvc := &corev1.PersistentVolumeClaim{}
	if err := c.Get(cx, client.ObjectKey{Namespace: namespace, Name: "ballast-valkey"}, pvc); err == nil && pvc.DeletionTimestamp == nil {
		t.Error("the Valkey PVC was not deleted by uninstall")
	}
	crd := &apiextv1.CustomResourceDefinition{}
	if err := c.Get(cx, client.ObjectKey{Name: "ballastconfigs.ballast.tightlinesoftware.com"}, crd); err != nil {
		t.Errorf("uninstall must keep the CRDs: %v", err)
	}
	// The chart creates ballast-control's certificate Secret (empty) and so removes it.
	sec := &corev1.Secret{}
	if err := c.Get(cx, client.ObjectKey{Namespace: namespace, Name: "ballast-webhook-cert"}, sec); !apierrors.IsNotFound(err) {
		t.Errorf("the webhook certificate Secret survived uninstall: %v", err)
		_ = c.Delete(cx, sec)
	}
}

func crdHookObjects() []client.Object {
	n := "ballast-crd-upgrade"
	return []client.Object{
		&batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: n}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: n}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: n}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: n}},
	}
}

// valkeyPassword is the password in the chart's generated Secret; it must be a usable one.
func valkeyPassword(t *testing.T, cx context.Context) string {
	t.Helper()
	sec := &corev1.Secret{}
	if err := srv.Kube.Client.Get(cx, client.ObjectKey{Namespace: namespace, Name: release + "-valkey-auth"}, sec); err != nil {
		t.Fatalf("the generated Valkey password Secret: %v", err)
	}
	pw := string(sec.Data["password"])
	if len(pw) < 32 {
		t.Fatalf("generated Valkey password has %d characters, want ≥ 32", len(pw))
	}
	return pw
}

// secretPassword is the password in one of the chart's generated Secrets.
func secretPassword(t *testing.T, cx context.Context, name string) string {
	t.Helper()
	sec := &corev1.Secret{}
	if err := srv.Kube.Client.Get(cx, client.ObjectKey{Namespace: namespace, Name: name}, sec); err != nil {
		t.Fatalf("the generated Secret %s: %v", name, err)
	}
	return string(sec.Data["password"])
}

// valkeyAuthChecksums are the Valkey pod template's password checksums (agent, control).
func valkeyAuthChecksums(t *testing.T, cx context.Context) [2]string {
	t.Helper()
	d := &appsv1.Deployment{}
	if err := srv.Kube.Client.Get(cx, client.ObjectKey{Namespace: namespace, Name: "ballast-valkey"}, d); err != nil {
		t.Fatal(err)
	}
	a := d.Spec.Template.Annotations
	return [2]string{a["checksum/auth-agent"], a["checksum/auth-control"]}
}
