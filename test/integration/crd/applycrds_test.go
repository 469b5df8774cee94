package crd

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-logr/logr/funcr"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/control/crds"
	"github.com/ballastk8s/ballast/test/harness"
)

func resourceVersions(t *testing.T, cx context.Context, c client.Client) map[string]string {
	t.Helper()
	list := &apiextv1.CustomResourceDefinitionList{}
	if err := c.List(cx, list); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, crd := range list.Items {
		if crd.Spec.Group == ballastv1.GroupVersion.Group {
			out[crd.Name] = crd.ResourceVersion
		}
	}
	return out
}

// TestApplyCRDs installs into an API server that has no Ballast CRDs yet, re-applies with
// no change, then upgrades a CRD that was missing a field.
func TestApplyCRDs(t *testing.T) {
	kube, err := harness.StartKube(harness.KubeOptions{WithoutCRDs: true})
	if err != nil {
		t.Fatal(err)
	}
	defer kube.Stop()
	cx := ctx(t)
	dc, err := dynamic.NewForConfig(kube.Config)
	if err != nil {
		t.Fatal(err)
	}
	ms, err := ballastv1.CRDs()
	if err != nil {
		t.Fatal(err)
	}
	var logged []string
	log := funcr.New(func(prefix, args string) { logged = append(logged, args) }, funcr.Options{})

	// An older CRD without metricssources' reservoirSize, as a previous release had it.
	var old []ballastv1.Manifest
	for _, m := range ms {
		if strings.Contains(m.Name, "metricssources") {
			data := strings.Replace(string(m.Data), "              reservoirSize:\n", "              reservoirSizeOld:\n", 1)
			if data == string(m.Data) {
				t.Fatal("test setup: could not find reservoirSize in the metricssources manifest")
			}
			m = ballastv1.Manifest{Name: m.Name, Data: []byte(data)}
		}
		old = append(old, m)
	}
	if err := crds.Apply(cx, dc, old, log); err != nil {
		t.Fatalf("first apply: %v", err)
	}
	if err := crds.Apply(cx, dc, ms, log); err != nil {
		t.Fatalf("upgrade apply: %v", err)
	}
	crd := &apiextv1.CustomResourceDefinition{}
	if err := kube.Client.Get(cx, client.ObjectKey{Name: "metricssources.ballast.tightlinesoftware.com"}, crd); err != nil {
		t.Fatal(err)
	}
	props := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["config"].Properties
	if _, ok := props["reservoirSize"]; !ok {
		t.Errorf("upgrade did not add reservoirSize; config properties: %v", keys(props))
	}
	if _, ok := props["reservoirSizeOld"]; ok {
		t.Error("upgrade kept the removed field: apply-crds must own the whole schema")
	}
	for _, f := range crd.ManagedFields {
		if f.Manager != ballastv1.CRDFieldManager && f.Operation == "Apply" {
			t.Errorf("unexpected apply manager %q", f.Manager)
		}
	}

	before := resourceVersions(t, cx, kube.Client)
	if len(before) != 6 {
		t.Fatalf("installed %d Ballast CRDs, want 6: %v", len(before), before)
	}
	logged = nil
	if err := crds.Apply(cx, dc, ms, log); err != nil {
		t.Fatalf("re-apply: %v", err)
	}
	if after := resourceVersions(t, cx, kube.Client); !equalMaps(before, after) {
		t.Errorf("re-applying unchanged CRDs changed them: before %v after %v", before, after)
	}
	if len(logged) != 6 || !strings.Contains(logged[0], `"applied CRD"`) {
		t.Errorf("want one 'applied CRD' line per CRD, got %q", logged)
	}

	// Anything but a CRD is refused before anything is applied.
	bad := append([]ballastv1.Manifest{{Name: "cm.yaml", Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")}}, ms...)
	if err := crds.Apply(cx, dc, bad, log); err == nil || !strings.Contains(err.Error(), "not a CustomResourceDefinition") {
		t.Errorf("applying a ConfigMap manifest: err = %v", err)
	}
	if err := crds.Apply(cx, dc, nil, log); err != crds.ErrNoManifests {
		t.Errorf("applying nothing: err = %v, want ErrNoManifests", err)
	}
}

// TestApplyCRDsBinary runs the real ballast-control binary twice and against an
// unreachable server, checking exit codes and output.
func TestApplyCRDsBinary(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "ballast-control")
	build := exec.Command("go", "build", "-o", bin, "./cmd/ballast-control")
	build.Dir = harness.RepoRoot()
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building ballast-control: %v\n%s", err, out)
	}
	for i := 0; i < 2; i++ {
		out, err := exec.Command(bin, "--kubeconfig", srv.Kube.Kubeconfig, "apply-crds").CombinedOutput()
		if err != nil {
			t.Fatalf("run %d: %v\n%s", i+1, err, out)
		}
		if n := strings.Count(string(out), `"msg":"applied CRD"`); n != 6 {
			t.Errorf("run %d logged %d 'applied CRD' lines, want 6:\n%s", i+1, n, out)
		}
	}
	// A kubeconfig pointing at a port where nothing listens.
	port, err := harness.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(t.TempDir(), "kubeconfig")
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: gone, cluster: {server: "https://127.0.0.1:%d", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: x}}]
contexts: [{name: c, context: {cluster: gone, user: u}}]
current-context: c
`, port)
	if err := os.WriteFile(bad, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--kubeconfig", bad, "apply-crds")
	out, err := cmd.CombinedOutput()
	if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 1 {
		t.Errorf("against an unreachable server: err %v, want exit code 1\n%s", err, out)
	}
	if !strings.Contains(string(out), "applying CRD") {
		t.Errorf("failure output does not say what failed:\n%s", out)
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
