package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func pkg(path string, imports ...string) Package {
	p := Package{ImportPath: module + "/" + path}
	for _, i := range imports {
		if strings.Contains(i, ".") || !strings.Contains(i, "/") {
			p.Imports = append(p.Imports, i) // a standard or third-party import
			continue
		}
		p.Imports = append(p.Imports, module+"/"+i)
	}
	return p
}

// fixture: a binary over an app over a store and a pure core, with a shortcut edge
// (app → core) that the store's own import implies.
var fixture = []Package{
	pkg("cmd/bin", "pkg/control/app", "fmt"),
	pkg("pkg/control/app", "pkg/store", "pkg/core", "github.com/x/y"),
	pkg("pkg/store", "pkg/core"),
	pkg("pkg/core"),
	pkg("cmd/demo", "test/sandbox"),
}

func TestNewGraphKeepsModuleImportsOnly(t *testing.T) {
	g := NewGraph(fixture)
	want := map[string][]string{
		"cmd/bin":         {"pkg/control/app"},
		"cmd/demo":        {"test/sandbox"},
		"pkg/control/app": {"pkg/core", "pkg/store"},
		"pkg/core":        nil,
		"pkg/store":       {"pkg/core"},
	}
	if d := cmp.Diff(want, g.Imports); d != "" {
		t.Errorf("imports (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"pkg/control/app", "pkg/store"}, g.ImportedBy["pkg/core"]); d != "" {
		t.Errorf("imported by (-want +got):\n%s", d)
	}
}

func TestReducedDropsImpliedEdges(t *testing.T) {
	g := NewGraph(fixture)
	cases := map[string]struct {
		pkg  string
		want []string
	}{
		"app reaches core through store": {pkg: "pkg/control/app", want: []string{"pkg/store"}},
		"a single import stays":          {pkg: "pkg/store", want: []string{"pkg/core"}},
		"no imports":                     {pkg: "pkg/core", want: nil},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			if d := cmp.Diff(c.want, g.reduced(c.pkg)); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

func TestRenderTableGroupsAndOrders(t *testing.T) {
	got := RenderTable(NewGraph(fixture))
	for _, want := range []string{
		"| `pkg/control/app` | `pkg/core`, `pkg/store` | `cmd/bin` |",
		"| `pkg/core` | — | `pkg/control/app`, `pkg/store` |",
		"| `cmd/demo` | `test/sandbox` | — |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("table lacks %q:\n%s", want, got)
		}
	}
	core, control, cmds := strings.Index(got, "**Core"), strings.Index(got, "**Control"), strings.Index(got, "**Binaries")
	if !(core >= 0 && core < control && control < cmds) {
		t.Errorf("groups out of order (core %d, control %d, binaries %d):\n%s", core, control, cmds, got)
	}
}

func TestRenderGraphHasReducedEdgesOnly(t *testing.T) {
	got := RenderGraph(NewGraph(fixture))
	if !strings.Contains(got, "pkg_control_app --> pkg_store\n") || strings.Contains(got, "pkg_control_app --> pkg_core\n") {
		t.Errorf("want app → store and no app → core:\n%s", got)
	}
	if !strings.Contains(got, "test_sandbox[\"test/sandbox\"]") {
		t.Errorf("an imported package outside pkg/ and cmd/ needs a node:\n%s", got)
	}
}

func TestReplace(t *testing.T) {
	m := Markers{"<!-- a:begin -->", "<!-- a:end -->"}
	cases := map[string]struct {
		doc, want string
		fails     bool
	}{
		"empty block":    {doc: "x\n<!-- a:begin -->\n<!-- a:end -->\ny\n", want: "x\n<!-- a:begin -->\nBODY\n<!-- a:end -->\ny\n"},
		"stale block":    {doc: "<!-- a:begin -->\nold\nlines\n<!-- a:end -->", want: "<!-- a:begin -->\nBODY\n<!-- a:end -->"},
		"no markers":     {doc: "x\n", fails: true},
		"end before":     {doc: "<!-- a:end -->\n<!-- a:begin -->\n", fails: true},
		"begin twice":    {doc: "<!-- a:begin -->\n<!-- a:begin -->\n<!-- a:end -->\n", fails: true},
		"only the begin": {doc: "<!-- a:begin -->\n", fails: true},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := Replace(c.doc, m, "BODY\n")
			if (err != nil) != c.fails {
				t.Fatalf("error %v, want failure %v", err, c.fails)
			}
			if d := cmp.Diff(c.want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

// TestCheckFailsOnStaleDoc runs the tool on a doc whose blocks are empty: -check must
// fail and leave it alone, a rewrite must make -check pass.
func TestCheckFailsOnStaleDoc(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	doc := filepath.Join(t.TempDir(), "arch.md")
	stale := "# x\n" + GraphMarkers.Begin + "\n" + GraphMarkers.End + "\n" + TableMarkers.Begin + "\n" + TableMarkers.End + "\n"
	if err := os.WriteFile(doc, []byte(stale), 0o644); err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(root, doc)
	if err != nil {
		t.Fatal(err)
	}
	if err := run(root, rel, true); err == nil {
		t.Fatal("-check passed on a doc with empty blocks")
	}
	if b, _ := os.ReadFile(doc); string(b) != stale {
		t.Fatal("-check changed the doc")
	}
	if err := run(root, rel, false); err != nil {
		t.Fatal(err)
	}
	if err := run(root, rel, true); err != nil {
		t.Fatalf("-check after a rewrite: %v", err)
	}
	b, _ := os.ReadFile(doc)
	if !strings.Contains(string(b), "| `pkg/store` |") {
		t.Errorf("the rewritten doc lacks pkg/store:\n%s", b)
	}
}
