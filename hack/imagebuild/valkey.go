package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
)

// valkeyFiles returns valkey-server and valkey-cli from the host's Debian packages plus
// every shared library they load (found with ldd, the dynamic loader included), each at
// the path the loader looks for it, and the server version for the tag. The server is
// stored under the name valkey-server: Debian ships it as a symlink to valkey-check-rdb,
// and the binary picks its mode from argv[0].
func valkeyFiles(server, cli string) ([]file, string, error) {
	out, err := exec.Command(server, "--version").Output()
	if err != nil {
		return nil, "", fmt.Errorf("%s --version: %w (install valkey-server: hack/install-deps.sh)", server, err)
	}
	m := regexp.MustCompile(`v=([0-9][0-9.]*)`).FindSubmatch(out)
	if m == nil {
		return nil, "", fmt.Errorf("%s --version: no version in %q", server, out)
	}
	version := string(m[1])
	files := []file{}
	libs := map[string]bool{}
	for _, bin := range []struct{ src, dst string }{{server, "/usr/bin/valkey-server"}, {cli, "/usr/bin/valkey-cli"}} {
		data, err := os.ReadFile(bin.src)
		if err != nil {
			return nil, "", err
		}
		files = append(files, file{path: bin.dst, mode: 0o755, data: data})
		deps, err := lddPaths(bin.src)
		if err != nil {
			return nil, "", err
		}
		for _, d := range deps {
			libs[d] = true
		}
	}
	for lib := range libs {
		real, err := filepath.EvalSymlinks(lib)
		if err != nil {
			return nil, "", err
		}
		data, err := os.ReadFile(real)
		if err != nil {
			return nil, "", err
		}
		files = append(files, file{path: lib, mode: 0o755, data: data})
	}
	files = append(files, file{path: "/data", dir: true, mode: 0o750, uid: 999})
	return files, version, nil
}

// lddPaths lists the absolute library paths ldd prints for bin ("name => /path (addr)" and
// the loader's "/path (addr)"); the vDSO has no file and is skipped.
func lddPaths(bin string) ([]string, error) {
	out, err := exec.Command("ldd", bin).Output()
	if err != nil {
		return nil, fmt.Errorf("ldd %s: %w", bin, err)
	}
	var paths []string
	for _, line := range strings.Split(string(out), "\n") {
		line = strings.TrimSpace(line)
		if _, after, ok := strings.Cut(line, "=> "); ok {
			line = after
		}
		p, _, _ := strings.Cut(line, " ")
		if strings.HasPrefix(p, "/") {
			paths = append(paths, p)
		}
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("ldd %s: no libraries listed", bin)
	}
	return paths, nil
}
