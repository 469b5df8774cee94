package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"
)

// builder holds one run's settings.
type builder struct {
	root, out, version, prefix, revision string
	epoch                                time.Time
	valkeyServer, valkeyCLI              string
}

// spec is one image: its files and its config.
type spec struct {
	name        string // short name, also the archive's file name
	tag         string
	description string
	entrypoint  []string
	user        int    // numeric uid = gid
	pkg         string // Go package of the binary (built static), or "" for valkey
	files       []file // filled in by run
}

func (b *builder) specs() []*spec {
	return []*spec{
		{name: "ballast-control", tag: b.version, pkg: "./cmd/ballast-control", entrypoint: []string{"/ballast-control"}, user: 65532,
			description: "Ballast control plane: policies, profiles, the admission webhook and in-place resizes"},
		{name: "ballast-node", tag: b.version, pkg: "./cmd/ballast-node", entrypoint: []string{"/ballast-node"}, user: 65532,
			description: "Ballast node agent: samples cgroups and the kubelet, writes histograms to Valkey"},
		{name: "ballast-loadapp", tag: b.version, pkg: "./test/loadapp", entrypoint: []string{"/ballast-loadapp"}, user: 65532,
			description: "Ballast test load: burns a set cpu, holds a set memory, OOMs on request (tests only)"},
		{name: "pause", tag: b.version, pkg: "./test/node/pause", entrypoint: []string{"/pause"}, user: 65532,
			description: "Sandbox (pause) image of Ballast's real-node test tier"},
		{name: "valkey", description: "Valkey server and cli from the Debian valkey-server package, for the chart's subchart",
			entrypoint: []string{"/usr/bin/valkey-server"}, user: 999},
	}
}

func (b *builder) run(want map[string]bool) error {
	var specs []*spec
	for _, s := range b.specs() {
		if len(want) == 0 || want[s.name] {
			specs = append(specs, s)
		}
	}
	if len(specs) == 0 {
		return fmt.Errorf("no image selected")
	}
	if err := os.MkdirAll(b.out, 0o755); err != nil {
		return err
	}
	bins, err := os.MkdirTemp("", "imagebuild-bin-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(bins)
	var pkgs []string
	for _, s := range specs {
		if s.pkg != "" {
			pkgs = append(pkgs, s.pkg)
		}
	}
	if len(pkgs) > 0 {
		if err := b.goBuild(bins, pkgs); err != nil {
			return err
		}
	}
	var digests []string
	for _, s := range specs {
		if s.pkg != "" {
			data, err := os.ReadFile(filepath.Join(bins, filepath.Base(s.pkg)))
			if err != nil {
				return err
			}
			s.files = append(baseFiles(s.user, "nonroot", "/home/nonroot"),
				file{path: s.entrypoint[0], mode: 0o755, data: data})
		} else {
			fs, version, err := valkeyFiles(b.valkeyServer, b.valkeyCLI)
			if err != nil {
				return err
			}
			s.tag = version
			s.files = append(baseFiles(s.user, "valkey", "/data"), fs...)
		}
		ref := b.prefix + "/" + s.name + ":" + s.tag
		d, err := b.write(s, ref)
		if err != nil {
			return fmt.Errorf("image %s: %w", ref, err)
		}
		digests = append(digests, fmt.Sprintf("%s %s %s.tar", normalizeRef(ref), d, s.name))
		fmt.Printf("%s %s\n", normalizeRef(ref), d)
	}
	sort.Strings(digests)
	return os.WriteFile(filepath.Join(b.out, "digests.txt"), []byte(strings.Join(digests, "\n")+"\n"), 0o644)
}

// goBuild builds static, reproducible binaries of pkgs into dir in one go build.
func (b *builder) goBuild(dir string, pkgs []string) error {
	args := append([]string{"build", "-trimpath", "-buildvcs=false", "-ldflags=-s -w -buildid=", "-o", dir + "/"}, pkgs...)
	cmd := exec.Command("go", args...)
	cmd.Dir = b.root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH, "GOFLAGS=-mod=readonly")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go %s: %w", strings.Join(args, " "), err)
	}
	return nil
}

// baseFiles are the files every image carries: /etc/passwd and /etc/group naming the
// image's non-root user, its home, and a world-writable /tmp.
func baseFiles(uid int, user, home string) []file {
	id := strconv.Itoa(uid)
	return []file{
		{path: "/etc/passwd", mode: 0o644, data: []byte("root:x:0:0:root:/root:/sbin/nologin\n" +
			user + ":x:" + id + ":" + id + ":" + user + ":" + home + ":/sbin/nologin\n")},
		{path: "/etc/group", mode: 0o644, data: []byte("root:x:0:\n" + user + ":x:" + id + ":\n")},
		{path: home, dir: true, mode: 0o700, uid: uid},
		{path: "/tmp", dir: true, mode: 0o1777},
	}
}

// normalizeRef spells a reference the way containerd stores it (docker.io/, library/),
// so the kubelet finds an imported image under the name a pod spec uses.
func normalizeRef(ref string) string {
	first, rest, found := strings.Cut(ref, "/")
	if !found {
		return "docker.io/library/" + ref
	}
	if strings.ContainsAny(first, ".:") || first == "localhost" {
		return ref
	}
	return "docker.io/" + first + "/" + rest
}

// sourceDateEpoch is SOURCE_DATE_EPOCH when set (reproducible-builds.org), else 1970-01-01.
func sourceDateEpoch() time.Time {
	if s := os.Getenv("SOURCE_DATE_EPOCH"); s != "" {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			return time.Unix(n, 0).UTC()
		}
	}
	return time.Unix(0, 0).UTC()
}
