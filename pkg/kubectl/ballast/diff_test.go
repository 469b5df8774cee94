package ballast

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.yaml.in/yaml/v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/diff/golden")

const diffData = "testdata/diff"

type runResult struct {
	code           int
	stdout, stderr string
}

func runPlugin(t *testing.T, args ...string) runResult {
	t.Helper()
	var out, errOut bytes.Buffer
	code := Run(context.Background(), args, genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	return runResult{code, out.String(), errOut.String()}
}

func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	p := filepath.Join(diffData, "golden", name+".golden")
	if *update {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if d := cmp.Diff(string(want), got); d != "" {
		t.Errorf("%s differs from %s (-want +got):\n%s", name, p, d)
	}
}

// offline are the arguments that size from the profile dump instead of a cluster.
var offline = []string{"--profiles", diffData + "/profiles.yaml", "--kubeconfig", "/nonexistent"}

func TestDiffGolden(t *testing.T) {
	cases := map[string][]string{
		// Multi-document file, comments everywhere, quoted values, a native sidecar
		// without resources, a run-to-completion init container, a literal block, a
		// container the profile does not know, a Service (not a workload).
		"web": {"-f", diffData + "/manifests/web.yaml"},
		// A List whose second Deployment aliases the first one's template (one edit
		// serves both), an anchor two containers want different sizes of, a merge key.
		"anchors": {"-f", diffData + "/manifests/anchors.yaml"},
		// CronJob (jobTemplate) with resources: {}, a Job whose request is clamped to
		// its limit, a Pod with an empty requests:, an Accruing profile, a template
		// without a profile, an unknown custom kind.
		"batch": {"-f", diffData + "/manifests/batch.yaml"},
		// Four-space indentation: inserted blocks follow the file's step.
		"wide-indent": {"-f", diffData + "/manifests/wide-indent.yaml"},
		// A directory: every *.yaml below it, in name order.
		"directory": {"-f", diffData + "/manifests"},
		// Helm values: nested resources keys, a list item named by `name`, a flow
		// mapping, the top-level resources named by --helm-key, an unknown container.
		"helm": {"--helm-values", diffData + "/helm/values.yaml", "--helm-profile", "shop--chart--default-a9696153",
			"--helm-key", "resources=app"},
		// kustomize build output (namespace set by the kustomization).
		"kustomize": {"-k", diffData + "/kustomize"},
	}
	for name, args := range cases {
		t.Run(name, func(t *testing.T) {
			r := runPlugin(t, append(append([]string{"diff"}, args...), offline...)...)
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			checkGolden(t, name, r.stdout+"# stderr\n"+r.stderr)
		})
	}
}

// TestDiffWriteIdempotent writes the change in place, then checks that a second diff
// finds nothing and a second --write writes nothing, and that --write made exactly the
// change diff printed (the files equal the golden diff applied, via a re-run of diff
// against the originals).
func TestDiffWriteIdempotent(t *testing.T) {
	dir := t.TempDir()
	files := []string{"manifests/anchors.yaml", "manifests/batch.yaml", "manifests/web.yaml", "manifests/wide-indent.yaml", "helm/values.yaml"}
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(diffData, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	args := func(extra ...string) []string {
		a := []string{"diff", "-f", filepath.Join(dir, "manifests"),
			"--helm-values", filepath.Join(dir, "helm/values.yaml"), "--helm-profile", "shop--chart--default-a9696153",
			"--helm-key", "resources=app"}
		return append(append(a, extra...), offline...)
	}
	first := runPlugin(t, args("--write")...)
	if first.code != 0 || strings.Count(first.stdout, "wrote ") != len(files) {
		t.Fatalf("first --write: exit %d, stdout %q, stderr %s", first.code, first.stdout, first.stderr)
	}
	if again := runPlugin(t, args("--exit-code")...); again.code != 0 || again.stdout != "" {
		t.Fatalf("diff after --write: exit %d, want 0 and no diff; got:\n%s", again.code, again.stdout)
	}
	if again := runPlugin(t, args("--write")...); again.code != 0 || again.stdout != "" {
		t.Fatalf("second --write: exit %d, want nothing written; got %q", again.code, again.stdout)
	}
	// The written files must be what the printed diff describes: diff the originals
	// against the written files with the same renderer and compare with diff's output.
	for _, f := range files {
		orig, _ := os.ReadFile(filepath.Join(diffData, f))
		written, _ := os.ReadFile(filepath.Join(dir, f))
		name := filepath.ToSlash(filepath.Clean(filepath.Join(diffData, f)))
		printed := runPlugin(t, "diff", "-f", filepath.Join(diffData, f), "--profiles", diffData+"/profiles.yaml", "--kubeconfig", "/nonexistent")
		if strings.HasPrefix(f, "helm/") {
			printed = runPlugin(t, "diff", "--helm-values", filepath.Join(diffData, f), "--helm-profile", "shop--chart--default-a9696153",
				"--helm-key", "resources=app", "--profiles", diffData+"/profiles.yaml", "--kubeconfig", "/nonexistent")
		}
		if d := cmp.Diff(printed.stdout, unifiedDiff(name, orig, written)); d != "" {
			t.Errorf("%s: --write wrote something else than diff printed (-printed +written):\n%s", f, d)
		}
	}
}

func TestDiffExitCode(t *testing.T) {
	r := runPlugin(t, append([]string{"diff", "--exit-code", "-f", diffData + "/manifests/web.yaml"}, offline...)...)
	if r.code != ExitDiff || r.stdout == "" {
		t.Fatalf("exit %d with %d bytes of diff, want %d and a diff", r.code, len(r.stdout), ExitDiff)
	}
	r = runPlugin(t, append([]string{"diff", "--write", "-k", diffData + "/kustomize"}, offline...)...)
	if r.code != ExitUsage || !strings.Contains(r.stderr, "--write cannot write kustomize") {
		t.Fatalf("--write with -k: exit %d, stderr %q", r.code, r.stderr)
	}
}

func TestUnifiedDiff(t *testing.T) {
	cases := map[string]struct{ a, b, want string }{
		"equal": {"x\n", "x\n", ""},
		"change in the middle": {"1\n2\n3\n4\n5\n6\n7\n8\n9\n", "1\n2\n3\n4\nfive\n6\n7\n8\n9\n",
			"--- a/f\n+++ b/f\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n"},
		"insert at the top":     {"a\nb\n", "new\na\nb\n", "--- a/f\n+++ b/f\n@@ -1,2 +1,3 @@\n+new\n a\n b\n"},
		"no newline at the end": {"a\nb", "a\nc", "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n"},
		"two hunks": {"1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n", "one\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\ntwelve\n",
			"--- a/f\n+++ b/f\n@@ -1,4 +1,4 @@\n-1\n+one\n 2\n 3\n 4\n@@ -9,4 +9,4 @@\n 9\n 10\n 11\n-12\n+twelve\n"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, unifiedDiff("f", []byte(tc.a), []byte(tc.b))); d != "" {
				t.Error(d)
			}
		})
	}
}

// TestDiffChangesOnlyResources checks every golden input against what --write makes of
// it: both parse, decoded (aliases resolved) they are equal outside `resources` keys, and
// every resources map written decodes as Kubernetes resource requirements.
func TestDiffChangesOnlyResources(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"manifests/anchors.yaml", "manifests/batch.yaml", "manifests/web.yaml", "manifests/wide-indent.yaml", "helm/values.yaml"} {
		t.Run(f, func(t *testing.T) {
			orig, err := os.ReadFile(filepath.Join(diffData, f))
			if err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(dir, filepath.Base(f))
			if err := os.WriteFile(p, orig, 0o644); err != nil {
				t.Fatal(err)
			}
			args := []string{"diff", "--write", "-f", p}
			if strings.HasPrefix(f, "helm/") {
				args = []string{"diff", "--write", "--helm-values", p, "--helm-profile", "shop--chart--default-a9696153", "--helm-key", "resources=app"}
			}
			if r := runPlugin(t, append(args, offline...)...); r.code != 0 || r.stdout == "" {
				t.Fatalf("--write: exit %d, stdout %q: %s", r.code, r.stdout, r.stderr)
			}
			written, _ := os.ReadFile(p)
			before, after := decodeAll(t, orig), decodeAll(t, written)
			if d := cmp.Diff(withoutResources(before, nil), withoutResources(after, nil)); d != "" {
				t.Errorf("something outside resources changed (-before +after):\n%s", d)
			}
			var checked int
			withoutResources(after, func(v any) {
				checked++
				js, _ := json.Marshal(v)
				var rr corev1.ResourceRequirements
				if err := json.Unmarshal(js, &rr); err != nil {
					t.Errorf("written resources %s do not decode: %v", js, err)
				}
			})
			if checked == 0 {
				t.Error("no resources found in the written file")
			}
		})
	}
}

func decodeAll(t *testing.T, b []byte) []any {
	t.Helper()
	out, err := tryDecodeAll(b)
	if err != nil {
		t.Fatalf("does not parse: %v", err)
	}
	return out
}

func tryDecodeAll(b []byte) ([]any, error) {
	var out []any
	dec := yaml.NewDecoder(bytes.NewReader(b))
	for {
		var v any
		if err := dec.Decode(&v); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, err
		}
		out = append(out, v)
	}
}

// withoutResources copies v with every `resources` value removed, handing each to visit.
func withoutResources(v any, visit func(any)) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			if k == "resources" {
				if visit != nil {
					visit(e)
				}
				continue
			}
			out[k] = withoutResources(e, visit)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = withoutResources(e, visit)
		}
		return out
	}
	return v
}

// TestDiffCRLF: a file with CRLF line ends gets CRLF in the lines Ballast adds.
func TestDiffCRLF(t *testing.T) {
	src := strings.ReplaceAll(`apiVersion: v1
kind: Pod
metadata:
  name: debug
  namespace: shop
  labels: {app.kubernetes.io/name: debug, app.kubernetes.io/component: shell}
spec:
  containers:
  - name: shell
    image: busybox
`, "\n", "\r\n")
	p := filepath.Join(t.TempDir(), "pod.yaml")
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := runPlugin(t, append([]string{"diff", "--write", "-f", p}, offline...)...); r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	got, _ := os.ReadFile(p)
	want := src + strings.ReplaceAll("    resources:\n      requests:\n        cpu: 10m\n        memory: 16Mi\n", "\n", "\r\n")
	if d := cmp.Diff(want, string(got)); d != "" {
		t.Error(d)
	}
}
