// Package chart tests the Helm chart charts/ballast with the real helm binary: lint, the
// rendered manifests (decoded into the Kubernetes and Ballast types, strictly), render-time
// failures, and install/upgrade/uninstall into the real kube-apiserver the harness starts.
package chart

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/ballastk8s/ballast/test/harness"
)

var srv *harness.Servers

// The API server starts without Ballast's CRDs: the chart's crds/ folder installs them. The
// alpha Node field spec.podPreemptionPolicy (the resize guard's) is on, so the Node policy is
// tested against the field it bounds.
func TestMain(m *testing.M) {
	harness.Main(m, harness.Need{Kube: true, KubeOptions: harness.KubeOptions{WithoutCRDs: true,
		APIServerFlags: map[string]string{"feature-gates": "InPlacePodVerticalScalingSchedulerPreemption=true"}}}, &srv)
}

const (
	release   = "ballast"
	namespace = "ballast-system"
	fullname  = "ballast" // release name contains the chart name
)

func chartDir() string { return filepath.Join(harness.RepoRoot(), "charts", "ballast") }

// helm runs the real helm binary with its cache, config and data homes in a temp dir.
type helm struct {
	bin  string
	home string
}

func newHelm(t *testing.T) *helm {
	t.Helper()
	bin, err := harness.Tool("helm")
	if err != nil {
		t.Fatal(err)
	}
	return &helm{bin: bin, home: t.TempDir()}
}

// run returns stdout; the error carries stderr.
func (h *helm) run(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, h.bin, args...)
	cmd.Env = append(os.Environ(),
		"HELM_CACHE_HOME="+filepath.Join(h.home, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(h.home, "config"),
		"HELM_DATA_HOME="+filepath.Join(h.home, "data"),
		"KUBECONFIG="+filepath.Join(h.home, "no-kubeconfig"), // only --kubeconfig reaches a cluster
	)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("helm %s: %w: %s", strings.Join(args, " "), err, errb.String())
	}
	return out.String(), nil
}

// offline lets a render without a cluster generate Valkey passwords (the chart otherwise
// refuses: they would change on every render); later --set arguments override it.
const offline = "--set=valkey.auth.allowGeneratedPasswordsOffline=true"

// template renders the chart as release "ballast" in "ballast-system" with extra helm args
// (and offline first).
func (h *helm) template(t *testing.T, args ...string) (*manifests, error) {
	t.Helper()
	out, err := h.run(ctx(t), append([]string{"template", release, chartDir(), "--namespace", namespace, offline}, args...)...)
	if err != nil {
		return nil, err
	}
	return parseManifests(t, out), nil
}

// mustTemplate is template that fails the test on a render error.
func (h *helm) mustTemplate(t *testing.T, args ...string) *manifests {
	t.Helper()
	m, err := h.template(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	return c
}

// object is one rendered document.
type object struct {
	APIVersion string
	Kind       string
	Name       string
	Namespace  string
	JSON       []byte
}

// manifests are the documents of one render, keyed by "Kind/name".
type manifests struct {
	byKey map[string]object
	order []string
	raw   string // the rendered text
}

func parseManifests(t *testing.T, out string) *manifests {
	t.Helper()
	m := &manifests{byKey: map[string]object{}, raw: out}
	r := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(out)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("splitting rendered manifests: %v", err)
		}
		j, err := yaml.YAMLToJSON(doc)
		if err != nil {
			t.Fatalf("rendered document is not YAML: %v\n%s", err, doc)
		}
		if string(j) == "null" {
			continue // comments only
		}
		var meta struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Metadata   struct {
				Name      string `json:"name"`
				Namespace string `json:"namespace"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal(j, &meta); err != nil {
			t.Fatalf("rendered document: %v\n%s", err, doc)
		}
		if meta.Kind == "" || meta.Metadata.Name == "" {
			t.Fatalf("rendered document without kind or name:\n%s", doc)
		}
		key := meta.Kind + "/" + meta.Metadata.Name
		if _, dup := m.byKey[key]; dup {
			t.Fatalf("%s rendered twice", key)
		}
		m.byKey[key] = object{APIVersion: meta.APIVersion, Kind: meta.Kind, Name: meta.Metadata.Name,
			Namespace: meta.Metadata.Namespace, JSON: j}
		m.order = append(m.order, key)
	}
	return m
}

// keys lists "Kind/name" of every document, sorted.
func (m *manifests) keys() []string {
	out := append([]string(nil), m.order...)
	sort.Strings(out)
	return out
}

func (m *manifests) has(kind, name string) bool {
	_, ok := m.byKey[kind+"/"+name]
	return ok
}

// decode strictly decodes Kind/name into into: a field the type does not know (a typo in a
// template) fails the test.
func (m *manifests) decode(t *testing.T, kind, name string, into any) {
	t.Helper()
	o, ok := m.byKey[kind+"/"+name]
	if !ok {
		t.Fatalf("%s/%s not rendered; rendered: %v", kind, name, m.keys())
	}
	if err := yaml.UnmarshalStrict(o.JSON, into); err != nil {
		t.Fatalf("decoding %s/%s: %v\n%s", kind, name, err, o.JSON)
	}
}

// generic decodes Kind/name as a map, for kinds without Go types here (cert-manager, the
// Prometheus Operator).
func (m *manifests) generic(t *testing.T, kind, name string) map[string]any {
	t.Helper()
	var out map[string]any
	m.decode(t, kind, name, &out)
	return out
}
