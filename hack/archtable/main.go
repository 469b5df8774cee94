// Command archtable writes the package import table and diagram of docs/architecture.md
// from `go list`: every package under pkg/ and cmd/ of the module with the module's
// packages it imports (non-test imports only) and the packages importing it, and a
// mermaid diagram of the same edges less those another path already implies.
//
// Usage: go run ./hack/archtable [-root dir] [-doc docs/architecture.md] [-check]
//
// The table goes between `<!-- archtable:begin -->` and `<!-- archtable:end -->`, the
// diagram between `<!-- archgraph:begin -->` and `<!-- archgraph:end -->`. `make archtable`
// rewrites the doc; with -check (`make verify`) it fails when the doc differs.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

const module = "github.com/ballastk8s/ballast"

func main() {
	root := flag.String("root", ".", "repository root")
	doc := flag.String("doc", "docs/architecture.md", "the doc to rewrite, relative to -root")
	check := flag.Bool("check", false, "fail if the doc differs instead of rewriting it")
	flag.Parse()
	if err := run(*root, *doc, *check); err != nil {
		fmt.Fprintln(os.Stderr, "archtable:", err)
		os.Exit(1)
	}
}

func run(root, doc string, check bool) error {
	pkgs, err := listPackages(root)
	if err != nil {
		return err
	}
	path := filepath.Join(root, doc)
	old, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("reading %s: %w", doc, err)
	}
	g := NewGraph(pkgs)
	updated, err := Replace(string(old), TableMarkers, RenderTable(g))
	if err != nil {
		return fmt.Errorf("%s: %w", doc, err)
	}
	if updated, err = Replace(updated, GraphMarkers, RenderGraph(g)); err != nil {
		return fmt.Errorf("%s: %w", doc, err)
	}
	if updated == string(old) {
		return nil
	}
	if check {
		return fmt.Errorf("%s: the package table or diagram is stale: run make archtable and commit", doc)
	}
	if err := os.WriteFile(path, []byte(updated), 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", doc, err)
	}
	return nil
}

// listPackages runs `go list -json` over pkg/... and cmd/... of the module at root, for
// linux/amd64 (the platform the binaries ship for), so the files a build tag selects are
// the same on every machine.
func listPackages(root string) ([]Package, error) {
	cmd := exec.Command("go", "list", "-json=ImportPath,Imports", "./pkg/...", "./cmd/...")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH=amd64")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go list: %v\n%s", err, errb.String())
	}
	return decodePackages(&out)
}

// Package is the part of `go list -json` the table needs.
type Package struct {
	ImportPath string
	Imports    []string
}

func decodePackages(r io.Reader) ([]Package, error) {
	var pkgs []Package
	dec := json.NewDecoder(r)
	for {
		var p Package
		err := dec.Decode(&p)
		if errors.Is(err, io.EOF) {
			return pkgs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("decoding go list output: %w", err)
		}
		pkgs = append(pkgs, p)
	}
}

// internal returns the module-relative path of an import path of the module, and whether
// it is one.
func internal(importPath string) (string, bool) {
	rel, ok := strings.CutPrefix(importPath, module+"/")
	return rel, ok
}
