package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriteSectionReplacesBetweenMarkers(t *testing.T) {
	p := filepath.Join(t.TempDir(), "b.md")
	if err := os.WriteFile(p, []byte("# T\n\nbefore\n<!-- x:start -->\nold\n<!-- x:end -->\nafter\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteSection(p, "x", "new table"); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	want := "# T\n\nbefore\n<!-- x:start -->\nnew table\n<!-- x:end -->\nafter\n"
	if string(b) != want {
		t.Errorf("got %q, want %q", b, want)
	}
	// A file without the markers gets them appended, once.
	if err := WriteSection(p, "y", "one"); err != nil {
		t.Fatal(err)
	}
	if err := WriteSection(p, "y", "two"); err != nil {
		t.Fatal(err)
	}
	b, _ = os.ReadFile(p)
	if strings.Count(string(b), "<!-- y:start -->") != 1 || !strings.Contains(string(b), "\ntwo\n") || strings.Contains(string(b), "one") {
		t.Errorf("appended section wrong:\n%s", b)
	}
}

func TestHistNextTakesEachNewObservation(t *testing.T) {
	var h hist
	if _, ok := h.next(0, 0, false); ok {
		t.Error("a failed scrape is no loop")
	}
	if d, ok := h.next(9.5, 1, true); !ok || d != 9.5 {
		t.Errorf("first loop = %v %v, want 9.5", d, ok)
	}
	if _, ok := h.next(9.5, 1, true); ok {
		t.Error("no new observation is no loop")
	}
	if d, ok := h.next(15.5, 3, true); !ok || d != 3 {
		t.Errorf("two loops since = mean %v %v, want 3", d, ok)
	}
}

func TestParseWritesSumsWriteVerbsByResource(t *testing.T) {
	in := `# HELP apiserver_request_total x
apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="",verb="POST",version="v1"} 12
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="resize",verb="PATCH",version="v1"} 3
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="",verb="GET",version="v1"} 99
apiserver_request_total{code="409",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="",verb="POST",version="v1"} 1
apiserver_request_total{code="200",component="apiserver",dry_run="",group="autoscaling.k8s.io",resource="verticalpodautoscalers",scope="resource",subresource="status",verb="PATCH",version="v1"} 1.5e+02
`
	got := parseWrites(in)
	if got["pods"] != 13 || got["pods/resize"] != 3 || got["verticalpodautoscalers/status"] != 150 || len(got) != 3 {
		t.Errorf("parseWrites = %v", got)
	}
}

func TestMedMax(t *testing.T) {
	if m, x, n := medMax([]float64{5, 1, 3}); m != 3 || x != 5 || n != 3 {
		t.Errorf("medMax = %v %v %v", m, x, n)
	}
	if _, _, n := medMax(nil); n != 0 {
		t.Error("empty")
	}
}
