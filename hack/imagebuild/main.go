// Command imagebuild writes Ballast's OCI image archives without a container engine:
// ballast-control, ballast-node, the test-bed load app and pause image (static Go binaries
// on an empty base), and a Valkey image assembled from the host's Debian valkey-server
// package files. Each archive is an OCI image layout in a tar, importable with
// `ctr -n k8s.io images import` or `skopeo copy oci-archive:...`.
//
// It is reproducible: the binaries are built with -trimpath -buildvcs=false and an empty
// build ID, every file in a layer and in the archive has the same fixed time
// (SOURCE_DATE_EPOCH, else the Unix epoch), entries are sorted, and owners are numeric.
// The same source therefore gives the same image digest (test/images checks it).
//
// It lives in its own module so that go-containerregistry never enters the product's
// module graph or binaries.
//
//	go -C hack/imagebuild run . -out ../../_output/images
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"
)

func main() {
	repo := flag.String("repo", "../..", "repository root (the module github.com/ballastk8s/ballast)")
	out := flag.String("out", "", "directory for the <image>.tar archives and digests.txt (required)")
	version := flag.String("version", "", "version tag of the Ballast images (default: the chart's appVersion)")
	prefix := flag.String("repository-prefix", "ballastk8s", "repository prefix of every image name")
	only := flag.String("only", "", "comma-separated image names to build (default: all)")
	valkeyServer := flag.String("valkey-server", "/usr/bin/valkey-server", "valkey-server binary to package")
	valkeyCLI := flag.String("valkey-cli", "/usr/bin/valkey-cli", "valkey-cli binary to package (the chart's readiness probe)")
	revision := flag.String("revision", "", "org.opencontainers.image.revision label (e.g. the git commit); omitted when empty")
	flag.Parse()
	if *out == "" {
		log.Fatal("imagebuild: -out is required")
	}
	root, err := filepath.Abs(*repo)
	if err != nil {
		log.Fatal(err)
	}
	if *version == "" {
		if *version, err = chartAppVersion(root); err != nil {
			log.Fatal(err)
		}
	}
	b := &builder{
		root: root, out: *out, version: *version, prefix: *prefix, revision: *revision,
		epoch: sourceDateEpoch(), valkeyServer: *valkeyServer, valkeyCLI: *valkeyCLI,
	}
	want := map[string]bool{}
	for _, n := range strings.Split(*only, ",") {
		if n = strings.TrimSpace(n); n != "" {
			want[n] = true
		}
	}
	if err := b.run(want); err != nil {
		fmt.Fprintln(os.Stderr, "imagebuild:", err)
		os.Exit(1)
	}
}

// chartAppVersion reads appVersion from charts/ballast/Chart.yaml, so the chart's default
// tag and the built images cannot drift apart.
func chartAppVersion(root string) (string, error) {
	b, err := os.ReadFile(filepath.Join(root, "charts", "ballast", "Chart.yaml"))
	if err != nil {
		return "", fmt.Errorf("reading the chart's appVersion: %w", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "appVersion:"); ok {
			return strings.Trim(strings.TrimSpace(v), `"'`), nil
		}
	}
	return "", fmt.Errorf("charts/ballast/Chart.yaml has no appVersion")
}
