// Command checkdeps keeps the direction of Ballast's dependencies (ARCHITECTURE.md, docs/
// architecture.md); `make lint` runs it and fails on any finding:
//
//   - a pure package (pkg/apis, pkg/series, pkg/identity, pkg/policy, pkg/recommend,
//     pkg/sizing, pkg/resizeplan, pkg/kubeletstats, pkg/savings) imports a client (client-go), controller-runtime, Valkey, net/http or os,
//     or calls time.Now (directly, through time.Since/time.Until or metav1.Now);
//   - ballast-node links the control plane (pkg/control) or ballast-control links the node
//     agent (pkg/nodeagent);
//   - either product binary links test code (test/...).
//
// Usage: go run ./hack/checkdeps [-root dir]
package main

import (
	"bytes"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

const module = "github.com/ballastk8s/ballast"

// Pure lists the pure packages (with their sub-packages).
var Pure = []string{"pkg/apis", "pkg/series", "pkg/identity", "pkg/policy", "pkg/recommend", "pkg/sizing", "pkg/resizeplan", "pkg/kubeletstats", "pkg/savings"}

// forbidden are the import paths (and their sub-packages) a pure package must not import.
var forbidden = []string{"k8s.io/client-go", "sigs.k8s.io/controller-runtime", "github.com/valkey-io",
	"github.com/redis", "net/http", "os"}

// clockCalls are the package-level functions that read the wall clock.
var clockCalls = map[string][]string{"time": {"Now", "Since", "Until"}, "k8s.io/apimachinery/pkg/apis/meta/v1": {"Now"}}

// binaries maps each product binary to the module folders it must not link.
var binaries = map[string][]string{
	"cmd/ballast-node":    {"pkg/control", "test"},
	"cmd/ballast-control": {"pkg/nodeagent", "test"},
}

func main() {
	root := flag.String("root", ".", "repository root")
	flag.Parse()
	problems, err := Check(*root)
	if err != nil {
		fmt.Fprintln(os.Stderr, "checkdeps:", err)
		os.Exit(2)
	}
	for _, p := range problems {
		fmt.Fprintln(os.Stderr, p)
	}
	if len(problems) > 0 {
		fmt.Fprintf(os.Stderr, "checkdeps: %d dependency-direction problems (see docs/architecture.md)\n", len(problems))
		os.Exit(1)
	}
}

// Check returns every finding in the module at root.
func Check(root string) ([]string, error) {
	var problems []string
	for _, dir := range Pure {
		ps, err := checkPure(root, dir)
		if err != nil {
			return nil, err
		}
		problems = append(problems, ps...)
	}
	for bin, banned := range binaries {
		deps, err := goList(root, "-deps", "-f", "{{.ImportPath}}", "./"+bin)
		if err != nil {
			return nil, err
		}
		for _, d := range deps {
			for _, b := range banned {
				if under(d, module+"/"+b) {
					problems = append(problems, fmt.Sprintf("%s links %s (the binaries never import each other or test code)", bin, d))
				}
			}
		}
	}
	sort.Strings(problems)
	return problems, nil
}

func under(path, prefix string) bool { return path == prefix || strings.HasPrefix(path, prefix+"/") }

// checkPure inspects the non-test Go files of every package under dir.
func checkPure(root, dir string) ([]string, error) {
	if _, err := os.Stat(filepath.Join(root, dir)); err != nil {
		return nil, nil // not in this tree
	}
	lines, err := goList(root, "-f", `{{.Dir}}{{range .GoFiles}} {{.}}{{end}}`, "./"+dir+"/...")
	if err != nil {
		return nil, err
	}
	var problems []string
	fset := token.NewFileSet()
	for _, line := range lines {
		fields := strings.Fields(line)
		if len(fields) < 2 {
			continue
		}
		for _, name := range fields[1:] {
			path := filepath.Join(fields[0], name)
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				return nil, err
			}
			rel, _ := filepath.Rel(root, path)
			problems = append(problems, inspect(fset, rel, f)...)
		}
	}
	return problems, nil
}

// inspect reports forbidden imports and clock reads in one file of a pure package.
func inspect(fset *token.FileSet, rel string, f *ast.File) []string {
	var problems []string
	names := map[string]string{} // local name → import path, for clock calls
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		for _, bad := range forbidden {
			if under(p, bad) {
				problems = append(problems, fmt.Sprintf("%s: pure package imports %s", pos(fset, rel, imp.Pos()), p))
			}
		}
		if _, ok := clockCalls[p]; ok {
			local := p[strings.LastIndex(p, "/")+1:]
			if imp.Name != nil {
				local = imp.Name.Name
			}
			names[local] = p
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		id, ok := sel.X.(*ast.Ident)
		if !ok {
			return true
		}
		if p, ok := names[id.Name]; ok {
			for _, fn := range clockCalls[p] {
				if sel.Sel.Name == fn {
					problems = append(problems, fmt.Sprintf("%s: pure package reads the clock (%s.%s): take the time as an argument",
						pos(fset, rel, sel.Pos()), id.Name, fn))
				}
			}
		}
		return true
	})
	return problems
}

func pos(fset *token.FileSet, rel string, p token.Pos) string {
	return fmt.Sprintf("%s:%d", rel, fset.Position(p).Line)
}

func goList(root string, args ...string) ([]string, error) {
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	cmd.Dir = root
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go list %s: %v\n%s", strings.Join(args, " "), err, errb.String())
	}
	return strings.Split(strings.TrimSpace(out.String()), "\n"), nil
}
