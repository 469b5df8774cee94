// Package images checks the image archives `make images` writes (hack/imagebuild): two
// builds of the same source give the same digests, and every image is a static binary on
// an empty base that runs as a non-root user, with the OCI labels and the names the chart
// defaults to.
package images

import (
	"archive/tar"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/ballastk8s/ballast/test/harness"
)

// Build runs hack/imagebuild into out (what `make images` runs).
func build(t *testing.T, out string) string {
	t.Helper()
	cmd := exec.Command("go", "run", ".", "-out", out)
	cmd.Dir = filepath.Join(harness.RepoRoot(), "hack", "imagebuild")
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("imagebuild: %v\n%s", err, b)
	}
	d, err := os.ReadFile(filepath.Join(out, "digests.txt"))
	if err != nil {
		t.Fatal(err)
	}
	return string(d)
}

func TestImagesAreReproducible(t *testing.T) {
	if testing.Short() {
		t.Skip("builds every image twice")
	}
	a, b := t.TempDir(), t.TempDir()
	da, db := build(t, a), build(t, b)
	if da != db {
		t.Fatalf("two builds of the same source differ:\n%s\n---\n%s", da, db)
	}
	version := chartField(t, "appVersion")
	for _, name := range []string{"ballast-control", "ballast-node", "ballast-loadapp", "pause", "valkey"} {
		t.Run(name, func(t *testing.T) { checkImage(t, filepath.Join(a, name+".tar"), name, version) })
	}
	// The chart's defaults name exactly these images.
	var values struct {
		Image struct{ Repository string }
		Agent struct{ Image struct{ Repository string } }
	}
	raw, err := os.ReadFile(filepath.Join(harness.RepoRoot(), "charts", "ballast", "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(raw, &values); err != nil {
		t.Fatal(err)
	}
	for _, repo := range []string{values.Image.Repository, values.Agent.Image.Repository} {
		if !strings.Contains(da, "docker.io/"+repo+":"+version+" ") {
			t.Errorf("the chart's default image %s:%s is not what make images builds:\n%s", repo, version, da)
		}
	}
}

type ociConfig struct {
	Architecture string `json:"architecture"`
	OS           string `json:"os"`
	Created      string `json:"created"`
	Config       struct {
		User       string            `json:"User"`
		Entrypoint []string          `json:"Entrypoint"`
		Labels     map[string]string `json:"Labels"`
	} `json:"config"`
	RootFS struct {
		DiffIDs []string `json:"diff_ids"`
	} `json:"rootfs"`
}

// checkImage reads the archive with the standard library only: index → manifest → config.
func checkImage(t *testing.T, archive, name, version string) {
	blobs := readTar(t, archive)
	var index struct {
		Manifests []struct {
			MediaType   string            `json:"mediaType"`
			Digest      string            `json:"digest"`
			Annotations map[string]string `json:"annotations"`
		} `json:"manifests"`
	}
	mustJSON(t, blobs["index.json"], &index)
	if len(index.Manifests) != 1 {
		t.Fatalf("index has %d manifests, want 1", len(index.Manifests))
	}
	m := index.Manifests[0]
	if m.MediaType != "application/vnd.oci.image.manifest.v1+json" {
		t.Errorf("manifest media type %q, want OCI", m.MediaType)
	}
	ref := m.Annotations["io.containerd.image.name"]
	if !strings.HasPrefix(ref, "docker.io/ballastk8s/"+name+":") {
		t.Errorf("image name %q", ref)
	}
	var manifest struct {
		Config struct{ Digest string }      `json:"config"`
		Layers []struct{ MediaType string } `json:"layers"`
	}
	mustJSON(t, blobs[blobPath(m.Digest)], &manifest)
	if len(manifest.Layers) != 1 {
		t.Errorf("%d layers, want one on an empty base", len(manifest.Layers))
	}
	var cfg ociConfig
	mustJSON(t, blobs[blobPath(manifest.Config.Digest)], &cfg)
	if u := cfg.Config.User; u == "" || strings.HasPrefix(u, "0") || strings.HasPrefix(u, "root") {
		t.Errorf("user %q, want a non-root numeric uid", u)
	}
	if cfg.OS != "linux" || cfg.Created != "1970-01-01T00:00:00Z" || len(cfg.Config.Entrypoint) != 1 {
		t.Errorf("config: os %q created %q entrypoint %v", cfg.OS, cfg.Created, cfg.Config.Entrypoint)
	}
	for _, k := range []string{"title", "description", "version", "source", "created"} {
		if cfg.Config.Labels["org.opencontainers.image."+k] == "" {
			t.Errorf("label org.opencontainers.image.%s missing; labels %v", k, cfg.Config.Labels)
		}
	}
	if name != "valkey" && cfg.Config.Labels["org.opencontainers.image.version"] != version {
		t.Errorf("version label %q, want the chart's appVersion %q", cfg.Config.Labels["org.opencontainers.image.version"], version)
	}
}

func blobPath(digest string) string { return "blobs/" + strings.Replace(digest, ":", "/", 1) }

func readTar(t *testing.T, path string) map[string][]byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string][]byte{}
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("reading %s: %v", path, err)
		}
		if h.Typeflag == tar.TypeReg {
			if out[h.Name], err = io.ReadAll(tr); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func mustJSON(t *testing.T, b []byte, into any) {
	t.Helper()
	if b == nil {
		t.Fatal("blob missing from the archive")
	}
	if err := json.Unmarshal(b, into); err != nil {
		t.Fatal(err)
	}
}

// chartField reads a top-level scalar of charts/ballast/Chart.yaml.
func chartField(t *testing.T, key string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(harness.RepoRoot(), "charts", "ballast", "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, key+":"); ok {
			return strings.Trim(strings.TrimSpace(v), `"'`)
		}
	}
	t.Fatalf("Chart.yaml has no %s", key)
	return ""
}
